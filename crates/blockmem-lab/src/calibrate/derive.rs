//! Deriving the decision table from measurements: one routine for every row, no case
//! per kernel. Pure (no clock, no hardware), so it is unit-tested on synthetic hosts.
//!
//! For each row (op family, hint, destination state) and each measured size:
//!
//! 1. The row's **scenarios**: the destination states it covers (`cached`: hot;
//!    `cold`: evicted; `fresh`: never touched; `unknown`: all three) crossed with what follows the call (`Reuse`: the destination is read
//!    back; `NoReuse`: nothing; `Auto`: either). A scenario's cost is the geometric
//!    mean over the source states measured (the call cannot know its source).
//! 2. Each candidate kernel's **regret**: its worst ratio, over the scenarios, to the
//!    best kernel of each scenario. The row's choice is the kernel of least regret, so
//!    a row of one scenario takes the fastest kernel, and an unknown row the kernel
//!    that loses least wherever the call's bytes turn out to be (what "robust" means).
//! 3. **The floor**: only kernels that run every scenario of the row at least
//!    [`FLOOR`] times as fast as the system C library, measured in the same cells,
//!    are candidates (where none does, those closest to it). Least regret alone would
//!    stream a 16 KiB copy to an evicted destination whose bytes are read right after
//!    (1.3 times the best there, 0.8 times libc): blockmem must never lose to libc.
//! 4. **Hysteresis**: the kernel chosen at the previous size is kept while its regret
//!    is within [`MARGIN`] of the best, here or at the next size (one noisy size does
//!    not split a row), so noise does not cut a row into bands.
//! 5. **Probing**, in unknown rows: from the first size where probing and then
//!    running the chosen kernel of the state found beats the unknown row's kernel by
//!    [`PROBE_PAYBACK`] times the probe's measured cost in some scenario, while costing
//!    no scenario more than [`PROBE_MAX_LOSS`]; probing then holds for every larger
//!    size (the probe's share only shrinks).
//!
//! A band starts at the measured size where its kernel was chosen; the first band of a
//! row starts at 0. Each band keeps its evidence: the candidates' regrets where it was
//! chosen, written as comments into the profile.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use blockmem::cpu::Features;
use blockmem::kernel::{Hint, KernelId, Op};
use blockmem::profile::{Action, Family, Row, State, Table};

/// A destination's state as calibration creates it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash)]
pub enum Dst {
    /// Just written: in cache.
    Hot,
    /// Evicted (clean lines of other data in the cache).
    Clean,
    /// Mapped, never touched: the call takes the page faults.
    Fresh,
}

impl Dst {
    /// The stable name.
    pub const fn name(self) -> &'static str {
        match self {
            Dst::Hot => "hot",
            Dst::Clean => "clean",
            Dst::Fresh => "fresh",
        }
    }
}

/// What follows the call in a measurement.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash)]
pub enum Then {
    /// Nothing: the call alone.
    Nothing,
    /// A read of the whole destination.
    ReadDst,
}

/// One measured cell: family, kernel, size, source hot (false: evicted), destination,
/// what followed.
pub type Key = (Family, KernelId, usize, bool, Dst, Then);

/// Median time (ns) of each measured cell.
pub type Measurements = BTreeMap<Key, f64>;

/// The system C library's median time (ns) per cell: [`Key`] without the kernel.
pub type Baseline = BTreeMap<(Family, usize, bool, Dst, Then), f64>;

/// A candidate must run every scenario of its row at least this fast relative to libc.
pub const FLOOR: f64 = 0.95;

/// Calls into one block in a loop: the median time (ns) of the last call, per op,
/// kernel and size (`measure::measure_loops`).
pub type LoopTimes = BTreeMap<(Op, KernelId, usize), f64>;

/// In a loop cell, streaming wins where the fastest temporal kernel takes more than
/// this many times the fastest streaming kernel's time. A tie goes to temporal stores,
/// which also leave the block cached for whatever reads it next.
pub const LOOP_MARGIN: f64 = 1.05;

