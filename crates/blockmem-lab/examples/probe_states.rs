//! Prints what the dispatcher's probe finds on blocks put in each lab state, and the
//! kernel a copy into them runs: a check that the probe tells hot, evicted and fresh
//! destinations apart on this host with the table in force.
//!
//! `cargo run --release -p blockmem-lab --example probe_states [SIZE...]`

use blockmem::kernel::{Hint, Op};
use blockmem_lab::lab::mem::Buffer;
use blockmem_lab::lab::state::{Access, CacheState, Hierarchy, Region, StateBuilder};
use blockmem_lab::lab::timer::Timer;

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| blockmem_lab::lab::parse_size(&a).ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1 << 20, 8 << 20, 64 << 20]
    } else {
        sizes
    };
    let timer = Timer::calibrate(std::time::Duration::from_millis(100));
    let hier = Hierarchy::measure(&timer, None);
    let mut states = StateBuilder::new(hier, timer);
    let plan = blockmem::dispatch::plan();
    println!(
        "probe: hit <= {} cycles, fault > {} cycles",
        plan.probe_hit_max(),
        plan.probe_fault_min()
    );
    for n in sizes {
        let src = Buffer::new(n);
        let mut dst = Buffer::new(n);
        for state in CacheState::DST_ALL {
            let mut seen = std::collections::BTreeMap::new();
            let mut mates = Vec::new();
            let mut lines = Vec::new();
            for _ in 0..20 {
                let r = Region {
                    ptr: dst.as_mut_ptr(),
                    len: n,
                    state,
                    access: Access::Write,
                };
                // SAFETY: the buffers are ours and apart from the eviction buffers; the
                // decision probes one line of `dst`.
                let (k, found, mate) = unsafe {
                    states.prepare(&[r]);
                    let line = dst
                        .as_ptr()
                        .add(blockmem::policy::probe_offset(n, plan.llc_effective()));
                    let (mate, cycles) = blockmem::probe::mate_then_load_cycles(line);
                    let confirm = (mate > plan.probe_fault_min() as u64)
                        .then(|| blockmem::probe::load_cycles(line.sub(4096)));
                    let found = blockmem::probe::classify(
                        mate,
                        confirm,
                        cycles,
                        plan.probe_hit_max(),
                        plan.probe_fault_min(),
                    );
                    states.prepare(&[r]);
                    let k = blockmem::dispatch::decide_for_call(
                        Op::Copy,
                        dst.as_ptr(),
                        src.as_ptr(),
                        n,
                        Hint::Auto,
                    );
                    (k, found, (mate, cycles))
                };
                mates.push(mate.0);
                lines.push(mate.1);
                *seen
                    .entry((found.name(), k.map_or("inline", |k| k.name())))
                    .or_insert(0) += 1;
            }
            mates.sort_unstable();
            lines.sort_unstable();
            println!(
                "{:>9} {:<6} first touch p50 {} max {}, line p50 {} max {} cycles; found, kernel: {:?}",
                n,
                state.name(),
                mates[mates.len() / 2],
                mates[mates.len() - 1],
                lines[lines.len() / 2],
                lines[lines.len() - 1],
                seen
            );
        }
    }
}
