//! Shared harness of the correctness suites: the methods under test (every available
//! kernel, plus blockmem's own entry points under each hint), a deterministic random
//! source, page-aligned buffers, the `BLOCKMEM_TEST_DISABLE` switch that masks CPU
//! features off (`BLOCKMEM_TEST_DISABLE=avx` proves the portable/SSE2 path), the lock
//! that serialises tests changing the process-wide dispatch state, and a model of the
//! policy read straight from a table.
#![allow(dead_code)]

use blockmem::builtin::Class;
use blockmem::cpu::{self, Features};
use blockmem::kernel::{self, Available, KernelId, Op};
use blockmem::policy;
use blockmem::profile::{Action, Family, State, Table};
use blockmem::{dispatch, Hint};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

static SETUP: Once = Once::new();

/// The features `BLOCKMEM_TEST_DISABLE` (comma-separated feature names) masks off.
pub fn env_mask() -> Features {
    let Ok(list) = std::env::var("BLOCKMEM_TEST_DISABLE") else {
        return Features::NONE;
    };
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .fold(Features::NONE, |m, name| {
            let f = Features::from_name(name)
                .unwrap_or_else(|| panic!("BLOCKMEM_TEST_DISABLE: unknown feature {name:?}"));
            m.union(f)
        })
}

/// Applies `BLOCKMEM_TEST_DISABLE` once per process.
pub fn setup() {
    SETUP.call_once(|| {
        let mask = env_mask();
        if !mask.is_empty() {
            dispatch::mask_features(mask);
            eprintln!(
                "features masked by BLOCKMEM_TEST_DISABLE: now {:?}",
                cpu::features()
            );
        }
    });
}

/// Tests that change process-wide dispatch state (installed table, feature mask, forced
/// kernel) hold this lock, so that they never observe one another mid-change.
static GLOBAL: Mutex<()> = Mutex::new(());

/// The dispatch state as a test found it; restored, and checked, when dropped.
pub struct GlobalState {
    table: Table,
    installed: bool,
    forced: Option<KernelId>,
    mask: Features,
    _lock: MutexGuard<'static, ()>,
}

/// Takes the global lock (after [`setup`]) and records the dispatch state, which the
/// returned guard puts back when the test ends, panicking or not.
pub fn lock_global() -> GlobalState {
    let lock = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
    setup();
    GlobalState {
        table: dispatch::table().clone(),
        installed: dispatch::status().0 == blockmem::autoload::Source::Installed,
        forced: dispatch::forced(),
        mask: cpu::masked(),
        _lock: lock,
    }
}

impl Drop for GlobalState {
    fn drop(&mut self) {
        dispatch::force(self.forced);
        dispatch::mask_features(self.mask);
        if self.installed {
            dispatch::install(&self.table);
        } else {
            dispatch::reload();
        }
        if !std::thread::panicking() {
            assert_eq!(dispatch::table(), &self.table, "table restored");
            assert_eq!(dispatch::forced(), self.forced, "forced kernel restored");
            assert_eq!(cpu::masked(), self.mask, "feature mask restored");
        }
    }
}

/// The kernel a call runs by the table alone, without the compiled plan: the band of
/// `n` in the row of the hint and state, its kernel's stand-in on a CPU with features
/// `f`, a forced kernel where it serves the op, and the two correctness rules (an
/// overlapping move reads the `cached` row where the `unknown` row probes, and never
/// streams). `None` where the band probes and `dst` is `Unknown`. What
/// `Plan::decide` must answer.
#[allow(clippy::too_many_arguments)]
pub fn model_decide(
    t: &Table,
    f: Features,
    forced: Option<KernelId>,
    op: Op,
    n: usize,
    hint: Hint,
    overlap: bool,
    dst: State,
) -> Option<KernelId> {
    let fam = Family::of(op);
    let [a, b] = fam.ops();
    let step = |state: State| match t.row(fam, hint, state).at(n) {
        Action::Run(k) => Some(match forced {
            Some(fk) if policy::usable(fk, op, f) => fk,
            _ => policy::stand_in(k, op, f),
        }),
        Action::Probe => match forced {
            Some(fk) if policy::usable(fk, a, f) && policy::usable(fk, b, f) => Some(fk),
            _ => None,
        },
    };
    let state = if overlap && dst == State::Unknown && step(State::Unknown).is_none() {
        State::Cached
    } else {
        dst
    };
    let k = step(state)?;
    Some(if overlap && k.streams() {
        policy::stand_in(KernelId::Avx512, op, f)
    } else {
        k
    })
}

