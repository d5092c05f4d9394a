//! The shim must never call `memcpy`, `memmove`, `memset` (or any other name it
//! exports): under `LD_PRELOAD` such a call would come straight back into the shim.
//! Checked on the deployable shared object, not by hope: its imports, its dynamic
//! relocations and its disassembly. Also: it exports exactly the nine C names, needs
//! only libc, no code path leads into the panic machinery, and the size classes of the
//! assembly entries (the shim's and the C ABI library's) keep within 64-byte lines.

mod common;

use std::path::Path;
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

/// One instruction of `objdump -d --no-show-raw-insn` (AT&T syntax): address and text.
fn instructions(lib: &Path, from: u64, to: u64) -> Vec<(u64, String)> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(format!("--start-address={from:#x}"))
        .arg(format!("--stop-address={to:#x}"))
        .arg(lib)
        .output()
        .expect("run objdump (binutils; scripts/deps.sh installs it)");
    assert!(out.status.success(), "objdump failed on {}", lib.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (addr, text) = l.split_once(":\t")?;
            let addr = u64::from_str_radix(addr.trim(), 16).ok()?;
            Some((addr, text.trim().to_string()))
        })
        .collect()
}

/// The target of a direct jump (`jb     b9b0 <memcpy+0x30>`), if `text` is one.
fn jump_target(text: &str) -> Option<u64> {
    let (mnemonic, rest) = text.split_once(char::is_whitespace)?;
    if !mnemonic.starts_with('j') {
        return None;
    }
    let hex = rest.split_whitespace().next()?;
    u64::from_str_radix(hex, 16).ok()
}

/// The blocks of the assembly entry at `start..end` (see below) that cross a 64-byte
/// line they need not cross, or that run in the last two lines of a page, as
/// `name+offset: why`.
fn misplaced_blocks(lib: &Path, name: &str, start: u64, end: u64) -> Vec<String> {
    let ins = instructions(lib, start, end);
    let mut entries = vec![start];
    // The instruction after a backward jump (a loop's end) is inside its size class's
    // block, not the start of one.
    let mut loop_exits = Vec::new();
    for (i, (addr, text)) in ins.iter().enumerate() {
        match jump_target(text) {
            // A forward jump within the entry starts a block.
            Some(t) if t > *addr && t < end => entries.push(t),
            Some(t) if t < *addr => loop_exits.extend(ins.get(i + 1).map(|n| n.0)),
            _ => {}
        }
        // A routed entry's AVX2 bodies: after the test of the level byte that a closed
        // route leads to.
        if text.starts_with("cmpb   $0x2,") && text.contains("(%rip)") {
            if let Some(body) = ins[i + 1..]
                .iter()
                .skip(1)
                .find(|(_, t)| !t.contains("nop") && t != "xchg   %ax,%ax")
            {
                entries.push(body.0);
            }
        }
    }
    entries.retain(|e| !loop_exits.contains(e));
    entries.sort_unstable();
    entries.dedup();
    let mut bad = Vec::new();
    for e in entries {
        let Some(first) = ins.iter().position(|(a, _)| *a >= e) else {
            continue;
        };
        // The level test a closed route leads to starts the AVX2 bodies' line.
        if ins[first].1.starts_with("cmpb") && ins[first].1.contains("(%rip)") {
            continue;
        }
        let Some(last) = ins[first..]
            .iter()
            .position(|(_, t)| t.starts_with("ret") || t.starts_with("jmp"))
            .map(|k| first + k)
        else {
            continue;
        };
        if !ins[last].1.starts_with("ret") {
            continue; // it leaves the entry: to `above` or `general`
        }
        let last_byte = ins.get(last + 1).map_or(end, |n| n.0) - 1;
        let len = last_byte + 1 - e;
        let fits = if len <= 64 {
            e / 64 == last_byte / 64
        } else {
            e % 64 == 0
        };
        if !fits {
            bad.push(format!(
                "{name}+{:#x}: {len} bytes to its ret, over lines {}..={}",
                e - start,
                (e - start) / 64,
                (last_byte - start) / 64
            ));
        }
        if last_byte % 4096 >= 4096 - 128 {
            bad.push(format!(
                "{name}+{:#x}: its ret at {last_byte:#x} lies in the last two lines of a page",
                e - start
            ));
        }
    }
    bad
}

