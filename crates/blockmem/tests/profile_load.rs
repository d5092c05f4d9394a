//! Loading the profile: from `BLOCKMEM_PROFILE`, from the default path, and files the
//! loader must reject (a profile of the keyed format of earlier releases, malformed
//! lines, missing, too large, not a regular file). A rejected file leaves the built-in
//! table of the CPU class in force and reports the line and the reason. One test
//! function: the environment is process-wide.

mod common;

use blockmem::autoload::{self, Source};
use blockmem::builtin::Class;
use blockmem::kernel::{KernelId, Op};
use blockmem::profile::{self, ErrorKind, Family, ProfileError, State, Table};
use blockmem::{cpu, dispatch, Hint};
use std::fs;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// The built-in table the loader falls back to on this CPU.
fn builtin() -> &'static Table {
    dispatch::builtin_class().table()
}

/// The effective LLC a table without one is compiled with.
fn llc_default() -> usize {
    cpu::llc_estimate(cpu::used_caches().llc.size, autoload::cpus_available())
}

/// Loads `text` from `path` (named by `BLOCKMEM_PROFILE`) and returns what the
/// dispatcher reports.
fn load(path: &Path, text: &str) -> (Source, Option<ProfileError>) {
    fs::write(path, text).unwrap();
    std::env::set_var("BLOCKMEM_PROFILE", path);
    dispatch::reload()
}

/// The loader reports `kind` at `line` for `text`, and the built-in table is in force.
fn rejected(path: &Path, text: &str, line: usize, kind: ErrorKind) -> ProfileError {
    let (source, err) = load(path, text);
    assert_eq!(source, Source::Env);
    let err = err.unwrap_or_else(|| panic!("accepted: {text:?}"));
    assert_eq!((err.line, err.kind), (line, kind), "{text:?}");
    assert_eq!(dispatch::status(), (Source::Env, Some(err)));
    assert_eq!(
        dispatch::table(),
        builtin(),
        "a rejected profile leaves the built-in table in force: {text:?}"
    );
    assert_eq!(dispatch::plan().llc_effective(), llc_default());
    err
}

struct W<'a>(&'a mut String);
impl std::fmt::Write for W<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.push_str(s);
        Ok(())
    }
}

