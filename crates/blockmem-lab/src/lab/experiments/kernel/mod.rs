//! `kernel`: the copies the kernel makes for a program, which blockmem cannot replace
//! but a program can avoid or shape (seed 000 §1, seed 003 Table 1). Four parts:
//!
//! 1. `read` ([`read`]): `read`/`pread` of a file in the page cache into a user buffer,
//!    the buffer hot, clean or dirty and the file's pages hot or evicted from the CPU
//!    caches (the file stays in the page cache), beside the same bytes copied in user
//!    space from an `mmap` of the file (libc and blockmem). Each round maps a fresh
//!    user buffer (other physical pages, other conflicts), so the spread between
//!    rounds is seed 000's run-to-run fluctuation.
//! 2. `ipc` ([`ipc`]): two processes pinned to two CPUs hand each other messages of
//!    64 B to 1 MiB through a pipe, a UNIX socket, `vmsplice` into a pipe (one copy
//!    instead of two) and a ring in a shared mapping; the same bytes copied twice in
//!    user space are the reference for how much of the cost is the copy. A cell's
//!    batches alternate between the consumer only checking each message and reading
//!    all of it (what the consumer pays after the transfer). The blocking channels run
//!    again with both processes on one CPU.
//! 3. `forward` ([`forward`]): a cached file's bytes moved on to another file through a
//!    user buffer, from the file's mapping, and by `sendfile`, `copy_file_range` and
//!    `splice`: the zero-copy alternatives beside the copies they avoid.
//! 4. `classic` ([`read::classic`], [`ipc::classic`]): lmbench-style fixed loops
//!    (`bw_file_rd`, `bw_pipe`, `bw_unix`) in the same run, for comparison.
//!
//! Every byte is verified: the read path against the file's contents, every message
//! by its sequence number in its first and last word while timed and in full in an
//! untimed pass (`docs/results/xeon-clx-2vcpu/kernel`).

pub mod forward;
pub mod ipc;
mod pair;
pub mod read;
mod tables;

use serde_json::{json, Map, Value};

use super::Ctx;
use crate::lab::runner::Record;
use crate::lab::stats::{quantile_sorted, Summary};

pub use tables::{plot, tables};

/// Name in JSON and on the command line.
pub const NAME: &str = "kernel";

/// Runs the four parts.
pub fn run(ctx: &mut Ctx<'_>) -> anyhow::Result<Vec<Record>> {
    let facts = Facts::of_host();
    eprintln!("blockmem lab: {NAME}: {}", facts.line());
    let mut out = read::run(ctx, &facts)?;
    out.extend(ipc::run(ctx, &facts)?);
    out.extend(forward::run(ctx, &facts)?);
    out.extend(read::classic(ctx, &facts)?);
    out.extend(ipc::classic(ctx, &facts)?);
    Ok(out)
}

/// What the kernel's copies depend on and the lab cannot change: the kernel, whether
/// the CPU has fast short `rep movsb`/`rep stosb` (the kernel's copy and clear loops
/// use them where it does), hardware counters, `MSG_ZEROCOPY`.
#[derive(Clone, Debug)]
pub struct Facts {
    /// `uname -r`.
    pub kernel: String,
    /// CPUID.7.0:EDX[4]: `copy_{to,from}_user` is `rep movsb`.
    pub fsrm: bool,
    /// CPUID.7.1:EAX[11]: `clear_user` is `rep stosb`.
    pub fsrs: bool,
    /// Hardware counters (perf_event_open), as [`crate::lab::perf::status`] says.
    pub counters: String,
    /// Whether `SO_ZEROCOPY` is accepted on a UNIX and on a TCP socket.
    pub zerocopy: String,
}

impl Facts {
    /// Reads them on this host.
    pub fn of_host() -> Facts {
        let (fsrm, fsrs) = rep_flags();
        let perf = crate::lab::perf::status();
        Facts {
            kernel: kernel_release(),
            fsrm,
            fsrs,
            counters: if perf.available {
                "hardware counters available (not used: the copy's share is measured against user-space copies)".into()
            } else {
                "no hardware counters: the copy's share is measured against the same bytes copied in user space".into()
            },
            zerocopy: ipc::zerocopy_probe(),
        }
    }

