//! Guard-page tests: sources and destinations placed flush against `PROT_NONE` pages, on
//! both sides, for every size 0..=1024 at every misalignment 0..63, for every available
//! kernel and op. A read or write of one byte outside a buffer that crosses into a guard
//! page kills the test with SIGSEGV; the gap bytes between a misaligned buffer and its
//! guard are canaries, checked after every call.

mod common;

use blockmem::kernel::Op;
use common::{methods, report, Method, Rng};

const PAGE: usize = 4096;
/// Data pages between the guards: room for 1024 bytes at any offset.
const DATA_PAGES: usize = 2;
/// Bytes around each destination filled with a canary value and checked.
const MARGIN: usize = 128;

/// `[PROT_NONE page][DATA_PAGES readable+writable][PROT_NONE page]`.
struct Guarded {
    base: *mut u8,
}

impl Guarded {
    fn new() -> Guarded {
        let len = (DATA_PAGES + 2) * PAGE;
        // SAFETY: an anonymous private mapping with no address hint.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED, "mmap failed");
        let base = base as *mut u8;
        // SAFETY: both pages lie inside the mapping just created.
        unsafe {
            assert_eq!(libc::mprotect(base as *mut _, PAGE, libc::PROT_NONE), 0);
            assert_eq!(
                libc::mprotect(
                    base.add((DATA_PAGES + 1) * PAGE) as *mut _,
                    PAGE,
                    libc::PROT_NONE
                ),
                0
            );
        }
        Guarded { base }
    }
    fn data(&self) -> *mut u8 {
        self.base.wrapping_add(PAGE)
    }
    fn data_len(&self) -> usize {
        DATA_PAGES * PAGE
    }
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the data pages are mapped read/write for the life of self.
        unsafe { std::slice::from_raw_parts_mut(self.data(), self.data_len()) }
    }
    /// Start of an `n`-byte buffer: `off` bytes after the leading guard, or ending `off`
    /// bytes before the trailing guard.
    fn place(&self, n: usize, off: usize, at_end: bool) -> usize {
        if at_end {
            self.data_len() - n - off
        } else {
            off
        }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `new`.
        unsafe { libc::munmap(self.base as *mut _, (DATA_PAGES + 2) * PAGE) };
    }
}

