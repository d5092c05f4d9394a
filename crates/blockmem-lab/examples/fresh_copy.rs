//! Copies into fresh destinations (a new anonymous mapping per call, never touched, so
//! the copy takes every page fault), with the system C library's `memcpy` and with
//! blockmem's `copy` (`Hint::Auto`, the table in force: the profile named by
//! `BLOCKMEM_PROFILE` or found at the default path, else the built-in table),
//! interleaved call by call from a hot source. Prints one JSON line per size: the
//! median time of each, their ratio (libc / blockmem) and the kernel blockmem ran.
//! Every copy is checked.
//!
//! `cargo run --release -p blockmem-lab --example fresh_copy [REPS] [SIZE...]`

use std::time::Instant;

use blockmem::kernel::{Hint, Op};

/// A fresh anonymous private mapping of `n` bytes (4 KiB pages, as a large `malloc`
/// gets without transparent huge pages).
fn map(n: usize) -> *mut u8 {
    // SAFETY: an anonymous mapping with no address hint; checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            n,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert!(p != libc::MAP_FAILED, "mmap of {n} bytes failed");
    // SAFETY: the mapping just made; the advice is a preference.
    unsafe { libc::madvise(p, n, libc::MADV_NOHUGEPAGE) };
    p.cast()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let reps: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(15);
    let sizes: Vec<usize> = args
        .filter_map(|a| blockmem_lab::lab::parse_size(&a).ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1 << 20, 8 << 20, 64 << 20]
    } else {
        sizes
    };
    let (source, _) = blockmem::dispatch::status();
    for n in sizes {
        let src: Vec<u8> = (0..n).map(|i| (i * 131 + 7) as u8).collect();
        let (mut t_libc, mut t_bm) = (Vec::new(), Vec::new());
        let mut kernel = "";
        for rep in 0..reps {
            for bm in [rep % 2 == 0, rep % 2 != 0] {
                let dst = map(n);
                std::hint::black_box(&src);
                let t0 = Instant::now();
                // SAFETY: `dst` is a fresh mapping of `n` bytes, `src` holds `n` bytes;
                // they do not overlap.
                unsafe {
                    if bm {
                        blockmem::copy_raw(dst, src.as_ptr(), n, Hint::Auto);
                    } else {
                        libc::memcpy(dst.cast(), src.as_ptr().cast(), n);
                    }
                }
                let dt = t0.elapsed().as_secs_f64() * 1e9;
                // SAFETY: `dst` holds `n` initialised bytes now.
                let ok = unsafe { std::slice::from_raw_parts(dst, n) } == &src[..];
                assert!(ok, "wrong bytes after a {n}-byte copy");
                if bm {
                    t_bm.push(dt);
                    let probe = map(n);
                    // SAFETY: a fresh mapping of `n` bytes; the decision probes one line.
                    kernel = unsafe {
                        blockmem::dispatch::decide_for_call(
                            Op::Copy,
                            probe,
                            src.as_ptr(),
                            n,
                            Hint::Auto,
                        )
                    }
                    .map_or("inline", |k| k.name());
                    // SAFETY: unmapping our own mapping.
                    unsafe { libc::munmap(probe.cast(), n) };
                } else {
                    t_libc.push(dt);
                }
                // SAFETY: unmapping our own mapping.
                unsafe { libc::munmap(dst.cast(), n) };
            }
        }
        let (l, b) = (median(&mut t_libc), median(&mut t_bm));
        println!(
            "{}",
            serde_json::json!({
                "size": n, "table": source.name(), "reps": reps,
                "libc_median_ns": l, "blockmem_median_ns": b,
                "libc_over_blockmem": l / b, "kernel": kernel,
            })
        );
    }
}
