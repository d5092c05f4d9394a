//! The timed-load probe of seed 003 §IV (docs/SEEDS.md): time one load of a line of a
//! region with the time-stamp counter and compare it with a calibrated threshold. Seed
//! 003 probed the first line, which predicts small kernel blocks well (its Table 2; the
//! lab's `probe` experiment measures the same on the host it runs on); the dispatcher
//! probes the middle line instead (past the LLC, a line half the LLC from the end:
//! `policy::probe_offset`), which also holds for large blocks partly evicted in LRU
//! order. The probe costs two fenced `rdtsc` reads plus the load itself (a DRAM round
//! trip when the line is cold), so the policy only probes above the size where
//! calibration found it pays. The probe leaves the line cached.
//!
//! The probe first touches the line's page (the "page mate", 2 KiB away) so that the
//! timed load pays no page walk. That touch is timed too: on a page that is mapped but
//! was never touched it takes a page fault. A slow first touch alone does not prove
//! one: after a sweep of the caches the page walk itself reads its page-table entries
//! from memory. So a slow first touch is confirmed on the neighbouring page of the
//! block: its walk finds the entries the first one just fetched (eight pages share a
//! line of them) and costs one memory access, while a fresh neighbour faults again
//! (`docs/results/xeon-avx512-2vcpu/fresh`). Only then is the destination `fresh`. The fault maps the
//! kernel's shared zero page, whose line may or may not be cached, so the line load
//! cannot tell fresh from cold. Taking a cold destination for fresh forgoes streaming
//! (half the gain past the LLC); taking a fresh one for cold would stream into pages
//! the kernel has just cleared through the cache, at half libc's speed.

use crate::policy::Probed;

/// Classifies a probe (see the module docs): a first touch of the page of more than
/// `fault_min` cycles, confirmed on the neighbouring page (`confirm`: its first touch,
/// `None` where the block has no neighbouring page), took a page fault (fresh); else a
/// line load of at most `hit_max` cycles hit the cache (cached), and a slower one
/// missed it (cold).
#[inline]
pub const fn classify(
    mate_cycles: u64,
    confirm: Option<u64>,
    cycles: u64,
    hit_max: u32,
    fault_min: u32,
) -> Probed {
    let faulted = mate_cycles > fault_min as u64
        && match confirm {
            Some(c) => c > fault_min as u64,
            None => true,
        };
    if faulted {
        Probed::Fresh
    } else if cycles <= hit_max as u64 {
        Probed::Cached
    } else {
        Probed::Cold
    }
}

/// TSC cycles one load of `*p` takes, fenced on both sides.
///
/// # Safety
/// `p` must be valid for a one-byte read.
#[cfg(target_arch = "x86_64")]
#[inline]
pub unsafe fn load_cycles(p: *const u8) -> u64 {
    use core::arch::x86_64::{_mm_lfence, _rdtsc};
    // SAFETY: LFENCE and RDTSC are architectural on x86-64 (SSE2 baseline); `p` is
    // readable per the contract. The fences keep the load between the two reads: the
    // first orders earlier work before the start time, the one after the load waits
    // for the load to complete before the end time is read.
    unsafe {
        _mm_lfence();
        let t0 = _rdtsc();
        _mm_lfence();
        core::ptr::read_volatile(p);
        _mm_lfence();
        let t1 = _rdtsc();
        t1.wrapping_sub(t0)
    }
}

/// The byte 2 KiB from `p` in the same 4 KiB page: reading it first fills the TLB for
/// the page without touching `p`'s line (nor the 128-byte pair the adjacent-line
/// prefetcher would fetch with it).
#[inline]
pub fn page_mate(p: *const u8) -> *const u8 {
    if (p as usize) & 4095 >= 2048 {
        p.wrapping_sub(2048)
    } else {
        p.wrapping_add(2048)
    }
}

