//! Block algorithms written once over a [`Vector`] type and instantiated per ISA
//! (`u64` for the portable kernel, SSE2 `__m128i`, AVX2 `__m256i`).
//!
//! Building blocks, all `#[inline(always)]` so that they are compiled inside the
//! caller's `#[target_feature]` function and use its registers:
//!
//! 1. [`copy_short`] — `V <= n <= 8V`: two, four or eight vectors anchored at both ends
//!    (overlapping head/tail), every load before every store, so it is also a move.
//! 2. [`copy_forward`] — `n > 8V`: load the first and the last `4V` bytes up front, align
//!    the destination, run a `4V`-per-iteration loop (aligned or non-temporal stores),
//!    then store the saved head and tail. Correct for `dst <= src` overlap because every
//!    loop load reads at or above the store pointer. Optionally blocked with a
//!    prefetch-a-block pass over each [`PF_BLOCK`] of the source (seed 003 Fig. 1,
//!    docs/SEEDS.md).
//! 3. [`copy_backward`] — the mirror image for `dst > src` overlap.
//! 4. [`set_short`], [`set_forward`] — the same shapes with a splatted value.
//!
//! ```text
//!  dst          d0 (aligned)                               dst+n-4V      dst+n
//!   |[ head 4V ]  |[ 4V ][ 4V ][ 4V ] ... [ 4V ]              |[ tail 4V ]   |
//!   head/tail: unaligned temporal stores of data loaded before the loop
//!   loop: aligned stores (or streaming stores), last one may run into the tail
//! ```
//!
//! Invariant shared by the loops: a loop store `[d, d+4V)` happens only while
//! `d < dst + n - 4V`, so it never passes `dst + n`.

use core::ptr::read_volatile;

use crate::arch::all::small::{copy_le32, set_le32, SMALL_MAX};

/// A register-sized chunk of bytes and the loads/stores an ISA offers for it.
pub trait Vector: Copy {
    /// Width in bytes (a power of two).
    const SIZE: usize;
    /// Unaligned load.
    ///
    /// # Safety
    /// `p` valid for `SIZE` reads; the caller's CPU features include the vector's.
    unsafe fn load(p: *const u8) -> Self;
    /// Unaligned store.
    ///
    /// # Safety
    /// `p` valid for `SIZE` writes; CPU features as for `load`.
    unsafe fn store(self, p: *mut u8);
    /// Aligned store.
    ///
    /// # Safety
    /// As `store`, and `p` is `SIZE`-aligned.
    unsafe fn store_aligned(self, p: *mut u8);
    /// Non-temporal aligned store (a temporal store where the ISA has none).
    ///
    /// # Safety
    /// As `store_aligned`. The caller must issue [`Vector::fence`] before returning.
    unsafe fn store_nt(self, p: *mut u8);
    /// Orders preceding non-temporal stores (`sfence`), or nothing.
    fn fence();
    /// All lanes equal to `b`.
    ///
    /// # Safety
    /// CPU features as for `load`.
    unsafe fn splat(b: u8) -> Self;
}

// The four-vector building blocks are macros that bind four separate locals rather
// than functions returning `[V; 4]`: an unoptimised build copies such arrays with a
// call to `memcpy`, which the shim exports, and the disassembly test forbids.

/// `load4!(V, p => a, b, c, d)`: four unaligned loads of `V` from `p`.
macro_rules! load4 {
    ($V:ty, $p:expr => $a:ident, $b:ident, $c:ident, $d:ident) => {
        let p = $p;
        let $a = <$V>::load(p);
        let $b = <$V>::load(p.add(<$V>::SIZE));
        let $c = <$V>::load(p.add(2 * <$V>::SIZE));
        let $d = <$V>::load(p.add(3 * <$V>::SIZE));
    };
}

