//! The x86 ways of moving data that blockmem ships no kernel for, against libc and the
//! kernels that win where they would: is any of them faster somewhere? `docs/DESIGN.md`
//! admits a kernel "if it wins somewhere", and the `policy` oracle only ranges over the
//! kernels we have, so this is how the rest were checked.
//!
//! * `movdir64b`: a 64-byte direct store (write-combining, no read for ownership, the
//!   line evicted from the caches), from a source line for copies and from one zero
//!   line for zeroes. Where the CPU has it (Intel from Tremont and Sapphire Rapids).
//! * `pf_all`: a copy that first issues a software prefetch for every source line,
//!   then copies with the `avx512` kernel (or `avx2`): all of a cold source's misses in
//!   flight at once, instead of the prefetch-a-block kernels' one block at a time.
//!
//! Each cell prepares its cache states (hot: every line touched; cold: every line
//! flushed), then times one call until its stores have drained (`mfence`), the lab's
//! default; the methods of a cell run interleaved in random order, and the report
//! gives medians with libc's median over each method's. Every result is checked.
//!
//! `cargo run --release -p blockmem-lab --example store_classes -- [REPS]`
use blockmem_lab::lab::mem::Buffer;
use blockmem_lab::lab::method::Method;
use blockmem_lab::lab::state::{flush, median, read_lines};
use std::time::Instant;

/// One 64-byte direct store per line of `dst`, then `sfence`: from the source line at
/// the same offset when `step` is 64 (a copy), from the line at `src` every time when
/// it is 0 (a fill with that line).
///
/// # Safety
/// The CPU has MOVDIR64B; `dst` 64-byte aligned and valid for `n` bytes, `n` a
/// multiple of 64; `src` valid for `n` bytes when `step` is 64, for 64 when it is 0.
unsafe fn movdir64b(dst: *mut u8, src: *const u8, n: usize, step: usize) {
    debug_assert!((dst as usize).is_multiple_of(64) && n.is_multiple_of(64));
    let mut i = 0;
    while i < n {
        // SAFETY: per the contract; MOVDIR64B reads 64 bytes at src + i / 64 * step
        // and writes 64 at the aligned dst + i.
        unsafe {
            core::arch::asm!(
                "movdir64b {d}, zmmword ptr [{s}]",
                d = in(reg) dst.add(i),
                s = in(reg) src.add(i / 64 * step),
                options(nostack, preserves_flags),
            );
        }
        i += 64;
    }
    // SAFETY: SFENCE is architectural on x86-64.
    unsafe { core::arch::x86_64::_mm_sfence() };
}

#[repr(align(64))]
struct Line([u8; 64]);
static ZERO_LINE: Line = Line([0; 64]);

fn has_movdir64b() -> bool {
    // Leaf 7 only where leaf 0 reports it; MOVDIR64B is leaf 7, ECX bit 28.
    use core::arch::x86_64::__cpuid_count;
    __cpuid_count(0, 0).eax >= 7 && __cpuid_count(7, 0).ecx & (1 << 28) != 0
}