fn guarded(op: Op) {
    let ms = methods(op);
    let mut src = Guarded::new();
    let mut dst = Guarded::new();
    Rng::new(9).fill(src.bytes());
    let src_copy = src.bytes().to_vec();
    let two_buffers = matches!(op, Op::Copy | Op::Move);
    let mut cases = 0u64;
    let mut fill = 0u8;
    // Sets and zeroes past the inline sets' 2 KiB (each line of their last block
    // stored once, the last one masked), every size; copies and moves every size to 1
    // KiB, then every 13th past the inline copies' 2,112 bytes and both sides of 2 KiB
    // and of 2,112.
    let sizes: Vec<usize> = if two_buffers {
        (0..=1024)
            .chain((1025..=2176).step_by(13))
            .chain([2047, 2048, 2049, 2111, 2112, 2113])
            .collect()
    } else {
        (0..=2176).collect()
    };
    for m in &ms {
        for &n in &sizes {
            for off in 0..64usize {
                for (s_end, d_end) in [(false, false), (true, true), (false, true), (true, false)] {
                    if !two_buffers && s_end {
                        continue;
                    }
                    fill = fill.wrapping_add(77);
                    let s = src.place(n, off, s_end);
                    let d = dst.place(n, off, d_end);
                    // Fill and check a window of MARGIN bytes around the buffer (clipped
                    // to the data pages); beyond that, the guard pages watch.
                    let w = d.saturating_sub(MARGIN)..(d + n + MARGIN).min(dst.data_len());
                    dst.bytes()[w.clone()].fill(fill);
                    let byte = fill ^ 0xc3;
                    // SAFETY: both buffers lie inside mapped data pages.
                    let ran = unsafe {
                        m.run(
                            op,
                            dst.data().wrapping_add(d),
                            src.data().wrapping_add(s),
                            byte,
                            n,
                        )
                    };
                    assert!(ran);
                    let out = &dst.bytes()[w.clone()];
                    let inside = d - w.start..d - w.start + n;
                    let bad_outside = out[..inside.start]
                        .iter()
                        .chain(&out[inside.end..])
                        .any(|&b| b != fill);
                    let bad_inside = match op {
                        Op::Copy | Op::Move => out[inside.clone()] != src_copy[s..s + n],
                        Op::Set => out[inside.clone()].iter().any(|&b| b != byte),
                        Op::Zero => out[inside.clone()].iter().any(|&b| b != 0),
                    };
                    if bad_outside || bad_inside {
                        panic!(
                            "{} {} n={n} off={off} src_at_end={s_end} dst_at_end={d_end}: wrong bytes {} the buffer",
                            m.name(),
                            op.name(),
                            if bad_inside { "inside" } else { "outside" }
                        );
                    }
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(src.bytes(), &src_copy[..], "source pages modified");
    report(
        &format!(
            "guard pages, {} sizes to {} x offsets 0..63 x both ends",
            sizes.len(),
            sizes.iter().max().unwrap_or(&0)
        ),
        op,
        &ms,
        cases,
    );
}

#[test]
fn copy_against_guard_pages() {
    guarded(Op::Copy);
}

#[test]
fn move_against_guard_pages() {
    guarded(Op::Move);
}

#[test]
fn set_against_guard_pages() {
    guarded(Op::Set);
}

#[test]
fn zero_against_guard_pages() {
    guarded(Op::Zero);
}

/// A zero-byte call dereferences nothing: with both pointers inside a `PROT_NONE`
/// page (at its start, middle and last byte) or null, every method and op returns
/// without a fault. Programs rely on `memcpy(p, q, 0)` with dangling pointers.
#[test]
fn zero_bytes_touch_nothing() {
    let g = Guarded::new();
    for op in [Op::Copy, Op::Move, Op::Set, Op::Zero] {
        let ms = methods(op);
        let mut cases = 0u64;
        for m in &ms {
            for off in [0usize, 1, 2048, 4064, 4095] {
                let p = g.base.wrapping_add(off);
                for (d, s) in [
                    (p, p as *const u8),
                    (std::ptr::null_mut(), std::ptr::null()),
                ] {
                    // SAFETY: n == 0: no byte is in range, so no byte may be accessed.
                    assert!(unsafe { m.run(op, d, s, 0x5a, 0) });
                    cases += 1;
                }
            }
        }
        report("zero bytes at PROT_NONE and null", op, &ms, cases);
    }
}

/// Overlapping moves inside one guarded region, flush against either guard.
#[test]
fn overlapping_move_against_guard_pages() {
    let ms: Vec<Method> = methods(Op::Move);
    let mut g = Guarded::new();
    let mut rng = Rng::new(11);
    let mut cases = 0u64;
    for m in &ms {
        for n in 0..=1024usize {
            for dist in [
                1usize, 2, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 127, 200, 511,
            ] {
                for at_end in [false, true] {
                    for forward in [false, true] {
                        let span = n + dist;
                        let lo = if at_end { g.data_len() - span } else { 0 };
                        let (from, to) = if forward {
                            (lo + dist, lo)
                        } else {
                            (lo, lo + dist)
                        };
                        let w = lo.saturating_sub(MARGIN)..(lo + span + MARGIN).min(g.data_len());
                        rng.fill(&mut g.bytes()[w.clone()]);
                        let mut want = g.bytes()[w.clone()].to_vec();
                        want.copy_within(from - w.start..from - w.start + n, to - w.start);
                        // SAFETY: [lo, lo+span) lies inside the data pages.
                        let ran = unsafe {
                            m.run(
                                Op::Move,
                                g.data().wrapping_add(to),
                                g.data().wrapping_add(from),
                                0,
                                n,
                            )
                        };
                        assert!(ran);
                        if let Some(i) = common::first_diff(&g.bytes()[w.clone()], &want) {
                            panic!(
                                "{} overlapping move n={n} from={from} to={to}: wrong byte at {}",
                                m.name(),
                                w.start + i
                            );
                        }
                        cases += 1;
                    }
                }
            }
        }
    }
    report(
        "overlapping moves flush against guard pages",
        Op::Move,
        &ms,
        cases,
    );
}