/// `store4!(V, p <= a, b, c, d)`: four unaligned stores to `p`.
macro_rules! store4 {
    ($V:ty, $p:expr, $a:expr, $b:expr, $c:expr, $d:expr) => {{
        let p = $p;
        $a.store(p);
        $b.store(p.add(<$V>::SIZE));
        $c.store(p.add(2 * <$V>::SIZE));
        $d.store(p.add(3 * <$V>::SIZE));
    }};
}

/// `store4_loop!(V, p, stores, a, b, c, d)`: four aligned (or streaming) stores.
macro_rules! store4_loop {
    ($V:ty, $p:expr, $stores:expr, $a:expr, $b:expr, $c:expr, $d:expr) => {{
        let p = $p;
        if $stores == Stores::NonTemporal {
            $a.store_nt(p);
            $b.store_nt(p.add(<$V>::SIZE));
            $c.store_nt(p.add(2 * <$V>::SIZE));
            $d.store_nt(p.add(3 * <$V>::SIZE));
        } else {
            $a.store_aligned(p);
            $b.store_aligned(p.add(<$V>::SIZE));
            $c.store_aligned(p.add(2 * <$V>::SIZE));
            $d.store_aligned(p.add(3 * <$V>::SIZE));
        }
    }};
}

/// One loop step: load `4V` bytes at `s`, store them at `d` (aligned or streaming).
macro_rules! copy4_loop {
    ($V:ty, $d:expr, $s:expr, $stores:expr) => {{
        load4!($V, $s => x0, x1, x2, x3);
        store4_loop!($V, $d, $stores, x0, x1, x2, x3);
    }};
}

/// Store flavour of a loop: temporal or non-temporal.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Stores {
    /// Regular (write-allocate) stores: the destination ends up in cache.
    Temporal,
    /// Streaming stores: write-combined straight to memory, no read-for-ownership.
    NonTemporal,
}

/// Seed 003 Fig. 1: the prefetch-a-block copy touches one line of every 64 bytes of an
/// 8 KiB source block, then copies the block. 8 KiB is the paper's choice: big enough to
/// turn DRAM accesses into long sequential bursts, small enough to sit in L1/L2 while it
/// is copied. The lab's `sizes` experiment measures it against the plain loops.
pub const PF_BLOCK: usize = 8 << 10;

/// Distance between the touches of the block-prefetch pass: one load per cache line.
const PF_STRIDE: usize = 64;

/// A cache line (the unit of streaming stores and of the `clzero` kernel).
pub const LINE: usize = 64;

/// Alignment of the destination in the large loops: a full cache line, so that
/// non-temporal stores fill whole write-combining buffers and temporal stores never
/// split a line.
/// Vectors narrower than 16 bytes align to their 4-vector step instead.
pub const LOOP_ALIGN: usize = 64;

/// The destination alignment used by the loops of vector `V`.
#[inline(always)]
const fn loop_align<V: Vector>() -> usize {
    if 4 * V::SIZE < LOOP_ALIGN {
        4 * V::SIZE
    } else {
        LOOP_ALIGN
    }
}

/// How far past `dst` a forward loop's first aligned store starts: the distance to the
/// next [`loop_align`] boundary above `dst`, 1 to `loop_align` bytes (a whole
/// `loop_align` when `dst` is aligned, so that the loop's first step does not store
/// again what the head stores). [`store_head`] covers it.
#[inline(always)]
fn head_skip<V: Vector>(dst: *const u8) -> usize {
    let a = loop_align::<V>();
    a - (dst as usize & (a - 1))
}

/// Stores the head of a forward loop: the first [`loop_align`] bytes, from the first
/// of `h0..h3` (one 64-byte vector, two of 32, four of 16 or 8 bytes), all that
/// [`head_skip`] leaves to it.
///
/// # Safety
/// `dst` valid for `4 * V::SIZE` writes.
#[inline(always)]
unsafe fn store_head<V: Vector>(dst: *mut u8, h0: V, h1: V, h2: V, h3: V) {
    let k = loop_align::<V>() / V::SIZE;
    // SAFETY: at most 4 vectors, within the caller's 4 * V::SIZE bytes.
    unsafe {
        h0.store(dst);
        if k > 1 {
            h1.store(dst.add(V::SIZE));
        }
        if k > 2 {
            h2.store(dst.add(2 * V::SIZE));
            h3.store(dst.add(3 * V::SIZE));
        }
    }
}

