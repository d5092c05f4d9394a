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
//! was never touched it takes a page fault, and a first touch slower than the table's
//! `probe_fault_min` reports the destination `fresh`, whatever the line load then
//! found. On an Intel Xeon KVM guest fresh pages' first touches took 2.0k-22k cycles;
//! page walks and DRAM accesses on evicted pages 0.7k-2.3k (p99 1.1k-1.4k), and on the
//! pages of a hot 64 MiB block, past the TLB's reach, 0.5k-1.7k. The fault maps the
//! kernel's shared zero page, whose line usually hits the cache, but not after a large
//! copy has swept it out: the line load cannot tell fresh from cold, the fault can.
//! Taking a slow page walk for a fault costs little (the fresh row keeps the destination
//! in cache, as libc does); the reverse would stream into pages the kernel has just
//! cleared through the cache, at half libc's speed.

use crate::policy::Probed;

/// Classifies a probe (see the module docs): a first touch of the page of more than
/// `fault_min` cycles took a page fault (fresh); else a line load of at most `hit_max`
/// cycles hit the cache (cached), and a slower one missed it (cold).
#[inline]
pub const fn classify(mate_cycles: u64, cycles: u64, hit_max: u32, fault_min: u32) -> Probed {
    if mate_cycles > fault_min as u64 {
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
/// latency of the cache or memory alone. A block the program
/// touched long ago has lost its translations too, and on a 2-vCPU Intel Xeon KVM guest a page
/// walk (~110 cycles) made an LLC hit as slow as a DRAM access with a warm TLB: the two
/// could not be told apart.
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

/// Probes the line at `p` (see [`mate_then_load_cycles`] and [`classify`]). Where
/// there is no time-stamp counter, `Unknown`.
///
/// # Safety
/// `p` must be valid for a one-byte read.
#[inline]
pub unsafe fn probe(p: *const u8, hit_max: u32, fault_min: u32) -> Probed {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: forwarded contract.
        let (mate, line) = unsafe { mate_then_load_cycles(p) };
        classify(mate, line, hit_max, fault_min)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (p, hit_max, fault_min);
        Probed::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifier_on_synthetic_latencies() {
        for (mate, cycles, want) in [
            (100, 0, Probed::Cached),
            (100, 40, Probed::Cached),
            (1000, 150, Probed::Cached),
            (100, 151, Probed::Cold),
            (600, 900, Probed::Cold),
            (100, u64::MAX, Probed::Cold),
            (1001, 40, Probed::Fresh),
            (u64::MAX, 150, Probed::Fresh),
            // The zero page's line swept out of the cache: the fault still tells.
            (2300, 400, Probed::Fresh),
            (1000, 400, Probed::Cold),
        ] {
            assert_eq!(
                classify(mate, cycles, 150, 1000),
                want,
                "{mate} then {cycles} cycles"
            );
        }
        assert_eq!(classify(0, 1, 0, 1000), Probed::Cold);
    }
}
