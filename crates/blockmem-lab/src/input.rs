//! Reading the files a user names (traces, lab JSON, statistics), which may be
//! anything: a FIFO with no writer would block `open` and a device like `/dev/zero`
//! would never end a read. A file is opened non-blocking and close-on-exec, checked
//! with `fstat` to be a regular file, and only then read.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{bail, Context, Result};

fn open_regular(path: &Path) -> Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let meta = f
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!(
            "cannot read {}: not a regular file (a directory, FIFO or device); name a file",
            path.display()
        );
    }
    Ok(f)
}

/// The bytes of the regular file at `path`.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    let mut f = open_regular(path)?;
    let mut data = Vec::new();
    f.read_to_end(&mut data)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(data)
}

/// The text of the regular file at `path`.
pub fn read_to_string(path: &Path) -> Result<String> {
    String::from_utf8(read(path)?).with_context(|| format!("{} is not UTF-8 text", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_and_fifos_are_refused_without_blocking() {
        for p in ["/dev/zero", "/dev/null", "/tmp"] {
            let e = read(Path::new(p)).unwrap_err().to_string();
            assert!(e.contains("not a regular file"), "{p}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read(&fifo).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(read_to_string(&file).unwrap(), "x");
    }
}