/// True when `[dst, dst+n)` and `[src, src+n)` share no byte.
#[inline(always)]
pub fn disjoint(dst: *const u8, src: *const u8, n: usize) -> bool {
    (dst as usize).wrapping_sub(src as usize) >= n && (src as usize).wrapping_sub(dst as usize) >= n
}

#[inline(always)]
fn align_up(p: usize, a: usize) -> usize {
    (p + a - 1) & !(a - 1)
}

/// Copies `n` bytes, `V::SIZE <= n <= 8 * V::SIZE`; overlap allowed.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, `n` in range, CPU has `V`'s features.
#[inline(always)]
pub unsafe fn copy_short<V: Vector>(dst: *mut u8, src: *const u8, n: usize) {
    let w = V::SIZE;
    debug_assert!(n >= w && n <= 8 * w);
    // SAFETY: every offset below is in [0, n - w] because n >= (count of vectors from
    // that end) * w in each branch; all loads precede all stores (overlap-safe).
    unsafe {
        if n <= 2 * w {
            let a = V::load(src);
            let b = V::load(src.add(n - w));
            a.store(dst);
            b.store(dst.add(n - w));
        } else if n <= 4 * w {
            let a = V::load(src);
            let b = V::load(src.add(w));
            let c = V::load(src.add(n - 2 * w));
            let d = V::load(src.add(n - w));
            a.store(dst);
            b.store(dst.add(w));
            c.store(dst.add(n - 2 * w));
            d.store(dst.add(n - w));
        } else {
            load4!(V, src => h0, h1, h2, h3);
            load4!(V, src.add(n - 4 * w) => t0, t1, t2, t3);
            store4!(V, dst, h0, h1, h2, h3);
            store4!(V, dst.add(n - 4 * w), t0, t1, t2, t3);
        }
    }
}

/// Reads one byte per cache line of `[p, p+len)` so the whole block is in cache before
/// it is copied (seed 003 Fig. 1, "prefetch the block"). Real loads rather than
/// `prefetch` hints: a hint may be dropped when the fill buffers are busy, a load is not.
#[inline(always)]
unsafe fn touch_block(p: *const u8, len: usize) {
    let mut off = 0;
    while off < len {
        // SAFETY: off < len and the caller guarantees [p, p+len) is readable.
        unsafe { read_volatile(p.add(off)) };
        off += PF_STRIDE;
    }
}

/// What a forward copy fetches ahead of its loop, beyond what the hardware prefetchers do.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Prefetch {
    /// Nothing.
    None,
    /// Seed 003 Fig. 1: touch each [`PF_BLOCK`] of source before copying it.
    SrcBlock,
    /// `prefetchw` the destination's lines one loop step (4 vectors) ahead of the
    /// stores (temporal stores only; x86-64 only, a no-op elsewhere). A store to a line
    /// that is not in L1 must first fetch it for ownership, and the store buffer asks
    /// for that only as the store reaches it, a few lines at a time; the prefetch
    /// starts every fetch a step early: slower when both blocks sit in L1, faster when
    /// the destination is not in L1 (see `avx512_pw`).
    DstAhead,
}