/// TSC cycles of one load of [`page_mate`]`(p)`, then of one load of `*p`: the first
/// pays the page walk (and the page fault of a page never touched), the second the
/// touched long ago has lost its translations too, and a page walk can make an LLC
/// hit as slow as a DRAM access with a warm TLB: the two could not be told apart.
///
/// The page mate is read with an instruction of our own, not a Rust load: it lies in
/// `p`'s page, so it is mapped whenever `p` is, but it may lie outside the object `p`
/// belongs to (the byte just past a 4 KiB block; see `policy::probe_offset`).
///
/// # Safety
/// `p` must be valid for a one-byte read.
#[cfg(target_arch = "x86_64")]
#[inline]
pub unsafe fn mate_then_load_cycles(p: *const u8) -> (u64, u64) {
    use core::arch::x86_64::{_mm_lfence, _rdtsc};
    // SAFETY: the mate is in the same 4 KiB page as `p`, which is readable per the
    // contract, and pages are the unit of mapping and protection on x86-64; the asm
    // reads one byte and writes nothing but its scratch register. LFENCE and RDTSC are
    // architectural (see `load_cycles`).
    unsafe {
        _mm_lfence();
        let t0 = _rdtsc();
        _mm_lfence();
        core::arch::asm!(
            "movzx {scratch:e}, byte ptr [{mate}]",
            mate = in(reg) page_mate(p),
            scratch = out(reg) _,
            options(nostack, preserves_flags, readonly),
        );
        _mm_lfence();
        let mate = _rdtsc().wrapping_sub(t0);
        (mate, load_cycles(p))
    }
}

/// TSC cycles of one load of `*p` after a load of [`page_mate`]`(p)` (see
/// [`mate_then_load_cycles`]): the latency of the cache or memory alone, without a
/// page walk.
///
/// # Safety
/// `p` must be valid for a one-byte read.
#[cfg(target_arch = "x86_64")]
#[inline]
pub unsafe fn load_cycles_tlb_warm(p: *const u8) -> u64 {
    // SAFETY: forwarded contract.
    unsafe { mate_then_load_cycles(p).1 }
}

/// Probes the line at `p` (see [`mate_then_load_cycles`] and [`classify`]), touching
/// `neighbour` (a byte of the same block in another page) only to confirm a slow first
/// touch. Where there is no time-stamp counter, `Unknown`.
///
/// # Safety
/// `p` and `neighbour` (if given) must be valid for one-byte reads.
#[inline]
pub unsafe fn probe(
    p: *const u8,
    neighbour: Option<*const u8>,
    hit_max: u32,
    fault_min: u32,
) -> Probed {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: forwarded contract.
        let (mate, line) = unsafe { mate_then_load_cycles(p) };
        let confirm = if mate > fault_min as u64 {
            // SAFETY: forwarded contract.
            neighbour.map(|q| unsafe { load_cycles(q) })
        } else {
            None
        };
        classify(mate, confirm, line, hit_max, fault_min)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (p, neighbour, hit_max, fault_min);
        Probed::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifier_on_synthetic_latencies() {
        for (mate, confirm, cycles, want) in [
            (100, None, 0, Probed::Cached),
            (100, None, 40, Probed::Cached),
            (1000, None, 150, Probed::Cached),
            (100, None, 151, Probed::Cold),
            (600, None, 900, Probed::Cold),
            (100, None, u64::MAX, Probed::Cold),
            (1001, None, 40, Probed::Fresh),
            (u64::MAX, Some(2000), 150, Probed::Fresh),
            // The zero page's line swept out of the cache: the faults still tell.
            (2300, Some(2100), 400, Probed::Fresh),
            // A slow page walk, then a quick one next door: a cold page.
            (2300, Some(450), 400, Probed::Cold),
            (2300, Some(450), 60, Probed::Cached),
            (1000, Some(5000), 400, Probed::Cold),
        ] {
            assert_eq!(
                classify(mate, confirm, cycles, 150, 1000),
                want,
                "{mate} ({confirm:?}) then {cycles} cycles"
            );
        }
        assert_eq!(classify(0, None, 1, 0, 1000), Probed::Cold);
    }
}
