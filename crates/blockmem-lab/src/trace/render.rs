//! The report: terminal tables (the lab's [`Table`]), JSON, SVG histograms and an
//! HTML page in the lab report's style.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;
use serde_json::{json, Value};

use super::advise::Advice;
use super::analysis::{class_max, Analysis, SizeKind, ALIAS_BINS, PROBE_ROWS};
use super::estimate::Estimate;
use super::format::CallOp;
use super::stats_check::StatsCheck;
use crate::lab::experiments::fmt_size;
use crate::lab::report::{esc, Table};

/// Everything one report shows.
pub struct Report<'a> {
    /// The command traced (or the files reported).
    pub title: String,
    /// The analysis.
    pub analysis: &'a Analysis,
    /// The libc estimate, if made.
    pub estimate: Option<&'a Estimate>,
    /// The comparison with `BLOCKMEM_STATS`, if asked for.
    pub stats: Option<&'a StatsCheck>,
    /// Wall time of the traced run, seconds (when `blockmem trace` ran it).
    pub wall_seconds: Option<f64>,
    /// The per-site advice (`--advise`).
    pub advice: Option<&'a [Advice]>,
}

fn pct(part: f64, whole: f64) -> String {
    if whole > 0.0 {
        format!("{:.1}", 100.0 * part / whole)
    } else {
        "-".into()
    }
}

fn size_label(class: u32) -> String {
    if class == 0 {
        "0 B".into()
    } else {
        format!("≤ {}", fmt_size(class_max(class) as usize))
    }
}

fn bytes(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else {
        fmt_size(n as usize)
    }
}

fn ms(cycles: f64, ghz: f64) -> String {
    let ms = cycles / ghz / 1e6;
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 1.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.3}")
    }
}

const OPS: [CallOp; 4] = CallOp::ALL;

/// Most rows of the threads table (the threads with the most bytes; the rest summed).
const THREAD_ROWS: usize = 64;