/// `prefetchw` of the lines of one loop step at `p` (`step` bytes: 1, 2 or 4 lines):
/// fetch them for ownership, in anticipation of the stores. One `asm!` with the
/// offsets in its addresses, so that the step costs one instruction per line.
///
/// # Safety
/// The CPU supports PREFETCHW (a hint: it never faults, whatever `p` is).
#[inline(always)]
unsafe fn prefetch_write_step(p: *const u8, step: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch hint reads and writes nothing architecturally and does not
    // fault; the caller guarantees the instruction exists.
    unsafe {
        use core::arch::asm;
        const { assert!(LINE == 64) };
        if step >= 4 * LINE {
            asm!(
                "prefetchw [{p}]",
                "prefetchw [{p} + 64]",
                "prefetchw [{p} + 128]",
                "prefetchw [{p} + 192]",
                p = in(reg) p,
                options(nostack, preserves_flags, readonly),
            );
        } else if step >= 2 * LINE {
            asm!("prefetchw [{p}]", "prefetchw [{p} + 64]", p = in(reg) p, options(nostack, preserves_flags, readonly));
        } else {
            asm!("prefetchw [{p}]", p = in(reg) p, options(nostack, preserves_flags, readonly));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, step);
}

/// A loop's destination and source pointers through an empty `asm!`, which the
/// optimiser cannot see through: a loop that passes them here every step keeps them as
/// its induction variables, addressing its stores `[d + offset]` and its loads
/// `[s + offset]`. Left alone, loop strength reduction may instead count one index
/// shared by every access and address the stores as `[base + index]`; on Intel cores
/// a store with an index register cannot use the store-only address port, so its
/// address competes with the loads (and with the `prefetchw` of `avx512_pw`).
#[inline(always)]
#[allow(clippy::pointers_in_nomem_asm_block)] // passed through, not used
pub(crate) fn steady(d: *mut u8, s: *const u8) -> (*mut u8, *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        let (mut d, mut s) = (d, s);
        // SAFETY: an empty template; both pointers pass through registers unchanged.
        unsafe {
            core::arch::asm!(
                "/* {0} {1} */",
                inout(reg) d,
                inout(reg) s,
                options(nomem, nostack, preserves_flags),
            )
        };
        (d, s)
    }
    #[cfg(not(target_arch = "x86_64"))]
    (d, s)
}

/// Forward copy of `n > 8 * V::SIZE` bytes.
///
/// `pf` says what to fetch ahead: each [`PF_BLOCK`] of source before it is copied, or
/// the destination one step ahead of the stores (temporal stores only).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; either no overlap or `dst < src`
/// (then `stores` must be `Temporal`); CPU has `V`'s features, and PREFETCHW with
/// [`Prefetch::DstAhead`]. With non-temporal stores, this function fences before
/// returning.
#[inline(always)]
pub unsafe fn copy_forward<V: Vector>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    stores: Stores,
    pf: Prefetch,
) {
    if stores == Stores::NonTemporal {
        // SAFETY: forwarded contract (no overlap, as streaming requires).
        return unsafe { copy_forward_nt::<V>(dst, src, n, pf == Prefetch::SrcBlock) };
    }
    let w = V::SIZE;
    let step = 4 * w;
    debug_assert!(n > 2 * step);
    // SAFETY: the head [0, 4w) and the tail [n-4w, n) are in bounds because n > 8w.
    // The loop stores [d, d+4w) only while d < end = dst+n-4w, so d+4w < dst+n; the
    // matching loads are at the same offsets from src. d starts at the first
    // loop_align boundary above dst (a multiple of w, at most loop_align <= 4w past
    // dst, which the head covers) and advances by 4w (a multiple of loop_align), as
    // the aligned stores require. For dst < src overlap, each loop load reads
    // [s, s+4w) with s - d = src - dst > 0, above everything stored so far; head and
    // tail were loaded before any store.
    unsafe {
        load4!(V, src => h0, h1, h2, h3);
        load4!(V, src.add(n - step) => t0, t1, t2, t3);
        let skip = head_skip::<V>(dst);
        let mut d = dst.add(skip);
        let mut s = src.add(skip);
        let end = dst.add(n - step);
        if pf == Prefetch::SrcBlock {
            while d < end {
                let block = (end as usize - d as usize).min(PF_BLOCK);
                touch_block(s, block);
                let block_end = d.add(block);
                while d < block_end {
                    (d, s) = steady(d, s);
                    copy4_loop!(V, d, s, stores);
                    d = d.add(step);
                    s = s.add(step);
                }
            }
        } else {
            if pf == Prefetch::DstAhead {
                // Prefetch [d+step, d+2step) while it lies inside the destination
                // (never another object's lines: a prefetch for ownership takes them
                // from other cores); the last step or two copy without.
                let last = dst as usize + n - 2 * step;
                while (d as usize) <= last {
                    (d, s) = steady(d, s);
                    prefetch_write_step(d.add(step), step);
                    copy4_loop!(V, d, s, stores);
                    d = d.add(step);
                    s = s.add(step);
                }
            }
            while d < end {
                (d, s) = steady(d, s);
                copy4_loop!(V, d, s, stores);
                d = d.add(step);
                s = s.add(step);
            }
        }
        if stores == Stores::NonTemporal {
            V::fence();
        }
        store4!(V, dst.add(n - step), t0, t1, t2, t3);
        store_head(dst, h0, h1, h2, h3);
    }
}

