//! The calibration profile: the tunables the policy uses, as a versioned plain-text
//! `key = value` file that `blockmem calibrate` writes and the library loads once.
//!
//! ```text
//! # blockmem calibration profile
//! version = 1
//! stream_auto = 96MiB          # Auto: stream from here when nothing else is known
//! stream_auto_cold_dst = 64KiB # Auto: stream from here when the probe says dst is cold
//! ...
//! ```
//!
//! Parsing needs no allocation and never panics: [`parse`] walks the bytes and reports
//! the first problem as a [`ProfileError`] with its 1-based line and a reason. Every key
//! is optional; a missing key keeps its default (CPUID-derived, see
//! [`Profile::from_caches`]), and the [`Provenance`] [`parse`] returns says which keys came
//! from the file.

use crate::cpu::UsedCaches;
use crate::kernel::KernelId;
use core::fmt;

/// The profile format version this build reads and writes.
pub const VERSION: u32 = 1;

/// Every tunable the policy uses. Sizes in bytes, latencies in TSC cycles.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Profile {
    /// `Auto` without probe information: stream (non-temporal stores) at and above this.
    pub stream_auto: usize,
    /// `Auto` when the destination probe says "not cached": stream at and above this.
    pub stream_auto_cold_dst: usize,
    /// `NoReuse`: stream at and above this.
    pub stream_no_reuse: usize,
    /// `Reuse`: stream only at and above this (the block cannot stay cached anyway).
    pub stream_reuse: usize,
    /// Every hint probes a line of the destination (the middle, past `llc_effective` half
    /// of it from the end: [`crate::policy::probe_offset`]) (and of the source where its
    /// state changes the kernel) from this size up, `NoReuse` also from its streaming
    /// size (0 disables probing).
    pub probe_min: usize,
    /// A probe load taking at most this many TSC cycles found its line in cache.
    pub probe_hit_max: u32,
    /// Temporal copy kernel (`avx2`, `avx2_pf`, `sse2`, `rep_movsb`, …).
    pub copy_temporal: KernelId,
    /// Temporal copy kernel from [`Profile::stream_auto`] up, for blocks past the cache
    /// that are not streamed (a destination that probes cached, `Reuse`): here `avx512`
    /// wins in cache but runs 10–40% behind `avx2` on 64 MiB copies.
    pub copy_temporal_large: KernelId,
    /// From [`Profile::copy_robust_min`] to [`Profile::copy_robust_max`] (at most
    /// [`Profile::stream_auto`]), the kernel for
    /// every copy that is not streamed and was not probed: calibration picks it where it
    /// is as fast without probes as probing and then running each state's kernel, so
    /// telling the states apart buys nothing (`avx512_pw` here). A call that probes
    /// anyway there (to decide streaming) runs the kernel of the states found.
    pub copy_robust: KernelId,
    /// See [`Profile::copy_robust`] (`usize::MAX`: never).
    pub copy_robust_min: usize,
    /// See [`Profile::copy_robust`]: the first size above its range (exclusive;
    /// `usize::MAX`: up to `stream_auto`).
    pub copy_robust_max: usize,
    /// Temporal copy kernel when the source probes cold (`avx2_pf` if prefetching pays).
    pub copy_cold_src: KernelId,
    /// A probing copy probes its source too (where [`Profile::copy_cold_src`] differs
    /// from the temporal kernel and the destination did not probe cold) from this size:
    /// below it the source's probe costs more than the cold-source kernel gains (a cold
    /// block's probe waits for a page walk and two memory loads with the pipeline
    /// stopped: ~560 ns here). 0: wherever the call probes; `usize::MAX`: never.
    pub probe_src_min: usize,
    /// Temporal copy kernel when the destination probes cold (`rep_movsb` where its
    /// fast-string stores skip the read-for-ownership).
    pub copy_cold_dst: KernelId,
    /// Streaming copy kernel (`avx2_nt`, `avx2_pf_nt`).
    pub copy_stream: KernelId,
    /// Temporal set/zero kernel.
    pub set_temporal: KernelId,
    /// Temporal set/zero kernel when the destination probes cold.
    pub set_cold_dst: KernelId,
    /// Streaming set kernel.
    pub set_stream: KernelId,
    /// Streaming zero kernel (`avx2_nt`, `clzero`, `rep_stosb`).
    pub zero_stream: KernelId,
    /// Window `[min, max)` where `rep movsb` beats the temporal copy kernel (0, 0: none).
    pub rep_movsb_min: usize,
    /// See [`Profile::rep_movsb_min`].
    pub rep_movsb_max: usize,
    /// Window `[min, max)` where `rep stosb` beats the temporal set kernel on cached
    /// destinations (0, 0: none).
    pub rep_stosb_min: usize,
    /// See [`Profile::rep_stosb_min`].
    pub rep_stosb_max: usize,
    /// Largest size that still fits in the LLC as measured (informational; defaults
    /// derive from it).
    pub llc_effective: usize,
}