impl Report<'_> {
    /// Every table, in report order.
    pub fn tables(&self) -> Vec<Table> {
        let mut v = vec![self.processes(), self.totals()];
        v.push(self.kernels());
        v.push(self.threads());
        if let Some(t) = self.estimate_table() {
            v.push(t);
        }
        v.push(self.size_classes());
        v.push(self.table7());
        v.push(self.alignment());
        v.push(self.aliasing());
        v.push(self.probe());
        v.push(self.fate());
        if self.analysis.io_traced {
            v.push(self.observed());
            v.push(self.io());
        }
        v.push(self.sites());
        if let Some(adv) = self.advice {
            v.push(super::advise::table(adv, self.analysis.ghz()));
        }
        if let Some(s) = self.stats {
            v.push(s.table());
        }
        v
    }

    fn processes(&self) -> Table {
        let a = self.analysis;
        let mut t = Table::new(
            "Processes",
            "one trace file each; a forked child's start is its parent's fork; share = op time / process lifetime",
            ["pid", "program", "origin", "calls", "bytes", "op ms", "run ms", "share %", "missing"]
                .map(String::from)
                .to_vec(),
        );
        for p in &a.processes {
            let total = p.total();
            let missing =
                p.trailer
                    .map_or("no trailer (exec, _exit or signal)".to_string(), |tr| {
                        let m = tr.missing().saturating_add(tr.busy_at_exit);
                        if m == 0 {
                            "0".into()
                        } else {
                            m.to_string()
                        }
                    });
            t.rows.push(vec![
                p.pid.to_string(),
                p.argv0.clone(),
                p.fork_parent
                    .map_or("exec".into(), |f| format!("fork of {f}")),
                total.calls.to_string(),
                bytes(total.bytes),
                ms(total.cycles as f64, p.tsc_ghz),
                ms(p.run_cycles as f64, p.tsc_ghz),
                pct(total.cycles as f64, p.run_cycles as f64),
                missing,
            ]);
        }
        t
    }

    /// Seed 003 Table 1 (docs/SEEDS.md): breakdown by type and share of cycles.
    fn totals(&self) -> Table {
        let a = self.analysis;
        let ghz = a.ghz();
        let total = a.total();
        let mut t = Table::new(
            "Totals by operation (seed 003 Table 1)",
            format!(
                "cycles are TSC cycles inside the calls (timer overhead subtracted); % of run time = op cycles / the processes' lifetimes ({} ms); TSC {ghz:.3} GHz",
                ms(a.run_cycles as f64, ghz)
            ),
            ["op", "calls", "% calls", "bytes", "% bytes", "mean size", "ms", "% of op time", "% of run time"]
                .map(String::from)
                .to_vec(),
        );
        let mut row = |name: &str, c: &super::analysis::Counts| {
            t.rows.push(vec![
                name.to_string(),
                c.calls.to_string(),
                pct(c.calls as f64, total.calls as f64),
                bytes(c.bytes),
                pct(c.bytes as f64, total.bytes as f64),
                if c.calls > 0 {
                    format!("{:.0} B", c.bytes as f64 / c.calls as f64)
                } else {
                    "-".into()
                },
                ms(c.cycles as f64, ghz),
                pct(c.cycles as f64, total.cycles as f64),
                pct(c.cycles as f64, a.run_cycles as f64),
            ]);
        };
        for op in OPS {
            row(op.name(), &a.by_op[op as usize]);
        }
        row("all", &total);
        t
    }

    fn kernels(&self) -> Table {
        let a = self.analysis;
        let ghz = a.ghz();
        let mut header: Vec<String> = vec!["kernel".into()];
        header.extend(OPS.iter().map(|o| format!("{} calls", o.name())));
        header.extend(["bytes", "ms", "cycles/byte"].map(String::from));
        let mut t = Table::new(
            "Kernels blockmem chose",
            "the kernel each call actually ran (inline: the shim's inline rungs, up to 128 B; libc: pass-through)",
            header,
        );
        for (k, per_op) in &a.kernels {
            let mut all = super::analysis::Counts::default();
            per_op.iter().for_each(|c| all.merge(c));
            let mut row = vec![k.clone()];
            row.extend(per_op.iter().map(|c| c.calls.to_string()));
            row.push(bytes(all.bytes));
            row.push(ms(all.cycles as f64, ghz));
            row.push(if all.bytes > 0 {
                format!("{:.3}", all.cycles as f64 / all.bytes as f64)
            } else {
                "-".into()
            });
            t.rows.push(row);
        }
        t
    }

    /// The window a destination's fate is judged in, in words.
    fn fate_window(&self) -> String {
        self.analysis
            .fate_window
            .map_or("before the process ended".to_string(), |w| {
                format!("within {} of later block traffic", bytes(w))
            })
    }

    /// Per thread: calls, bytes, and where the bytes went (streamed past the cache, or
    /// written through it and then reused or not).
    fn threads(&self) -> Table {
        let a = self.analysis;
        let window = self.fate_window();
        let mut t = Table::new(
            "Threads",
            format!(
                "per thread (kernel tid; ? in traces older than format 3): streamed = bytes of non-temporal kernels, temporal = bytes written through the cache (inline and temporal kernels), polluted = temporal bytes no later call read as its source {window} (overwritten or not seen again); libc pass-through bytes are in neither; at most {THREAD_ROWS} rows, the rest summed"
            ),
            ["pid", "tid", "calls", "bytes", "streamed", "temporal", "polluted", "% of temporal polluted"]
                .map(String::from)
                .to_vec(),
        );
        let row = |pid: String, tid: String, r: &super::analysis::ThreadRow| {
            vec![
                pid,
                tid,
                r.calls.to_string(),
                bytes(r.bytes),
                bytes(r.streamed),
                bytes(r.temporal),
                bytes(r.polluted()),
                pct(r.polluted() as f64, r.temporal as f64),
            ]
        };
        // The threads with the most bytes, shown in report order.
        let mut shown: Vec<usize> = (0..a.threads.len()).collect();
        shown.sort_by_key(|&i| std::cmp::Reverse(a.threads[i].bytes));
        let rest = shown.split_off(shown.len().min(THREAD_ROWS));
        shown.sort_unstable();
        for &i in &shown {
            let r = &a.threads[i];
            let tid = if r.tid == 0 {
                "?".to_string()
            } else {
                r.tid.to_string()
            };
            t.rows.push(row(r.pid.to_string(), tid, r));
        }
        if !rest.is_empty() {
            let mut other = super::analysis::ThreadRow::default();
            rest.iter().for_each(|&i| other.merge(&a.threads[i]));
            t.rows
                .push(row(String::new(), format!("{} others", rest.len()), &other));
        }
        t
    }

    fn estimate_table(&self) -> Option<Table> {
        let e = self.estimate?;
        let ghz = self.analysis.ghz();
        let mut about = match &e.skipped {
            Some(why) => format!("no estimate: {why}"),
            None => "per op and size class: traced blockmem time × (libc time / blockmem time) measured on this host replaying up to 64 of the class's calls on warm buffers; an estimate, not a measurement".into(),
        };
        for note in &e.notes {
            about.push_str("; ");
            about.push_str(note);
        }
        let mut t = Table::new(
            "Estimated time against libc",
            about,
            [
                "op",
                "size",
                "calls",
                "blockmem ms",
                "libc/blockmem",
                "est. libc ms",
            ]
            .map(String::from)
            .to_vec(),
        );
        for r in &e.rows {
            t.rows.push(vec![
                r.op.name().into(),
                size_label(r.class),
                r.calls.to_string(),
                ms(r.traced_cycles as f64, ghz),
                format!("{:.2}", r.ratio),
                ms(r.libc_cycles, ghz),
            ]);
        }
        if e.skipped.is_none() {
            t.rows.push(vec![
                "all".into(),
                "".into(),
                e.rows.iter().map(|r| r.calls).sum::<u64>().to_string(),
                ms(e.traced_cycles as f64, ghz),
                format!("{:.2}", e.libc_cycles / (e.traced_cycles as f64).max(1.0)),
                ms(e.libc_cycles, ghz),
            ]);
        }
        Some(t)
    }

    fn size_classes(&self) -> Table {
        let a = self.analysis;
        let mut header: Vec<String> = vec!["size".into()];
        header.extend(OPS.iter().map(|o| format!("{} calls", o.name())));
        header.extend(["% calls", "% bytes", "% cycles"].map(String::from));
        let mut t = Table::new(
            "Size classes",
            "calls by power-of-two class: each row counts sizes above the previous row's and up to its own",
            header,
        );
        let total = a.total();
        for c in a.used_classes() {
            let mut all = super::analysis::Counts::default();
            let mut row = vec![size_label(c)];
            for op in OPS {
                let x = a.classes[op as usize][c as usize];
                all.merge(&x);
                row.push(x.calls.to_string());
            }
            row.push(pct(all.calls as f64, total.calls as f64));
            row.push(pct(all.bytes as f64, total.bytes as f64));
            row.push(pct(all.cycles as f64, total.cycles as f64));
            t.rows.push(row);
        }
        t
    }

    /// Seed 004 Table 7.
    fn table7(&self) -> Table {
        let a = self.analysis;
        let mut t = Table::new(
            "Block sizes (seed 004 Table 7)",
            "full page(s): a multiple of 4096 B; page fragment: 2048, 1024, 512 or 256 B; irregular: anything else",
            ["operation", "size of block", "% of calls", "% of bytes", "most frequent sizes"]
                .map(String::from)
                .to_vec(),
        );
        for (fam, label) in ["copy (memcpy)", "move (memmove)", "clear (memset, bzero)"]
            .iter()
            .enumerate()
        {
            let d = &a.distributions[fam];
            if d.calls == 0 {
                continue;
            }
            let total_bytes = d
                .sizes
                .iter()
                .fold(0u64, |t, (n, c)| t.saturating_add(n.saturating_mul(*c)));
            for kind in SizeKind::ALL {
                let mut sizes: Vec<(u64, u64)> = d
                    .sizes
                    .iter()
                    .filter(|(n, _)| SizeKind::of(**n) == kind)
                    .map(|(&n, &c)| (n, c))
                    .collect();
                let calls: u64 = sizes.iter().map(|s| s.1).sum();
                let b = sizes
                    .iter()
                    .fold(0u64, |t, s| t.saturating_add(s.0.saturating_mul(s.1)));
                sizes.sort_by_key(|s| std::cmp::Reverse(s.1));
                let examples = sizes
                    .iter()
                    .take(3)
                    .map(|(n, c)| format!("{} ×{c}", bytes(*n)))
                    .collect::<Vec<_>>()
                    .join(", ");
                t.rows.push(vec![
                    label.to_string(),
                    kind.label().into(),
                    pct(calls as f64, d.calls as f64),
                    pct(b as f64, total_bytes as f64),
                    examples,
                ]);
            }
        }
        t
    }

    fn alignment(&self) -> Table {
        let a = self.analysis;
        let dst: Vec<u64> = (0..7)
            .map(|i| a.dst_align.iter().map(|o| o[i]).sum())
            .collect();
        let src: Vec<u64> = (0..7)
            .map(|i| a.src_align.iter().map(|o| o[i]).sum())
            .collect();
        let (dt, st) = (dst.iter().sum::<u64>(), src.iter().sum::<u64>());
        let copies = a.by_op[0].calls + a.by_op[1].calls;
        let mut t = Table::new(
            "Alignment",
            format!(
                "largest power of two dividing the address (64: cache-line aligned); {}% of copies and moves have source and destination at the same offset within a line",
                pct(a.same_line_offset as f64, copies as f64)
            ),
            ["alignment", "dst calls", "% dst", "src calls", "% src"]
                .map(String::from)
                .to_vec(),
        );
        for i in 0..7 {
            t.rows.push(vec![
                format!("{}{}", 1 << i, if i == 6 { "+" } else { "" }),
                dst[i].to_string(),
                pct(dst[i] as f64, dt as f64),
                src[i].to_string(),
                pct(src[i] as f64, st as f64),
            ]);
        }
        t
    }

    fn aliasing(&self) -> Table {
        let a = self.analysis;
        let total: u64 = a.alias.iter().sum();
        let mut t = Table::new(
            "4 KiB aliasing",
            "copies and moves of 64 B or more by (dst − src) mod 4096: a destination 1–255 B past its source modulo 4 KiB makes a forward copy's loads look dependent on its own recent stores (4K aliasing); at 1–31 B `rep movsb` (glibc's memcpy above about 2 KiB on CPUs with fast strings) ran 17–28× slower on an AMD Zen 4, and blockmem copies those with vectors",
            ["(dst − src) mod 4096", "calls", "%"].map(String::from).to_vec(),
        );
        for (i, (_, _, label)) in ALIAS_BINS.iter().enumerate() {
            t.rows.push(vec![
                label.to_string(),
                a.alias[i].to_string(),
                pct(a.alias[i] as f64, total as f64),
            ]);
        }
        t
    }

    /// Seed 003 Table 2.
    fn probe(&self) -> Table {
        let a = self.analysis;
        let every = a.processes.first().map_or(0, |p| p.sample_every);
        let mut t = Table::new(
            "First-line probe vs sampled block state (seed 003 Table 2)",
            format!(
                "1 call in {every} probed before it ran: a timed load of the first byte, then up to 8 lines across the block (hit ≤ {} cycles); block cached if > 60% of those hit, uncached if < 40% (else ambiguous, not counted); src/dst = % of blocks whose first line agreed",
                a.hit_max
            ),
            ["block size", "blocks", "src %", "dst %", "src cached %", "dst cached %", "ambiguous", "one line"]
                .map(String::from)
                .to_vec(),
        );
        let f = |x: Option<f64>| x.map_or("—".to_string(), |v| format!("{v:.1}"));
        let cached = |g: &super::analysis::Agreement| {
            let d = g.agree + g.disagree;
            if d == 0 {
                "—".to_string()
            } else {
                format!("{:.1}", 100.0 * g.block_cached as f64 / d as f64)
            }
        };
        let mut push = |label: String, r: &super::analysis::ProbeRow| {
            t.rows.push(vec![
                label,
                r.blocks.to_string(),
                f(r.src.percent()),
                f(r.dst.percent()),
                cached(&r.src),
                cached(&r.dst),
                (r.src.ambiguous + r.dst.ambiguous).to_string(),
                (r.src.single_line + r.dst.single_line).to_string(),
            ]);
        };
        for (i, r) in a.probe_rows.iter().enumerate() {
            if r.blocks == 0 {
                continue;
            }
            let label = if PROBE_ROWS[i] == u64::MAX {
                "> 64 KiB".into()
            } else {
                fmt_size(PROBE_ROWS[i] as usize)
            };
            push(label, r);
        }
        push("Total".into(), &a.probe_total());
        t
    }

    /// Seed 003 Table 3.
    fn fate(&self) -> Table {
        let a = self.analysis;
        let window = self.fate_window();
        let mut t = Table::new(
            "Destination fate (seed 003 Table 3)",
            format!(
                "destination bytes, by the first later call touching them {window}: read as a source (reused), written again (retargeted), or neither (unused, as far as block operations show)"
            ),
            ["written by", "bytes", "% used as source", "% overwritten", "% not seen again"]
                .map(String::from)
                .to_vec(),
        );
        let mut all = super::fate::Fates::default();
        let mut row = |name: &str, f: &super::fate::Fates| {
            let tot = f.total() as f64;
            t.rows.push(vec![
                name.to_string(),
                bytes(f.total()),
                pct(f.used_as_source as f64, tot),
                pct(f.overwritten as f64, tot),
                pct(f.not_seen_again as f64, tot),
            ]);
        };
        for op in OPS {
            let f = &a.fates[op as usize];
            all.merge(f);
            if f.total() > 0 {
                row(op.name(), f);
            }
        }
        row("all", &all);
        t
    }

    /// Seed 003 Table 3 with every access: the page traps' fates, per op and per site.
    fn observed(&self) -> Table {
        use super::format::PageFate;
        let a = self.analysis;
        let mut t = Table::new(
            "Destination fate, observed (seed 003 Table 3, every access)",
            format!(
                "watched pages of sampled destinations (up to 16 whole pages a call), by the first later access within {} ms: \
                 read or written by the program's loads and stores, read (write, send) or written (read, recv) by the kernel, \
                 read or overwritten by a block operation, released (freed, unmapped) first, or untouched; first = mean µs to the first access",
                super::observed::WATCH_WINDOW_MS
            ),
            [
                "written by",
                "calls observed",
                "pages",
                "% load read",
                "% store",
                "% kernel read",
                "% kernel write",
                "% block read",
                "% block write",
                "% released",
                "% untouched",
                "first µs",
            ]
            .map(String::from)
            .to_vec(),
        );
        let mut row = |name: String, o: &super::observed::Observed| {
            let tot = o.total() as f64;
            let mut r = vec![name, o.calls.to_string(), o.total().to_string()];
            r.extend(PageFate::ALL.iter().map(|&f| pct(o.of(f) as f64, tot)));
            r.push(o.mean_first_us().map_or("-".into(), |u| format!("{u:.0}")));
            t.rows.push(r);
        };
        let mut all = super::observed::Observed::default();
        for op in OPS {
            let o = &a.observed[op as usize];
            all.merge(o);
            if o.calls > 0 {
                row(op.name().to_string(), o);
            }
        }
        row("all".into(), &all);
        for s in a
            .sites
            .list
            .iter()
            .filter(|s| s.observed.calls > 0)
            .take(20)
        {
            row(format!("site {}", s.label()), &s.observed);
        }
        t
    }

    /// Seed 003 Table 1's kernel copy profile for this program: its I/O by op and site.
    fn io(&self) -> Table {
        let a = self.analysis;
        let ghz = a.ghz();
        let mut t = Table::new(
            "Kernel I/O (seed 003 Table 1)",
            "the program's read/write/pread/pwrite/readv/writev/preadv/pwritev/recv/send/recvfrom/sendto/recvmsg/sendmsg \
             calls (stdio's own writes happen inside the C library, unseen): bytes the kernel copied, by op, then by call site (most bytes first); ms = time in the calls",
            ["site", "op", "calls", "bytes", "asked", "failed", "ms"]
                .map(String::from)
                .to_vec(),
        );
        let row = |t: &mut Table, site: String, op: &str, c: &super::observed::IoTotals| {
            t.rows.push(vec![
                site,
                op.to_string(),
                c.calls.to_string(),
                bytes(c.bytes),
                bytes(c.asked),
                c.errors.to_string(),
                ms(c.cycles as f64, ghz),
            ]);
        };
        for (op, c) in &a.io {
            row(&mut t, "all".into(), op, c);
        }
        let mut sites: Vec<(&super::sites::Site, &str, &super::observed::IoTotals)> = a
            .sites
            .list
            .iter()
            .flat_map(|s| s.io.iter().map(move |(op, c)| (s, *op, c)))
            .collect();
        sites.sort_by_key(|x| std::cmp::Reverse(x.2.bytes));
        for (s, op, c) in sites.into_iter().take(20) {
            row(&mut t, s.label(), op, c);
        }
        t
    }

    /// The call sites with the most time (module `sites`).
    fn sites(&self) -> Table {
        let a = self.analysis;
        let ghz = a.ghz();
        let all = a.total().cycles as f64;
        let note = if a.sites.recorded {
            "calls grouped by the code that made them, most time first; state = % of \
             sampled calls that found the region cached; fate = % of destination bytes \
             read again / overwritten / not seen again; best = the hint with the \
             shortest replay (estimate) and its time"
                .to_string()
        } else {
            "call sites absent: the trace predates them (format version 1); trace the \
             program again to see them"
                .to_string()
        };
        let mut t = Table::new(
            "Call sites",
            note,
            [
                "site",
                "op",
                "calls",
                "bytes",
                "sizes",
                "src cached %",
                "dst cached %",
                "fate %",
                "share %",
                "ms",
                "kernels",
                "best",
            ]
            .map(String::from)
            .to_vec(),
        );
        let p = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.0}"));
        for s in a
            .sites
            .list
            .iter()
            .filter(|s| s.total().calls > 0)
            .take(super::sites::TOP_SITES.min(20))
        {
            let c = s.total();
            let f = s.fates;
            let tot = f.total() as f64;
            let mut kernels: Vec<(&String, &u64)> = s.kernels.iter().collect();
            kernels.sort_by_key(|k| std::cmp::Reverse(*k.1));
            let best = s.estimate.as_ref().map_or("-".into(), |e| {
                format!("{} {} ms", e.best, ms(e.best_cycles, ghz))
            });
            t.rows.push(vec![
                s.label(),
                s.main_op().name().to_string(),
                c.calls.to_string(),
                bytes(c.bytes),
                format!("{}–{}", bytes(s.min_size), bytes(s.max_size)),
                p(s.src_state.cached_percent()),
                p(s.dst_state.cached_percent()),
                format!(
                    "{} / {} / {}",
                    pct(f.used_as_source as f64, tot),
                    pct(f.overwritten as f64, tot),
                    pct(f.not_seen_again as f64, tot)
                ),
                pct(c.cycles as f64, all),
                ms(c.cycles as f64, ghz),
                kernels
                    .iter()
                    .take(2)
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                best,
            ]);
        }
        t
    }

    /// The JSON document.
    pub fn json(&self) -> Value {
        json!({
            "advice": self.advice,
            "title": self.title,
            "wall_seconds": self.wall_seconds,
            "tsc_ghz": self.analysis.ghz(),
            "analysis": self.analysis,
            "estimate": self.estimate,
            "stats_check": self.stats,
            "tables": self.tables().iter().map(|t| json!({"title": t.title, "note": t.note, "header": t.header, "rows": t.rows})).collect::<Vec<_>>(),
        })
    }

    /// Writes the SVG histograms into `dir`; returns their file names.
    pub fn plots(&self, dir: &Path) -> Result<Vec<String>> {
        let a = self.analysis;
        let mut files = Vec::new();
        let classes = a.used_classes();
        if !classes.is_empty() {
            let labels: Vec<String> = classes.iter().map(|&c| size_label(c)).collect();
            let calls: Vec<(String, Vec<f64>)> = OPS
                .iter()
                .filter(|op| a.by_op[**op as usize].calls > 0)
                .map(|op| {
                    (
                        op.name().to_string(),
                        classes
                            .iter()
                            .map(|&c| a.classes[*op as usize][c as usize].calls as f64)
                            .collect(),
                    )
                })
                .collect();
            bars(
                &dir.join("trace-sizes.svg"),
                "calls by size class",
                "calls",
                &labels,
                &calls,
            )?;
            files.push("trace-sizes.svg".into());
            let cycles: Vec<(String, Vec<f64>)> = OPS
                .iter()
                .filter(|op| a.by_op[**op as usize].calls > 0)
                .map(|op| {
                    (
                        op.name().to_string(),
                        classes
                            .iter()
                            .map(|&c| {
                                a.classes[*op as usize][c as usize].cycles as f64 / a.ghz() / 1e6
                            })
                            .collect(),
                    )
                })
                .collect();
            bars(
                &dir.join("trace-time.svg"),
                "time by size class",
                "ms",
                &labels,
                &cycles,
            )?;
            files.push("trace-time.svg".into());
        }
        let align_labels: Vec<String> = (0..7).map(|i| format!("{}", 1 << i)).collect();
        let dst: Vec<f64> = (0..7)
            .map(|i| a.dst_align.iter().map(|o| o[i]).sum::<u64>() as f64)
            .collect();
        let src: Vec<f64> = (0..7)
            .map(|i| a.src_align.iter().map(|o| o[i]).sum::<u64>() as f64)
            .collect();
        bars(
            &dir.join("trace-alignment.svg"),
            "pointer alignment (64 = cache line)",
            "calls",
            &align_labels,
            &[("dst".into(), dst), ("src".into(), src)],
        )?;
        files.push("trace-alignment.svg".into());
        let alias_labels: Vec<String> = ALIAS_BINS.iter().map(|b| b.2.to_string()).collect();
        bars(
            &dir.join("trace-aliasing.svg"),
            "(dst − src) mod 4096, copies and moves ≥ 64 B",
            "calls",
            &alias_labels,
            &[("calls".into(), a.alias.iter().map(|&x| x as f64).collect())],
        )?;
        files.push("trace-aliasing.svg".into());
        let fate_labels: Vec<String> = ["used as source", "overwritten", "not seen again"]
            .map(String::from)
            .to_vec();
        let fates: Vec<(String, Vec<f64>)> = OPS
            .iter()
            .filter(|op| a.fates[**op as usize].total() > 0)
            .map(|op| {
                let f = &a.fates[*op as usize];
                let t = f.total() as f64;
                (
                    op.name().to_string(),
                    vec![
                        100.0 * f.used_as_source as f64 / t,
                        100.0 * f.overwritten as f64 / t,
                        100.0 * f.not_seen_again as f64 / t,
                    ],
                )
            })
            .collect();
        if !fates.is_empty() {
            bars(
                &dir.join("trace-fate.svg"),
                "destination fate",
                "% of destination bytes",
                &fate_labels,
                &fates,
            )?;
            files.push("trace-fate.svg".into());
        }
        Ok(files)
    }

    /// Writes `dir/index.html` (tables and the plots).
    pub fn html(&self, dir: &Path, plots: &[String], files: &[String]) -> Result<()> {
        let mut s = String::new();
        s.push_str(
            "<!doctype html><html><head><meta charset=utf-8><title>blockmem trace</title><style>\
             body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}\
             table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}\
             td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\
             thead th{background:#eee}tbody th{text-align:left;background:#fafafa}\
             .note{color:#555;font-size:13px;margin:0}.warn{color:#8a4b00}\
             img{max-width:100%;border:1px solid #ddd;margin:.3em 0}\
             </style></head><body><h1>blockmem trace</h1>",
        );
        let _ = write!(s, "<p><b>{}</b>", esc(&self.title));
        if let Some(w) = self.wall_seconds {
            let _ = write!(s, " — wall {w:.3} s");
        }
        s.push_str("</p>");
        if !files.is_empty() {
            s.push_str("<p>Data: ");
            for f in files {
                let _ = write!(s, "<a href=\"{0}\">{0}</a> ", esc(f));
            }
            s.push_str("</p>");
        }
        if !self.analysis.warnings.is_empty() {
            s.push_str("<h2>Warnings</h2><ul>");
            for w in &self.analysis.warnings {
                let _ = write!(s, "<li class=warn>{}</li>", esc(w));
            }
            s.push_str("</ul>");
        }
        for p in plots {
            let _ = write!(s, "<div><img src=\"{0}\" alt=\"{0}\"></div>", esc(p));
        }
        for t in self.tables() {
            s.push_str(&t.to_html());
        }
        s.push_str("</body></html>");
        let path = dir.join("index.html");
        std::fs::write(&path, s).with_context(|| format!("cannot write {}", path.display()))
    }
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plot: {e:?}")
}