/// The table's `OP.loop_temporal_max` from the op's loop cells: the largest
/// size below the first where streaming wins ([`LOOP_MARGIN`]); where streaming never
/// wins, the largest size measured. Also returns that first size (`None`: streaming won
/// nowhere). `(None, None)` when no size has both a temporal and a streaming kernel
/// measured (the table keeps its default).
pub fn loop_temporal_max(loops: &LoopTimes, op: Op) -> (Option<usize>, Option<usize>) {
    let mut bound = None;
    for (n, temporal, stream) in loop_bests(loops, op) {
        if temporal > LOOP_MARGIN * stream {
            return (Some(bound.unwrap_or(0)), Some(n));
        }
        bound = Some(n);
    }
    (bound, None)
}

/// Per size measured with both kinds of kernel for `op`: the size, the fastest
/// temporal kernel's time and the fastest streaming kernel's, in size order.
fn loop_bests(loops: &LoopTimes, op: Op) -> Vec<(usize, f64, f64)> {
    let mut by_size: BTreeMap<usize, (f64, f64)> = BTreeMap::new();
    for (&(o, k, n), &t) in loops {
        if o != op {
            continue;
        }
        let e = by_size.entry(n).or_insert((f64::INFINITY, f64::INFINITY));
        let slot = if k.streams() { &mut e.1 } else { &mut e.0 };
        *slot = slot.min(t);
    }
    by_size
        .into_iter()
        .filter(|(_, (t, s))| t.is_finite() && s.is_finite())
        .map(|(n, (t, s))| (n, t, s))
        .collect()
}

/// An op's loop cells as one line for the profile's header: per size, the fastest
/// temporal and streaming kernels' time per KiB of the last call.
pub fn loop_evidence(loops: &LoopTimes, op: Op) -> String {
    let mut s = format!(
        "{} loops: one block {} again and again, the fourth call, ns per KiB, fastest temporal / fastest streaming kernel:",
        op.name(),
        match op {
            Op::Copy | Op::Move => "copied into",
            Op::Set | Op::Zero => "set",
        }
    );
    for (n, t, st) in loop_bests(loops, op) {
        let kib = n as f64 / 1024.0;
        let _ = write!(
            s,
            " {} {:.0}/{:.0}",
            blockmem::profile::Size(n),
            t / kib,
            st / kib
        );
    }
    s
}

/// A kernel must beat the incumbent's regret by this factor to displace it.
pub const MARGIN: f64 = 1.05;
/// Probing must promise, in some scenario, this many times its own cost.
pub const PROBE_PAYBACK: f64 = 4.0;
/// The most probing may cost any scenario, relative to not probing.
pub const PROBE_MAX_LOSS: f64 = 1.05;

/// What a probe costs a call, ns, by the state it finds.
#[derive(Clone, Copy, Debug)]
pub struct ProbeCost {
    /// The probed line was in cache.
    pub cached: f64,
    /// The probed line came from memory.
    pub cold: f64,
    /// The probed page was fresh: the probe's touch took the page fault the call would
    /// have taken (and a second one when the call writes the zero page it mapped).
    pub fresh: f64,
}

/// One scenario of a row: a destination state and what follows the call.
type Scenario = (Dst, Then);

/// Kernels with their regret at one size, smallest first.
type Regrets = Vec<(KernelId, f64)>;

/// The scenarios of a row (see the module docs), keeping those measured at `n`.
fn scenarios(m: &Measurements, fam: Family, hint: Hint, st: State, n: usize) -> Vec<Scenario> {
    let dsts: &[Dst] = match st {
        State::Cached => &[Dst::Hot],
        State::Cold => &[Dst::Clean],
        State::Fresh => &[Dst::Fresh],
        State::Unknown => &[Dst::Hot, Dst::Clean, Dst::Fresh],
    };
    let thens: &[Then] = match hint {
        Hint::NoReuse => &[Then::Nothing],
        Hint::Reuse => &[Then::ReadDst],
        Hint::Auto => &[Then::Nothing, Then::ReadDst],
    };
    let measured = |d: Dst, t: Then| {
        m.keys()
            .any(|k| k.0 == fam && k.2 == n && k.4 == d && k.5 == t)
    };
    let mut out: Vec<Scenario> = dsts
        .iter()
        .flat_map(|&d| thens.iter().map(move |&t| (d, t)))
        .filter(|&(d, t)| measured(d, t))
        .collect();
    if out.is_empty() && hint == Hint::Reuse {
        // No read-after measured at this size: the call alone decides.
        out = dsts
            .iter()
            .map(|&d| (d, Then::Nothing))
            .filter(|&(d, t)| measured(d, t))
            .collect();
    }
    out
}

