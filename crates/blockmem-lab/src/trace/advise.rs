//! `--advise`: the call sites where a hint (`Reuse` or `NoReuse`) would help, the
//! evidence for it, the estimated saving, and the hint map that applies the hints to
//! the unmodified program (`BLOCKMEM_HINTS=<map>`, read by the shim; the format is
//! documented in the shim's `hints` module and in the README).
//!
//! The hint a site gets follows from the trace's evidence, not from a timing:
//!
//! * `reuse` when at least half of its destination was read again soon: keep it in
//!   cache;
//! * `noreuse` when at most a tenth was: stream it past the cache;
//! * none when the fate is mixed, when every call is below the size at which a hint
//!   can change the kernel the plan in force picks, or when the address lies in no
//!   mapping the trace recorded.
//!
//! A site enters the hint map when the hint can make the plan pick another kernel for
//! its calls (in a destination state a probe can find), and, where the replay
//! estimate ran (`sites::estimate`), when it did not estimate a loss.
//!
//! "Read again" is what the page traps saw where the site's calls were observed
//! (`observed`: the first later access to watched pages, by a load, the kernel or a
//! block operation, within the watch window), so a destination the program reads
//! with ordinary loads or hands to `write` is `reuse`, never `noreuse`. A site none
//! of whose calls was observed (smaller than a page, or traced without the trace I/O
//! library) falls back on the block operations' fate within the fate window (`fate`),
//! which cannot see loads; its reason says so.

use std::fmt::Write as _;

use blockmem::profile::State;
use blockmem::Hint;
use serde::Serialize;

use super::analysis::Analysis;
use super::format::PageFate;
use super::sites::{planned, runs_inline, Site, TOP_SITES};
use crate::lab::experiments::fmt_size;
use crate::lab::report::Table;

/// Reuse fraction at or above which a site is advised `reuse`.
const REUSE_AT_LEAST: f64 = 0.5;
/// Reuse fraction at or below which a site is advised `noreuse`.
const NO_REUSE_AT_MOST: f64 = 0.1;

/// The verdict on one site.
#[derive(Clone, Debug, Serialize)]
pub struct Advice {
    /// `function (file:line)` or what is known of it.
    pub site: String,
    /// Object path (None: unknown).
    pub object: Option<String>,
    /// Return address as an offset in the object file.
    pub offset: u64,
    /// `reuse`, `noreuse`, or None.
    pub hint: Option<&'static str>,
    /// Why (the evidence, or why there is no hint).
    pub reason: String,
    /// Calls.
    pub calls: u64,
    /// Bytes.
    pub bytes: u64,
    /// Smallest and largest call.
    pub sizes: (u64, u64),
    /// Share of the program's block-operation cycles, percent.
    pub share_percent: f64,
    /// Percent of destination bytes read again (observed pages where there are any).
    pub reused_percent: Option<f64>,
    /// Calls whose destination the page traps watched.
    pub observed_calls: u64,
    /// Percent of watched pages first read by loads, and by the kernel.
    pub load_read_percent: Option<f64>,
    /// Percent of watched pages first read by the kernel.
    pub kernel_read_percent: Option<f64>,
    /// Percent of sampled calls whose destination was cached at the call.
    pub dst_cached_percent: Option<f64>,
    /// The hint makes the plan in force pick another kernel for some of the calls.
    pub changes_kernel: bool,
    /// Estimated cycles saved (traced cycles minus the replay's estimate with the
    /// hint); None when not estimated.
    pub saving_cycles: Option<f64>,
    /// The site is in the hint map.
    pub in_map: bool,
}

/// The hint the evidence supports, or why none.
fn verdict(s: &Site, min_hint_size: u64) -> Result<(&'static str, Hint), String> {
    if s.object.is_none() {
        return Err("address in no mapping the trace recorded".into());
    }
    if s.max_size < min_hint_size {
        return Err(format!(
            "every call is below {}: a hint changes nothing there",
            fmt_size(min_hint_size as usize)
        ));
    }
    match s.reuse_fraction() {
        None => Err("no destination bytes".into()),
        Some(r) if r >= REUSE_AT_LEAST => Ok(("reuse", Hint::Reuse)),
        Some(r) if r <= NO_REUSE_AT_MOST => Ok(("noreuse", Hint::NoReuse)),
        Some(r) => Err(format!("mixed fate: {:.0}% read again", 100.0 * r)),
    }
}

/// True if `hint` can make the plan pick another kernel for one of the site's kept
/// calls, in some destination state a probe can find (cached, cold, fresh). A state's
/// row counts only where the call probes: where the `unknown` row names a kernel, the
/// call runs it whatever the state. Calls the inline ladder runs take no hint.
fn changes_kernel(s: &Site, hint: Hint) -> bool {
    let op = s.main_op();
    let runs = |n, h, st| planned(op, n, h, State::Unknown).or_else(|| planned(op, n, h, st));
    s.samples.iter().filter(|c| !runs_inline(op, c.n)).any(|c| {
        [State::Cached, State::Cold, State::Fresh]
            .into_iter()
            .any(|st| runs(c.n, hint, st) != runs(c.n, Hint::Auto, st))
    })
}