type Call = Box<dyn Fn(*mut u8, *const u8, usize)>;

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(31);
    let md = has_movdir64b();
    if !md {
        println!("movdir64b: not on this CPU; the other methods only");
    }
    let entry = |name: &str, op| {
        Method::by_name(name)
            .ok()
            .and_then(|m| m.entry(op))
            .map(|e| {
                let byte = 0;
                // SAFETY (when called): the caller passes valid, disjoint ranges.
                Box::new(move |d: *mut u8, s: *const u8, n: usize| unsafe { e.call(d, s, byte, n) })
                    as Call
            })
    };
    let wide = if Method::by_name("avx512").is_ok() {
        "avx512"
    } else {
        "avx2"
    };
    let pf_all = {
        let copy = entry(wide, blockmem::Op::Copy).expect("a vector kernel");
        Box::new(move |d: *mut u8, s: *const u8, n: usize| {
            let mut i = 0;
            while i < n {
                // SAFETY: a prefetch never faults; s + i lies in the source.
                unsafe {
                    core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                        s.add(i).cast(),
                    )
                };
                i += 64;
            }
            copy(d, s, n)
        }) as Call
    };
    let mut copies: Vec<(&str, Call)> =
        ["libc", "avx512_nt", "avx2_nt", "avx512_pw", "avx2_pw", wide]
            .into_iter()
            .filter_map(|m| Some((m, entry(m, blockmem::Op::Copy)?)))
            .collect();
    copies.push(("pf_all", pf_all));
    if md {
        // SAFETY (when called): buffers are page-aligned and sizes multiples of 64.
        copies.push((
            "movdir64b",
            Box::new(|d, s, n| unsafe { movdir64b(d, s, n, 64) }),
        ));
    }
    let mut zeroes: Vec<(&str, Call)> = ["libc", "avx512_nt", "avx2_nt", "rep_stosb", wide]
        .into_iter()
        .filter_map(|m| Some((m, entry(m, blockmem::Op::Zero)?)))
        .collect();
    if md {
        // SAFETY (when called): as above.
        zeroes.push((
            "movdir64b",
            Box::new(|d, _, n| unsafe { movdir64b(d, ZERO_LINE.0.as_ptr(), n, 0) }),
        ));
    }

    let mut rng = fastrand::Rng::with_seed(17);
    println!("median ns per call (libc's median / the method's); stores drained");
    for (op, methods, sizes, srcs) in [
        (
            "copy",
            &copies,
            &[4usize << 10, 64 << 10, 1 << 20, 64 << 20][..],
            &[true, false][..],
        ),
        (
            "zero",
            &zeroes,
            &[4usize << 10, 64 << 10, 1 << 20, 64 << 20][..],
            &[true][..],
        ),
    ] {
        println!(
            "\n{op:5} {:>8} {:>5} {:>5} {}",
            "size",
            "src",
            "dst",
            methods
                .iter()
                .map(|(m, _)| format!("{m:>17}"))
                .collect::<String>()
        );
        for &n in sizes {
            let mut src = Buffer::new(n);
            src.fill_random(&mut rng);
            let mut dst = Buffer::new(n);
            let reps = if n >= 32 << 20 { reps.min(11) } else { reps };
            for &src_hot in srcs {
                for dst_hot in [true, false] {
                    let mut t = vec![Vec::new(); methods.len()];
                    for _ in 0..reps {
                        let mut order: Vec<usize> = (0..methods.len()).collect();
                        rng.shuffle(&mut order);
                        for j in order {
                            dst.as_mut_slice().fill(0xa5);
                            // SAFETY: our buffers, n bytes each.
                            unsafe {
                                for (b, hot) in [(src.as_ptr(), src_hot), (dst.as_ptr(), dst_hot)] {
                                    if hot {
                                        read_lines(b, n);
                                    } else {
                                        flush(b, n);
                                    }
                                }
                                core::arch::x86_64::_mm_mfence();
                            }
                            let s = Instant::now();
                            (methods[j].1)(dst.as_mut_ptr(), src.as_ptr(), n);
                            // SAFETY: MFENCE is architectural on x86-64.
                            unsafe { core::arch::x86_64::_mm_mfence() };
                            t[j].push(s.elapsed().as_secs_f64() * 1e9);
                            let want: &[u8] = if op == "copy" { src.as_slice() } else { &[] };
                            let ok = if op == "copy" {
                                dst.as_slice() == want
                            } else {
                                dst.as_slice().iter().all(|&b| b == 0)
                            };
                            assert!(ok, "{} {op} of {n} bytes: wrong result", methods[j].0);
                        }
                    }
                    let libc = median(&t[0]);
                    let state = |h: bool| if h { "hot" } else { "cold" };
                    println!(
                        "{:5} {:>8} {:>5} {:>5} {}",
                        "",
                        fmt_size(n),
                        if op == "copy" { state(src_hot) } else { "-" },
                        state(dst_hot),
                        t.iter()
                            .map(|v| {
                                let m = median(v);
                                format!("{:>10.0} {:>5.2}×", m, libc / m)
                            })
                            .collect::<String>()
                    );
                }
            }
        }
    }
}

fn fmt_size(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{} KiB", n >> 10)
    }
}
