//! Hardware counters through `perf_event_open`, when the host allows it.
//!
//! In a VM, or with `perf_event_paranoid` ≥ 2 and no capability, the syscall fails;
//! the lab then relies on probe latency alone and says so. Nothing here is required.

use std::io;

/// An open LLC-miss counter for this thread (user space only).
pub struct MissCounter {
    fd: libc::c_int,
}

/// Outcome of trying to open a counter, for the host report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PerfStatus {
    /// True when a hardware cache-miss counter could be opened.
    pub available: bool,
    /// Why not (the OS error), or what it counts.
    pub detail: String,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_COUNT_HW_CACHE_MISSES: u64 = 3;
// perf_event_attr flag bits: disabled, exclude_kernel, exclude_hv.
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_RESET: libc::c_ulong = 0x2403;

/// The prefix of `struct perf_event_attr` up to `config2`/`branch_sample_type`
/// (PERF_ATTR_SIZE_VER1 = 72 bytes is accepted by every kernel since 2.6.33).
#[repr(C)]
#[derive(Default)]
struct Attr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
}

impl MissCounter {
    /// Opens an LLC-miss counter (`PERF_COUNT_HW_CACHE_MISSES`) for this thread.
    pub fn open() -> io::Result<MissCounter> {
        let attr = Attr {
            type_: PERF_TYPE_HARDWARE,
            size: std::mem::size_of::<Attr>() as u32,
            config: PERF_COUNT_HW_CACHE_MISSES,
            flags: FLAG_DISABLED | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV,
            ..Attr::default()
        };
        // SAFETY: `attr` is a valid perf_event_attr prefix whose `size` field says how
        // long it is; pid 0 / cpu -1 = this thread on any CPU; no group, no flags.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const Attr,
                0 as libc::pid_t,
                -1 as libc::c_int,
                -1 as libc::c_int,
                0 as libc::c_ulong,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(MissCounter {
            fd: fd as libc::c_int,
        })
    }

    /// Resets and enables the counter.
    pub fn start(&self) {
        // SAFETY: `fd` is an open perf event; these ioctls take no argument.
        unsafe {
            libc::ioctl(self.fd, IOC_RESET, 0);
            libc::ioctl(self.fd, IOC_ENABLE, 0);
        }
    }

    /// Disables the counter and returns the count since [`start`](Self::start).
    pub fn stop(&self) -> u64 {
        let mut v = 0u64;
        // SAFETY: `fd` is an open perf event; read() writes at most 8 bytes into `v`.
        unsafe {
            libc::ioctl(self.fd, IOC_DISABLE, 0);
            libc::read(self.fd, (&mut v as *mut u64).cast(), 8);
        }
        v
    }
}

impl Drop for MissCounter {
    fn drop(&mut self) {
        // SAFETY: closes the descriptor this value owns.
        unsafe { libc::close(self.fd) };
    }
}

/// Tries once to open a counter.
pub fn status() -> PerfStatus {
    match MissCounter::open() {
        Ok(_) => PerfStatus {
            available: true,
            detail: "PERF_COUNT_HW_CACHE_MISSES (user space) counted around state checks".into(),
        },
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => {
                    "no hardware cache-miss event (typical in a VM without a virtual PMU)"
                }
                Some(libc::EACCES) | Some(libc::EPERM) => {
                    "not permitted (kernel.perf_event_paranoid; run as root or lower it to use counters)"
                }
                Some(libc::ENOSYS) => "perf events are not compiled into this kernel",
                _ => "unavailable",
            };
            PerfStatus {
                available: false,
                detail: format!(
                    "perf_event_open: {why} ({e}); cache states are verified by probe latency only"
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn status_never_panics() {
        let s = super::status();
        assert!(!s.detail.is_empty());
    }
}
