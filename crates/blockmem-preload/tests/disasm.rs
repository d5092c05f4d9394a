//! The shim must never call `memcpy`, `memmove`, `memset` (or any other name it
//! exports): under `LD_PRELOAD` such a call would come straight back into the shim.
//! Checked on the deployable shared object, not by hope: its imports, its dynamic
//! relocations and its disassembly. Also: it exports exactly the nine C names, needs
//! only libc, and no code path leads into the panic machinery.

mod common;

use std::process::Command;

const EXPORTED: [&str; 9] = [
    "memcpy",
    "memmove",
    "memset",
    "bzero",
    "mempcpy",
    "__memcpy_chk",
    "__memmove_chk",
    "__memset_chk",
    "__mempcpy_chk",
];

fn tool(name: &str, args: &[&str]) -> String {
    let out = Command::new(name)
        .args(args)
        .arg(common::shim())
        .output()
        .unwrap_or_else(|e| panic!("run {name} (binutils; scripts/deps.sh installs it): {e}"));
    assert!(out.status.success(), "{name} {args:?} failed");
    String::from_utf8(out.stdout).expect("utf-8 tool output")
}

/// The function a line of `objdump -d` starts ("0000000000005f00 <memcpy>:"), if any.
fn function_start(line: &str) -> Option<&str> {
    line.strip_suffix(">:")
        .and_then(|l| l.split_once(" <"))
        .map(|(_, n)| n)
}

/// `memcpy@GLIBC_2.14` -> `memcpy`, `memcpy@plt` -> `memcpy`.
fn bare(sym: &str) -> &str {
    sym.split('@').next().unwrap_or(sym)
}

#[test]
fn imports_none_of_the_names_it_exports() {
    let undefined = tool("nm", &["-D", "--undefined-only"]);
    for line in undefined.lines() {
        let sym = bare(line.split_whitespace().last().unwrap_or(""));
        assert!(
            !EXPORTED.contains(&sym),
            "the shim imports {sym}: a call to it would recurse\n{undefined}"
        );
    }
}

#[test]
fn no_relocation_names_an_exported_function() {
    // A PLT slot or GOT entry for memcpy & co. would be how a call reaches them.
    let relocs = tool("objdump", &["-R"]);
    for line in relocs.lines() {
        if let Some(sym) = line.split_whitespace().nth(2) {
            let sym = bare(sym.split('+').next().unwrap_or(sym));
            assert!(
                !EXPORTED.contains(&sym),
                "dynamic relocation against {sym}: {line}\n{relocs}"
            );
        }
    }
}

#[test]
fn disassembly_has_no_call_to_an_exported_function() {
    let asm = tool("objdump", &["-d", "--no-show-raw-insn"]);
    let mut function = String::new();
    let mut calls = 0;
    let mut violations = Vec::new();
    for line in asm.lines() {
        if let Some(name) = function_start(line) {
            function = name.to_string();
            continue;
        }
        let mut words = line.split_whitespace().skip(1);
        let Some(mnemonic) = words.next() else {
            continue;
        };
        let is_call = mnemonic.starts_with("call");
        let is_jump = mnemonic.starts_with("jmp");
        if !is_call && !is_jump {
            continue;
        }
        calls += is_call as usize;
        // Direct target: "call   5f00 <memcpy>" or "<memcpy@plt>" or "<memset+0x40>".
        let Some(target) = line.rsplit_once('<').map(|(_, t)| t.trim_end_matches('>')) else {
            continue;
        };
        let (sym, offset) = match target.split_once('+') {
            Some((s, o)) => (s, Some(o)),
            None => (target, None),
        };
        let sym = bare(sym);
        if !EXPORTED.contains(&sym) {
            continue;
        }
        // A jump to an offset inside a function is a branch (or shared tail code), not a
        // call; a jump to another exported function's entry is a tail call.
        let tail_call = is_jump && offset.is_none() && sym != function;
        if is_call || tail_call {
            violations.push(format!("in <{function}>: {}", line.trim()));
        }
    }
    assert!(calls > 10, "disassembly looks empty ({calls} calls)");
    assert!(
        violations.is_empty(),
        "the shim calls functions it exports:\n{}",
        violations.join("\n")
    );
}

