//! A memory system shared with other cores: threads pinned to every other allowed CPU
//! copying blocks far larger than the LLC with a method, call after call, until the
//! load is dropped (seed 004: block copies on other processors). Calibration measures
//! the contended rows under it; experiments run their cells beside it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::cpus::{allowed_cpus, pin, restore};
use super::mem::Buffer;
use super::method::Method;
use super::runner::SET_BYTE;

/// Running load threads; dropping it stops and joins them and restores the caller's
/// CPU mask.
pub struct Load {
    stop: Arc<AtomicBool>,
    bytes: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
    old_mask: Option<libc::cpu_set_t>,
    /// The CPU the caller was pinned to.
    pub caller_cpu: usize,
    /// The CPUs the load runs on.
    pub cpus: Vec<usize>,
}

impl Load {
    /// Pins the caller to the first allowed CPU and starts one thread on each other
    /// allowed CPU (at most `max_threads`), each copying `block` bytes from its own
    /// source to its own destination with `method` again and again. `None` where
    /// fewer than two CPUs are allowed.
    pub fn start(method: &Method, block: usize, max_threads: usize) -> Option<Load> {
        let cpus = allowed_cpus();
        let (&caller_cpu, others) = cpus.split_first()?;
        let others: Vec<usize> = others.iter().copied().take(max_threads).collect();
        if others.is_empty() {
            return None;
        }
        let old_mask = pin(caller_cpu);
        let stop = Arc::new(AtomicBool::new(false));
        let bytes = Arc::new(AtomicU64::new(0));
        let threads = others
            .iter()
            .map(|&cpu| {
                let (stop, bytes, method) = (stop.clone(), bytes.clone(), method.clone());
                std::thread::spawn(move || copy_until(&stop, &bytes, &method, block, cpu))
            })
            .collect();
        Some(Load {
            stop,
            bytes,
            threads,
            old_mask,
            caller_cpu,
            cpus: others,
        })
    }

    /// Bytes the load has copied so far (whole blocks).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(old) = &self.old_mask {
            restore(old);
        }
    }
}

/// One load thread: pinned to `cpu`, copies `block` bytes with `method` until `stop`.
fn copy_until(stop: &AtomicBool, bytes: &AtomicU64, method: &Method, block: usize, cpu: usize) {
    let _ = pin(cpu);
    let src = Buffer::new(block);
    let mut dst = Buffer::new(block);
    let copy = method.entry(blockmem::kernel::Op::Copy);
    while !stop.load(Ordering::Relaxed) {
        if let Some(e) = copy {
            // SAFETY: both buffers hold `block` bytes and are disjoint.
            unsafe { e.call(dst.as_mut_ptr(), src.as_ptr(), SET_BYTE, block) };
        }
        bytes.fetch_add(block as u64, Ordering::Relaxed);
    }
}