/// Copies `len < 64` bytes (the unaligned edge of a streaming copy).
///
/// # Safety
/// `src` valid for `len` reads, `dst` for `len` writes, no overlap.
#[inline(always)]
unsafe fn copy_edge(dst: *mut u8, src: *const u8, len: usize) {
    debug_assert!(len < 64);
    // SAFETY: both calls stay within [0, len): the second covers [len-32, len).
    unsafe {
        if len <= SMALL_MAX {
            copy_le32(dst, src, len);
        } else {
            copy_le32(dst, src, SMALL_MAX);
            copy_le32(
                dst.add(len - SMALL_MAX),
                src.add(len - SMALL_MAX),
                SMALL_MAX,
            );
        }
    }
}

/// Sets `len < 64` bytes (the unaligned edge of a streaming set).
///
/// # Safety
/// `dst` valid for `len` writes.
#[inline(always)]
unsafe fn set_edge(dst: *mut u8, byte: u8, len: usize) {
    debug_assert!(len < 64);
    // SAFETY: as `copy_edge`.
    unsafe {
        if len <= SMALL_MAX {
            set_le32(dst, byte, len);
        } else {
            set_le32(dst, byte, SMALL_MAX);
            set_le32(dst.add(len - SMALL_MAX), byte, SMALL_MAX);
        }
    }
}

/// The streaming copy: non-temporal stores to exactly the whole cache lines inside
/// the destination, temporal stores only to the partial lines at its two ends.
///
/// ```text
///  dst      d0 (line-aligned)                         dend (line-aligned)  dst+n
///   |[edge]|[ NT line ][ NT line ] ... [ NT line ]|[ edge ]|
/// ```
///
/// Mixing the two kinds of store in one line is what this avoids: a temporal store to
/// a line still in a write-combining buffer (or just streamed to memory) forces the
/// buffer out and reads the line back, which runs a 4 KiB streaming copy to a
/// misaligned destination at a fraction of its speed when the edges overlap the
/// streamed lines.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap, `n >= 128` (so at
/// least one whole line lies inside), CPU has `V`'s features.
#[inline(always)]
unsafe fn copy_forward_nt<V: Vector>(dst: *mut u8, src: *const u8, n: usize, prefetch_block: bool) {
    let w = V::SIZE;
    let step = 4 * w;
    debug_assert!(n >= 128 && w <= LINE);
    // SAFETY: d0 = align_up(dst, 64) and dend = align_down(dst+n, 64) satisfy
    // dst <= d0 < dend <= dst+n because n >= 128. Every streaming store writes
    // [d, d+w) with d 64-aligned (or w-aligned inside a line) and d + w <= dend; the
    // loads read the same offsets of src. The edges [dst, d0) and [dend, dst+n) are
    // each under 64 bytes and lie in lines no streaming store touches.
    unsafe {
        let d0 = dst.add(align_up(dst as usize, LINE) - dst as usize);
        let dend = dst.add(((dst as usize + n) & !(LINE - 1)) - dst as usize);
        let head = d0 as usize - dst as usize;
        let tail = dst as usize + n - dend as usize;
        let mut d = d0;
        let mut s = src.add(head);
        while d < dend {
            let block_end = if prefetch_block {
                let b = dend.min(d.add(PF_BLOCK));
                touch_block(s, b as usize - d as usize);
                b
            } else {
                dend
            };
            while (block_end as usize - d as usize) >= step {
                copy4_loop!(V, d, s, Stores::NonTemporal);
                d = d.add(step);
                s = s.add(step);
            }
            while d < block_end {
                V::load(s).store_nt(d);
                d = d.add(w);
                s = s.add(w);
            }
        }
        V::fence();
        copy_edge(dst, src, head);
        copy_edge(dend, src.add(n - tail), tail);
    }
}

