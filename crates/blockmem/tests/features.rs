//! The dispatcher against the policy: installed synthetic tables, what a call runs
//! around every band edge (probes included), forced kernels, and masking CPU features
//! (what `BLOCKMEM_TEST_DISABLE` and the lab use). Its own test binary: the installed
//! table, the feature mask and the forced kernel are process-wide, so every test holds
//! `common::lock_global`, which puts them back when the test ends.

mod common;

use blockmem::builtin::Class;
use blockmem::cpu::{self, Features};
use blockmem::kernel::{self, KernelId, Op};
use blockmem::policy::{self, Plan, Step};
use blockmem::profile::{self, Family, State, Table};
use blockmem::{dispatch, Hint};
use common::{lock_global, model_decide, Aligned, Rng};

/// Synthetic tables, written as profiles over the built-in table of AVX2 CPUs: rep
/// windows that open and close below the probe, bands of kernels this CPU may lack
/// (run by their stand-ins), probes that start at different sizes per hint, streaming
/// only in cold rows or (for the overlap rule) in a cached row, and rows full to
/// `MAX_BANDS`.
const TABLES: [(&str, &str); 4] = [
    (
        "rep windows below the probe",
        "version = 2
llc_effective = 32MiB
copy.auto.unknown = from 0: sse2; from 3000: rep_movsb; from 5000: avx2; from 60000: probe
copy.auto.cached = from 0: avx2; from 1MiB: rep_movsb
copy.auto.cold = from 0: avx2_pw; from 256KiB: avx512_pw; from 1MiB: avx2_nt
copy.noreuse.unknown = from 0: avx2; from 4KiB: probe
copy.noreuse.cold = from 0: avx512_nt
set.auto.unknown = from 0: sse2; from 2500: rep_stosb; from 7000: avx512; from 64KiB: probe
set.auto.cold = from 0: avx2; from 100000: clzero
set.reuse.unknown = from 0: avx2; from 2500: rep_stosb
",
    ),
    (
        "every row a full ladder",
        "version = 2
llc_effective = 2MiB
copy.auto.unknown = from 0: portable; from 200: sse2; from 1000: avx2; from 4KiB: avx512; from 9000: rep_movsb; from 20000: avx2_pf; from 70000: probe; from 3MiB: avx2_pf_nt
copy.auto.cold = from 0: sse2; from 300: naive; from 301: portable; from 5000: avx2_pw; from 80000: avx2_nt; from 200000: avx512_nt; from 1MiB: avx2_pf_nt; from 2MiB: avx2_pf
copy.reuse.unknown = from 0: avx2; from 8KiB: probe
copy.reuse.cached = from 0: avx512; from 16KiB: rep_movsb
set.auto.unknown = from 0: portable; from 200: sse2; from 1000: avx2; from 4KiB: avx512; from 9000: rep_stosb; from 70000: probe; from 3MiB: clzero; from 4MiB: avx2_nt
set.auto.cold = from 0: sse2; from 5000: avx512_nt; from 90000: clzero
set.noreuse.unknown = from 0: avx2_nt
",
    ),
    (
        "a cached row that streams (overlapping moves must not)",
        "version = 2
copy.auto.unknown = from 0: avx2; from 8KiB: probe
copy.auto.cached = from 0: avx2_nt
copy.auto.cold = from 0: avx512_nt
copy.reuse.unknown = from 0: avx2_pf_nt
",
    ),
    (
        "no probes",
        "version = 2
copy.auto.unknown = from 0: rep_movsb
copy.reuse.unknown = from 0: avx2
copy.noreuse.unknown = from 0: avx2_nt
set.auto.unknown = from 0: rep_stosb
set.reuse.unknown = from 0: avx2
set.noreuse.unknown = from 0: clzero
",
    ),
];

fn synthetic(text: &str) -> Table {
    let (t, _) = profile::parse(text.as_bytes(), Class::Avx2.table())
        .unwrap_or_else(|e| panic!("synthetic table: {e}"));
    assert!(t.check().is_ok(), "{:?}", t.check());
    t
}

/// `t` with every probe forced to find `state` (through the hit and fault thresholds:
/// every first touch is slower than 0 cycles, none slower than `u32::MAX`).
fn probing(t: &Table, state: State) -> Table {
    let mut v = t.clone();
    v.probe_hit_max = if state == State::Cold { 0 } else { u32::MAX };
    v.probe_fault_min = if state == State::Fresh { 0 } else { u32::MAX };
    v
}

