use blockmem_lab::lab::{mem::Buffer, state::*, timer::Timer};
fn main() {
    let t = Timer::calibrate(std::time::Duration::from_millis(30));
    let mut rng = fastrand::Rng::with_seed(1);
    for &sz in &[64usize << 10, 1 << 20, 3 << 20, 6 << 20, 12 << 20] {
        let mut b = Buffer::new(sz);
        let p = b.as_mut_ptr();
        for passes in [1, 2, 4] {
            let mut v = Vec::new();
            for _ in 0..10 {
                unsafe {
                    flush(p, sz);
                    for _ in 0..passes {
                        read_lines(p, sz);
                    }
                    v.extend(probe(p, sz, 16, &t, &mut rng));
                }
            }
            let mut w = Vec::new();
            for _ in 0..10 {
                unsafe {
                    flush(p, sz);
                    for _ in 0..passes {
                        write_lines(p, sz);
                    }
                    w.extend(probe(p, sz, 16, &t, &mut rng));
                }
            }
            println!(
                "{:>6} KiB passes {passes}: read-hot {:.1} ns  write-hot {:.1} ns",
                sz >> 10,
                median(&v),
                median(&w)
            );
        }
        let mut v = Vec::new();
        for _ in 0..10 {
            unsafe {
                flush(p, sz);
                v.extend(probe(p, sz, 16, &t, &mut rng));
            }
        }
        println!("{:>6} KiB flushed {:.1} ns", sz >> 10, median(&v));
    }
}