/// `NoReuse` never streams below this: under a few KiB the `sfence` and the partial
/// write-combining buffers cost more than the read-for-ownership they save.
pub const MIN_STREAM_NO_REUSE: usize = 16 << 10;

/// Default probe threshold in TSC cycles: an LLC hit on current x86 is 40–80 cycles, a
/// DRAM access 200+ (more under a hypervisor). Calibration replaces it.
pub const DEFAULT_PROBE_HIT_MAX: u32 = 150;

impl Profile {
    /// The defaults of a small machine, as a constant (used while the real defaults
    /// are being derived, so producing it cannot copy memory).
    pub const FALLBACK: Profile =
        Profile::from_llc(crate::cpu::DEFAULT_L2, crate::cpu::DEFAULT_LLC);

    /// CPUID-derived defaults: `Auto` streams from half the LLC (source and destination
    /// together no longer fit), or from half the L2 when the probe says the
    /// destination is cold; `NoReuse` from half the L2 (at least
    /// [`MIN_STREAM_NO_REUSE`]); `Reuse` from twice the LLC. Probing is off until
    /// calibration has measured that it pays. AVX2 kernels are named here; the policy
    /// substitutes the best available one when a named kernel cannot run.
    pub fn from_caches(c: &UsedCaches) -> Profile {
        Profile::from_llc(c.l2.size, c.llc.size)
    }

    const fn from_llc(l2: usize, llc: usize) -> Profile {
        let half_l2 = if l2 / 2 > MIN_STREAM_NO_REUSE {
            l2 / 2
        } else {
            MIN_STREAM_NO_REUSE
        };
        Profile {
            stream_auto: if llc / 2 > half_l2 { llc / 2 } else { half_l2 },
            stream_auto_cold_dst: half_l2,
            stream_no_reuse: half_l2,
            stream_reuse: llc.saturating_mul(2),
            probe_min: 0,
            probe_hit_max: DEFAULT_PROBE_HIT_MAX,
            copy_temporal: KernelId::Avx2,
            copy_temporal_large: KernelId::Avx2,
            copy_robust: KernelId::Avx2,
            copy_robust_min: usize::MAX,
            copy_robust_max: usize::MAX,
            copy_cold_src: KernelId::Avx2,
            probe_src_min: 0,
            copy_cold_dst: KernelId::Avx2,
            copy_stream: KernelId::Avx2Nt,
            set_temporal: KernelId::Avx2,
            set_cold_dst: KernelId::Avx2,
            set_stream: KernelId::Avx2Nt,
            zero_stream: KernelId::Avx2Nt,
            rep_movsb_min: 0,
            rep_movsb_max: 0,
            rep_stosb_min: 0,
            rep_stosb_max: 0,
            llc_effective: llc,
        }
    }
}

/// One key of the file: name, documentation, and how to read and write it.
struct Key {
    name: &'static str,
    doc: &'static str,
    kind: Kind,
}

#[derive(Clone, Copy)]
enum Kind {
    Size(fn(&mut Profile) -> &mut usize),
    Cycles(fn(&mut Profile) -> &mut u32),
    Kernel(fn(&mut Profile) -> &mut KernelId),
}

