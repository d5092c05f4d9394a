//! Shared by the shim's and the C library's integration tests (the ffi crate includes
//! this file with `#[path]`): build the artifacts under test, compile the C programs
//! in `tests/c/`, run programs and read the shim's statistics line.
//!
//! `cargo test` does not build the shim (a `cdylib` no test links), and the shim must be
//! built with `-C panic=abort` anyway, so the tests build it themselves with a nested
//! cargo into the same target directory (cargo releases its lock while tests run; the
//! core's artifacts are reused). The result lands where `blockmem run` and
//! `scripts/install.sh` look for it: `<target>/release/libblockmem_preload.so`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The cargo target directory this test binary was built in: the nearest ancestor
/// holding cargo's `CACHEDIR.TAG` (robust to `--target <triple>` layouts).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.ancestors()
        .find(|d| d.join("CACHEDIR.TAG").is_file())
        .unwrap_or_else(|| exe.parent().unwrap().parent().unwrap().parent().unwrap())
        .to_path_buf()
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// Scratch directory for compiled test programs and data.
pub fn scratch(name: &str) -> PathBuf {
    let d = target_dir().join("blockmem-tests").join(name);
    std::fs::create_dir_all(&d).expect("create scratch dir");
    d
}

fn cargo(args: &[&str]) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .arg(args[0])
        .arg("--target-dir")
        .arg(target_dir())
        .args(&args[1..])
        .current_dir(workspace())
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The deployable shim, built once per test process with `-C panic=abort`.
pub fn shim() -> &'static Path {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| {
        cargo(&[
            "rustc",
            "--release",
            "-p",
            "blockmem-preload",
            "--",
            "-C",
            "panic=abort",
        ]);
        let p = target_dir().join("release/libblockmem_preload.so");
        assert!(p.is_file(), "{} was not built", p.display());
        p
    })
}

/// The trace I/O library `blockmem trace` preloads beside the shim, built once per test
/// process next to it (`<target>/release/libblockmem_traceio.so`).
pub fn traceio() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        cargo(&["build", "--release", "-p", "blockmem-traceio"]);
        let p = target_dir().join("release/libblockmem_traceio.so");
        assert!(p.is_file(), "{} was not built", p.display());
        p
    })
}

/// The C library's release artifacts (`libblockmem_ffi.a`, `libblockmem_ffi.so`), built
/// once per test process. Returns the directory holding them.
pub fn ffi_libs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        cargo(&["build", "--release", "-p", "blockmem-ffi"]);
        let d = target_dir().join("release");
        assert!(d.join("libblockmem_ffi.a").is_file());
        d
    })
}

/// The C sources directory (`crates/blockmem-preload/tests/c`).
pub fn c_dir() -> PathBuf {
    workspace().join("crates/blockmem-preload/tests/c")
}

/// The reference object: `ref.c` compiled so that it can call nothing (no builtins,
/// no loop-to-memcpy rewriting).
pub fn ref_object(dir: &Path) -> PathBuf {
    let obj = dir.join("ref.o");
    let tmp = private_path(&obj);
    cc(&[
        "-O3",
        "-fno-builtin",
        "-fno-tree-loop-distribute-patterns",
        "-c",
        c_dir().join("ref.c").to_str().unwrap(),
        "-o",
        tmp.to_str().unwrap(),
    ]);
    publish(&tmp, &obj);
    obj
}

