//! Prints, call by call, the kernel that copies into one block in a loop run and each
//! call's time: the source hot, the destination evicted before the first call, as the
//! lab's `reuse` loop cells, but every call shown. A check of the dispatcher's memory of
//! streamed blocks with the table in force (the first call streams where the table
//! streams cold blocks; the next ones are written temporally up to the table's
//! `loop_temporal_max`), and of how many calls the loop takes to settle after it.
//! Times are wall-clock per call (decision included), not waiting for stores to drain:
//! part of a streamed call's cost lands in the call after it.
//!
//! `cargo run --release -p blockmem-lab --example loop_calls [SIZE [CALLS [LOOPS]]]`
//! (default 4MiB, 8 calls, 20 loops).

use blockmem::kernel::{Hint, Op};
use blockmem_lab::lab::mem::Buffer;
use blockmem_lab::lab::state::{Access, CacheState, Hierarchy, Region, StateBuilder};
use blockmem_lab::lab::timer::Timer;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).map_or(default, String::as_str).to_string();
    let n = blockmem_lab::lab::parse_size(&arg(0, "4MiB")).expect("SIZE, e.g. 4MiB");
    let calls: usize = arg(1, "8").parse().expect("CALLS: a number");
    let loops: usize = arg(2, "20").parse().expect("LOOPS: a number");
    let timer = Timer::calibrate(std::time::Duration::from_millis(100));
    let mut states = StateBuilder::new(Hierarchy::measure(&timer, None), timer);
    let src = Buffer::new(n);
    let mut dst = Buffer::new(n);
    println!(
        "{n} bytes, {calls} calls a loop; copy.loop_temporal_max {} bytes; kernel:microseconds per call",
        blockmem::dispatch::plan().loop_temporal_max(Op::Copy)
    );
    for _ in 0..loops {
        let regions = [
            Region {
                ptr: src.as_ptr() as *mut u8,
                len: n,
                state: CacheState::Hot,
                access: Access::Read,
            },
            Region {
                ptr: dst.as_mut_ptr(),
                len: n,
                state: CacheState::Clean,
                access: Access::Write,
            },
        ];
        let mut line = String::new();
        // SAFETY: the buffers are ours, `n` bytes each, apart from each other and from
        // the eviction buffers; each call is decided, then run, as a real call is.
        unsafe {
            states.prepare(&regions);
            for _ in 0..calls {
                let t = std::time::Instant::now();
                let k = blockmem::dispatch::decide_for_call(
                    Op::Copy,
                    dst.as_ptr(),
                    src.as_ptr(),
                    n,
                    Hint::Auto,
                );
                let name = match k {
                    Some(k) => {
                        blockmem::dispatch::run_kernel(
                            k,
                            Op::Copy,
                            dst.as_mut_ptr(),
                            src.as_ptr(),
                            0,
                            n,
                        );
                        k.name()
                    }
                    None => {
                        blockmem::copy_raw(dst.as_mut_ptr(), src.as_ptr(), n, Hint::Auto);
                        "inline"
                    }
                };
                line.push_str(&format!("{name}:{:.0} ", t.elapsed().as_secs_f64() * 1e6));
            }
        }
        println!("{}", line.trim_end());
    }
}