const KEYS: [Key; 24] = [
    Key {
        name: "stream_auto",
        doc: "Auto, nothing known: non-temporal stores from this size",
        kind: Kind::Size(|p| &mut p.stream_auto),
    },
    Key {
        name: "stream_auto_cold_dst",
        doc: "Auto, destination probes cold: non-temporal stores from this size",
        kind: Kind::Size(|p| &mut p.stream_auto_cold_dst),
    },
    Key {
        name: "stream_no_reuse",
        doc: "NoReuse: non-temporal stores from this size",
        kind: Kind::Size(|p| &mut p.stream_no_reuse),
    },
    Key {
        name: "stream_reuse",
        doc: "Reuse: non-temporal stores only from this size",
        kind: Kind::Size(|p| &mut p.stream_reuse),
    },
    Key {
        name: "probe_min",
        doc: "probe a line of dst (the middle; past llc_effective, llc_effective/2 from its end) (and of src from probe_src_min) from this size, NoReuse from its streaming size (0 = never)",
        kind: Kind::Size(|p| &mut p.probe_min),
    },
    Key {
        name: "probe_hit_max",
        doc: "a probe load of at most this many TSC cycles hit the cache",
        kind: Kind::Cycles(|p| &mut p.probe_hit_max),
    },
    Key {
        name: "probe_src_min",
        doc: "a probing copy probes its source too (for copy_cold_src) from this size (0: wherever it probes; 18446744073709551615: never)",
        kind: Kind::Size(|p| &mut p.probe_src_min),
    },
    Key {
        name: "copy_temporal",
        doc: "copy kernel with temporal stores",
        kind: Kind::Kernel(|p| &mut p.copy_temporal),
    },
    Key {
        name: "copy_temporal_large",
        doc: "copy kernel with temporal stores from stream_auto up (there it replaces the rep movsb window)",
        kind: Kind::Kernel(|p| &mut p.copy_temporal_large),
    },
    Key {
        name: "copy_robust",
        doc: "copy kernel for every cache state from copy_robust_min to copy_robust_max, below stream_auto (no probe needed)",
        kind: Kind::Kernel(|p| &mut p.copy_robust),
    },
    Key {
        name: "copy_robust_min",
        doc: "copy_robust serves every unprobed, unstreamed copy from this size (18446744073709551615: never)",
        kind: Kind::Size(|p| &mut p.copy_robust_min),
    },
    Key {
        name: "copy_robust_max",
        doc: "end of copy_robust's range, exclusive (18446744073709551615: up to stream_auto)",
        kind: Kind::Size(|p| &mut p.copy_robust_max),
    },
    Key {
        name: "copy_cold_src",
        doc: "temporal copy kernel when the source probes cold",
        kind: Kind::Kernel(|p| &mut p.copy_cold_src),
    },
    Key {
        name: "copy_cold_dst",
        doc: "temporal copy kernel when the destination probes cold",
        kind: Kind::Kernel(|p| &mut p.copy_cold_dst),
    },
    Key {
        name: "copy_stream",
        doc: "copy kernel with non-temporal stores",
        kind: Kind::Kernel(|p| &mut p.copy_stream),
    },
    Key {
        name: "set_temporal",
        doc: "set/zero kernel with temporal stores",
        kind: Kind::Kernel(|p| &mut p.set_temporal),
    },
    Key {
        name: "set_cold_dst",
        doc: "temporal set/zero kernel when the destination probes cold",
        kind: Kind::Kernel(|p| &mut p.set_cold_dst),
    },
    Key {
        name: "set_stream",
        doc: "set kernel with non-temporal stores",
        kind: Kind::Kernel(|p| &mut p.set_stream),
    },
    Key {
        name: "zero_stream",
        doc: "zero kernel bypassing the cache",
        kind: Kind::Kernel(|p| &mut p.zero_stream),
    },
    Key {
        name: "rep_movsb_min",
        doc: "rep movsb window start (0 with rep_movsb_max 0: never)",
        kind: Kind::Size(|p| &mut p.rep_movsb_min),
    },
    Key {
        name: "rep_movsb_max",
        doc: "rep movsb window end (exclusive; 18446744073709551615: no end)",
        kind: Kind::Size(|p| &mut p.rep_movsb_max),
    },
    Key {
        name: "rep_stosb_min",
        doc: "rep stosb window start (0 with rep_stosb_max 0: never)",
        kind: Kind::Size(|p| &mut p.rep_stosb_min),
    },
    Key {
        name: "rep_stosb_max",
        doc: "rep stosb window end (exclusive; 18446744073709551615: no end)",
        kind: Kind::Size(|p| &mut p.rep_stosb_max),
    },
    Key {
        name: "llc_effective",
        doc: "measured effective last-level cache size",
        kind: Kind::Size(|p| &mut p.llc_effective),
    },
];