/// Every size where a band of `t` starts (0 excluded), sorted.
pub fn band_edges(t: &Table) -> Vec<usize> {
    let mut v: Vec<usize> = t
        .keyed_rows()
        .flat_map(|(.., row)| row.bands().iter().map(|b| b.from))
        .filter(|&from| from > 0)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The same as [`band_edges`] for every built-in table.
pub fn builtin_band_edges() -> Vec<usize> {
    let mut v: Vec<usize> = Class::ALL
        .into_iter()
        .flat_map(|c| band_edges(c.table()))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// One way of performing the ops: a kernel from the table, or the public entry point.
#[derive(Clone, Copy, Debug)]
pub enum Method {
    Kernel(Available),
    Auto(Hint),
    /// The `clzero` kernel's line arithmetic with CLZERO emulated: run where the CPU
    /// lacks CLZERO, so the kernel's logic is tested even though the instruction is not.
    ClzeroEmulated,
}

impl Method {
    pub fn name(&self) -> String {
        match self {
            Method::Kernel(k) => k.name().to_string(),
            Method::Auto(h) => format!("auto[{}]", h.name()),
            Method::ClzeroEmulated => "clzero(emulated)".to_string(),
        }
    }

    pub fn supports(&self, op: Op) -> bool {
        match self {
            Method::Kernel(k) => k.kernel().supports(op),
            Method::Auto(_) => true,
            Method::ClzeroEmulated => op == Op::Zero,
        }
    }

    /// Runs `op`. For copy/move `src` is the source; for set `byte` is the value.
    /// Returns false when the method does not implement the op.
    ///
    /// # Safety
    /// As the C function of `op`; for `Copy`, disjoint ranges.
    pub unsafe fn run(&self, op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize) -> bool {
        // SAFETY: forwarded contract; `Available` certifies the CPU features.
        unsafe {
            match *self {
                Method::Kernel(k) => match op {
                    Op::Copy => k.copy_fn().map(|f| f(dst, src, n)).is_some(),
                    Op::Move => k.move_fn().map(|f| f(dst, src, n)).is_some(),
                    Op::Set => k.set_fn().map(|f| f(dst, byte, n)).is_some(),
                    Op::Zero => k.zero_fn().map(|f| f(dst, n)).is_some(),
                },
                Method::Auto(h) => {
                    let ret = match op {
                        Op::Copy => blockmem::copy_raw(dst, src, n, h),
                        Op::Move => blockmem::move_raw(dst, src, n, h),
                        Op::Set => blockmem::set_raw(dst, byte, n, h),
                        Op::Zero => blockmem::zero_raw(dst, n, h),
                    };
                    assert_eq!(ret, dst, "{}: {} must return dst", self.name(), op.name());
                    true
                }
                Method::ClzeroEmulated => {
                    #[cfg(target_arch = "x86_64")]
                    blockmem::arch::x86_64::clzero::zero_emulated(dst, n);
                    op == Op::Zero
                }
            }
        }
    }
}

/// Every method available on this CPU (after masking) that implements `op`.
pub fn methods(op: Op) -> Vec<Method> {
    setup();
    let mut v: Vec<Method> = kernel::available().map(Method::Kernel).collect();
    v.extend(Hint::ALL.into_iter().map(Method::Auto));
    let has_clzero = kernel::by_name("clzero").is_some_and(|k| k.is_available());
    if cfg!(target_arch = "x86_64") && !has_clzero {
        v.push(Method::ClzeroEmulated);
    }
    v.retain(|m| m.supports(op));
    v
}

/// Kernels in the table this CPU cannot run (reported, never executed).
pub fn skipped_kernels() -> Vec<&'static str> {
    setup();
    kernel::table()
        .iter()
        .filter(|k| !k.is_available())
        .map(|k| k.name())
        .collect()
}

/// Prints what a suite covered (visible with `--nocapture`, and in failure output).
pub fn report(test: &str, op: Op, methods: &[Method], cases: u64) {
    let names: Vec<_> = methods.iter().map(Method::name).collect();
    eprintln!(
        "{test}: {} {cases} checked calls over {} methods [{}]; skipped (CPU lacks features): {:?}",
        op.name(),
        methods.len(),
        names.join(" "),
        skipped_kernels()
    );
    TOTAL_CASES.fetch_add(cases, Ordering::Relaxed);
}

pub static TOTAL_CASES: AtomicU64 = AtomicU64::new(0);

/// xorshift64*: deterministic, fast, good enough to make every byte distinct-ish.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }
}

/// A zeroed, page-aligned heap buffer.
pub struct Aligned {
    ptr: *mut u8,
    len: usize,
}

impl Aligned {
    pub fn new(len: usize) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len.max(1), 4096).unwrap();
        // SAFETY: the layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "allocation of {len} bytes failed");
        Aligned { ptr, len }
    }
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes for the buffer's lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub fn slice_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len.max(1), 4096).unwrap();
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, layout) }
    }
}

/// The first index where `got` and `want` differ.
pub fn first_diff(got: &[u8], want: &[u8]) -> Option<usize> {
    if got == want {
        return None;
    }
    got.iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .or(Some(got.len().min(want.len())))
}

/// Evicts the cache lines of `[p, p + n)` from every cache level (no-op off x86-64).
pub fn flush(p: *const u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_clflush, _mm_mfence};
        let mut a = p as usize & !63;
        while a < p as usize + n {
            // SAFETY: CLFLUSH is architectural on x86-64; `a` lies in the caller's
            // region (rounded down to its line, which is mapped with it).
            unsafe { _mm_clflush(a as *const u8) };
            a += 64;
        }
        // SAFETY: MFENCE is architectural on x86-64.
        unsafe { _mm_mfence() };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, n);
}

/// Sizes from the issue: every internal threshold ±1 and powers of two ±1 up to `max`.
pub fn interesting_sizes(max: usize) -> Vec<usize> {
    let mut v = Vec::new();
    // Ladder rungs, vector short/long boundaries (8 × 8/16/32), inline ladder (128,
    // and 512/2048, copies 2112, with AVX-512), loop steps, block-prefetch block multiples, and where
    // a band of a built-in table starts.
    let thresholds = [
        2usize,
        4,
        8,
        16,
        32,
        64,
        128,
        256,
        512,
        1024,
        2048,
        2112,
        4096,
        8192,
        8192 * 2,
        8192 * 3,
        8192 + 256,
    ];
    for t in thresholds.into_iter().chain(builtin_band_edges()) {
        v.extend([t - 1, t, t + 1]);
    }
    let mut p = 2048usize;
    while p <= max {
        v.extend([p - 1, p, p + 1]);
        p *= 2;
    }
    v.retain(|&n| n <= max + 1);
    v.sort_unstable();
    v.dedup();
    v
}