/// A kernel's cost in a scenario: the geometric mean over the measured source states.
fn cost(m: &Measurements, fam: Family, k: KernelId, n: usize, (d, t): Scenario) -> Option<f64> {
    geomean(
        [true, false]
            .iter()
            .filter_map(|&hot| m.get(&(fam, k, n, hot, d, t)).copied()),
    )
}

/// libc's cost in a scenario, as [`cost`].
fn libc_cost(b: &Baseline, fam: Family, n: usize, (d, t): Scenario) -> Option<f64> {
    geomean(
        [true, false]
            .iter()
            .filter_map(|&hot| b.get(&(fam, n, hot, d, t)).copied()),
    )
}

fn geomean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = xs.filter(|x| *x > 0.0 && x.is_finite()).collect();
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// The kernels measured for a family at size `n` in every one of `sc`.
fn candidates(m: &Measurements, fam: Family, n: usize, sc: &[Scenario]) -> Vec<KernelId> {
    let mut ks: Vec<KernelId> = m
        .keys()
        .filter(|k| k.0 == fam && k.2 == n)
        .map(|k| k.1)
        .collect();
    ks.sort();
    ks.dedup();
    ks.retain(|&k| sc.iter().all(|&s| cost(m, fam, k, n, s).is_some()));
    ks
}

/// A candidate at one size: its regret and its worst speed relative to libc over the
/// row's scenarios (infinite where libc was not measured).
#[derive(Clone, Copy, Debug)]
struct Candidate {
    kernel: KernelId,
    regret: f64,
    vs_libc: f64,
}

/// The candidates at `n` (see the module docs), least regret first (ties: table
/// order), keeping only those at or above [`FLOOR`] against libc, or where none is,
/// those within [`MARGIN`] of the best ratio to libc.
fn candidates_at(
    m: &Measurements,
    b: &Baseline,
    fam: Family,
    n: usize,
    sc: &[Scenario],
) -> Vec<Candidate> {
    let all: Vec<Candidate> = regrets(m, fam, n, sc)
        .into_iter()
        .map(|(kernel, regret)| {
            let vs_libc = sc
                .iter()
                .filter_map(|&s| Some(libc_cost(b, fam, n, s)? / cost(m, fam, kernel, n, s)?))
                .fold(f64::INFINITY, f64::min);
            Candidate {
                kernel,
                regret,
                vs_libc,
            }
        })
        .collect();
    if all.iter().any(|c| c.vs_libc >= FLOOR) {
        return all.into_iter().filter(|c| c.vs_libc >= FLOOR).collect();
    }
    let best = all.iter().map(|c| c.vs_libc).fold(0.0, f64::max);
    all.into_iter()
        .filter(|c| c.vs_libc * MARGIN >= best)
        .collect()
}