/// Why a profile was rejected.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ErrorKind {
    /// The file has no `version = N` line before its first key.
    MissingVersion,
    /// The version is not [`VERSION`].
    UnsupportedVersion(u32),
    /// A line is neither blank, a comment, nor `key = value`.
    NotKeyValue,
    /// The key is not one this version knows.
    UnknownKey,
    /// The key appears twice.
    DuplicateKey,
    /// A size is not a number with an optional `KiB`/`MiB`/`GiB` suffix.
    BadSize,
    /// A number does not fit.
    Overflow,
    /// A kernel name is not in the kernel table.
    UnknownKernel,
    /// A kernel cannot do what the key asks (e.g. `copy_stream = clzero`).
    WrongKernelForKey,
    /// `rep_movsb_min` is above `rep_movsb_max` (or the same for `rep_stosb` and
    /// `copy_robust`).
    Inconsistent,
    /// The file is larger than the loader's buffer.
    TooLarge,
    /// The file is not UTF-8.
    NotUtf8,
    /// The file named by `BLOCKMEM_PROFILE` cannot be opened or read (or its path is
    /// too long).
    Unreadable,
}

impl ErrorKind {
    /// The reason, in words.
    pub const fn reason(self) -> &'static str {
        match self {
            ErrorKind::MissingVersion => "missing `version = 1` before the first key",
            ErrorKind::UnsupportedVersion(_) => "unsupported profile version (this build reads version 1; re-run `blockmem calibrate`)",
            ErrorKind::NotKeyValue => "expected `key = value`, a comment (#) or a blank line",
            ErrorKind::UnknownKey => "unknown key",
            ErrorKind::DuplicateKey => "key given twice",
            ErrorKind::BadSize => "expected a byte count such as 65536, 64KiB, 8MiB or 1GiB",
            ErrorKind::Overflow => "number too large",
            ErrorKind::UnknownKernel => "unknown kernel name (see `blockmem info`)",
            ErrorKind::WrongKernelForKey => "this kernel cannot do what the key asks",
            ErrorKind::Inconsistent => {
                "a range's start is above its end (rep_movsb_min > rep_movsb_max, rep_stosb_min > rep_stosb_max, or copy_robust_min > copy_robust_max)"
            }
            ErrorKind::TooLarge => "file too large for a profile (over 16 KiB)",
            ErrorKind::NotUtf8 => "file is not UTF-8 text",
            ErrorKind::Unreadable => "cannot open or read the file named by BLOCKMEM_PROFILE",
        }
    }
}

/// A rejected profile: the 1-based line (0 for whole-file problems) and the reason.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ProfileError {
    /// 1-based line number; 0 when the problem is the whole file.
    pub line: usize,
    /// What is wrong.
    pub kind: ErrorKind,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: {}", self.line, self.kind.reason())?;
        } else {
            f.write_str(self.kind.reason())?;
        }
        if let ErrorKind::UnsupportedVersion(v) = self.kind {
            write!(f, " (found version {v})")?;
        }
        Ok(())
    }
}

/// Which keys of a parsed profile came from the file (bit i = `KEYS[i]`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Provenance(u32);

impl Provenance {
    /// True if `key` was set by the file (false: default).
    pub fn from_file(self, key: &str) -> bool {
        KEYS.iter()
            .position(|k| k.name == key)
            .is_some_and(|i| self.0 & (1 << i) != 0)
    }
}