    /// One line for the log and the tables.
    pub fn line(&self) -> String {
        let yn = |b: bool| if b { "yes" } else { "no" };
        format!(
            "Linux {}; FSRM {} (copy to/from user: {}), FSRS {} (clear_user: {}); {}; {}",
            self.kernel,
            yn(self.fsrm),
            if self.fsrm {
                "rep movsb"
            } else {
                "rep_movs_alternative"
            },
            yn(self.fsrs),
            if self.fsrs {
                "rep stosb"
            } else {
                "rep_stos_alternative"
            },
            self.counters,
            self.zerocopy
        )
    }

    /// The fields every record carries.
    fn extras(&self, part: &str) -> Map<String, Value> {
        let mut e = Map::new();
        e.insert("part".into(), json!(part));
        e.insert("kernel_release".into(), json!(self.kernel));
        e.insert("fsrm".into(), json!(self.fsrm));
        e.insert("fsrs".into(), json!(self.fsrs));
        e.insert("host_line".into(), json!(self.line()));
        e
    }
}

/// The kernel release (`uname -r`), or `unknown`.
fn kernel_release() -> String {
    // SAFETY: `u` is a plain struct the call fills.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    // SAFETY: uname NUL-terminates every field.
    unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// FSRM and FSRS from CPUID leaf 7 (subleaves 0 and 1).
fn rep_flags() -> (bool, bool) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{__cpuid_count, CpuidResult};
        // CPUID has no side effects on x86-64 (a safe function in recent toolchains;
        // the allow keeps older ones, where it is unsafe, happy).
        #[allow(unused_unsafe)]
        // SAFETY: CPUID is always available on x86-64.
        let cpuid = |leaf, sub| -> CpuidResult { unsafe { __cpuid_count(leaf, sub) } };
        if cpuid(0, 0).eax < 7 {
            return (false, false);
        }
        let l70 = cpuid(7, 0);
        let l71 = (l70.eax >= 1).then(|| cpuid(7, 1));
        (
            l70.edx & (1 << 4) != 0,
            l71.is_some_and(|r| r.eax & (1 << 11) != 0),
        )
    }
    #[cfg(not(target_arch = "x86_64"))]
    (false, false)
}

/// One record from samples of `bytes` per sample (ns), with the spread fields: the
/// ratio of the slowest sample to the fastest, p90 over p10, and, where the samples
/// came in rounds (fresh buffers), the slowest round's median over the fastest's.
#[allow(clippy::too_many_arguments)]
fn record(
    method: &str,
    size: usize,
    (src, dst, reuse): (&str, &str, &str),
    samples: Vec<f64>,
    rounds: &[Vec<f64>],
    verified: bool,
    mut extras: Map<String, Value>,
) -> Record {
    let s = Summary::of(&samples);
    let mut sorted = samples.clone();
    sorted.sort_by(f64::total_cmp);
    if !sorted.is_empty() {
        extras.insert("spread_max_over_min".into(), json!(s.max / s.min.max(1e-9)));
        let (p10, p90) = (quantile_sorted(&sorted, 0.1), quantile_sorted(&sorted, 0.9));
        extras.insert("spread_p90_over_p10".into(), json!(p90 / p10.max(1e-9)));
    }
    let medians: Vec<f64> = rounds
        .iter()
        .filter(|r| !r.is_empty())
        .map(|r| Summary::of(r).median)
        .collect();
    if medians.len() > 1 {
        let hi = medians.iter().copied().fold(0.0, f64::max);
        let lo = medians.iter().copied().fold(f64::MAX, f64::min);
        extras.insert("round_medians_ns".into(), json!(medians));
        extras.insert("spread_rounds".into(), json!(hi / lo.max(1e-9)));
    }
    Record {
        experiment: NAME.into(),
        method: method.into(),
        op: blockmem::kernel::Op::Copy.name().into(),
        size,
        src: src.into(),
        dst: dst.into(),
        reuse: reuse.into(),
        gbps: s.gbps(size),
        summary: s,
        verified,
        samples_ns: samples,
        extras,
    }
}

/// Pushes a failed-verification warning for `cell` unless `ok`.
fn check(ctx: &mut Ctx<'_>, ok: bool, cell: String) {
    if !ok {
        ctx.runner
            .warnings
            .push(crate::lab::warn::Warning::VerificationFailed { cell });
    }
}
