//! `BLOCKMEM_PROFILE` and `BLOCKMEM_TRACE` naming something other than a regular file —
//! a FIFO with no writer, a directory, `/dev/zero`, `/dev/full` — never hang, never
//! write beside the path, and never change what the program does: a shell pipeline
//! (`gzip -c | gunzip | sha256sum`, four processes) under the shim returns at once
//! with the right digest and exactly one message naming the path and the reason (the
//! first process reports, its children stay silent). A trace that cannot be written
//! (a file size limit) says so once and the program still runs correctly.

mod common;

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Past this a run counts as hung (each finishes in well under a second).
const HANG: Duration = Duration::from_secs(20);

/// Runs `c` with a deadline; returns (exit code, stdout, stderr, time). A run past
/// [`HANG`] is killed and fails the test instead of blocking the suite.
fn run_with_deadline(c: &mut Command) -> (Option<i32>, String, String, Duration) {
    let t = Instant::now();
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sh");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).unwrap();
        s
    });
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (
                status.code(),
                reader.join().unwrap(),
                err_reader.join().unwrap(),
                t.elapsed(),
            );
        }
        if t.elapsed() > HANG {
            // The whole process group: the pipeline's processes too.
            // SAFETY: kill(2) on the process group this test created.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            child.wait().unwrap();
            panic!("{c:?} hung: killed after {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The pipeline, in its own process group (so a hang can be killed whole).
fn pipeline(dir: &Path, shimmed: bool) -> Command {
    let mut c = if shimmed {
        under_shim("sh")
    } else {
        plain("sh")
    };
    c.args(["-c", "gzip -c < data | gunzip | sha256sum"])
        .current_dir(dir);
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    c
}

fn setup(name: &str) -> std::path::PathBuf {
    assert!(have("gzip"), "gzip is not installed: run scripts/deps.sh");
    let dir = scratch(name);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let data: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 56) as u8 & 0x3f
        })
        .collect();
    fs::write(dir.join("data"), data).unwrap();
    let fifo = dir.join("fifo");
    let _ = fs::remove_file(&fifo);
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    fs::create_dir_all(dir.join("dir")).unwrap();
    dir
}

/// Every file in `dir` (to see that nothing was written beside a refused path).
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn profile_and_trace_paths_that_are_not_regular_files_are_refused_at_once() {
    let dir = setup("hostile-paths");
    let (code, want, _, _) = run_with_deadline(&mut pipeline(&dir, false));
    assert_eq!(code, Some(0));
    let before = listing(&dir);
    let cases = [
        ("fifo", dir.join("fifo"), "is a FIFO"),
        ("directory", dir.join("dir"), "is a directory"),
        ("/dev/zero", "/dev/zero".into(), "is a device"),
        ("/dev/full", "/dev/full".into(), "is a device"),
    ];
    for (what, path, reason) in &cases {
        for var in ["BLOCKMEM_PROFILE", "BLOCKMEM_TRACE"] {
            let (code, out, err, took) = run_with_deadline(pipeline(&dir, true).env(var, path));
            let case = format!("{var}={} ({what}): {took:?}\n{err}", path.display());
            assert_eq!(code, Some(0), "{case}");
            assert_eq!(out, want, "{case}");
            assert!(took < Duration::from_secs(10), "{case}");
            let messages: Vec<&str> = err.lines().filter(|l| l.starts_with("blockmem")).collect();
            assert_eq!(messages.len(), 1, "one message per process tree: {case}");
            let m = messages[0];
            assert!(
                m.contains(&path.display().to_string()),
                "names the path: {case}"
            );
            if var == "BLOCKMEM_TRACE" {
                assert!(m.contains(reason) && m.ends_with("; not tracing"), "{case}");
            } else {
                assert!(m.contains("rejected: not a regular file"), "{case}");
            }
            assert_eq!(listing(&dir), before, "nothing written beside it: {case}");
            assert_eq!(listing(&dir.join("dir")), Vec::<String>::new(), "{case}");
        }
    }
}

#[test]
fn an_uncreatable_trace_is_reported_and_a_failed_write_is_reported_once() {
    let dir = setup("hostile-trace-write");
    let (_, want, _, _) = run_with_deadline(&mut pipeline(&dir, false));
    let missing = dir.join("no-such-dir/trace");
    let (code, out, err, _) =
        run_with_deadline(pipeline(&dir, true).env("BLOCKMEM_TRACE", &missing));
    assert_eq!((code, out.as_str()), (Some(0), want.as_str()), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot create the file: no such file or directory"),
        "{err}"
    );
    // A 16 KiB file size limit (SIGXFSZ ignored, so writes fail with EFBIG): a perl
    // loop of 100,000 concatenations traces well past it.
    for f in listing(&dir).iter().filter(|f| f.starts_with("t")) {
        fs::remove_file(dir.join(f)).unwrap();
    }
    let script = "trap '' XFSZ; ulimit -f 16; perl -e 'my $s = \"x\" x 100; my $n = 0; \
                  for (1..100000) { my $t = $s . $_; $n += length $t } print \"$n\\n\"' | cat";
    let mut c = under_shim("bash");
    c.args(["-c", script])
        .current_dir(&dir)
        .env("BLOCKMEM_TRACE", dir.join("t"));
    let (code, out, err, _) = run_with_deadline(&mut c);
    assert_eq!((code, out.trim()), (Some(0), "10488895"), "{err}");
    let failures: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("writing the trace"))
        .collect();
    assert_eq!(failures.len(), 1, "{err}");
    assert!(failures[0].contains("file too large"), "{err}");
}
