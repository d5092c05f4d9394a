//! The raw Linux system calls the core makes (no libc: they run inside any operation,
//! before libc has initialised, and in signal handlers), and what needs nothing else.

/// A raw Linux system call with up to four arguments; the kernel's return value.
///
/// # Safety
/// The arguments must be valid for system call `nr`.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) unsafe fn syscall4(nr: usize, a: usize, b: usize, c: usize, d: usize) -> isize {
    let ret: isize;
    // SAFETY: a raw Linux system call; the caller passes valid arguments. The
    // kernel clobbers rcx and r11.
    unsafe {
        core::arch::asm!("syscall", inlateout("rax") nr as isize => ret, in("rdi") a, in("rsi") b,
            in("rdx") c, in("r10") d, lateout("rcx") _, lateout("r11") _, options(nostack));
    }
    ret
}

/// The number of CPUs this process may run on (its affinity mask), at least 1; 1 where
/// the system cannot say.
pub fn cpus_available() -> usize {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        const SYS_SCHED_GETAFFINITY: usize = 204;
        let mut mask = [0u64; 16];
        // SAFETY: the kernel writes at most `size_of_val(&mask)` bytes into `mask`.
        let r = unsafe {
            syscall4(
                SYS_SCHED_GETAFFINITY,
                0,
                core::mem::size_of_val(&mask),
                mask.as_mut_ptr() as usize,
                0,
            )
        };
        if r > 0 {
            let words = (r as usize / 8).min(mask.len());
            let mut n = 0;
            let mut i = 0;
            while i < words {
                n += mask[i].count_ones() as usize;
                i += 1;
            }
            return n.max(1);
        }
    }
    1
}
