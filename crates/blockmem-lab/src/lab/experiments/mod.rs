//! The experiments, one module each, named after the seed table or figure it reproduces
//! (the seed documents are summarised in docs/SEEDS.md). Each has `run` (measure,
//! returning records) and `tables` (the terminal and HTML view); plots live in
//! [`crate::lab::plot`].

pub mod alignment;
pub mod contention;
pub mod doors;
pub mod fleet;
pub mod kernel;
pub mod neighbour;
pub mod policy;
pub mod pollution;
pub mod probe;
pub mod reuse;
pub mod sizes;
pub mod temperature;
pub mod threads;
pub mod zero;

use std::path::PathBuf;

use blockmem::kernel::Op;

use super::method::Method;
use super::report::Table;
use super::runner::{Cell, Record, Runner, Shape, SoFar};

/// The experiments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Experiment {
    /// Seed 000 Tables 5–6.
    Temperature,
    /// Seed 001 table, seed 003 Fig. 2.
    Sizes,
    /// Seed 000 Tables 3–4 plus 4 KiB aliasing.
    Alignment,
    /// Seed 003 Fig. 3.
    Reuse,
    /// Seed 004: misses induced in the application.
    Pollution,
    /// Seed 004: block clear.
    Zero,
    /// fleetbench distributions.
    Fleet,
    /// Seed 003 Fig. 4: the per-call choice against libc and the per-cell best kernel.
    Policy,
    /// Seed 003 §IV and Table 2: probe cost and accuracy.
    Probe,
    /// Small calls through each door (shim, C ABI, function pointer) against libc.
    Doors,
    /// Seed 004 at the scale of one call: a small copy or set beside another core's line.
    Neighbour,
    /// Seed 004 on many cores: scaling, a victim's working set, a hand-off.
    Threads,
    /// Seed 004: large calls alone and beside other cores' copies, the contention input
    /// on and off.
    Contention,
    /// Seed 000 §1, seed 003 Table 1: the kernel's copies (read path, IPC).
    Kernel,
}

impl Experiment {
    /// Every experiment, in order. The default set is [`Experiment::DEFAULT`].
    pub const ALL: [Experiment; 14] = [
        Experiment::Temperature,
        Experiment::Sizes,
        Experiment::Alignment,
        Experiment::Reuse,
        Experiment::Pollution,
        Experiment::Zero,
        Experiment::Fleet,
        Experiment::Neighbour,
        Experiment::Policy,
        Experiment::Probe,
        Experiment::Doors,
        Experiment::Threads,
        Experiment::Contention,
        Experiment::Kernel,
    ];

    /// What `blockmem lab` runs without naming experiments: the seed reproductions.
    /// `policy` (minutes; meaningful after `blockmem calibrate`) and `probe` run when
    /// named.
    pub const DEFAULT: [Experiment; 8] = [
        Experiment::Temperature,
        Experiment::Sizes,
        Experiment::Alignment,
        Experiment::Reuse,
        Experiment::Pollution,
        Experiment::Zero,
        Experiment::Fleet,
        Experiment::Neighbour,
    ];