/// Each candidate's regret at `n` over the scenarios, smallest first (ties: table
/// order).
fn regrets(m: &Measurements, fam: Family, n: usize, sc: &[Scenario]) -> Regrets {
    let ks = candidates(m, fam, n, sc);
    let best: Vec<f64> = sc
        .iter()
        .map(|&s| {
            ks.iter()
                .filter_map(|&k| cost(m, fam, k, n, s))
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    let mut out: Regrets = ks
        .iter()
        .map(|&k| {
            let worst = sc
                .iter()
                .zip(&best)
                .map(|(&s, &b)| cost(m, fam, k, n, s).unwrap_or(f64::INFINITY) / b)
                .fold(1.0, f64::max);
            (k, worst)
        })
        .collect();
    out.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    out
}

/// The sizes measured for a family, ascending.
fn sizes(m: &Measurements, fam: Family) -> Vec<usize> {
    let mut v: Vec<usize> = m.keys().filter(|k| k.0 == fam).map(|k| k.2).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The kernel chosen per measured size for one row, with the evidence where the
/// choice changes.
///
/// At each size the *acceptable* kernels are the candidates ([`candidates_at`]) whose
/// regret is within [`MARGIN`] of the least. The incumbent stays while it is a
/// candidate and acceptable here or at the next size; otherwise (and at the first size)
/// the acceptable kernel that stays acceptable over the longest run of sizes ahead
/// takes over (ties: the lower regret), so noise between near-equal kernels does not
/// cut a row into bands.
fn choose_kernels(
    m: &Measurements,
    b: &Baseline,
    fam: Family,
    hint: Hint,
    st: State,
) -> Vec<(usize, KernelId, String)> {
    // Per size: its scenarios and its candidates.
    type AtSize = (usize, Vec<Scenario>, Vec<Candidate>);
    let per_size: Vec<AtSize> = sizes(m, fam)
        .into_iter()
        .map(|n| {
            let sc = scenarios(m, fam, hint, st, n);
            let c = candidates_at(m, b, fam, n, &sc);
            (n, sc, c)
        })
        .filter(|x| !x.2.is_empty())
        .collect();
    let candidate = |i: usize, k: KernelId| per_size[i].2.iter().any(|c| c.kernel == k);
    let acceptable = |i: usize, k: KernelId| {
        let c = &per_size[i].2;
        c.iter()
            .any(|x| x.kernel == k && x.regret <= c[0].regret * MARGIN)
    };
    let run_ahead = |i: usize, k: KernelId| {
        (i..per_size.len())
            .take_while(|&j| acceptable(j, k))
            .count()
    };
    let mut out: Vec<(usize, KernelId, String)> = Vec::new();
    let mut last: Option<KernelId> = None;
    for (i, (n, sc, c)) in per_size.iter().enumerate() {
        let keeps = |k: KernelId| {
            candidate(i, k)
                && (acceptable(i, k) || (i + 1 < per_size.len() && acceptable(i + 1, k)))
        };
        let k = match last {
            Some(k) if keeps(k) => k,
            _ => {
                let best = c[0].regret;
                c.iter()
                    .filter(|x| x.regret <= best * MARGIN)
                    .max_by(|a, b| {
                        run_ahead(i, a.kernel)
                            .cmp(&run_ahead(i, b.kernel))
                            .then(tie_rank(a.kernel).cmp(&tie_rank(b.kernel)))
                            .then(b.regret.total_cmp(&a.regret))
                    })
                    .map_or(c[0].kernel, |x| x.kernel)
            }
        };
        if last != Some(k) {
            out.push((*n, k, evidence(*n, sc, c)));
        }
        last = Some(k);
    }
    out
}

/// How a kernel ranks among acceptable ones that hold equally long: temporal before
/// streaming (a tie says streaming bought nothing, and it would cost a caller who reads
/// the destination where no measurement did), then the wider vectors (`avx512_pw`
/// before `avx2_pw`, the vector kernels before the string instructions), so that noise
/// between equivalent kernels does not alternate a row between them.
fn tie_rank(k: KernelId) -> (bool, u8) {
    // The vector width, from the features the kernel declares (`kernel/list.rs`).
    let needs = k.kernel().map_or(Features::NONE, |e| e.requires);
    let width = [Features::AVX512F, Features::AVX2, Features::SSE2]
        .iter()
        .position(|&f| needs.contains(f))
        .map_or(0, |i| 3 - i as u8);
    (!k.streams(), width)
}

/// `64KiB over hot,clean+read: avx2 1.00 (1.04x libc) rep_movsb 1.10 (0.99x libc)`:
/// each candidate's regret, and its worst ratio to libc where libc was measured.
fn evidence(n: usize, sc: &[Scenario], r: &[Candidate]) -> String {
    let scen: Vec<String> = sc
        .iter()
        .map(|(d, t)| match t {
            Then::Nothing => d.name().to_string(),
            Then::ReadDst => format!("{}+read", d.name()),
        })
        .collect();
    let mut s = format!("{} over {}:", blockmem::profile::Size(n), scen.join(","));
    for c in r.iter().take(4) {
        let _ = write!(s, " {} {:.2}", c.kernel.name(), c.regret);
        if c.vs_libc.is_finite() {
            let _ = write!(s, " ({:.2}x libc)", c.vs_libc);
        }
    }
    s
}

/// Where an unknown row probes: the first size from which probing pays (see the
/// module docs), given the chosen kernels of the unknown, cached and cold rows.
fn probe_from(
    m: &Measurements,
    fam: Family,
    hint: Hint,
    rows: &[Vec<(usize, KernelId, String)>; 4],
    probe: ProbeCost,
) -> Option<(usize, String)> {
    let at = |row: &[(usize, KernelId, String)], n: usize| {
        row.iter()
            .rev()
            .find(|b| b.0 <= n)
            .or(row.first())
            .map(|b| b.1)
    };
    for n in sizes(m, fam)
        .into_iter()
        .filter(|&n| n >= blockmem::profile::PROBE_MIN_BYTES)
    {
        let sc = scenarios(m, fam, hint, State::Unknown, n);
        let Some(ku) = at(&rows[0], n) else { continue };
        let (mut gain, mut worst) = (0.0f64, 0.0f64);
        for &s in &sc {
            let (known, pc) = match s.0 {
                Dst::Hot => (&rows[1], probe.cached),
                Dst::Clean => (&rows[2], probe.cold),
                Dst::Fresh => (&rows[3], probe.fresh),
            };
            let (Some(kk), Some(tu)) = (at(known, n), cost(m, fam, ku, n, s)) else {
                continue;
            };
            let Some(tk) = cost(m, fam, kk, n, s) else {
                continue;
            };
            let tp = tk + pc;
            gain = gain.max((tu - tp) / pc);
            worst = worst.max(tp / tu);
        }
        if gain >= PROBE_PAYBACK && worst <= PROBE_MAX_LOSS {
            let note = format!(
                "probe from {}: it gains {gain:.1}x its cost ({:.0} ns cached, {:.0} ns cold) in some state and costs at most {:.1}% in any",
                blockmem::profile::Size(n),
                probe.cached,
                probe.cold,
                (worst - 1.0).max(0.0) * 100.0
            );
            return Some((n, note));
        }
    }
    None
}

/// The derived table and each row's evidence (comment lines).
pub struct Derived {
    /// The table (its `llc_effective` and `probe_hit_max` as given).
    pub table: Table,
    /// Per row (by `profile::row_index`), its evidence.
    pub notes: Vec<String>,
}

/// Builds a row from chosen kernels (the first band from 0), then `probe` from a size.
fn build_row(
    chosen: &[(usize, KernelId, String)],
    probe: Option<usize>,
    fallback: KernelId,
) -> Row {
    let mut row = Row::always(Action::Run(chosen.first().map_or(fallback, |b| b.1)));
    for b in chosen.iter().skip(1) {
        if probe.is_some_and(|p| b.0 >= p) {
            break;
        }
        let _ = row.push(b.0, Action::Run(b.1));
    }
    if let Some(p) = probe {
        let _ = row.push(p.max(blockmem::profile::PROBE_MIN_BYTES), Action::Probe);
    }
    row
}

/// Derives every row of the table from `m` (see the module docs). `fallback` is the
/// kernel of a row with no measurement (the widest temporal kernel of the host).
pub fn derive(
    m: &Measurements,
    libc: &Baseline,
    probe: ProbeCost,
    llc_effective: usize,
    probe_hit_max: u32,
    fallback: [KernelId; 2],
) -> Derived {
    let mut table = Table::uniform(fallback[0], llc_effective);
    table.probe_hit_max = probe_hit_max;
    let mut notes = vec![String::new(); blockmem::profile::ROWS];
    for (fi, fam) in Family::ALL.into_iter().enumerate() {
        for hint in Hint::ALL {
            let rows = State::ALL.map(|st| choose_kernels(m, libc, fam, hint, st));
            let probe_at = probe_from(m, fam, hint, &rows, probe);
            for (i, st) in State::ALL.into_iter().enumerate() {
                let p = if st == State::Unknown {
                    probe_at.as_ref().map(|x| x.0)
                } else {
                    None
                };
                *table.row_mut(fam, hint, st) = build_row(&rows[i], p, fallback[fi]);
                let idx = blockmem::profile::row_index(fam, hint, st);
                let mut note: Vec<String> = rows[i].iter().map(|b| b.2.clone()).collect();
                if let (Some((_, text)), State::Unknown) = (&probe_at, st) {
                    note.push(text.clone());
                }
                notes[idx] = note.join("\n");
            }
        }
    }
    Derived { table, notes }
}

/// The op a family is measured with (set rows are measured zeroing: the same stores,
/// and the only op `clzero` has).
pub const fn measured_op(fam: Family) -> Op {
    match fam {
        Family::Copy => Op::Copy,
        Family::Set => Op::Zero,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_rank_temporal_first_then_by_vector_width() {
        use KernelId::*;
        let width = |k: KernelId| tie_rank(k).1;
        assert_eq!([Avx512, Avx512Nt, Avx512Pw].map(width), [3; 3]);
        assert_eq!([Avx2, Avx2Nt, Avx2Pf, Avx2PfNt, Avx2Pw].map(width), [2; 5]);
        assert_eq!(width(Sse2), 1);
        assert_eq!(
            [Naive, Portable, RepMovsb, RepStosb, Clzero].map(width),
            [0; 5]
        );
        assert!(tie_rank(Avx2) > tie_rank(Avx512Nt));
    }
    use KernelId::{Avx2, Avx2Nt, RepMovsb};

    const KIB: usize = 1 << 10;
    const MIB: usize = 1 << 20;

    /// A synthetic host: `avx2` is fastest in cache; `rep_movsb` wins to cold
    /// destinations from 64 KiB by 10% and loses 3% in cache; `avx2_nt` halves the
    /// time to a cold destination from 1 MiB but doubles it in cache and when the
    /// destination is read back (which costs `n / 10` ns after a temporal copy).
    fn host() -> Measurements {
        let mut m = Measurements::new();
        for n in [4 * KIB, 64 * KIB, MIB, 8 * MIB] {
            let hot = n as f64 / 30.0;
            let cold = n as f64 / 5.0;
            for (k, hot_x, cold_x) in [
                (Avx2, 1.0, 1.0),
                (RepMovsb, 1.03, if n >= 64 * KIB { 0.9 } else { 1.10 }),
                (Avx2Nt, 2.0, if n >= MIB { 0.5 } else { 1.5 }),
            ] {
                for src_hot in [true, false] {
                    for (d, base, x) in [
                        (Dst::Hot, hot, hot_x),
                        (Dst::Clean, cold, cold_x),
                        (Dst::Fresh, cold * 1.5, cold_x),
                    ] {
                        let t = base * x;
                        m.insert((Family::Copy, k, n, src_hot, d, Then::Nothing), t);
                        let read = if k == Avx2Nt {
                            n as f64 / 3.0
                        } else {
                            n as f64 / 10.0
                        };
                        m.insert((Family::Copy, k, n, src_hot, d, Then::ReadDst), t + read);
                    }
                }
            }
        }
        m
    }

    const PROBE: ProbeCost = ProbeCost {
        cached: 50.0,
        cold: 300.0,
        fresh: 1000.0,
    };

    fn derived() -> Derived {
        derive(
            &host(),
            &Baseline::new(),
            PROBE,
            32 * MIB,
            180,
            [Avx2, Avx2],
        )
    }

    #[test]
    fn known_rows_take_the_fastest_kernel_of_their_scenarios() {
        let t = derived().table;
        let cached = t.row(Family::Copy, Hint::NoReuse, State::Cached);
        assert_eq!(cached.at(8 * MIB), Action::Run(Avx2));
        let cold = t.row(Family::Copy, Hint::NoReuse, State::Cold);
        assert_eq!(cold.at(4 * KIB), Action::Run(Avx2));
        assert_eq!(cold.at(64 * KIB), Action::Run(RepMovsb));
        assert_eq!(cold.at(MIB), Action::Run(Avx2Nt));
        // Read back, streaming loses: Reuse never streams.
        let reuse = t.row(Family::Copy, Hint::Reuse, State::Cold);
        assert!(
            reuse
                .bands()
                .iter()
                .all(|b| b.action != Action::Run(Avx2Nt)),
            "{reuse}"
        );
    }

    #[test]
    fn unknown_rows_minimise_regret_and_probe_where_it_pays() {
        let d = derived();
        let row = d.table.row(Family::Copy, Hint::NoReuse, State::Unknown);
        // At 4 KiB avx2 is best everywhere; from 64 KiB rep_movsb loses 3% hot and wins
        // 10% cold: its regret (1.03) beats avx2's (1.11).
        assert_eq!(row.at(4 * KIB), Action::Run(Avx2));
        assert_eq!(row.at(64 * KIB), Action::Run(RepMovsb));
        // From 1 MiB a probe gains far more than it costs: streaming a cold
        // destination halves its time.
        assert_eq!(row.probe_from(), Some(MIB));
        assert!(
            d.notes[blockmem::profile::row_index(Family::Copy, Hint::NoReuse, State::Unknown)]
                .contains("probe from 1MiB")
        );
        assert!(d.table.check().is_ok());
    }

    #[test]
    fn hysteresis_keeps_the_incumbent_within_the_margin() {
        let mut m = host();
        // At 8 MiB make rep_movsb 2% faster than avx2 in cache: within the margin.
        for src in [true, false] {
            let k = (
                Family::Copy,
                RepMovsb,
                8 * MIB,
                src,
                Dst::Hot,
                Then::Nothing,
            );
            let avx2 = m[&(Family::Copy, Avx2, 8 * MIB, src, Dst::Hot, Then::Nothing)];
            m.insert(k, avx2 * 0.98);
        }
        let t = derive(&m, &Baseline::new(), PROBE, 32 * MIB, 180, [Avx2, Avx2]).table;
        assert_eq!(
            t.row(Family::Copy, Hint::NoReuse, State::Cached)
                .at(8 * MIB),
            Action::Run(Avx2)
        );
    }

    #[test]
    fn no_kernel_below_the_libc_floor_is_chosen_where_one_above_it_exists() {
        let m = host();
        // Without libc, least regret streams a cold destination from 1 MiB even when
        // the caller may read it back (Auto): 1.44x the best read back, against 2x for
        // avx2 when nothing follows.
        let t = derive(&m, &Baseline::new(), PROBE, 32 * MIB, 180, [Avx2, Avx2]).table;
        assert_eq!(
            t.row(Family::Copy, Hint::Auto, State::Cold).at(MIB),
            Action::Run(Avx2Nt)
        );
        // A libc as fast as avx2: streaming runs a read-back scenario at 0.69x libc and
        // drops out; rep_movsb (1.11x and 1.07x libc) takes the band.
        let mut libc = Baseline::new();
        for (&(fam, k, n, src, d, then), &ns) in &m {
            if k == Avx2 {
                libc.insert((fam, n, src, d, then), ns);
            }
        }
        let d = derive(&m, &libc, PROBE, 32 * MIB, 180, [Avx2, Avx2]);
        let cold = d.table.row(Family::Copy, Hint::Auto, State::Cold);
        assert_eq!(cold.at(MIB), Action::Run(RepMovsb), "{cold}");
        // NoReuse never reads back: streaming stays.
        let noreuse = d.table.row(Family::Copy, Hint::NoReuse, State::Cold);
        assert_eq!(noreuse.at(MIB), Action::Run(Avx2Nt));
        let i = blockmem::profile::row_index(Family::Copy, Hint::Auto, State::Cold);
        assert!(d.notes[i].contains("x libc)"), "{}", d.notes[i]);
    }

    #[test]
    fn loops_bound_temporal_writes_below_the_first_size_streaming_wins() {
        use KernelId::{Avx512, Avx512Nt, RepMovsb};
        // ns per KiB of the fourth call: temporal wins to 1 MiB, streaming from 2 MiB.
        let loops = |rows: &[(usize, f64, f64, f64)]| {
            let mut l = LoopTimes::new();
            for &(n, avx512, rep, nt) in rows {
                let kib = (n / 1024) as f64;
                l.insert((Op::Copy, Avx512, n), avx512 * kib);
                l.insert((Op::Copy, RepMovsb, n), rep * kib);
                l.insert((Op::Copy, Avx512Nt, n), nt * kib);
            }
            l
        };
        let xeon = loops(&[
            (64 * KIB, 32.0, 31.0, 69.0),
            (256 * KIB, 32.0, 31.0, 64.0),
            (MIB, 32.0, 29.0, 59.0),
            (2 * MIB, 93.0, 88.0, 63.0),
            (4 * MIB, 94.0, 93.0, 78.0),
        ]);
        assert_eq!(
            loop_temporal_max(&xeon, Op::Copy),
            (Some(MIB), Some(2 * MIB))
        );
        let ev = loop_evidence(&xeon, Op::Copy);
        assert!(ev.contains(" 1MiB 29/59 2MiB 88/63"), "{ev}");
        // The fastest of each kind counts, and a tie within the margin stays temporal.
        let close = loops(&[(MIB, 40.0, 31.0, 30.0), (2 * MIB, 40.0, 40.0, 30.0)]);
        assert_eq!(
            loop_temporal_max(&close, Op::Copy),
            (Some(MIB), Some(2 * MIB))
        );
        // Streaming never wins: the largest size measured.
        let epyc = loops(&[(64 * KIB, 18.0, 19.0, 45.0), (8 * MIB, 25.0, 28.0, 36.0)]);
        assert_eq!(loop_temporal_max(&epyc, Op::Copy), (Some(8 * MIB), None));
        // Streaming wins from the first size: never temporal.
        let always = loops(&[(64 * KIB, 80.0, 80.0, 40.0), (MIB, 80.0, 80.0, 40.0)]);
        assert_eq!(
            loop_temporal_max(&always, Op::Copy),
            (Some(0), Some(64 * KIB))
        );
        // Only one kind measured (no streaming kernel on the CPU): the default stays.
        let mut temporal_only = LoopTimes::new();
        temporal_only.insert((Op::Copy, Avx512, MIB), 1.0);
        assert_eq!(loop_temporal_max(&temporal_only, Op::Copy), (None, None));
        assert_eq!(loop_temporal_max(&LoopTimes::new(), Op::Copy), (None, None));
        // Each op from its own cells: copy cells say nothing of sets.
        assert_eq!(loop_temporal_max(&xeon, Op::Set), (None, None));
        let mut both = xeon.clone();
        both.insert((Op::Set, Avx512, 4 * MIB), 40.0);
        both.insert((Op::Set, Avx512Nt, 4 * MIB), 80.0);
        assert_eq!(loop_temporal_max(&both, Op::Set), (Some(4 * MIB), None));
        assert_eq!(
            loop_temporal_max(&both, Op::Copy),
            (Some(MIB), Some(2 * MIB))
        );
        assert!(loop_evidence(&both, Op::Set).starts_with("set loops: one block set"));
    }

    #[test]
    fn ties_go_to_temporal_and_wider_kernels() {
        // avx2_pw, avx512_pw and avx512_nt all cost the same in every cell: the row
        // takes avx512_pw, whatever the table order or the noise.
        let mut m = Measurements::new();
        for k in [KernelId::Avx2Pw, KernelId::Avx512Nt, KernelId::Avx512Pw] {
            for n in [256, 4 * KIB] {
                for src in [true, false] {
                    for d in [Dst::Hot, Dst::Clean, Dst::Fresh] {
                        for then in [Then::Nothing, Then::ReadDst] {
                            m.insert((Family::Copy, k, n, src, d, then), n as f64);
                        }
                    }
                }
            }
        }
        let t = derive(&m, &Baseline::new(), PROBE, MIB, 150, [Avx2, Avx2]).table;
        for (fam, _, _, row) in t.keyed_rows() {
            if fam == Family::Copy {
                assert_eq!(row.bands().len(), 1, "{row}");
                assert_eq!(row.at(0), Action::Run(KernelId::Avx512Pw), "{row}");
            }
        }
    }

    #[test]
    fn rows_without_measurements_take_the_fallback() {
        let t = derive(
            &Measurements::new(),
            &Baseline::new(),
            PROBE,
            MIB,
            150,
            [Avx2, KernelId::Sse2],
        )
        .table;
        assert_eq!(
            t.row(Family::Set, Hint::Auto, State::Cold).at(1),
            Action::Run(KernelId::Sse2)
        );
        assert_eq!(
            t.row(Family::Copy, Hint::Auto, State::Unknown).probe_from(),
            None
        );
    }
}
