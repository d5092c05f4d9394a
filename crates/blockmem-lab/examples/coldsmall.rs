//! Small copies scattered over cold memory: blockmem's entry point against the C
//! library's memcpy, `CALLS` calls of 1..=MAXN bytes at random addresses in 256 MiB
//! buffers (far beyond any LLC), best of 5 passes, two rounds alternating.
//!
//! `cargo run --release -p blockmem-lab --example coldsmall -- [MAXN] [sse]`; `sse`
//! masks AVX-512BW off (the SSE2 ladder instead of the masked path). `SSPAN` or
//! `DSPAN` (bytes) shrink the source or destination area to keep that side cached.
//! It shows, for instance, what a second cache line per call costs a small cold copy
//! (see `blockmem::arch::x86_64::masked`).
use std::time::Instant;

extern "C" {
    fn memcpy(d: *mut u8, s: *const u8, n: usize) -> *mut u8;
}

const CALLS: usize = 200_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let maxn: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(64);
    let sse = args.get(2).is_some_and(|m| m == "sse");
    let span = 256usize << 20;
    let env = |k: &str| std::env::var(k).ok().and_then(|s| s.parse().ok());
    let (sspan, dspan): (usize, usize) = (
        env("SSPAN").unwrap_or(span).min(span),
        env("DSPAN").unwrap_or(span).min(span),
    );
    let minn: usize = env("MINN").unwrap_or(1).min(maxn);
    let src = vec![1u8; span + 4096];
    let mut dst = vec![0u8; span + 4096];
    let mut rng = fastrand::Rng::with_seed(1);
    let calls: Vec<(usize, usize, usize)> = (0..CALLS)
        .map(|_| {
            (
                rng.usize(..dspan),
                rng.usize(..sspan),
                rng.usize(minn..=maxn),
            )
        })
        .collect();
    if sse {
        blockmem::dispatch::mask_features(blockmem::cpu::Features::AVX512BW);
    }
    let mut run = |name: &str, f: unsafe fn(*mut u8, *const u8, usize)| {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            for &(d, s, n) in &calls {
                // SAFETY: d + n and s + n lie inside the buffers (span + 4096 bytes).
                unsafe { f(dst.as_mut_ptr().add(d), src.as_ptr().add(s), n) };
            }
            best = best.min(t.elapsed().as_secs_f64() * 1e9 / CALLS as f64);
        }
        assert!(calls[0].2 == 0 || dst[calls[0].0] == 1, "the copy happened");
        println!("{name:10} 1..={maxn:<4} {best:6.1} ns/call");
    };
    unsafe fn libc(d: *mut u8, s: *const u8, n: usize) {
        // SAFETY: the caller's.
        unsafe { memcpy(d, s, n) };
    }
    unsafe fn auto(d: *mut u8, s: *const u8, n: usize) {
        // SAFETY: the caller's.
        unsafe { blockmem::copy_raw(d, s, n, blockmem::Hint::Auto) };
    }
    let name = if sse { "auto (sse)" } else { "auto" };
    for _ in 0..2 {
        run("libc", libc);
        run(name, auto);
    }
}