#[test]
fn load_from_env_default_path_and_errors() {
    let _state = common::lock_global();
    let saved: Vec<_> = ["BLOCKMEM_PROFILE", "XDG_CACHE_HOME", "HOME"]
        .map(|k| (k, std::env::var_os(k)))
        .into();
    let dir = std::env::temp_dir().join(format!("blockmem-profile-test-{}", std::process::id()));
    fs::create_dir_all(dir.join("xdg/blockmem")).unwrap();
    let file = dir.join("profile");

    // 1. A version-2 file named by BLOCKMEM_PROFILE: its rows and scalars, the rows it
    //    lacks from the built-in table.
    let good = "# written by hand\nversion = 2\nllc_effective = 24MiB\n\
                copy.auto.unknown = from 0: sse2; from 8KiB: rep_movsb # rep from 8 KiB\n\
                set.noreuse.cold = from 0: sse2; from 16KiB: rep_stosb\n";
    assert_eq!(load(&file, good), (Source::Env, None));
    let t = dispatch::table();
    assert_eq!(
        t.row(Family::Copy, Hint::Auto, State::Unknown).to_string(),
        "from 0: sse2; from 8KiB: rep_movsb"
    );
    assert_eq!(
        t.row(Family::Set, Hint::NoReuse, State::Cold).to_string(),
        "from 0: sse2; from 16KiB: rep_stosb"
    );
    for (fam, hint, st, row) in t.keyed_rows() {
        let from_file = matches!(
            (fam, hint, st),
            (Family::Copy, Hint::Auto, State::Unknown) | (Family::Set, Hint::NoReuse, State::Cold)
        );
        if !from_file {
            assert_eq!(row, builtin().row(fam, hint, st), "{fam:?} {hint:?} {st:?}");
        }
    }
    assert_eq!(t.llc_effective, 24 << 20);
    assert_eq!(dispatch::plan().llc_effective(), 24 << 20);
    if cfg!(target_arch = "x86_64") {
        assert_eq!(
            dispatch::choose(Op::Copy, 1 << 30, Hint::Auto, false),
            Some(KernelId::RepMovsb),
            "the file's row decides"
        );
    }

    // 2. A profile of the keyed format of earlier releases: rejected by its version.
    let err = rejected(
        &file,
        "# blockmem profile\nversion = 1\nstream_auto = 3MiB\nprobe_min = 128KiB\n",
        2,
        ErrorKind::UnsupportedVersion(1),
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with("line 2: unsupported profile version")
            && msg.contains("re-run `blockmem calibrate`")
            && msg.ends_with("(found version 1)"),
        "{msg}"
    );
    rejected(&file, "version = 7\n", 1, ErrorKind::UnsupportedVersion(7));

    // 3. Malformed lines, each named with its line (comments and blank lines count).
    let err = rejected(
        &file,
        "# comment\nversion = 2\n\ncopy.auto.unknown = from 0: avx2\ncopy.auto.cold = from 0: warp_drive\n",
        5,
        ErrorKind::UnknownKernel,
    );
    assert_eq!(
        err.to_string(),
        "line 5: unknown kernel name (`blockmem info` lists them)"
    );
    rejected(
        &file,
        "version = 2\nset.auto.unknown = from 0: avx2\nset.auto.cold = from 0: avx2; from 8KiB: probe\n",
        3,
        ErrorKind::ProbeInKnownRow,
    );
    rejected(
        &file,
        "copy.auto.unknown = from 0: avx2\nversion = 2\n",
        1,
        ErrorKind::MissingVersion,
    );
    rejected(
        &file,
        "version = 2\ncopy.reuse.cold = from 0: avx2; from 4KiB: sse2; from 1KiB: avx2\n",
        2,
        ErrorKind::BandsNotIncreasing,
    );
    rejected(
        &file,
        "version = 2\n\n\nstream_auto = 3MiB\n",
        4,
        ErrorKind::UnknownKey,
    );
    rejected(
        &file,
        "version = 2\ncopy.auto.cold = from 0: rep_stosb\n",
        2,
        ErrorKind::WrongKernelForFamily,
    );
    let mut big = String::from("version = 2\n");
    while big.len() <= autoload::MAX_PROFILE_BYTES {
        big.push_str("# padding\n");
    }
    rejected(&file, &big, 0, ErrorKind::TooLarge);

    // 4. A named file that does not exist.
    std::env::set_var("BLOCKMEM_PROFILE", dir.join("missing"));
    let (source, err) = dispatch::reload();
    assert_eq!(source, Source::Env);
    let err = err.unwrap();
    assert_eq!((err.line, err.kind), (0, ErrorKind::Unreadable));
    assert_eq!(err.to_string(), ErrorKind::Unreadable.reason());
    assert_eq!(dispatch::table(), builtin());

    // 5. Paths that are not regular files: rejected at once, never read (a FIFO
    //    without a writer would block a reader forever).
    std::env::set_var("BLOCKMEM_PROFILE", &dir);
    assert_eq!(
        dispatch::reload().1.map(|e| (e.line, e.kind)),
        Some((0, ErrorKind::NotRegularFile)),
        "a directory"
    );
    assert_eq!(dispatch::table(), builtin());
    let fifo = dir.join("fifo");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    // Should the loader block in `open` or `read`, a writer that opens and closes the
    // FIFO after a while lets it go on (to fail the test, not to hang it).
    let (done, watchdog) = mpsc::channel::<()>();
    let fifo_for_watchdog = fifo.clone();
    std::thread::spawn(move || {
        if watchdog.recv_timeout(Duration::from_secs(60)).is_err() {
            drop(fs::OpenOptions::new().write(true).open(&fifo_for_watchdog));
        }
    });
    std::env::set_var("BLOCKMEM_PROFILE", &fifo);
    let found = dispatch::reload().1.map(|e| (e.line, e.kind));
    done.send(()).unwrap();
    assert_eq!(found, Some((0, ErrorKind::NotRegularFile)), "a FIFO");
    assert_eq!(dispatch::table(), builtin());
    std::env::set_var("BLOCKMEM_PROFILE", "/dev/null");
    assert_eq!(
        dispatch::reload().1.map(|e| e.kind),
        Some(ErrorKind::NotRegularFile),
        "a character device"
    );
    // Devices that would never end a read (`/dev/zero`) or that always read as empty.
    for device in ["/dev/zero", "/dev/full", "/dev/urandom"] {
        std::env::set_var("BLOCKMEM_PROFILE", device);
        assert_eq!(
            dispatch::reload().1.map(|e| e.kind),
            Some(ErrorKind::NotRegularFile),
            "{device}"
        );
    }

    // 6. The default path under XDG_CACHE_HOME (an empty BLOCKMEM_PROFILE counts as
    //    unset), then under HOME, then nothing at all.
    std::env::set_var("BLOCKMEM_PROFILE", "");
    std::env::set_var("XDG_CACHE_HOME", dir.join("xdg"));
    let mut want = Class::Baseline.table().clone();
    want.llc_effective = 6 << 20;
    want.probe_hit_max = 222;
    want.row_mut(Family::Copy, Hint::NoReuse, State::Cold)
        .push(48 << 10, profile::Action::Run(KernelId::RepMovsb))
        .unwrap();
    let mut text = String::new();
    profile::render(
        &mut W(&mut text),
        &want,
        &["written by the test"],
        &|_, _, _| Some("evidence line"),
    )
    .unwrap();
    let default_file = dir.join("xdg/blockmem/profile");
    fs::write(&default_file, &text).unwrap();
    assert_eq!(dispatch::reload(), (Source::DefaultPath, None));
    assert_eq!(dispatch::table(), &want);
    assert_eq!(dispatch::plan().probe_hit_max(), 222);
    fs::remove_file(&default_file).unwrap();
    assert_eq!(dispatch::reload(), (Source::Defaults, None));
    assert_eq!(dispatch::table(), builtin());
    std::env::remove_var("XDG_CACHE_HOME");
    std::env::set_var("HOME", dir.join("home"));
    fs::create_dir_all(dir.join("home/.cache/blockmem")).unwrap();
    fs::write(dir.join("home/.cache/blockmem/profile"), &text).unwrap();
    assert_eq!(dispatch::reload(), (Source::DefaultPath, None));
    assert_eq!(dispatch::table(), &want);
    fs::create_dir(&default_file).unwrap();
    std::env::set_var("XDG_CACHE_HOME", dir.join("xdg"));
    assert_eq!(
        dispatch::reload(),
        (
            Source::DefaultPath,
            Some(ProfileError {
                line: 0,
                kind: ErrorKind::NotRegularFile
            })
        ),
        "a directory at the default path"
    );
    fs::remove_dir(&default_file).unwrap();
    assert_eq!(dispatch::reload(), (Source::Defaults, None));

    // 7. An installed table wins until the next reload.
    dispatch::install(&want);
    assert_eq!(dispatch::status(), (Source::Installed, None));
    assert_eq!(dispatch::table(), &want);

    for (k, v) in saved {
        match v {
            Some(v) => std::env::set_var(k, v),
            None => std::env::remove_var(k),
        }
    }
    fs::remove_dir_all(&dir).unwrap();
}