/// Parses a byte count: digits with an optional `B`, `KiB`/`K`, `MiB`/`M`, `GiB`/`G`.
fn parse_size(s: &str) -> Result<usize, ErrorKind> {
    let digits_end = s
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    if digits_end == 0 {
        return Err(ErrorKind::BadSize);
    }
    let mut n: usize = 0;
    for b in s[..digits_end].bytes() {
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add((b - b'0') as usize))
            .ok_or(ErrorKind::Overflow)?;
    }
    let shift = match s[digits_end..].trim() {
        "" | "B" => 0,
        "K" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        _ => return Err(ErrorKind::BadSize),
    };
    n.checked_mul(1 << shift).ok_or(ErrorKind::Overflow)
}

fn kernel_fits(key: &str, k: KernelId) -> bool {
    use crate::kernel::Op;
    let Some(entry) = k.kernel() else {
        return false;
    };
    match key {
        "copy_temporal"
        | "copy_temporal_large"
        | "copy_robust"
        | "copy_cold_src"
        | "copy_cold_dst" => entry.supports(Op::Copy) && !k.streams(),
        "copy_stream" => entry.supports(Op::Copy),
        "set_temporal" | "set_cold_dst" => entry.supports(Op::Set) && !k.streams(),
        "set_stream" => entry.supports(Op::Set),
        "zero_stream" => entry.supports(Op::Zero),
        _ => false,
    }
}

/// Parses a profile. Keys not in the file keep the values of `defaults`.
pub fn parse(text: &[u8], defaults: Profile) -> Result<(Profile, Provenance), ProfileError> {
    let text = core::str::from_utf8(text).map_err(|_| ProfileError {
        line: 0,
        kind: ErrorKind::NotUtf8,
    })?;
    let mut p = defaults;
    let mut seen = Provenance(0);
    let mut version_seen = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |kind| ProfileError { line, kind };
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let (key, value) = content.split_once('=').ok_or(err(ErrorKind::NotKeyValue))?;
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || value.is_empty() {
            return Err(err(ErrorKind::NotKeyValue));
        }
        if key == "version" {
            let v = parse_size(value).map_err(|_| err(ErrorKind::UnsupportedVersion(0)))?;
            if v != VERSION as usize {
                return Err(err(ErrorKind::UnsupportedVersion(
                    v.min(u32::MAX as usize) as u32
                )));
            }
            version_seen = true;
            continue;
        }
        if !version_seen {
            return Err(err(ErrorKind::MissingVersion));
        }
        let idx = KEYS
            .iter()
            .position(|k| k.name == key)
            .ok_or(err(ErrorKind::UnknownKey))?;
        if seen.0 & (1 << idx) != 0 {
            return Err(err(ErrorKind::DuplicateKey));
        }
        seen.0 |= 1 << idx;
        match KEYS[idx].kind {
            Kind::Size(field) => *field(&mut p) = parse_size(value).map_err(err)?,
            Kind::Cycles(field) => {
                let v = parse_size(value).map_err(err)?;
                *field(&mut p) = u32::try_from(v).map_err(|_| err(ErrorKind::Overflow))?;
            }
            Kind::Kernel(field) => {
                let k = KernelId::from_name(value).ok_or(err(ErrorKind::UnknownKernel))?;
                if !kernel_fits(key, k) {
                    return Err(err(ErrorKind::WrongKernelForKey));
                }
                *field(&mut p) = k;
            }
        }
        for (min, max, a, b) in [
            (
                p.rep_movsb_min,
                p.rep_movsb_max,
                "rep_movsb_min",
                "rep_movsb_max",
            ),
            (
                p.rep_stosb_min,
                p.rep_stosb_max,
                "rep_stosb_min",
                "rep_stosb_max",
            ),
            (
                p.copy_robust_min,
                p.copy_robust_max,
                "copy_robust_min",
                "copy_robust_max",
            ),
        ] {
            if min > max && seen.from_file(a) && seen.from_file(b) {
                return Err(err(ErrorKind::Inconsistent));
            }
        }
    }
    if !version_seen {
        return Err(ProfileError {
            line: 0,
            kind: ErrorKind::MissingVersion,
        });
    }
    Ok((p, seen))
}

