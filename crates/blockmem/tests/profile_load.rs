//! Loading the calibration profile: from `BLOCKMEM_PROFILE`, from the default path,
//! malformed and unreadable files (the library keeps CPUID defaults and reports the
//! file's line and reason). One test function: the environment is process-wide.

use blockmem::autoload::Source;
use blockmem::dispatch;
use blockmem::profile::{self, ErrorKind, Profile};
use blockmem::KernelId;
use std::fs;

fn defaults() -> Profile {
    Profile::from_caches(&blockmem::cpu::used_caches())
}

#[test]
fn load_from_env_default_path_and_errors() {
    let dir = std::env::temp_dir().join(format!("blockmem-profile-test-{}", std::process::id()));
    fs::create_dir_all(dir.join("xdg/blockmem")).unwrap();

    // 1. A valid file named by BLOCKMEM_PROFILE.
    let good = dir.join("good");
    fs::write(
        &good,
        "# test\nversion = 1\nstream_auto = 3MiB\nprobe_min = 128KiB\ncopy_cold_src = avx2_pf\n",
    )
    .unwrap();
    std::env::set_var("BLOCKMEM_PROFILE", &good);
    assert_eq!(dispatch::reload(), (Source::Env, None));
    let p = dispatch::profile();
    assert_eq!(p.stream_auto, 3 << 20);
    assert_eq!(p.probe_min, 128 << 10);
    assert_eq!(p.copy_cold_src, KernelId::Avx2Pf);
    assert_eq!(
        p.stream_reuse,
        defaults().stream_reuse,
        "keys not in the file keep their defaults"
    );

    // 2. A malformed file: defaults, and the line and reason are reported.
    let bad = dir.join("bad");
    fs::write(
        &bad,
        "version = 1\nstream_auto = 3MiB\ncopy_stream = warp_drive\n",
    )
    .unwrap();
    std::env::set_var("BLOCKMEM_PROFILE", &bad);
    let (src, err) = dispatch::reload();
    assert_eq!(src, Source::Env);
    let err = err.expect("malformed profile reported");
    assert_eq!((err.line, err.kind), (3, ErrorKind::UnknownKernel));
    assert_eq!(
        err.to_string(),
        "line 3: unknown kernel name (see `blockmem info`)"
    );
    assert_eq!(
        dispatch::profile(),
        defaults(),
        "a rejected profile leaves the defaults in force"
    );

    // 3. A version from the future.
    fs::write(&bad, "version = 7\n").unwrap();
    let err = dispatch::reload().1.unwrap();
    assert_eq!(err.kind, ErrorKind::UnsupportedVersion(7));

    // 4. A named file that does not exist.
    std::env::set_var("BLOCKMEM_PROFILE", dir.join("missing"));
    assert_eq!(
        dispatch::reload().1.map(|e| e.kind),
        Some(ErrorKind::Unreadable)
    );

    // 5. The default path under XDG_CACHE_HOME, then nothing at all.
    std::env::remove_var("BLOCKMEM_PROFILE");
    std::env::set_var("XDG_CACHE_HOME", dir.join("xdg"));
    let mut text = String::new();
    let mut want = defaults();
    want.stream_no_reuse = 48 << 10;
    want.zero_stream = KernelId::RepStosb;
    struct W<'a>(&'a mut String);
    impl std::fmt::Write for W<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.push_str(s);
            Ok(())
        }
    }
    profile::render(&mut W(&mut text), &want, &["written by the test"]).unwrap();
    fs::write(dir.join("xdg/blockmem/profile"), &text).unwrap();
    assert_eq!(dispatch::reload(), (Source::DefaultPath, None));
    assert_eq!(dispatch::profile(), want);
    fs::remove_file(dir.join("xdg/blockmem/profile")).unwrap();
    assert_eq!(dispatch::reload(), (Source::Defaults, None));

    // 6. An installed profile wins until the next reload.
    dispatch::install(&want);
    assert_eq!(dispatch::status(), (Source::Installed, None));
    fs::remove_dir_all(&dir).unwrap();
}