    /// The name on the command line and in JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Experiment::Temperature => "temperature",
            Experiment::Sizes => "sizes",
            Experiment::Alignment => "alignment",
            Experiment::Reuse => "reuse",
            Experiment::Pollution => "pollution",
            Experiment::Zero => "zero",
            Experiment::Fleet => "fleet",
            Experiment::Policy => "policy",
            Experiment::Probe => "probe",
            Experiment::Doors => "doors",
            Experiment::Neighbour => "neighbour",
            Experiment::Threads => "threads",
            Experiment::Contention => contention::NAME,
            Experiment::Kernel => kernel::NAME,
        }
    }

    /// One line: what it measures and which seed figure it reproduces.
    pub const fn about(self) -> &'static str {
        match self {
            Experiment::Temperature => "3×3 hot/clean/dirty src×dst matrix per method at 4 KiB..16 MiB (seed 000 Tables 5–6)",
            Experiment::Sizes => "bandwidth and cycles/byte from 32 B to 64 MiB, hot/cold src×dst (seed 001 table, seed 003 Fig. 2)",
            Experiment::Alignment => "destination offset 0..64 against an aligned source, hot and clean, plus 4 KiB aliasing (seed 000 Tables 3–4)",
            Experiment::Reuse => "copy, then read the whole destination: copy, read and sum (seed 003 Fig. 3)",
            Experiment::Pollution => "cost to re-read a warm application working set after a copy (seed 004)",
            Experiment::Zero => "set/zero of 4 KiB to 256 MiB, hot and clean destination (seed 004 block clear)",
            Experiment::Fleet => "fleetbench size/alignment/overlap distributions, hot and cold working sets",
            Experiment::Policy => "auto and auto_hinted against libc and the per-cell best kernel over sizes × states × reuse (seed 003 Fig. 4)",
            Experiment::Doors => "fleet distributions and fixed-size loops through the LD_PRELOAD shim, the C ABI and function pointers, from a C driver, against libc through the same door",
            Experiment::Probe => "cost of the timed-load cache probe and how well the first line predicts the block (seed 003 Table 2)",
            Experiment::Neighbour => "another core's time per store to a line while small copies and sets fill the bytes just before it (seed 004, one call at a time)",
            Experiment::Threads => "pinned threads on every CPU: aggregate GB/s of N copiers or zeroers, a warm working set's slowdown beside copiers, a producer-to-consumer hand-off (seed 004 on many cores)",
            Experiment::Contention => "large copies and zeroes alone and beside other cores' copies, auto with its contention input on and off (seed 004)",
            Experiment::Kernel => "the kernel's copies: read/pread of a cached file against mmap and a user copy, pipe/UNIX socket/vmsplice/shared ring between two processes, the classic bw_file_rd/bw_pipe/bw_unix loops (seed 000 §1, seed 003 Table 1)",
        }
    }

    /// Parses a name.
    pub fn from_name(s: &str) -> Option<Experiment> {
        Experiment::ALL.into_iter().find(|e| e.name() == s)
    }

    /// Runs it.
    pub fn run(self, ctx: &mut Ctx<'_>) -> anyhow::Result<Vec<Record>> {
        Ok(match self {
            Experiment::Temperature => temperature::run(ctx),
            Experiment::Sizes => sizes::run(ctx),
            Experiment::Alignment => alignment::run(ctx),
            Experiment::Reuse => reuse::run(ctx),
            Experiment::Pollution => pollution::run(ctx),
            Experiment::Zero => zero::run(ctx),
            Experiment::Fleet => fleet::run(ctx)?,
            Experiment::Policy => policy::run(ctx),
            Experiment::Probe => probe::run(ctx),
            Experiment::Doors => doors::run(ctx)?,
            Experiment::Neighbour => neighbour::run(ctx)?,
            Experiment::Threads => threads::run(ctx)?,
            Experiment::Contention => contention::run(ctx)?,
            Experiment::Kernel => kernel::run(ctx)?,
        })
    }

    /// Its tables.
    pub fn tables(self, recs: &[Record]) -> Vec<Table> {
        match self {
            Experiment::Temperature => temperature::tables(recs),
            Experiment::Sizes => sizes::tables(recs),
            Experiment::Alignment => alignment::tables(recs),
            Experiment::Reuse => reuse::tables(recs),
            Experiment::Pollution => pollution::tables(recs),
            Experiment::Zero => zero::tables(recs),
            Experiment::Fleet => fleet::tables(recs),
            Experiment::Policy => policy::tables(recs),
            Experiment::Probe => probe::tables(recs),
            Experiment::Doors => doors::tables(recs),
            Experiment::Neighbour => neighbour::tables(recs),
            Experiment::Threads => threads::tables(recs),
            Experiment::Contention => contention::tables(recs),
            Experiment::Kernel => kernel::tables(recs),
        }
    }
}