/// A tick label: 25M, 3.5k, 12, 0.25.
fn tick(y: f64) -> String {
    let a = y.abs();
    let short = |v: f64, unit: &str| {
        if v.fract().abs() < 1e-9 {
            format!("{v:.0}{unit}")
        } else {
            format!("{v:.1}{unit}")
        }
    };
    if a >= 1e9 {
        short(y / 1e9, "G")
    } else if a >= 1e6 {
        short(y / 1e6, "M")
    } else if a >= 1e4 {
        short(y / 1e3, "k")
    } else if a >= 10.0 || a == 0.0 {
        format!("{y:.0}")
    } else {
        format!("{y:.2}")
    }
}

/// A grouped bar chart: one group per label, one bar per series. The value axis is
/// logarithmic when the non-zero values span more than two decades.
pub fn bars(
    path: &Path,
    title: &str,
    ydesc: &str,
    labels: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<()> {
    let groups = labels.len().max(1);
    let width = (140 + 60 * groups as u32).clamp(640, 1600);
    let root = SVGBackend::new(path, (width, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let values = || series.iter().flat_map(|s| s.1.iter().copied());
    let ymax = values().fold(0.0f64, f64::max).max(1e-9);
    let ymin = values().filter(|v| *v > 0.0).fold(f64::MAX, f64::min);
    let log = ymin < f64::MAX && ymax / ymin > 100.0;
    let base = if log { ymin / 2.0 } else { 0.0 };
    let per = series.len().max(1) as f64;
    let labels_owned = labels.to_vec();
    let x_label = move |x: &f64| {
        // Ticks fall on group centres (integers); anything else gets no label.
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            labels_owned.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut b = ChartBuilder::on(&root);
    b.caption(
        if log {
            format!("{title} (log scale)")
        } else {
            title.to_string()
        },
        ("sans-serif", 16),
    )
    .margin(10)
    .x_label_area_size(40)
    .y_label_area_size(60);
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(groups)
                .x_label_formatter(&x_label)
                .y_label_formatter(&|y: &f64| tick(*y))
                .y_desc(ydesc)
                .draw()
                .map_err(err)?;
            for (k, (name, values)) in series.iter().enumerate() {
                let color = Palette99::pick(k).to_rgba();
                chart
                    .draw_series(values.iter().enumerate().filter(|(_, v)| **v > 0.0).map(
                        |(i, &v)| {
                            let x0 = i as f64 - 0.4 + 0.8 * k as f64 / per;
                            let x1 = x0 + 0.8 / per;
                            Rectangle::new([(x0, base), (x1, v)], color.filled())
                        },
                    ))
                    .map_err(err)?
                    .label(name.clone())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                    });
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 11))
                .draw()
                .map_err(err)?;
        }};
    }
    let xr = -0.5f64..groups as f64 - 0.5;
    if log {
        body!(b
            .build_cartesian_2d(xr, (base..ymax * 2.0).log_scale())
            .map_err(err)?);
    } else {
        body!(b.build_cartesian_2d(xr, 0f64..ymax * 1.1).map_err(err)?);
    }
    root.present().map_err(err)?;
    Ok(())
}