/// The streaming set: non-temporal stores to the whole lines inside the destination,
/// temporal stores to the partial lines at its ends (see [`copy_forward_nt`]).
///
/// # Safety
/// `dst` valid for `n` writes, `n >= 128`, CPU has `V`'s features.
#[inline(always)]
unsafe fn set_forward_nt<V: Vector>(dst: *mut u8, byte: u8, v: V, n: usize) {
    let w = V::SIZE;
    let step = 4 * w;
    debug_assert!(n >= 128 && w <= LINE);
    // SAFETY: as in `copy_forward_nt`, without loads.
    unsafe {
        let d0 = dst.add(align_up(dst as usize, LINE) - dst as usize);
        let dend = dst.add(((dst as usize + n) & !(LINE - 1)) - dst as usize);
        let mut d = d0;
        while (dend as usize - d as usize) >= step {
            store4_loop!(V, d, Stores::NonTemporal, v, v, v, v);
            d = d.add(step);
        }
        while d < dend {
            v.store_nt(d);
            d = d.add(w);
        }
        V::fence();
        set_edge(dst, byte, d0 as usize - dst as usize);
        set_edge(dend, byte, dst as usize + n - dend as usize);
    }
}

/// Backward copy of `n > 8 * V::SIZE` bytes, for `dst > src` overlap. Temporal stores
/// only (non-temporal stores are never used on overlapping moves).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; CPU has `V`'s features.
#[inline(always)]
pub unsafe fn copy_backward<V: Vector>(dst: *mut u8, src: *const u8, n: usize) {
    let w = V::SIZE;
    let step = 4 * w;
    debug_assert!(n > 2 * step);
    // SAFETY: head [0, 4w) and tail [n-4w, n) are in bounds (n > 8w). The loop walks a
    // loop_align-aligned end pointer `de` down from align_down(dst+n) and stores
    // [de-4w, de) only while de > dst+4w, so it never goes below dst. Each loop load
    // reads [se-4w, se) with se = de - (dst - src) < de, below everything stored so far
    // (stores so far lie at or above de). [align_down(dst+n), dst+n) is covered by the
    // tail (loop_align <= 4w), [dst, de_final) by the head.
    unsafe {
        load4!(V, src => h0, h1, h2, h3);
        load4!(V, src.add(n - step) => t0, t1, t2, t3);
        let dst_end = dst as usize + n;
        let back = dst_end & (loop_align::<V>() - 1);
        let mut de = dst.add(n - back);
        let mut se = src.add(n - back);
        let begin = dst.add(step);
        while de > begin {
            de = de.sub(step);
            se = se.sub(step);
            copy4_loop!(V, de, se, Stores::Temporal);
        }
        store4!(V, dst.add(n - step), t0, t1, t2, t3);
        store4!(V, dst, h0, h1, h2, h3);
    }
}