/// A path next to `target` that no other test thread or process writes: tests running
/// in parallel build the same outputs, and one linking `ref.o` while another rewrote it
/// found it empty (CI: undefined references to `ref_copy`).
fn private_path(target: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let mut name = target.file_name().unwrap().to_os_string();
    name.push(format!(
        ".{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    target.with_file_name(name)
}

/// Moves a finished build output into place in one step (`rename` replaces atomically).
fn publish(tmp: &Path, target: &Path) {
    std::fs::rename(tmp, target)
        .unwrap_or_else(|e| panic!("rename {} to {}: {e}", tmp.display(), target.display()));
}

/// Runs the C compiler with `args`, panicking with its output on failure.
pub fn cc(args: &[&str]) {
    let out = Command::new("cc")
        .args(["-Wall", "-Wextra", "-Werror"])
        .args(args)
        .output()
        .expect("run cc (scripts/deps.sh installs gcc)");
    assert!(
        out.status.success(),
        "cc {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles `tests/c/<name>.c` with the reference object into `dir/<name>`, with
/// `-O2 -D_FORTIFY_SOURCE=2` and any extra arguments (placed after the sources).
pub fn build_c_program(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let exe = dir.join(name);
    let src = c_dir().join(format!("{name}.c"));
    let reference = ref_object(dir);
    let tmp = private_path(&exe);
    let mut args = vec![
        "-O2",
        "-D_FORTIFY_SOURCE=2",
        src.to_str().unwrap(),
        reference.to_str().unwrap(),
        "-o",
        tmp.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    cc(&args);
    publish(&tmp, &exe);
    exe
}

/// A command with the shim preloaded, as hermetic as [`plain`].
pub fn under_shim(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = plain(program);
    c.env("LD_PRELOAD", shim());
    c
}

/// The same command without the shim. Hermetic: no `BLOCKMEM_*` variable of the
/// test's environment, and `XDG_CACHE_HOME` pointing at an empty directory, so that a
/// calibration profile the developer has at the default path does not change what the
/// tests run (tests that want a profile set `BLOCKMEM_PROFILE`).
pub fn plain(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    c.env_remove("LD_PRELOAD");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("BLOCKMEM_") {
            c.env_remove(k);
        }
    }
    c.env("XDG_CACHE_HOME", scratch("empty-xdg-cache"));
    c
}

/// Runs `c`, returns its output, and panics with stdout/stderr if it failed.
pub fn run_ok(c: &mut Command) -> Output {
    let out = c.output().unwrap_or_else(|e| panic!("spawn {c:?}: {e}"));
    assert!(
        out.status.success(),
        "{c:?} failed with {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// One `BLOCKMEM_STATS=1` line: calls and bytes per op and per kernel.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub pid: u64,
    /// `(op, calls, bytes)` for copy, move, set, zero.
    pub ops: Vec<(String, u64, u64)>,
    /// `(kernel, calls, bytes)` for kernels with calls.
    pub kernels: Vec<(String, u64, u64)>,
    pub line: String,
}

impl Stats {
    pub fn calls(&self) -> u64 {
        self.ops.iter().map(|o| o.1).sum()
    }
    pub fn op(&self, name: &str) -> (u64, u64) {
        self.ops
            .iter()
            .find(|o| o.0 == name)
            .map_or((0, 0), |o| (o.1, o.2))
    }
    pub fn kernel(&self, name: &str) -> (u64, u64) {
        self.kernels
            .iter()
            .find(|k| k.0 == name)
            .map_or((0, 0), |k| (k.1, k.2))
    }
}

fn pairs(s: &str) -> Vec<(String, u64, u64)> {
    let words: Vec<&str> = s.split_whitespace().collect();
    words
        .chunks(2)
        .filter_map(|w| {
            let (calls, bytes) = w.get(1)?.split_once('/')?;
            Some((w[0].to_string(), calls.parse().ok()?, bytes.parse().ok()?))
        })
        .collect()
}

/// Every statistics line in `stderr`.
pub fn stats_lines(stderr: &[u8]) -> Vec<Stats> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("blockmem: pid ")?;
            let (pid, rest) = rest.split_once(" calls/bytes: ")?;
            let mut parts = rest.split("; ");
            let ops = pairs(parts.next()?);
            let kernels = pairs(parts.next()?.strip_prefix("kernels:")?);
            Some(Stats {
                pid: pid.parse().ok()?,
                ops,
                kernels,
                line: line.to_string(),
            })
        })
        .collect()
}

/// One per-thread `BLOCKMEM_STATS=1` line: `blockmem: pid P WHO: calls C bytes B
/// temporal T streamed S libc L; sizes <=128 N …`, where WHO is `tid T`, `threads N`
/// (all threads, `threads N and others` when some shared the last slot) or
/// `other threads`.
#[derive(Debug, Default, Clone)]
pub struct ThreadStats {
    pub pid: u64,
    /// What the line counts: `tid 123`, `threads 10`, `other threads`.
    pub who: String,
    pub calls: u64,
    pub bytes: u64,
    pub temporal: u64,
    pub streamed: u64,
    pub libc: u64,
    /// Calls per size band, in the line's order.
    pub sizes: Vec<(String, u64)>,
    pub line: String,
}

impl ThreadStats {
    /// The kernel tid of a `tid T` line.
    pub fn tid(&self) -> Option<u64> {
        self.who.strip_prefix("tid ")?.parse().ok()
    }
}

/// Every per-thread statistics line in `stderr`, in order.
pub fn thread_stats_lines(stderr: &[u8]) -> Vec<ThreadStats> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("blockmem: pid ")?;
            let (pid, rest) = rest.split_once(' ')?;
            let (who, rest) = rest.split_once(": calls ")?;
            let (counts, sizes) = rest.split_once("; sizes ")?;
            let words: Vec<&str> = counts.split_whitespace().collect();
            let field = |name: &str| -> Option<u64> {
                let at = words.iter().position(|w| *w == name)?;
                words.get(at + 1)?.parse().ok()
            };
            let sizes: Vec<&str> = sizes.split_whitespace().collect();
            Some(ThreadStats {
                pid: pid.parse().ok()?,
                who: who.to_string(),
                calls: words.first()?.parse().ok()?,
                bytes: field("bytes")?,
                temporal: field("temporal")?,
                streamed: field("streamed")?,
                libc: field("libc")?,
                sizes: sizes
                    .chunks(2)
                    .map(|w| Some((w[0].to_string(), w.get(1)?.parse().ok()?)))
                    .collect::<Option<_>>()?,
                line: line.to_string(),
            })
        })
        .collect()
}