/// Percent of a site's watched pages that met `f` first (None: none watched).
fn share(s: &Site, f: PageFate) -> Option<f64> {
    let t = s.observed.total();
    (t > 0).then(|| 100.0 * s.observed.of(f) as f64 / t as f64)
}

/// The evidence behind a hint, in words.
fn evidence(s: &Site) -> String {
    let reused = s.reuse_fraction().unwrap_or(0.0) * 100.0;
    let o = &s.observed;
    if o.calls == 0 {
        return format!(
            "{reused:.0}% of destination bytes read again by block operations (no call observed: loads unseen)"
        );
    }
    let p = |f| share(s, f).unwrap_or(0.0);
    format!(
        "{} of {} calls observed: {reused:.0}% of watched pages read again (loads {:.0}%, kernel {:.0}%, block ops {:.0}%)",
        o.calls,
        s.total().calls,
        p(PageFate::LoadRead),
        p(PageFate::KernelRead),
        p(PageFate::BlockRead)
    )
}

fn estimated_saving(s: &Site, name: &str) -> Option<f64> {
    let e = s.estimate.as_ref()?;
    let ratio = e.ratios.iter().find(|(h, _)| h == name)?.1;
    let traced = s.total().cycles as f64;
    Some(traced - traced * ratio)
}

/// The verdict on every site among the top [`TOP_SITES`], best saving first.
pub fn advise(a: &Analysis, min_hint_size: u64) -> Vec<Advice> {
    let all = a.total().cycles.max(1) as f64;
    let mut out: Vec<Advice> = a
        .sites
        .list
        .iter()
        .filter(|s| s.total().calls > 0)
        .take(TOP_SITES)
        .map(|s| {
            let t = s.total();
            let (hint, reason, changes, saving) = match verdict(s, min_hint_size) {
                Ok((name, h)) => {
                    let why = evidence(s);
                    (
                        Some(name),
                        why,
                        changes_kernel(s, h),
                        estimated_saving(s, name),
                    )
                }
                Err(why) => (None, why, false, None),
            };
            Advice {
                site: s.label(),
                object: s.object.clone(),
                offset: s.offset,
                hint,
                reason,
                calls: t.calls,
                bytes: t.bytes,
                sizes: (s.min_size, s.max_size),
                share_percent: 100.0 * t.cycles as f64 / all,
                reused_percent: s.reuse_fraction().map(|r| 100.0 * r),
                observed_calls: s.observed.calls,
                load_read_percent: share(s, PageFate::LoadRead),
                kernel_read_percent: share(s, PageFate::KernelRead),
                dst_cached_percent: s.dst_state.cached_percent(),
                changes_kernel: changes,
                in_map: hint.is_some() && changes && saving.is_none_or(|v| v > 0.0),
                saving_cycles: saving,
            }
        })
        .collect();
    out.sort_by(|x, y| {
        let key = |a: &Advice| (a.hint.is_some(), a.saving_cycles.unwrap_or(0.0));
        key(y).0.cmp(&key(x).0).then(key(y).1.total_cmp(&key(x).1))
    });
    out
}

/// The hint map of the advised sites (format: the shim's `hints` module, README).
pub fn hint_map(advice: &[Advice], title: &str) -> String {
    let mut s = String::from("blockmem-hints 1\n");
    let _ = writeln!(s, "# written by `blockmem trace --advise` for {title}");
    let _ = writeln!(s, "# hint     offset      object");
    for a in advice.iter().filter(|a| a.in_map) {
        let (Some(h), Some(o)) = (a.hint, &a.object) else {
            continue;
        };
        let _ = writeln!(s, "# {} — {}", a.site, a.reason);
        let _ = writeln!(s, "{h:<8} {:#010x}  {o}", a.offset);
    }
    s
}

/// The advice table.
pub fn table(advice: &[Advice], ghz: f64) -> Table {
    let mut t = Table::new(
        "Advice: hints per call site",
        "hint from the destination's fate (reuse: ≥ 50% read again; noreuse: ≤ 10%; observed \
         pages where the site's calls were watched, else block operations only); \
         'changes' = with it the plan in force can pick another kernel; saving = traced time \
         minus the replay estimate with the hint ('-': not estimated); map = in the hint map",
        [
            "site",
            "hint",
            "calls",
            "sizes",
            "share %",
            "read again %",
            "observed",
            "dst cached %",
            "changes",
            "saving ms",
            "map",
            "why",
        ]
        .map(String::from)
        .to_vec(),
    );
    let pct = |v: Option<f64>| v.map_or("-".into(), |p| format!("{p:.0}"));
    for a in advice {
        t.rows.push(vec![
            a.site.clone(),
            a.hint.unwrap_or("-").to_string(),
            a.calls.to_string(),
            format!(
                "{}–{}",
                fmt_size(a.sizes.0 as usize),
                fmt_size(a.sizes.1 as usize)
            ),
            format!("{:.1}", a.share_percent),
            pct(a.reused_percent),
            a.observed_calls.to_string(),
            pct(a.dst_cached_percent),
            if a.changes_kernel { "yes" } else { "no" }.into(),
            a.saving_cycles
                .map_or("-".into(), |c| format!("{:.2}", c / ghz / 1e6)),
            if a.in_map { "yes" } else { "no" }.into(),
            a.reason.clone(),
        ]);
    }
    t
}