/// What an experiment gets: the engine and the validated options.
pub struct Ctx<'a> {
    /// The engine.
    pub runner: &'a mut Runner,
    /// Quick mode (the default set in under 3 minutes).
    pub quick: bool,
    /// Methods the user named (`None`: each experiment's default set).
    pub methods: Option<&'a [Method]>,
    /// Every method this host has.
    pub all_methods: &'a [Method],
    /// Sizes the user named.
    pub sizes: Option<&'a [usize]>,
    /// Repetitions the user asked for.
    pub reps: Option<usize>,
    /// Hide progress bars.
    pub quiet: bool,
    /// Where the fleet distributions are.
    pub fleet_dir: Option<PathBuf>,
}

impl Ctx<'_> {
    /// The methods to run for `op`: the user's (a named method lacking the op is
    /// reported by the runner), else those of `default` names this host has that
    /// implement it (`None`: all).
    pub fn pick(&self, op: Op, default: Option<&[&str]>) -> Vec<Method> {
        if let Some(m) = self.methods {
            return m.to_vec();
        }
        self.all_methods
            .iter()
            .filter(|m| m.supports(op) && default.is_none_or(|names| names.contains(&m.name())))
            .cloned()
            .collect()
    }

    /// The sizes to run: the user's, else `full` or `quick`.
    pub fn sizes_or(&self, full: &[usize], quick: &[usize]) -> Vec<usize> {
        match self.sizes {
            Some(s) => s.to_vec(),
            None if self.quick => quick.to_vec(),
            None => full.to_vec(),
        }
    }

    /// Repetitions for a cell of `n` bytes: the user's, else `base` (`quick_base` in
    /// quick mode), reduced for large sizes where one repetition is expensive and the
    /// spread is small. The default set's experiments pass the same count for both:
    /// quick mode trims sizes, methods and offsets, not repetitions, because two quick
    /// runs must agree (with half the repetitions 77% of cells agreed within 10%
    /// between back-to-back runs; with the full count 83%, in 97 s).
    pub fn reps_for(&self, n: usize, base: usize, quick_base: usize) -> usize {
        if let Some(r) = self.reps {
            return r.max(1);
        }
        let b = if self.quick {
            quick_scaled(quick_base, self.runner.states.hier.llc_effective)
        } else {
            base
        };
        if n >= 32 << 20 {
            (b / 3).max(3)
        } else if n >= 4 << 20 {
            (b / 2).max(3)
        } else if n <= 4096 {
            // Sub-microsecond cold copies are a handful of DRAM latencies, which vary
            // with other tenants' traffic: twice the samples.
            2 * b
        } else {
            b
        }
    }

    /// Every method on one shape, interleaved per repetition; methods lacking the op
    /// are left out (the runner records a warning).
    pub fn measure(&mut self, methods: &[Method], shape: Shape) -> Vec<Record> {
        self.runner
            .measure_methods(methods, shape)
            .into_iter()
            .flatten()
            .collect()
    }

    /// Measures every group of a plan (each: one shape, one cell per method) in
    /// [`ROUNDS`] passes over the plan ([`Runner::measure_rounds`]), with a progress
    /// bar titled `title`. One entry per group, one per cell, `None` where a method
    /// lacks the op (the runner records a warning).
    pub fn measure_plan(
        &mut self,
        groups: &[Vec<Cell<'_>>],
        title: &str,
    ) -> Vec<Vec<Option<Record>>> {
        self.measure_plan_extending(groups, title, |_, _| 0)
    }

    /// [`Ctx::measure_plan`], with more repetitions for the groups `extend` asks for
    /// ([`Runner::measure_rounds_extending`]).
    pub fn measure_plan_extending(
        &mut self,
        groups: &[Vec<Cell<'_>>],
        title: &str,
        mut extend: impl FnMut(&[Cell<'_>], &SoFar<'_>) -> usize,
    ) -> Vec<Vec<Option<Record>>> {
        let cells: usize = groups.iter().map(Vec::len).sum();
        let pb = self.bar(cells * ROUNDS, title, "cell passes");
        let out = self.runner.measure_rounds_extending(
            groups,
            ROUNDS,
            |cells, so_far| {
                let more = extend(cells, so_far);
                if more > 0 {
                    pb.inc_length((cells.len() * ROUNDS) as u64);
                }
                more
            },
            |k| pb.inc(k as u64),
        );
        pb.finish_and_clear();
        out
    }

    /// [`Ctx::measure_plan`] over shapes, every method of `methods` on each; the
    /// records in plan order, methods lacking the op left out.
    pub fn measure_shapes(
        &mut self,
        methods: &[Method],
        shapes: &[Shape],
        title: &str,
    ) -> Vec<Record> {
        let groups: Vec<Vec<Cell<'_>>> = shapes.iter().map(|s| s.cells(methods, 0)).collect();
        self.measure_plan(&groups, title)
            .into_iter()
            .flatten()
            .flatten()
            .collect()
    }

    /// Progress of `len` steps of `unit` ([`super::progress::bar`]).
    pub fn bar(&self, len: usize, title: &str, unit: &'static str) -> super::progress::Progress {
        super::progress::bar(len as u64, title, unit, self.quiet)
    }
}

/// Passes an experiment makes over its cells, each running a share of every cell's
/// repetitions on freshly mapped buffers ([`Runner::measure_rounds`]).
pub const ROUNDS: usize = 4;

/// Powers of two from `lo` to `hi` inclusive, stepping by `×step`.
pub fn geometric(lo: usize, hi: usize, step: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut n = lo;
    while n <= hi {
        v.push(n);
        n *= step;
    }
    v
}

/// Human size: `32 B`, `4 KiB`, `1 MiB`, `1.5 MiB`.
pub fn fmt_size(n: usize) -> String {
    if n >= 1 << 30 && n.is_multiple_of(1 << 30) {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 {
        if n.is_multiple_of(1 << 20) {
            format!("{} MiB", n >> 20)
        } else {
            format!("{:.1} MiB", n as f64 / (1 << 20) as f64)
        }
    } else if n >= 1 << 10 {
        if n.is_multiple_of(1 << 10) {
            format!("{} KiB", n >> 10)
        } else {
            format!("{:.1} KiB", n as f64 / 1024.0)
        }
    } else {
        format!("{n} B")
    }
}

/// Median ns of libc's record matching `same`, for ratios.
pub fn libc_median(recs: &[Record], same: impl Fn(&Record) -> bool) -> Option<f64> {
    recs.iter()
        .find(|r| r.method == "libc" && same(r))
        .map(|r| r.summary.median)
}

/// "12.3 (0.85×)": a value and the ratio of libc's time to this method's (>1 = faster
/// than libc).
pub fn with_ratio(value: String, median: f64, libc: Option<f64>) -> String {
    match libc {
        Some(l) if median > 0.0 => format!("{value} ({:.2}×)", l / median),
        _ => value,
    }
}

/// The records of experiment `name`, and the methods among them in first-seen order.
pub fn records_of(recs: &[Record], name: &str) -> (Vec<Record>, Vec<String>) {
    let recs: Vec<Record> = recs
        .iter()
        .filter(|r| r.experiment == name)
        .cloned()
        .collect();
    let methods = distinct(&recs, |r| r.method.clone());
    (recs, methods)
}

/// Distinct values of `f` over `recs`, in first-seen order.
pub fn distinct<T: PartialEq + Clone>(recs: &[Record], f: impl Fn(&Record) -> T) -> Vec<T> {
    let mut v: Vec<T> = Vec::new();
    for r in recs {
        let x = f(r);
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}
/// The effective LLC up to which `--quick` keeps its repetitions.
pub const QUICK_LLC: usize = 16 << 20;

/// `--quick`'s repetitions on a host whose effective LLC is `llc`: every cold cell's
/// proportion (never below 3) and the quick set keeps its time.
pub fn quick_scaled(base: usize, llc: usize) -> usize {
    if llc <= QUICK_LLC {
        return base;
    }
    (base * QUICK_LLC).div_ceil(llc).max(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_repetitions_shrink_with_the_llc_past_its_bound() {
        assert_eq!(quick_scaled(31, 8 << 20), 31);
        assert_eq!(quick_scaled(31, QUICK_LLC), 31);
        assert_eq!(quick_scaled(31, 32 << 20), 16);
        assert_eq!(quick_scaled(31, 64 << 20), 8);
        assert_eq!(quick_scaled(5, 1 << 30), 3);
    }
}