/// What `tests/c/thread_sums_test.c` reports on stderr for each of its threads:
/// `(kernel tid, calls, bytes)`, in thread order.
pub fn thread_sums_reported(stderr: &[u8]) -> Vec<(u64, u64, u64)> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l
                .strip_prefix("thread_sums_test: thread ")?
                .split_whitespace()
                .collect();
            // "<i> tid <tid> calls <c> bytes <b>"
            Some((w[2].parse().ok()?, w[4].parse().ok()?, w[6].parse().ok()?))
        })
        .collect()
}

/// The sizes `tests/c/thread_sums_test.c` copies, moves and sets with `LOG2`.
pub fn thread_sums_sizes(log2: u32) -> Vec<u64> {
    let mut v = Vec::new();
    for k in 0..=log2 {
        v.push(1u64 << k);
        if k >= 2 {
            v.push((3u64 << (k - 1)) + 1);
        }
    }
    v
}

/// True if `tool` runs (`tool --version`).
pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Each assembly entry as `memops_test slots` printed it ("slot NAME" and its first
/// sixteen bytes, then "route NAME open|closed" for a routed entry): its form, decoded
/// by the core (`None`: not an entry, the general path), and for a routed entry whether
/// its AVX-512 bodies run.
#[cfg(target_arch = "x86_64")]
pub fn slots(
    stdout: &[u8],
) -> Vec<(
    String,
    Option<blockmem::arch::x86_64::entry::Bodies>,
    Option<bool>,
)> {
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .filter_map(|l| l.strip_prefix("slot "))
        .map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next().unwrap_or_default().to_string();
            let bytes: Vec<u8> = words.map(|w| u8::from_str_radix(w, 16).unwrap()).collect();
            let first: [u8; 16] = bytes.try_into().expect("sixteen bytes per entry");
            let form = blockmem::arch::x86_64::entry::bodies_of(first, 0).map(|(b, _)| b);
            let route = text
                .lines()
                .find_map(|r| r.strip_prefix(&format!("route {name} ")))
                .map(|r| r == "open");
            (name, form, route)
        })
        .collect()
}

/// The bodies an IFUNC entry of the C ABI binds to on this CPU with `mask` masked off
/// (`None`: the general path).
#[cfg(target_arch = "x86_64")]
pub fn expected_bodies(mask: &str) -> Option<blockmem::arch::x86_64::entry::Bodies> {
    use blockmem::arch::x86_64::entry::{Bodies, LEVEL_AVX2, LEVEL_AVX512};
    match expected_level(mask) {
        LEVEL_AVX512 => Some(Bodies::Avx512),
        LEVEL_AVX2 => Some(Bodies::Avx2),
        _ => None,
    }
}

/// The level of entry bodies this CPU runs with `mask` masked off
/// (`BLOCKMEM_MASK_FEATURES`: "", "avx512f" or "avx").
#[cfg(target_arch = "x86_64")]
pub fn expected_level(mask: &str) -> u8 {
    use blockmem::arch::x86_64::entry::{level_of, mask_of};
    level_of(blockmem::cpu::detected_features().without(mask_of(mask.as_bytes()).with_dependents()))
}
