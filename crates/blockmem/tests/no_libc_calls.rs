//! The compiled core must never call `memcpy`, `memmove`, `memset` (or `bzero`,
//! `__memcpy_chk`, …): the LD_PRELOAD shim exports those names, so such a call would
//! recurse into itself. Compilers insert these calls for struct copies, `ptr::copy*`,
//! slice helpers and loops they recognise; `#![no_builtins]` stops the last, code review
//! the rest, and this test checks the result: it builds the crate in release mode,
//! disassembles the rlib's object code with its relocations, and fails on any
//! relocation against one of those symbols, naming the function that contains it.
//!
//! Release (what the shim and the C library ship): the whole core must be clean.
//! Debug: unoptimised code copies any aggregate of more than a few words with `memcpy`
//! (returning the `CpuInfo` report, iterator adapters), so there the check covers every
//! function an operation can reach: kernels, dispatch, policy, the kernel table and the
//! feature/cache-size detection the dispatcher runs on first use. Listed, not failed:
//! reporting-only code (`cpu::detect`, used by `blockmem info`) and the one-time
//! table load (`dispatch::publish::init`/`load_now`/`load_locked`, `profile::parse_into`, the
//! CPU count of `autoload`), which fills tables in place and which the dispatcher
//! guards against re-entry (a re-entered call runs on the plan published by then, or
//! on the portable kernel).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Symbols whose use by the core would recurse through the shim.
const FORBIDDEN: [&str; 8] = [
    "memcpy",
    "memmove",
    "memset",
    "bzero",
    "mempcpy",
    "__memcpy_chk",
    "__memmove_chk",
    "__memset_chk",
];

/// Finds relocations against forbidden symbols in `objdump -dr` output. Returns
/// `(function, relocation line)` pairs. Also returns the total relocation count so the
/// caller can tell an empty disassembly from a clean one.
fn forbidden_calls(objdump: &str) -> (Vec<(String, String)>, usize) {
    let mut current = String::new();
    let mut bad = Vec::new();
    let mut relocs = 0;
    for line in objdump.lines() {
        let t = line.trim();
        if let Some(name) = t
            .strip_suffix(">:")
            .and_then(|l| l.split_once(" <"))
            .map(|(_, n)| n)
        {
            current = name.to_string();
        } else if t.contains("R_X86_64_") || t.contains("R_AARCH64_") {
            relocs += 1;
            let target = t.split_whitespace().last().unwrap_or("");
            let sym = target.split(['+', '-', '@']).next().unwrap_or("");
            if FORBIDDEN.contains(&sym) {
                bad.push((current.clone(), t.to_string()));
            }
        }
    }
    (bad, relocs)
}

#[test]
fn parser_flags_a_memcpy_relocation() {
    let sample = "\
0000000000000000 <_ZN8blockmem4copy17h0123456789abcdefE>:
   0:\tpush   %rbx
   1:\tcall   6 <_ZN8blockmem4copy17h0123456789abcdefE+0x6>
\t\t\t2: R_X86_64_PLT32\tmemcpy-0x4
   6:\tcall   b <x>
\t\t\t7: R_X86_64_PLT32\t_ZN4core9panicking5panic17hE-0x4
";
    let (bad, relocs) = forbidden_calls(sample);
    assert_eq!(relocs, 2);
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].0, "_ZN8blockmem4copy17h0123456789abcdefE");
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Builds the core rlib in `profile` into a private target directory (so it never
/// waits on the lock of the `cargo test` that runs this test) and returns its path.
fn build_rlib(profile: &str) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = workspace_root().join("target").join("no-libc-calls-check");
    let out = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "build",
            "-p",
            "blockmem",
            "--lib",
            "--profile",
            profile,
            "--message-format=json",
        ])
        .arg("--target-dir")
        .arg(&target)
        .output()
        .expect("run cargo build");
    assert!(
        out.status.success(),
        "cargo build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    for line in stdout.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] == "compiler-artifact" && msg["target"]["name"] == "blockmem" {
            for f in msg["filenames"].as_array().unwrap() {
                let f = f.as_str().unwrap();
                if f.ends_with(".rlib") {
                    return PathBuf::from(f);
                }
            }
        }
    }
    panic!("cargo build produced no blockmem rlib");
}

/// Functions an operation can reach (demangled-name fragments).
const OP_PATH: [&str; 15] = [
    "blockmem::arch::",
    "blockmem::dispatch::",
    "blockmem::policy::",
    "blockmem::kernel::",
    "blockmem::copy",
    "blockmem::move",
    "blockmem::set",
    "blockmem::zero",
    "blockmem::cpu::features",
    "blockmem::cpu::used_caches",
    "blockmem::cpu::llc_default",
    "blockmem::cpu::choose_used",
    "blockmem::cpu::detect_features",
    "blockmem::cpu::x86::c",
    "blockmem::cpu::x86::f",
];

/// One-time initialisation, re-entry guarded (debug only; see the module docs).
const INIT_ONLY: [&str; 7] = [
    "blockmem::dispatch::publish::init",
    "blockmem::dispatch::publish::load_now",
    "blockmem::dispatch::publish::reload",
    "blockmem::dispatch::publish::status",
    "blockmem::dispatch::publish::install",
    "blockmem::dispatch::publish::load_locked",
    "blockmem::dispatch::publish::record_error",
];

fn check(profile: &str) {
    let rlib = build_rlib(profile);
    let out = Command::new("objdump")
        .args(["-dr", "-C", "--no-show-raw-insn"])
        .arg(&rlib)
        .output()
        .expect("objdump not found: install binutils (scripts/deps.sh does)");
    assert!(
        out.status.success(),
        "objdump failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut bad, relocs) = forbidden_calls(&text);
    assert!(
        relocs > 0,
        "no relocations found in {}: is the disassembly empty?",
        rlib.display()
    );
    if profile != "release" {
        let (op_path, reporting): (Vec<_>, Vec<_>) = bad.into_iter().partition(|(f, _)| {
            OP_PATH.iter().any(|p| f.contains(p)) && !INIT_ONLY.iter().any(|p| f.contains(p))
        });
        let mut names: Vec<_> = reporting.iter().map(|(f, _)| f.as_str()).collect();
        names.dedup();
        eprintln!("{profile}: tolerated in reporting-only or one-time init code: {names:?}");
        bad = op_path;
    }
    assert!(
        bad.is_empty(),
        "the {profile} core calls libc memory functions (the shim would recurse):\n{}",
        bad.iter()
            .map(|(f, r)| format!("  in {f}: {r}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!(
        "{profile}: {relocs} relocations in {}, none to {FORBIDDEN:?}",
        rlib.display()
    );
}

#[test]
fn release_core_never_calls_memcpy_memmove_memset() {
    check("release");
}

#[test]
fn debug_core_never_calls_memcpy_memmove_memset() {
    check("dev");
}