/// Moves `n > 8 * V::SIZE` bytes with temporal stores, choosing the direction.
///
/// # Safety
/// As [`copy_backward`].
#[inline(always)]
pub unsafe fn move_long<V: Vector>(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: forwarded contract; the direction satisfies each loop's overlap rule.
    unsafe {
        if (dst as usize).wrapping_sub(src as usize) >= n {
            // dst < src, or no overlap at all: forward is safe.
            copy_forward::<V>(dst, src, n, Stores::Temporal, Prefetch::None)
        } else {
            copy_backward::<V>(dst, src, n)
        }
    }
}

/// Sets `n` bytes, `V::SIZE <= n <= 8 * V::SIZE`.
///
/// # Safety
/// `dst` valid for `n` writes, `n` in range, CPU has `V`'s features.
#[inline(always)]
pub unsafe fn set_short<V: Vector>(dst: *mut u8, v: V, n: usize) {
    let w = V::SIZE;
    debug_assert!(n >= w && n <= 8 * w);
    // SAFETY: offsets are in [0, n - w] as in `copy_short`.
    unsafe {
        if n <= 2 * w {
            v.store(dst);
            v.store(dst.add(n - w));
        } else if n <= 4 * w {
            v.store(dst);
            v.store(dst.add(w));
            v.store(dst.add(n - 2 * w));
            v.store(dst.add(n - w));
        } else {
            store4!(V, dst, v, v, v, v);
            store4!(V, dst.add(n - 4 * w), v, v, v, v);
        }
    }
}

/// Sets `n > 8 * V::SIZE` bytes to `byte`; fences after non-temporal stores.
///
/// # Safety
/// `dst` valid for `n` writes, CPU has `V`'s features.
#[inline(always)]
pub unsafe fn set_forward<V: Vector>(dst: *mut u8, byte: u8, n: usize, stores: Stores) {
    // SAFETY: CPU has V's features per the contract.
    let v = unsafe { V::splat(byte) };
    if stores == Stores::NonTemporal {
        // SAFETY: forwarded contract; n > 8 * V::SIZE >= 128.
        return unsafe { set_forward_nt::<V>(dst, byte, v, n) };
    }
    let step = 4 * V::SIZE;
    debug_assert!(n > 2 * step);
    // SAFETY: as in `copy_forward` without the loads.
    unsafe {
        store_head(dst, v, v, v, v);
        let mut d = dst.add(head_skip::<V>(dst));
        let end = dst.add(n - step);
        while d < end {
            (d, _) = steady(d, dst);
            store4_loop!(V, d, stores, v, v, v, v);
            d = d.add(step);
        }
        if stores == Stores::NonTemporal {
            V::fence();
        }
        store4!(V, end, v, v, v, v);
    }
}

/// Portable "vector": a `u64`. Used by the `portable` kernel on every target.
impl Vector for u64 {
    const SIZE: usize = 8;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> u64 {
        // SAFETY: the caller guarantees 8 readable bytes.
        unsafe { core::ptr::read_unaligned(p as *const u64) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut u8) {
        // SAFETY: the caller guarantees 8 writable bytes.
        unsafe { core::ptr::write_unaligned(p as *mut u64, self) }
    }
    #[inline(always)]
    unsafe fn store_aligned(self, p: *mut u8) {
        // SAFETY: the caller guarantees 8 writable, 8-aligned bytes.
        unsafe { core::ptr::write(p as *mut u64, self) }
    }
    #[inline(always)]
    unsafe fn store_nt(self, p: *mut u8) {
        // SAFETY: as store_aligned; there is no portable streaming store.
        unsafe { self.store_aligned(p) }
    }
    #[inline(always)]
    fn fence() {}
    #[inline(always)]
    unsafe fn splat(b: u8) -> u64 {
        (b as u64).wrapping_mul(0x0101_0101_0101_0101)
    }
}