/// Writes `p` as a profile file: a header of comment lines from `header`, the version,
/// then every key with its documentation.
pub fn render(out: &mut dyn fmt::Write, p: &Profile, header: &[&str]) -> fmt::Result {
    writeln!(out, "# blockmem calibration profile")?;
    for h in header {
        writeln!(out, "# {h}")?;
    }
    writeln!(out, "version = {VERSION}")?;
    let mut copy = *p;
    for k in &KEYS {
        writeln!(out)?;
        writeln!(out, "# {}", k.doc)?;
        match k.kind {
            // The file spells "no limit" as the number (`usize::MAX`): the grammar every
            // version-1 reader parses. People read it through `Size`.
            Kind::Size(f) => match *f(&mut copy) {
                usize::MAX => writeln!(out, "{} = {}", k.name, usize::MAX)?,
                n => writeln!(out, "{} = {}", k.name, Size(n))?,
            },
            Kind::Cycles(f) => writeln!(out, "{} = {}", k.name, *f(&mut copy))?,
            Kind::Kernel(f) => writeln!(out, "{} = {}", k.name, f(&mut copy).name())?,
        }
    }
    Ok(())
}

/// Every key name with its documentation (for `blockmem info` and the README).
pub fn keys() -> impl Iterator<Item = (&'static str, &'static str)> {
    KEYS.iter().map(|k| (k.name, k.doc))
}

