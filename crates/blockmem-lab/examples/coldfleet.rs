//! The fleet experiment's cold Memcpy_Fleet replay, taken apart by size class: the
//! same drawn calls (`fleet::draw`, 24 MiB span), each method replaying only the calls
//! of one size class after the buffers are flushed and a 32 MiB buffer read twice.
//!
//! `cargo run --release -p blockmem-lab --example coldfleet -- [DIST] [REPS]`
//!
//! DIST: a shipped distribution's name (default `Memcpy_Fleet`) or a fleetbench-format
//! CSV file.
//!
//! Per class it shows costs the whole replay hides, such as a zero-byte copy whose
//! masked access still looks its line up (why the entries' 1-15 byte copies return
//! before any access when `n` is 0).
use blockmem_lab::lab::experiments::fleet::{draw, Distribution};
use blockmem_lab::lab::mem::Buffer;
use blockmem_lab::lab::method::Method;
use blockmem_lab::lab::state::{flush, median, read_lines};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dist = args.get(1).map_or("Memcpy_Fleet", String::as_str);
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(31);
    let d = Distribution::shipped(dist)
        .map_or_else(|| Distribution::parse(std::path::Path::new(dist)), Ok)
        .expect("distribution");
    let span = 24usize << 20;
    let max = d.max_size() + 256;
    let calls = draw(&d, 2000, span, 0xf1ee7);
    let len = span + 2 * max;
    let mut src = Buffer::new(len);
    src.fill_random(&mut fastrand::Rng::with_seed(1));
    let mut dst = Buffer::new(len);
    dst.fill_random(&mut fastrand::Rng::with_seed(2));
    let evict = Buffer::new(32 << 20);
    let names = ["libc", "auto", "avx512", "sse2"];
    let methods: Vec<Method> = names.iter().map(|n| Method::by_name(n).unwrap()).collect();
    let entries: Vec<_> = methods
        .iter()
        .map(|m| m.entry(blockmem::Op::Copy).unwrap())
        .collect();
    let classes: &[(usize, usize)] = &[
        (0, 1 << 40),
        (0, 1),
        (1, 9),
        (9, 17),
        (17, 33),
        (33, 65),
        (65, 129),
        (129, 257),
        (257, 513),
        (513, 2049),
        (2049, 1 << 40),
    ];
    let mut rng = fastrand::Rng::with_seed(7);
    println!(
        "class            calls  {}",
        names.map(|n| format!("{n:>9}")).join("")
    );
    for &(lo, hi) in classes {
        let sub: Vec<_> = calls
            .iter()
            .filter(|c| c.n >= lo && c.n < hi)
            .copied()
            .collect();
        if sub.is_empty() {
            continue;
        }
        let mut t = vec![Vec::new(); entries.len()];
        for _ in 0..reps {
            let mut order: Vec<usize> = (0..entries.len()).collect();
            rng.shuffle(&mut order);
            for j in order {
                // SAFETY: our buffers; the calls stay inside span + max.
                unsafe {
                    flush(src.as_ptr(), len);
                    flush(dst.as_ptr(), len);
                    read_lines(evict.as_ptr(), evict.len());
                    read_lines(evict.as_ptr(), evict.len());
                }
                let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
                let e = entries[j];
                let s = Instant::now();
                for c in &sub {
                    // SAFETY: as above.
                    unsafe { e.call(dp.add(c.dst), sp.add(c.src), 0, c.n) };
                }
                t[j].push(s.elapsed().as_secs_f64() * 1e9 / sub.len() as f64);
            }
        }
        let med: Vec<String> = t.iter().map(|v| format!("{:9.1}", median(v))).collect();
        let label = format!(
            "{lo}..{}",
            if hi > 1 << 30 {
                "".into()
            } else {
                hi.to_string()
            }
        );
        println!("{label:16} {:5}  {}", sub.len(), med.join(""));
    }
}