#[test]
fn exports_exactly_the_c_names() {
    let defined = tool("nm", &["-D", "--defined-only"]);
    let mut names: Vec<&str> = defined
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(bare)
        .collect();
    names.sort_unstable();
    let mut want = EXPORTED.to_vec();
    want.sort_unstable();
    assert_eq!(names, want, "dynamic symbols:\n{defined}");
}

#[test]
fn needs_only_libc() {
    let dynamic = tool("readelf", &["-d"]);
    let needed: Vec<&str> = dynamic
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.rsplit_once('[').map(|(_, n)| n.trim_end_matches(']')))
        .collect();
    assert!(
        needed
            .iter()
            .all(|n| n.starts_with("libc.so") || n.starts_with("ld-linux")),
        "{needed:?}"
    );
}

#[test]
fn nothing_calls_into_panic_machinery() {
    // Demangled, so that "core::panicking::panic_bounds_check" and friends are visible.
    let asm = tool("objdump", &["-d", "--no-show-raw-insn", "-C"]);
    let mut function = "";
    let mut bad = Vec::new();
    for line in asm.lines() {
        if line.ends_with(">:") {
            function = line;
            continue;
        }
        let is_branch = line
            .split_whitespace()
            .nth(1)
            .is_some_and(|m| m.starts_with("call") || m.starts_with("jmp"));
        let target = line.rsplit_once('<').map_or("", |(_, t)| t);
        if is_branch
            && (target.starts_with("core::panicking")
                || target.contains("panic_bounds_check")
                || target.contains("slice_index_fail")
                || target.contains("unwrap_failed")
                || target.starts_with("core::result::unwrap")
                || target.starts_with("core::option::expect"))
            && !function.contains("core::panicking")
        {
            bad.push(format!("{function} {}", line.trim()));
        }
    }
    assert!(
        bad.is_empty(),
        "a panic path exists in the shim (its formatting code may call memcpy, and the \
         shim must never panic):\n{}",
        bad.join("\n")
    );
}

#[test]
fn exported_functions_reach_the_site_entries_with_the_callers_stack() {
    // The `*_general_sited` entries read the caller's return address at the top of the
    // stack (src/lib.rs, "call sites"): every exported function must jump to one with
    // the stack as its caller left it, so nothing before that jump may push, adjust
    // rsp or call.
    let asm = tool("objdump", &["-d", "--no-show-raw-insn"]);
    let mut function = String::new();
    let mut moved_stack = false;
    let mut reached: Vec<String> = Vec::new();
    let mut bad = Vec::new();
    for line in asm.lines() {
        if let Some(name) = function_start(line) {
            function = name.to_string();
            moved_stack = false;
            continue;
        }
        if !EXPORTED.contains(&function.as_str()) {
            continue;
        }
        let text = line.split_once(':').map_or("", |(_, t)| t.trim());
        let mnemonic = text.split_whitespace().next().unwrap_or("");
        if mnemonic.starts_with("push")
            || mnemonic.starts_with("call")
            || (mnemonic.starts_with("sub") && text.ends_with("%rsp"))
        {
            moved_stack = true;
        }
        // `jmp`, or a conditional jump (`jne`): either leaves the stack as it was.
        if mnemonic.starts_with('j') && text.contains("_sited") {
            if moved_stack {
                bad.push(format!("<{function}>: {text} after the stack moved"));
            }
            reached.push(function.clone());
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    for f in EXPORTED {
        assert!(
            reached.iter().any(|r| r == f),
            "<{f}> never jumps to a *_general_sited entry: its calls with a mode set \
             would carry no call site"
        );
    }
}
