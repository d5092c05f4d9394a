//! Shared harness of the correctness suites: the methods under test (every available
//! kernel, plus blockmem's own entry points under each hint), a deterministic random
//! source, page-aligned buffers, and the `BLOCKMEM_TEST_DISABLE` switch that masks CPU
//! features off (`BLOCKMEM_TEST_DISABLE=avx` proves the portable/SSE2 path).
#![allow(dead_code)]

use blockmem::cpu::{self, Features};
use blockmem::kernel::{self, Available, Op};
use blockmem::Hint;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

static SETUP: Once = Once::new();

/// Applies `BLOCKMEM_TEST_DISABLE` (comma-separated feature names) once per process.
pub fn setup() {
    SETUP.call_once(|| {
        if let Ok(list) = std::env::var("BLOCKMEM_TEST_DISABLE") {
            for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let f = Features::from_name(name)
                    .unwrap_or_else(|| panic!("BLOCKMEM_TEST_DISABLE: unknown feature {name:?}"));
                cpu::disable(f);
            }
            eprintln!(
                "features masked by BLOCKMEM_TEST_DISABLE={list}: now {:?}",
                cpu::features()
            );
        }
    });
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

/// Sizes from the issue: every internal threshold ±1 and powers of two ±1 up to `max`.
pub fn interesting_sizes(max: usize) -> Vec<usize> {
    let mut v = Vec::new();
    // Ladder rungs, vector short/long boundaries (8 × 8/16/32), inline ladder, loop
    // steps, clzero minimum, block-prefetch block multiples.
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
        4096,
        8192,
        8192 * 2,
        8192 * 3,
        8192 + 256,
        blockmem::profile::MIN_STREAM_NO_REUSE,
    ];
    for t in thresholds {
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