/// Symbol addresses of `lib` from `nm`, and for each of `names` where the next symbol
/// starts (the entry's end).
fn extents(lib: &Path, names: &[&str]) -> Vec<(String, u64, u64)> {
    let out = Command::new("nm").arg(lib).output().expect("run nm");
    assert!(out.status.success(), "nm failed on {}", lib.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut addrs: Vec<(u64, &str)> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let a = u64::from_str_radix(f.next()?, 16).ok()?;
            let _kind = f.next()?;
            Some((a, f.next()?))
        })
        .collect();
    addrs.sort_unstable();
    names
        .iter()
        .map(|&n| {
            // A Rust function by its name in the legacy mangling (`..20blockmem_copy_avx51217h..`).
            let mangled = format!("{}{n}17h", n.len());
            let start = addrs
                .iter()
                .find(|(_, s)| *s == n || (s.starts_with("_ZN") && s.contains(&mangled)))
                .unwrap_or_else(|| panic!("{n} not in {}", lib.display()))
                .0;
            let end = addrs
                .iter()
                .map(|a| a.0)
                .find(|&a| a > start)
                .unwrap_or(start + 4096);
            (n.to_string(), start, end)
        })
        .collect()
}

/// The assembly entries: the shim's routed ones, and the bodies the C ABI library's
/// IFUNCs bind to.
fn entries() -> Vec<(std::path::PathBuf, Vec<String>)> {
    vec![
        (
            common::shim().to_path_buf(),
            ["memcpy", "memmove", "memset"].map(String::from).to_vec(),
        ),
        (
            common::ffi_libs().join("libblockmem_ffi.so"),
            // The bodies the IFUNCs of the same names bind to.
            [
                "blockmem_copy",
                "blockmem_move",
                "blockmem_set",
                "blockmem_memcpy",
                "blockmem_memmove",
                "blockmem_memset",
            ]
            .iter()
            .flat_map(|n| [format!("{n}_avx512"), format!("{n}_avx2")])
            .collect::<Vec<_>>(),
        ),
    ]
}

#[test]
fn entry_blocks_keep_within_their_64_byte_lines_and_off_a_pages_end() {
    // Each size class of the assembly entries is a block of straight-line code ending
    // in `ret`. One that crosses a 64-byte line costs a cycle more per call on AMD Zen
    // 4, whose op cache holds a line's instructions per entry
    // (docs/results/epyc-zen4-2vcpu/doors-page-start). So a block of up to 64 bytes lies
    // within one line, and a longer one starts a line.
    // And none ends in the last two lines of a page: the same code beginning 64 bytes
    // before a page's end copied 1-32 bytes a cycle slower per call. Each entry starts
    // a page, which keeps its bodies clear of that wherever the linker puts it.
    let libs = entries();
    let mut bad = Vec::new();
    let mut checked = 0;
    for (lib, names) in &libs {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        for (name, start, end) in extents(lib, &names) {
            assert_eq!(start % 4096, 0, "{name} does not start a page");
            bad.extend(misplaced_blocks(lib, &name, start, end));
            checked += 1;
        }
    }
    assert_eq!(checked, 15);
    assert!(
        bad.is_empty(),
        "blocks of the assembly entries cross a 64-byte line or near a page's end (align \
         them with `.p2align` in blockmem::arch::x86_64::entry):\n{}",
        bad.join("\n")
    );
}