/// Sizes around every band edge of `t`, and of the inline ladder.
fn sizes(t: &Table) -> Vec<usize> {
    let mut v = vec![0, 1, 100, 129, 600];
    let edges = common::band_edges(t).into_iter().chain([
        dispatch::inline_max(Op::Copy),
        dispatch::inline_max(Op::Set),
    ]);
    for e in edges {
        v.extend([e - 1, e, e + 1]);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// The second op of a family reads the second entry point of a band.
fn second(op: Op) -> bool {
    matches!(op, Op::Move | Op::Zero)
}

/// For every size around a band edge, every op, hint, overlap and state: the
/// dispatcher's answer (`choose_probed`), a plan compiled by the test from the same table,
/// and the table read directly agree; the entry point the hot path calls is that
/// kernel's; and what a real call runs (`decide_for_call`) is the plan's answer for
/// the state its probe must find. Returns the checks made.
fn check_installed(name: &str, t: &Table, probe_finds: State) -> usize {
    let f = cpu::features();
    let forced = dispatch::forced();
    let local = Plan::UNCOMPILED;
    policy::compile(t, f, forced, dispatch::plan().llc_effective(), &local);
    let published = dispatch::plan();
    assert_eq!(
        published.features(),
        f,
        "{name}: compiled for the mask in force"
    );
    let len = sizes(t).into_iter().max().unwrap() + 64;
    let src = Aligned::new(len);
    let dst = Aligned::new(len);
    let mut checks = 0;
    for n in sizes(t) {
        for op in Op::ALL {
            let fam = Family::of(op);
            for hint in Hint::ALL {
                let ctx = format!("{name}: {op:?} {n} {hint:?}");
                for overlap in [false, op == Op::Move] {
                    for st in State::ALL {
                        let got = dispatch::choose_probed(op, n, hint, overlap, st);
                        assert_eq!(got, local.decide(op, n, hint, overlap, st), "{ctx} {st:?}");
                        let want = model_decide(t, f, forced, op, n, hint, overlap, st);
                        assert_eq!(got, want, "{ctx} overlap {overlap} {st:?}");
                        checks += 1;
                    }
                }
                // The hot path: the unknown row's entry point is the kernel's, or null
                // where the band probes.
                let row = published.row(fam, hint, State::Unknown);
                match row.step(n, second(op)) {
                    Step::Run(k, entry) => {
                        assert_eq!(Some(entry), kernel::entry_for(k, op), "{ctx}");
                        assert_eq!(row.entry(n, second(op)), entry, "{ctx}");
                        assert_eq!(dispatch::choose(op, n, hint, false), Some(k), "{ctx}");
                    }
                    Step::Probe => {
                        assert!(row.entry(n, second(op)).is_null(), "{ctx}");
                        assert_eq!(dispatch::choose(op, n, hint, false), None, "{ctx}");
                        assert!(n >= published.probe_from(fam, hint), "{ctx}");
                    }
                    // A recalling band leaves the hot path; its entries are its own
                    // kernel's and, where the cached row runs another kernel that
                    // keeps bytes cached too, that one's.
                    Step::Recall(k) => {
                        assert!(row.entry(n, second(op)).is_null(), "{ctx}");
                        assert_eq!(dispatch::choose(op, n, hint, false), Some(k), "{ctx}");
                        let (own, hot) = published.recalls(fam, hint).entries(row, n, second(op));
                        assert_eq!(Some(own), kernel::entry_for(k, op), "{ctx}");
                        let cached = published.row(fam, hint, State::Cached).step(n, second(op));
                        let Step::Run(ck, centry) = cached else {
                            panic!("{ctx}: recalls, the cached row {cached:?}");
                        };
                        assert!(!k.streams(), "{ctx}: {k:?}");
                        // At sizes where the cached row runs the band's own kernel (or
                        // streams) a recalled call runs the band's own.
                        if ck == k || ck.streams() {
                            assert!(hot.is_null(), "{ctx}: {k:?} {ck:?}");
                        } else {
                            assert_eq!(hot, centry, "{ctx}");
                        }
                    }
                }
                // What a real call runs.
                let s = if matches!(op, Op::Set | Op::Zero) {
                    std::ptr::null()
                } else {
                    src.as_ptr() as *const u8
                };
                // The same destination every time: forget what earlier calls streamed
                // and wrote (each tested on its own below).
                dispatch::forget_streamed();
                dispatch::forget_written();
                // SAFETY: both buffers hold more than n bytes.
                let ran = unsafe { dispatch::decide_for_call(op, dst.as_ptr(), s, n, hint) };
                // Inline: up to the op's inline size, and a move of disjoint ranges (the
                // two buffers here) up to the copy's.
                let inline = n <= dispatch::inline_max(op)
                    || (op == Op::Move && n <= dispatch::inline_max(Op::Copy));
                let want = if inline {
                    None
                } else if dispatch::choose(op, n, hint, false).is_some() {
                    dispatch::choose(op, n, hint, false)
                } else {
                    dispatch::choose_probed(op, n, hint, false, probe_finds)
                };
                assert_eq!(ran, want, "{ctx}: a call whose probe finds {probe_finds:?}");
                checks += 1;
            }
        }
    }
    checks
}

/// Ops through the public API under the installed table, at every size around its
/// band edges, checked against the naive model.
fn copies_are_right(name: &str, t: &Table) {
    let sizes = sizes(t);
    let max = sizes.iter().copied().max().unwrap();
    let mut src = vec![0u8; max + 64];
    Rng::new(max as u64).fill(&mut src);
    let mut dst = vec![0u8; max + 64];
    for n in sizes {
        for hint in Hint::ALL {
            dst.fill(0x11);
            blockmem::copy_with(&mut dst[1..1 + n], &src[3..3 + n], hint);
            assert!(dst[1..1 + n] == src[3..3 + n], "{name}: copy {n} {hint:?}");
            assert!(dst[0] == 0x11 && dst[1 + n] == 0x11, "{name}: copy {n}");
            let mut buf = src.clone();
            blockmem::move_within_with(&mut buf, 0..n, 37, hint);
            assert!(buf[37..37 + n] == src[..n], "{name}: move up {n} {hint:?}");
            let mut buf = src.clone();
            blockmem::move_within_with(&mut buf, 21..21 + n, 0, hint);
            assert!(
                buf[..n] == src[21..21 + n],
                "{name}: move down {n} {hint:?}"
            );
            blockmem::set_with(&mut dst[..n], 0xa5, hint);
            assert!(
                dst[..n].iter().all(|&b| b == 0xa5),
                "{name}: set {n} {hint:?}"
            );
            blockmem::zero_with(&mut dst[..n], hint);
            assert!(
                dst[..n].iter().all(|&b| b == 0),
                "{name}: zero {n} {hint:?}"
            );
        }
    }
}

/// The dispatcher decides what the table says, for every installed synthetic table and
/// both probe outcomes (forced through the hit threshold), and runs it correctly.
#[test]
fn the_dispatcher_runs_what_the_table_says() {
    let _state = lock_global();
    let mut checks = 0;
    for (name, text) in TABLES {
        let t = synthetic(text);
        for finds in [State::Cached, State::Cold, State::Fresh] {
            let v = probing(&t, finds);
            dispatch::install(&v);
            assert_eq!(dispatch::table(), &v, "{name}");
            assert_eq!(
                dispatch::status(),
                (blockmem::autoload::Source::Installed, None)
            );
            checks += check_installed(name, &v, finds);
        }
        copies_are_right(name, &t);
    }
    eprintln!(
        "{checks} dispatcher decisions checked over {} tables",
        TABLES.len()
    );
}

/// The TSC cycles of one load of a line just written and of one flushed from the
/// caches (medians of `samples`), as the dispatcher's probe measures them.
#[cfg(target_arch = "x86_64")]
fn probe_latencies(samples: usize) -> (u64, u64) {
    let mut buf = vec![0u8; 64 << 10];
    let p = buf.as_mut_ptr().wrapping_add(32 << 10);
    let mut hot = vec![];
    let mut cold = vec![];
    for i in 0..samples {
        buf[(32 << 10) + (i % 8)] = i as u8;
        // SAFETY: `p` lies inside `buf`.
        hot.push(unsafe { blockmem::probe::load_cycles_tlb_warm(p) });
        common::flush(p, 64);
        // SAFETY: as above.
        cold.push(unsafe { blockmem::probe::load_cycles_tlb_warm(p) });
    }
    hot.sort_unstable();
    cold.sort_unstable();
    (hot[samples / 2], cold[samples / 2])
}

/// A destination a probed call streamed, met cold again, is written with temporal
/// stores (the cached row's kernel, or the widest temporal one where that row streams
/// too), as long as it keeps coming back within the memory's window. Not with the
/// no-reuse hint, not for blocks over half the effective LLC, not under a
/// forced kernel, not after the window; eight other streamed blocks push it out of the
/// memory. Every probe is forced to find the block cold. The table's effective LLC
/// (1 GiB) gives a window of about 34 M ticks, so that a test thread preempted between
/// two calls still finds the block remembered.
#[test]
fn a_block_streamed_lately_is_written_temporally_when_met_cold_again() {
    let _state = lock_global();
    let t = synthetic(
        "version = 2
llc_effective = 1GiB
copy.auto.unknown = from 0: sse2; from 64KiB: probe
copy.auto.cached = from 0: sse2
copy.auto.cold = from 0: avx2_nt
copy.noreuse.unknown = from 0: sse2; from 64KiB: probe
copy.noreuse.cached = from 0: sse2
copy.noreuse.cold = from 0: avx2_nt
set.auto.unknown = from 0: sse2; from 64KiB: probe
set.auto.cached = from 0: avx2_nt
set.auto.cold = from 0: avx2_nt
",
    );
    let f = cpu::features();
    if !policy::usable(KernelId::Avx2Nt, Op::Copy, f) {
        eprintln!("no avx2_nt on this CPU: nothing streams, nothing to remember");
        return;
    }
    let n = 256 << 10;
    let src = Aligned::new(n);
    let others = Aligned::new(n + 8 * 4096);
    let dst = Aligned::new(n);
    let decide = |op: Op, d: *const u8, hint: Hint| {
        let s = if op == Op::Copy {
            src.as_ptr() as *const u8
        } else {
            std::ptr::null()
        };
        // SAFETY: every destination passed holds n bytes, the source too.
        unsafe { dispatch::decide_for_call(op, d, s, n, hint) }
    };
    let d = dst.as_ptr() as *const u8;
    dispatch::install(&probing(&t, State::Cold));
    dispatch::forget_streamed();
    let (nt, cached) = (Some(KernelId::Avx2Nt), Some(KernelId::Sse2));
    // Streamed, then met again: temporal from then on.
    assert_eq!(decide(Op::Copy, d, Hint::Auto), nt);
    for _ in 0..3 {
        assert_eq!(decide(Op::Copy, d, Hint::Auto), cached);
    }
    // Eight other blocks streamed since: forgotten.
    for i in 0..dispatch::STREAMED_SLOTS {
        let o = others.as_ptr().wrapping_add(i * 4096) as *const u8;
        assert_eq!(decide(Op::Copy, o, Hint::Auto), nt, "other block {i}");
    }
    assert_eq!(decide(Op::Copy, d, Hint::Auto), nt);
    assert_eq!(decide(Op::Copy, d, Hint::Auto), cached);
    // The caller said the bytes will not be reused: streamed every time.
    for _ in 0..3 {
        assert_eq!(decide(Op::Copy, d, Hint::NoReuse), nt);
    }
    // The cached row streams too: the widest temporal kernel. (The memory is of
    // blocks, whatever the op: forgotten first.)
    dispatch::forget_streamed();
    assert_eq!(decide(Op::Set, d, Hint::Auto), nt);
    assert_eq!(
        decide(Op::Set, d, Hint::Auto),
        Some(policy::best_temporal(f, Op::Set))
    );
    // The bytes are right through the sequence (streamed, then temporal).
    dispatch::forget_streamed();
    let out = Aligned::new(n);
    let mut input = Aligned::new(n);
    for round in 0..3u8 {
        for (i, b) in input.slice_mut().iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(7).wrapping_add(round);
        }
        // SAFETY: both hold n bytes and do not overlap.
        unsafe { blockmem::copy_raw(out.as_ptr(), input.as_ptr(), n, Hint::Auto) };
        assert!(out.slice() == input.slice(), "round {round}");
    }
    // A block over the table's `copy.loop_temporal_max` (where streaming won loops on
    // the host): streamed every time; up to it, remembered; 0 turns the memory off.
    for (max, again) in [(n - 1, nt), (n, cached), (0, nt)] {
        let mut bounded = t.clone();
        bounded.loop_temporal_max[profile::loop_index(Op::Copy)] = max;
        dispatch::install(&probing(&bounded, State::Cold));
        dispatch::forget_streamed();
        assert_eq!(
            decide(Op::Copy, d, Hint::Auto),
            nt,
            "first call, bound {max}"
        );
        for _ in 0..2 {
            assert_eq!(decide(Op::Copy, d, Hint::Auto), again, "bound {max}");
        }
    }
    // Each family has its own bound: with `set.loop_temporal_max = 0` sets stream every
    // time, copies are still remembered.
    let mut sets_off = t.clone();
    sets_off.loop_temporal_max[profile::loop_index(Op::Set)] = 0;
    dispatch::install(&probing(&sets_off, State::Cold));
    dispatch::forget_streamed();
    for _ in 0..3 {
        assert_eq!(decide(Op::Set, d, Hint::Auto), nt);
    }
    dispatch::forget_streamed();
    assert_eq!(decide(Op::Copy, d, Hint::Auto), nt);
    assert_eq!(decide(Op::Copy, d, Hint::Auto), cached);
    // Zeroing takes the sets' bound.
    for _ in 0..3 {
        assert_eq!(decide(Op::Zero, d, Hint::Auto), nt);
    }
    // A forced kernel is what every call runs.
    dispatch::install(&probing(&t, State::Cold));
    dispatch::force(Some(KernelId::Avx2Nt));
    for _ in 0..3 {
        assert_eq!(decide(Op::Copy, d, Hint::Auto), nt);
    }
    dispatch::force(None);
    // The memory itself, on synthetic times: a block is remembered for less than the
    // window from the last time it was met, forgotten after, and the counter may wrap.
    dispatch::forget_streamed();
    let w = dispatch::streamed_window(9 << 20, 1 << 20);
    assert_eq!(
        w,
        (1 << 18) + (1 << 18),
        "1 MiB copied at 4 bytes a tick, 8 MiB of other data read at 32"
    );
    assert_eq!(
        dispatch::streamed_window(1 << 20, 2 << 20),
        1 << 19,
        "a block over the LLC: the call's own time"
    );
    for start in [1000, usize::MAX - w / 2] {
        dispatch::remember_streamed(0x10000, start);
        let again = start.wrapping_add(w - 1);
        assert!(dispatch::met_again(0x10000, again, w));
        // Met again at `again`: remembered from there.
        let later = again.wrapping_add(w - 1);
        assert!(dispatch::met_again(0x10000, later, w), "refreshed");
        assert!(
            !dispatch::met_again(0x10000, later.wrapping_add(w), w),
            "too late"
        );
        assert!(
            !dispatch::met_again(0x10000, later, w),
            "forgotten when too late"
        );
    }
    assert!(!dispatch::met_again(0, 0, w), "null is never a block");
}

/// A band whose `cached` row runs another temporal kernel recalls: a call there runs
/// the band's own kernel unless the page its destination starts in was written by such
/// a call lately (the dispatcher's memory of written pages), then the cached row's.
/// The memory's logic on synthetic times; then real calls, where a test thread
/// preempted between two calls may find the page written too long ago, so the cached
/// row need only be seen once in many tries.
#[test]
fn a_page_written_lately_takes_the_cached_row() {
    let _state = lock_global();
    // The memory, on synthetic times (multiples of 16: the low bits count trusted calls).
    let n = 16 << 10;
    let w = dispatch::written_window(n);
    let page = 0x7f12_3456_7000usize;
    let never = || -> usize { panic!("a trusted call reads no time") };
    dispatch::forget_written();
    assert!(
        !dispatch::written_lately(page + 8, n, never),
        "first call: remembered, no time read"
    );
    assert!(
        !dispatch::written_lately(page + 16, n, || 1 << 20),
        "second: timed"
    );
    let t1 = (1 << 20) + w - 32;
    assert!(
        dispatch::written_lately(page + 1, n, || t1),
        "within the window"
    );
    for i in 0..15 {
        assert!(
            dispatch::written_lately(page + 64, n, never),
            "trusted call {i}"
        );
    }
    // The next call checks again, against the last check.
    let t2 = t1 + w + 16;
    assert!(!dispatch::written_lately(page, n, || t2), "too late");
    assert!(
        dispatch::written_lately(page + 4095, n, || t2 + 16),
        "timed again just now"
    );
    // Another page in the same way replaces it; the null page is never remembered; a
    // machine without a time-stamp counter (time 0) never finds a page written lately.
    dispatch::forget_written();
    assert!(!dispatch::written_lately(page, n, || 0));
    assert!(!dispatch::written_lately(page, n, || 0));
    assert!(
        !dispatch::written_lately(page, n, || 0),
        "no time, never lately"
    );
    assert!(!dispatch::written_lately(8, n, never));
    assert!(!dispatch::written_lately(8, n, never), "the null page");

    // The tables below name three kernels; where one is missing (or masked) its
    // stand-in would change which bands recall.
    let f = cpu::features();
    let kernels = [KernelId::RepStosb, KernelId::Sse2, KernelId::Avx2Nt];
    if let Some(k) = kernels.iter().find(|&&k| !policy::usable(k, Op::Set, f)) {
        eprintln!("no {k:?} on this CPU (or masked): the recalling bands are not tested");
        return;
    }
    // The same unknown row under two cached rows.
    let install = |cached: &str| {
        dispatch::install(&synthetic(&format!(
            "version = 2
set.auto.unknown = from 0: sse2; from 8KiB: rep_stosb; from 64KiB: avx2_nt; from 1MiB: probe
set.auto.cached = {cached}
set.auto.cold = from 0: rep_stosb
"
        )));
        dispatch::plan()
    };
    // The band 8-64 KiB against a cached row that changes kernel at 32 KiB: no single
    // kernel to recall, so the band runs its own.
    let plan = install("from 0: sse2; from 32KiB: portable");
    let row = plan.row(Family::Set, Hint::Auto, State::Unknown);
    let recalls = |n: usize| matches!(row.step(n, false), Step::Recall(_));
    assert!(!recalls(4 << 10), "the cached row's own kernel below 8 KiB");
    assert!(
        !recalls(16 << 10),
        "two cached kernels over the band: no recall"
    );
    assert!(!recalls(128 << 10), "a streaming band never recalls");
    assert!(!recalls(2 << 20), "a probing band probes");
    // Against sse2 up to 32 KiB and the band's own kernel above: recalls, sse2 below
    // 32 KiB only.
    let plan = install("from 0: sse2; from 32KiB: rep_stosb");
    let row = plan.row(Family::Set, Hint::Auto, State::Unknown);
    let recall = plan.recalls(Family::Set, Hint::Auto);
    let sse2 = kernel::entry_for(KernelId::Sse2, Op::Set).unwrap();
    let rep = kernel::entry_for(KernelId::RepStosb, Op::Set).unwrap();
    for (n, hot) in [
        (8 << 10, sse2),
        ((32 << 10) - 1, sse2),
        (32 << 10, std::ptr::null_mut()),
        (60 << 10, std::ptr::null_mut()),
    ] {
        assert!(
            matches!(row.step(n, false), Step::Recall(KernelId::RepStosb)),
            "{n}"
        );
        assert_eq!(recall.entries(row, n, false), (rep, hot), "{n}");
    }
    // Against sse2 over all of it: recalls.
    let plan = install("from 0: sse2; from 64KiB: portable");
    let row = plan.row(Family::Set, Hint::Auto, State::Unknown);
    for (n, want) in [
        (4 << 10, false),
        (8 << 10, true),
        (60 << 10, true),
        (64 << 10, false),
    ] {
        assert_eq!(
            matches!(row.step(n, false), Step::Recall(KernelId::RepStosb)),
            want,
            "set of {n} bytes"
        );
        assert_eq!(
            matches!(row.step(n, true), Step::Recall(KernelId::RepStosb)),
            want,
            "zero of {n} bytes"
        );
        if want {
            assert!(row.entry(n, false).is_null(), "{n}: not on the hot path");
            let (own, hot) = plan.recalls(Family::Set, Hint::Auto).entries(row, n, false);
            assert_eq!(Some(own), kernel::entry_for(KernelId::RepStosb, Op::Set));
            assert_eq!(Some(hot), kernel::entry_for(KernelId::Sse2, Op::Set));
        }
    }
    // Other hints' rows are the built-in defaults' or this table's: none recalls here.
    assert_eq!(
        dispatch::choose(Op::Set, 16 << 10, Hint::Auto, false),
        Some(KernelId::RepStosb),
        "an unknown destination: the band's own kernel"
    );

    // Real calls: the first two at a page run the band's own kernel, the third the
    // cached row's (unless the thread was preempted between the second and third).
    let n = 16 << 10;
    let dst = Aligned::new(n);
    let decide = |op: Op| {
        // SAFETY: `dst` holds n bytes.
        unsafe { dispatch::decide_for_call(op, dst.as_ptr(), std::ptr::null(), n, Hint::Auto) }
    };
    let mut hot_seen = false;
    for _ in 0..100 {
        dispatch::forget_written();
        assert_eq!(decide(Op::Set), Some(KernelId::RepStosb), "first call");
        assert_eq!(decide(Op::Zero), Some(KernelId::RepStosb), "second call");
        match decide(Op::Set) {
            Some(KernelId::Sse2) => {
                hot_seen = true;
                break;
            }
            other => assert_eq!(other, Some(KernelId::RepStosb), "third call"),
        }
    }
    assert!(
        hot_seen,
        "a page written twice just now never took the cached row"
    );
    // The bytes are right whichever kernel runs.
    let mut buf = vec![0u8; n + 2];
    for round in 0..20u8 {
        blockmem::set_with(&mut buf[1..1 + n], round | 1, Hint::Auto);
        assert!(
            buf[1..1 + n].iter().all(|&b| b == round | 1),
            "round {round}"
        );
        assert!(buf[0] == 0 && buf[n + 1] == 0, "round {round}: outside");
    }
}

/// A probe band probes: a destination flushed from the caches runs the cold row's
/// kernel and one just written the cached row's, on the hardware's own answer. The
/// hit threshold is set between the two latencies as measured on the machine running
/// the test, and each state needs only to be seen once in many tries (a noisy machine
/// may spoil some); where the two latencies cannot be told apart the hardware part is
/// skipped with a note.
#[test]
fn a_probe_band_tells_a_cold_destination_from_a_cached_one() {
    let _state = lock_global();
    let mut t = synthetic(
        "version = 2
llc_effective = 32MiB
copy.auto.unknown = from 0: sse2; from 64KiB: probe
copy.auto.cached = from 0: sse2
copy.auto.cold = from 0: rep_movsb
set.auto.unknown = from 0: sse2; from 64KiB: probe
set.auto.cached = from 0: sse2
set.auto.cold = from 0: rep_stosb
",
    );
    let n = 256 << 10;
    let src = Aligned::new(n);
    let mut dst = Aligned::new(n);
    let cases = [
        (Op::Copy, KernelId::Sse2, KernelId::RepMovsb),
        (Op::Zero, KernelId::Sse2, KernelId::RepStosb),
    ];
    let decide = |op: Op, dst: &Aligned| {
        let s = if op == Op::Copy {
            src.as_ptr() as *const u8
        } else {
            std::ptr::null()
        };
        // SAFETY: both buffers hold n bytes.
        unsafe { dispatch::decide_for_call(op, dst.as_ptr(), s, n, Hint::Auto) }
    };
    // The outcome forced by the threshold: every probe finds it.
    for (finds, pick) in [(State::Cached, 0), (State::Cold, 1)] {
        dispatch::install(&probing(&t, finds));
        for (op, cached, cold) in cases {
            let want = [cached, cold][pick];
            assert_eq!(decide(op, &dst), Some(want), "{op:?} {finds:?}");
            assert_eq!(dispatch::choose(op, n, Hint::Auto, false), None);
            assert_eq!(
                dispatch::choose(op, (64 << 10) - 1, Hint::Auto, false),
                Some(cached)
            );
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        let (hot, cold) = probe_latencies(31);
        if cold < 2 * hot + 20 {
            eprintln!(
                "probe latencies not separable on this machine (cached {hot}, flushed {cold} cycles): hardware probe part skipped"
            );
            return;
        }
        t.probe_hit_max = ((hot + cold) / 2) as u32;
        // Cached against cold only: a slow page walk must not read as a fault here.
        t.probe_fault_min = u32::MAX;
        dispatch::install(&t);
        for (op, cached, cold_k) in cases {
            let (mut seen_cached, mut seen_cold) = (0, 0);
            const TRIES: usize = 40;
            for _ in 0..TRIES {
                dst.slice_mut().fill(7);
                let k = decide(op, &dst);
                assert!(k == Some(cached) || k == Some(cold_k), "{op:?}: {k:?}");
                seen_cached += usize::from(k == Some(cached));
                common::flush(dst.as_ptr(), n);
                let k = decide(op, &dst);
                assert!(k == Some(cached) || k == Some(cold_k), "{op:?}: {k:?}");
                seen_cold += usize::from(k == Some(cold_k));
            }
            eprintln!(
                "{op:?}: written destination probed cached {seen_cached}/{TRIES}, flushed one cold {seen_cold}/{TRIES} (threshold {} cycles)",
                t.probe_hit_max
            );
            assert!(
                seen_cached > 0,
                "{op:?}: a destination just written never probed cached"
            );
            assert!(
                seen_cold > 0,
                "{op:?}: a flushed destination never probed cold"
            );
        }
        // Real calls through the probe band, both ways.
        let mut want = vec![0u8; n];
        Rng::new(3).fill(&mut want);
        for flushed in [false, true] {
            dst.slice_mut().fill(1);
            if flushed {
                common::flush(dst.as_ptr(), n);
            }
            blockmem::copy(dst.slice_mut(), &want);
            assert!(dst.slice() == &want[..], "copy, flushed {flushed}");
            if flushed {
                common::flush(dst.as_ptr(), n);
            }
            blockmem::zero(dst.slice_mut());
            assert!(
                dst.slice().iter().all(|&b| b == 0),
                "zero, flushed {flushed}"
            );
        }
    }
}

/// An overlapping move never probes (its destination is read as its source: the
/// cached row serves it, even where every probe would find the line cold) and the
/// policy never names a streaming kernel for it; a move onto itself runs nothing.
#[test]
fn overlapping_moves_read_the_cached_row_and_never_stream() {
    let _state = lock_global();
    let t = synthetic(TABLES[2].1);
    dispatch::install(&probing(&t, State::Cold));
    let f = cpu::features();
    let n = 64 << 10;
    let mut buf = Aligned::new(2 * n);
    let p = buf.as_ptr();
    // The policy names the temporal stand-in of the cached row's streaming kernel.
    let k = dispatch::choose(Op::Move, n, Hint::Auto, true).unwrap();
    assert!(!k.streams(), "{k:?}");
    assert_eq!(k, policy::best_temporal(f, Op::Move));
    // A real call runs the cached row's kernel (whose move stores temporally when the
    // ranges overlap), not the cold row's, although every probe would find cold.
    let cached_row = dispatch::choose_probed(Op::Move, n, Hint::Auto, false, State::Cached);
    let cold_row = dispatch::choose_probed(Op::Move, n, Hint::Auto, false, State::Cold);
    // SAFETY: both ranges lie inside `buf`.
    let ran = unsafe { dispatch::decide_for_call(Op::Move, p.wrapping_add(100), p, n, Hint::Auto) };
    assert_eq!(ran, cached_row);
    if cached_row != cold_row {
        // SAFETY: as above, disjoint.
        let disjoint =
            unsafe { dispatch::decide_for_call(Op::Move, p.wrapping_add(n), p, n, Hint::Auto) };
        assert_eq!(disjoint, cold_row);
    }
    // SAFETY: as above.
    let onto_itself = unsafe { dispatch::decide_for_call(Op::Move, p, p, n, Hint::Auto) };
    assert_eq!(onto_itself, None);
    // And the moves are right, both ways.
    Rng::new(5).fill(buf.slice_mut());
    let before = buf.slice().to_vec();
    blockmem::move_within(buf.slice_mut(), 0..n, 100);
    assert!(buf.slice()[100..100 + n] == before[..n]);
    let before = buf.slice().to_vec();
    blockmem::move_within(buf.slice_mut(), 100..100 + n, 3);
    assert!(buf.slice()[3..3 + n] == before[100..100 + n]);
}

#[test]
fn forcing_a_kernel_applies_only_where_it_can_run() {
    let _state = lock_global();
    let t = synthetic(TABLES[0].1);
    dispatch::install(&probing(&t, State::Cold));
    let f = cpu::features();
    for k in KernelId::ALL {
        dispatch::force(Some(k));
        assert_eq!(dispatch::forced(), Some(k));
        for op in Op::ALL {
            for n in [200, 5000, 1 << 20, 1 << 30] {
                let got = dispatch::choose(op, n, Hint::Auto, false);
                let [a, b] = Family::of(op).ops();
                let serves_family = policy::usable(k, a, f) && policy::usable(k, b, f);
                if policy::usable(k, op, f) && (got.is_some() || serves_family) {
                    assert_eq!(got, Some(k), "forced {k:?}: {op:?} {n}");
                } else if policy::usable(k, op, f) {
                    // A kernel that serves one op of its family (`clzero`: zero, not
                    // set) leaves the family's probe in place: the call probes, and
                    // whatever the probe finds, runs the forced kernel.
                    for found in [State::Cached, State::Cold, State::Fresh] {
                        let after = dispatch::choose_probed(op, n, Hint::Auto, false, found);
                        assert_eq!(after, Some(k), "forced {k:?}: {op:?} {n} {found:?}");
                    }
                } else {
                    // A kernel that lacks the op, or that this CPU cannot run: the table.
                    assert_ne!(got, Some(k), "forced {k:?}: {op:?} {n}");
                }
                let want = model_decide(&t, f, Some(k), op, n, Hint::Auto, false, State::Unknown);
                assert_eq!(got, want, "forced {k:?}: {op:?} {n}");
            }
        }
        let [a, b] = Family::Copy.ops();
        if policy::usable(k, a, f) && policy::usable(k, b, f) {
            // It serves both ops of the family: nothing left to probe for.
            assert_eq!(
                dispatch::plan().probe_from(Family::Copy, Hint::Auto),
                usize::MAX
            );
        }
        check_installed(
            &format!("forced {}", k.name()),
            &probing(&t, State::Cold),
            State::Cold,
        );
    }
    dispatch::force(Some(KernelId::RepMovsb));
    let src: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
    let mut dst = vec![0u8; 100_000];
    blockmem::copy(&mut dst, &src);
    assert_eq!(dst, src);
    blockmem::set(&mut dst, 9);
    assert!(dst.iter().all(|&b| b == 9));
    dispatch::force(None);
    assert_eq!(dispatch::forced(), None);
    assert_eq!(
        dispatch::choose(Op::Copy, 4000, Hint::Auto, false),
        Some(policy::stand_in(KernelId::RepMovsb, Op::Copy, f))
    );
    assert_eq!(
        dispatch::choose(Op::Copy, 6000, Hint::Auto, false),
        Some(policy::stand_in(KernelId::Avx2, Op::Copy, f))
    );
}

/// Masking features recompiles the plan: kernels that need them leave both the
/// available set and every decision (their stand-ins run), the inline ladder narrows,
/// and clearing the mask brings them back.
#[test]
fn masking_features_recompiles_the_plan() {
    let state = lock_global();
    let t = synthetic(
        "version = 2
copy.auto.unknown = from 0: avx512; from 4KiB: avx2; from 64KiB: avx2_nt
set.auto.unknown = from 0: avx2; from 8KiB: avx512_nt
",
    );
    dispatch::install(&t);
    let before = cpu::features();
    let inline_before = dispatch::inline_max(Op::Copy);
    dispatch::mask_features(common::env_mask().union(Features::AVX));
    let now = cpu::features();
    for f in [
        Features::AVX,
        Features::AVX2,
        Features::AVX512F,
        Features::AVX512BW,
    ] {
        assert!(!now.contains(f), "{f:?} still in {now:?}");
    }
    assert_eq!(dispatch::plan().features(), now);
    for k in kernel::available() {
        assert!(
            !k.kernel().requires.contains(Features::AVX2),
            "{} still available",
            k.name()
        );
    }
    assert_eq!(dispatch::inline_max(Op::Copy), 128);
    assert_eq!(dispatch::inline_max(Op::Set), 128);
    for op in Op::ALL {
        for hint in Hint::ALL {
            for n in [200, 5000, 1 << 20, 1 << 30] {
                for st in State::ALL {
                    let Some(k) = dispatch::choose_probed(op, n, hint, false, st) else {
                        continue;
                    };
                    let entry = k.kernel().expect("chosen kernel exists");
                    assert!(
                        entry.is_available() && entry.supports(op),
                        "{op:?} {n} {hint:?} -> {}",
                        k.name()
                    );
                }
            }
        }
    }
    if cfg!(target_arch = "x86_64") {
        assert_eq!(
            dispatch::choose(Op::Copy, 5000, Hint::Auto, false),
            Some(KernelId::Sse2)
        );
        assert_eq!(
            dispatch::choose(Op::Copy, 1 << 20, Hint::Auto, false),
            Some(KernelId::Sse2)
        );
        assert_eq!(
            dispatch::choose(Op::Set, 1 << 20, Hint::Auto, false),
            Some(KernelId::Sse2)
        );
    }
    // The masked path still copies correctly through the public API.
    let src: Vec<u8> = (0..3_000_000u32).map(|i| (i ^ (i >> 8)) as u8).collect();
    let mut dst = vec![0u8; src.len()];
    blockmem::copy_with(&mut dst, &src, Hint::NoReuse);
    assert_eq!(dst, src);
    // Clearing the mask recompiles with the machine's features again.
    dispatch::mask_features(common::env_mask());
    assert_eq!(cpu::features(), before);
    assert_eq!(dispatch::plan().features(), before);
    assert_eq!(dispatch::inline_max(Op::Copy), inline_before);
    assert!(cpu::detected_features().contains(before));
    if before.contains(Features::AVX2) {
        assert_eq!(
            dispatch::choose(Op::Copy, 5000, Hint::Auto, false),
            Some(KernelId::Avx2)
        );
    }
    drop(state);
    assert_eq!(cpu::features(), before);
}

/// The built-in tables' loop bounds, as a plan compiled from them answers: copies (and
/// moves) 1 MiB; sets (and zeroing) half the effective LLC, worked out from the LLC the
/// plan was given, whatever the class. A profile's own sizes replace both.
#[test]
fn built_in_loop_bounds_are_a_mebibyte_for_copies_and_half_the_llc_for_sets() {
    // A synthetic host: the bounds do not depend on the kernels the CPU runs.
    let f = Features::SSE2;
    for class in Class::ALL {
        for llc in [8 << 20, 24 << 20, 192 << 20] {
            let plan = Plan::UNCOMPILED;
            policy::compile(class.table(), f, None, llc, &plan);
            for (op, max) in [
                (Op::Copy, 1 << 20),
                (Op::Move, 1 << 20),
                (Op::Set, llc / 2),
                (Op::Zero, llc / 2),
            ] {
                assert_eq!(
                    plan.loop_temporal_max(op),
                    max,
                    "{class:?}, LLC {llc}, {op:?}"
                );
            }
        }
    }
    let t = synthetic("version = 2\ncopy.loop_temporal_max = 8MiB\nset.loop_temporal_max = 0\n");
    let plan = Plan::UNCOMPILED;
    policy::compile(&t, f, None, 24 << 20, &plan);
    assert_eq!(plan.loop_temporal_max(Op::Move), 8 << 20);
    assert_eq!(plan.loop_temporal_max(Op::Zero), 0);
}

/// Every level of bodies the core's routed entries run (the AVX-512 bodies, the AVX2
/// bodies, the Rust ladder), as a feature mask chooses it, copies, moves and sets
/// right through the Rust API at every size their classes hold and past them, at
/// several offsets and overlaps, and `inline_max` names the sizes each level holds.
#[test]
fn every_level_of_the_entries_is_right_through_the_api() {
    let state = lock_global();
    let env = common::env_mask();
    let detected = cpu::detected_features().without(env.with_dependents());
    let mut levels = vec![(Features::AVX, 128, 128, 128)];
    if detected.contains(Features::AVX2) {
        levels.push((Features::AVX512F, 2112, 256, 2048));
    }
    if detected.contains(Features::AVX512BW.union(Features::BMI2)) {
        levels.push((Features::NONE, 2112, 512, 2048));
    }
    let mut rng = Rng::new(0x1e7e1);
    let mut src = Aligned::new(8192);
    rng.fill(src.slice_mut());
    let dst = Aligned::new(8192);
    let sizes = (0..=300)
        .chain((301..=2300).step_by(7))
        .chain([4095, 4096, 5000]);
    let sizes: Vec<usize> = sizes.collect();
    for &(mask, copy_max, move_max, set_max) in &levels {
        dispatch::mask_features(env.union(mask));
        let at = format!("mask {mask:?}");
        assert_eq!(dispatch::inline_max(Op::Copy), copy_max, "{at}");
        assert_eq!(dispatch::inline_max(Op::Move), move_max, "{at}");
        assert_eq!(dispatch::inline_max(Op::Set), set_max, "{at}");
        for &n in &sizes {
            for (so, d) in [(0, 0), (1, 63), (37, 5)] {
                let before = dst.slice().to_vec();
                // SAFETY: `so + n` and `d + n` lie inside the 8 KiB buffers.
                unsafe {
                    blockmem::copy_raw(dst.as_ptr().add(d), src.as_ptr().add(so), n, Hint::Auto)
                };
                let mut want = before;
                want[d..d + n].copy_from_slice(&src.slice()[so..so + n]);
                assert!(
                    dst.slice() == &want[..],
                    "{at}: copy {n} from +{so} to +{d}"
                );
                // SAFETY: as above.
                unsafe { blockmem::set_raw(dst.as_ptr().add(d), 0xa5, n, Hint::NoReuse) };
                want[d..d + n].fill(0xa5);
                assert!(dst.slice() == &want[..], "{at}: set {n} at +{d}");
            }
            // Moves within one buffer, each way, overlapping by all but `gap` bytes.
            for gap in [1usize, 17, 64] {
                for forward in [true, false] {
                    let (from, to) = if forward {
                        (100, 100 + gap)
                    } else {
                        (100 + gap, 100)
                    };
                    let mut buf = src.slice()[..n + 300].to_vec();
                    let mut want = buf.clone();
                    want.copy_within(from..from + n, to);
                    blockmem::move_within(&mut buf, from..from + n, to);
                    assert!(buf == want, "{at}: move {n} from {from} to {to}");
                }
            }
        }
    }
    dispatch::mask_features(env);
    drop(state);
}