/// A byte count printed with the largest exact binary suffix (`64KiB`, `3MiB`, `100`);
/// `usize::MAX`, which the profile uses for "no limit" (a window without an end, a
/// threshold never reached), as `unbounded`.
pub struct Size(pub usize);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n == usize::MAX {
            return f.write_str("unbounded");
        }
        for (shift, suffix) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if n != 0 && n.is_multiple_of(1 << shift) {
                return write!(f, "{}{}", n >> shift, suffix);
            }
        }
        write!(f, "{n}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Buf {
        bytes: [u8; 4096],
        len: usize,
    }
    impl fmt::Write for Buf {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let b = s.as_bytes();
            if self.len + b.len() > self.bytes.len() {
                return Err(fmt::Error);
            }
            self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
            self.len += b.len();
            Ok(())
        }
    }

    fn sample() -> Profile {
        let mut p = Profile::FALLBACK;
        p.stream_auto = 96 << 20;
        p.stream_auto_cold_dst = 64 << 10;
        p.probe_min = 256 << 10;
        p.probe_hit_max = 180;
        p.copy_cold_src = KernelId::Avx2Pf;
        p.copy_stream = KernelId::Avx2PfNt;
        p.zero_stream = KernelId::RepStosb;
        p.rep_movsb_min = 2048;
        p.rep_movsb_max = 12345;
        p.rep_stosb_min = 4096;
        p.rep_stosb_max = usize::MAX;
        p.copy_cold_dst = KernelId::RepMovsb;
        p.set_cold_dst = KernelId::RepStosb;
        p.copy_temporal_large = KernelId::Sse2;
        p.copy_robust = KernelId::Avx2Pf;
        p.copy_robust_min = 64 << 10;
        p.copy_robust_max = 8 << 20;
        p.probe_src_min = 1 << 20;
        p
    }

    #[test]
    fn round_trip() {
        let p = sample();
        let mut buf = Buf {
            bytes: [0; 4096],
            len: 0,
        };
        render(&mut buf, &p, &["host: test", "measured: never"]).unwrap();
        let (q, prov) = parse(&buf.bytes[..buf.len], Profile::FALLBACK).unwrap();
        assert_eq!(q, p);
        for (k, _) in keys() {
            assert!(prov.from_file(k), "{k} not marked as from the file");
        }
    }

    #[test]
    fn sizes_print_with_suffixes_and_no_limit_as_unbounded() {
        let show = |n: usize| {
            let mut buf = Buf {
                bytes: [0; 4096],
                len: 0,
            };
            fmt::write(&mut buf, format_args!("{}", Size(n))).unwrap();
            buf.bytes[..buf.len].to_vec()
        };
        assert_eq!(show(0), b"0");
        assert_eq!(show(100), b"100");
        assert_eq!(show(64 << 10), b"64KiB");
        assert_eq!(show(3 << 20), b"3MiB");
        assert_eq!(show((1 << 20) + 1), b"1048577");
        assert_eq!(show(usize::MAX), b"unbounded");
    }

    #[test]
    fn missing_keys_keep_defaults() {
        let (p, prov) = parse(
            b"version = 1\nstream_auto = 8MiB # comment\n\n",
            Profile::FALLBACK,
        )
        .unwrap();
        assert_eq!(p.stream_auto, 8 << 20);
        assert_eq!(p.stream_reuse, Profile::FALLBACK.stream_reuse);
        assert!(prov.from_file("stream_auto") && !prov.from_file("stream_reuse"));
    }

    #[test]
    fn every_error_names_its_line_and_reason() {
        let cases: [(&[u8], usize, ErrorKind); 17] = [
            (b"stream_auto = 1\n", 1, ErrorKind::MissingVersion),
            (b"# only a comment\n", 0, ErrorKind::MissingVersion),
            (b"version = 2\n", 1, ErrorKind::UnsupportedVersion(2)),
            (b"version = 1\nstream_auto 5\n", 2, ErrorKind::NotKeyValue),
            (b"version = 1\n\nstream_auto =\n", 3, ErrorKind::NotKeyValue),
            (b"version = 1\nstream_fast = 5\n", 2, ErrorKind::UnknownKey),
            (
                b"version = 1\nprobe_min = 5\nprobe_min = 6\n",
                3,
                ErrorKind::DuplicateKey,
            ),
            (b"version = 1\nstream_auto = 5 MB\n", 2, ErrorKind::BadSize),
            (
                b"version = 1\nstream_auto = 99999999999999999999999\n",
                2,
                ErrorKind::Overflow,
            ),
            (
                b"version = 1\nprobe_hit_max = 5GiB\n",
                2,
                ErrorKind::Overflow,
            ),
            (
                b"version = 1\ncopy_stream = avx9\n",
                2,
                ErrorKind::UnknownKernel,
            ),
            (
                b"version = 1\ncopy_stream = clzero\n",
                2,
                ErrorKind::WrongKernelForKey,
            ),
            (
                b"version = 1\nrep_movsb_min = 9\nrep_movsb_max = 8\n",
                3,
                ErrorKind::Inconsistent,
            ),
            (
                b"version = 1\nrep_stosb_max = 1KiB\nrep_stosb_min = 2KiB\n",
                3,
                ErrorKind::Inconsistent,
            ),
            (
                b"version = 1\ncopy_robust_max = 1MiB\ncopy_robust_min = 8MiB\n",
                3,
                ErrorKind::Inconsistent,
            ),
            (
                b"version = 1\ncopy_cold_dst = avx2_nt\n",
                2,
                ErrorKind::WrongKernelForKey,
            ),
            (
                b"version = 1\nset_cold_dst = rep_movsb\n",
                2,
                ErrorKind::WrongKernelForKey,
            ),
        ];
        for (text, line, kind) in cases {
            let e = parse(text, Profile::FALLBACK).unwrap_err();
            assert_eq!(
                e,
                ProfileError { line, kind },
                "{}",
                core::str::from_utf8(text).unwrap()
            );
            assert!(!kind.reason().is_empty());
        }
        assert_eq!(
            parse(b"version = 1\n\xff\n", Profile::FALLBACK)
                .unwrap_err()
                .kind,
            ErrorKind::NotUtf8
        );
        assert_eq!(
            parse(b"version = 1\ncopy_temporal = avx2_nt\n", Profile::FALLBACK)
                .unwrap_err()
                .kind,
            ErrorKind::WrongKernelForKey
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("3 M"), Ok(3 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("12B"), Ok(12));
        assert_eq!(parse_size("KiB"), Err(ErrorKind::BadSize));
        assert_eq!(parse_size("-1"), Err(ErrorKind::BadSize));
    }
}