/// The jumps of the entry at `start..end` that cross a 32-byte boundary or end on one,
/// a compare or test with the conditional jump it fuses with counted as one, as
/// `name+offset: instruction`.
fn jumps_on_32_byte_boundaries(lib: &Path, name: &str, start: u64, end: u64) -> Vec<String> {
    let ins = instructions(lib, start, end);
    let fuses = ["cmp", "test", "add", "sub", "and", "inc", "dec"];
    let mut bad = Vec::new();
    for (i, (addr, text)) in ins.iter().enumerate() {
        if !text.starts_with('j') {
            continue;
        }
        let Some(next) = ins.get(i + 1) else { continue };
        let last = next.0 - 1;
        let first = match i.checked_sub(1).map(|k| &ins[k]) {
            Some((a, t)) if !text.starts_with("jmp") && fuses.iter().any(|f| t.starts_with(f)) => {
                *a
            }
            _ => *addr,
        };
        if first / 32 != last / 32 || last % 32 == 31 {
            bad.push(format!("{name}+{:#x}: {text}", addr - start));
        }
    }
    bad
}

#[test]
fn entry_jumps_keep_clear_of_32_byte_boundaries() {
    // On Intel cores of the Skylake family with the microcode for the jump erratum
    // (Skylake to Cascade Lake), a 32-byte window holding a jump (or a fused compare and
    // jump) that crosses or ends on its boundary is not kept in the decoded-instruction
    // cache: every call through it is decoded again. The entries' jumps keep clear of
    // those boundaries (see `blockmem::arch::x86_64::entry`).
    let mut bad = Vec::new();
    let mut checked = 0;
    for (lib, names) in entries() {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        for (name, start, end) in extents(&lib, &names) {
            bad.extend(jumps_on_32_byte_boundaries(
                &lib,
                &name,
                start,
                end.min(start + 4096),
            ));
            checked += 1;
        }
    }
    assert_eq!(checked, 15);
    assert!(
        bad.is_empty(),
        "jumps of the assembly entries on a 32-byte boundary (move them with `.p2align` or \
         shorter encodings in blockmem::arch::x86_64::entry):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_c_entries_reach_the_tables_kernels_by_a_jump() {
    // Above their inline sizes the assembly entries hand the call to `dispatch::wide`'s
    // `copy_above`, `copy_forgiving_above`, `move_above` or `set_above`, which find the
    // band's kernel and must end in a jump to it (`kernel::CopyFn`): a call would
    // leave saved registers to restore from the stack after the kernel, loads that wait
    // for a `rep stosb` to finish (docs/results/epyc-zen5-2vcpu/copy-2112). So none of
    // them has an indirect call, and each has an
    // indirect jump.
    let libs = [
        common::shim().to_path_buf(),
        common::ffi_libs().join("libblockmem_ffi.so"),
    ];
    let mut checked = 0;
    for lib in &libs {
        let out = Command::new("nm").arg(lib).output().expect("run nm");
        assert!(out.status.success(), "nm failed on {}", lib.display());
        let text = String::from_utf8_lossy(&out.stdout);
        let names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_whitespace().nth(2))
            .filter(|n| n.contains("8dispatch4wide") && n.contains("_above17h"))
            .collect();
        assert!(
            names.len() >= 3,
            "{}: expected the wide entries' `*_above` functions, found {names:?}",
            lib.display()
        );
        for (name, start, end) in extents(lib, &names) {
            let code = instructions(lib, start, end);
            let calls: Vec<&String> = code
                .iter()
                .map(|(_, t)| t)
                .filter(|t| t.starts_with("call") && t.contains('*'))
                .collect();
            assert!(
                calls.is_empty(),
                "{name} in {} calls its kernel ({calls:?}): it must jump to it",
                lib.display()
            );
            assert!(
                code.iter()
                    .any(|(_, t)| t.starts_with("jmp") && t.contains('*')),
                "{name} in {} has no indirect jump to a kernel",
                lib.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 6, "checked {checked} functions");
}
