//! `--export-distribution DIR`: the traced calls in the fleetbench format
//! (`crates/blockmem-lab/data/fleet/FORMAT.md`: sizes, overlap probability and
//! alignments, one `x:p` list per line), one file per op family named the way the
//! lab's `fleet` experiment recognises: `Memcpy_<name>.csv` (memcpy, mempcpy),
//! `Memmove_<name>.csv` and `Memset_<name>.csv` (memset and bzero). Alignments pool the
//! source and destination pointers, as the fleet experiment draws both from the same
//! line. Replay with `blockmem lab fleet --distribution DIR` (or one file).
//!
//! Calls larger than `max_size` are left out (the replay needs buffers several times
//! the largest size); the command says how many calls and bytes that dropped.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::analysis::{Analysis, Distribution};

const FAMILIES: [&str; 3] = ["Memcpy", "Memmove", "Memset"];

/// One written file.
#[derive(Debug)]
pub struct Written {
    /// The file.
    pub path: PathBuf,
    /// Calls written.
    pub calls: u64,
    /// Calls left out (larger than the limit).
    pub dropped_calls: u64,
    /// Bytes of those calls.
    pub dropped_bytes: u64,
}

/// A file name part from a program name: its base name, letters, digits, `-` and `.`.
pub fn name_for(argv0: &str) -> String {
    let base = argv0.rsplit('/').next().unwrap_or(argv0);
    let s: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if s.is_empty() {
        "trace".into()
    } else {
        s
    }
}

fn line<'a>(entries: impl Iterator<Item = (u64, u64)> + 'a, total: u64) -> String {
    let mut s = String::new();
    for (x, count) in entries {
        if count == 0 {
            continue;
        }
        if !s.is_empty() {
            s.push(',');
        }
        let _ = write!(s, "{x}:{}", count as f64 / total as f64);
    }
    s
}

/// The three lines of one family, without the calls above `max_size`.
pub fn render(d: &Distribution, max_size: u64) -> Option<(String, u64, u64, u64)> {
    let kept: u64 = d.sizes.range(..=max_size).map(|(_, c)| c).sum();
    if kept == 0 {
        return None;
    }
    let dropped_calls = d.calls - kept;
    let dropped_bytes = d
        .sizes
        .range(max_size.saturating_add(1)..)
        .fold(0u64, |t, (n, c)| t.saturating_add(n.saturating_mul(*c)));
    let sizes = line(d.sizes.range(..=max_size).map(|(&n, &c)| (n, c)), kept);
    // Overlap and alignment over all calls (they do not depend on the size cut much,
    // and the format has no joint distribution).
    let overlap = line(
        [(0, d.calls - d.overlapping), (1, d.overlapping)].into_iter(),
        d.calls,
    );
    let align_total: u64 = d.aligns.iter().sum();
    let aligns = line(
        d.aligns.iter().enumerate().map(|(k, &c)| (1 << k, c)),
        align_total,
    );
    Some((
        format!("{sizes}\n{overlap}\n{aligns}\n"),
        kept,
        dropped_calls,
        dropped_bytes,
    ))
}

/// Writes the files into `dir` (created if needed).
pub fn export(a: &Analysis, dir: &Path, name: &str, max_size: u64) -> Result<Vec<Written>> {
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create --export-distribution directory {}",
            dir.display()
        )
    })?;
    let mut out = Vec::new();
    for (fam, d) in FAMILIES.iter().zip(&a.distributions) {
        let Some((text, calls, dropped_calls, dropped_bytes)) = render(d, max_size) else {
            continue;
        };
        let path = dir.join(format!("{fam}_{name}.csv"));
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        out.push(Written {
            path,
            calls,
            dropped_calls,
            dropped_bytes,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_three_lines_and_cuts_large_sizes() {
        let mut d = Distribution::default();
        d.sizes.insert(8, 3);
        d.sizes.insert(100, 1);
        d.sizes.insert(1 << 30, 1);
        d.calls = 5;
        d.overlapping = 1;
        d.aligns[3] = 6;
        d.aligns[6] = 4;
        let (text, kept, dc, db) = render(&d, 1 << 20).unwrap();
        assert_eq!(text, "8:0.75,100:0.25\n0:0.8,1:0.2\n8:0.6,64:0.4\n");
        assert_eq!((kept, dc, db), (4, 1, 1 << 30));
        assert!(render(&Distribution::default(), 100).is_none());
        assert_eq!(name_for("/usr/bin/python3"), "python3");
        assert_eq!(name_for("a b"), "a-b");
    }
}
