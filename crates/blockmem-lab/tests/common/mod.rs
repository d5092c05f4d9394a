//! What several of the lab's test binaries share: the CPUs this process may run on,
//! and the `blockmem` command pinned to one CPU.

#![allow(dead_code)] // each test binary uses its own part

/// The number of CPUs in this process's affinity mask (1 if it cannot be read).
pub fn allowed_cpus() -> usize {
    // SAFETY: a plain bit set filled by the call; pid 0 is this thread.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: as above.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return 1;
    }
    // SAFETY: reads the set just filled.
    unsafe { libc::CPU_COUNT(&set) as usize }
}

/// The `blockmem` command, pinned to CPU 0 before it starts.
pub fn blockmem_on_one_cpu() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("blockmem"));
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut c, || {
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut one);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
            Ok(())
        });
    }
    c
}

/// The fields every lab JSON result carries (docs/DESIGN.md, "Lab JSON").
pub const RESULT_FIELDS: [&str; 11] = [
    "method",
    "op",
    "size",
    "src",
    "dst",
    "reuse",
    "min_ns",
    "median_ns",
    "max_ns",
    "gbps",
    "verified",
];

/// Runs `blockmem` with `args` plus `--json DIR/results.json --out DIR/report`, asserts
/// that it succeeded, and returns its stdout and the JSON file's path.
pub fn run_lab_json(args: &[&str], dir: &std::path::Path) -> (String, std::path::PathBuf) {
    let json = dir.join("results.json");
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("blockmem"))
        .args(args)
        .arg("--json")
        .arg(&json)
        .arg("--out")
        .arg(dir.join("report"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (stdout, json)
}
