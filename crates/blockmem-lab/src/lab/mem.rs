//! Page-aligned buffers whose page faults happen before any timing.
//!
//! Every buffer is an anonymous `mmap` with `MAP_POPULATE`, marked `MADV_NOHUGEPAGE`
//! (so results do not depend on whether the kernel happened to find a huge page),
//! then written once so every page is private, present and
//! mapped before the first measurement.

use std::ptr::NonNull;

/// A page-aligned, pre-faulted, zero-initialised byte buffer.
pub struct Buffer {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer owns its mapping exclusively; moving it to another thread moves
// that ownership.
unsafe impl Send for Buffer {}

const PAGE: usize = 4096;

impl Buffer {
    /// Maps `len` bytes (rounded up to whole pages; at least one page) and faults every
    /// page in.
    ///
    /// # Panics
    /// If the mapping fails (out of memory).
    pub fn new(len: usize) -> Buffer {
        Buffer::map(len, false)
    }

    /// Like [`new`](Self::new) but asks for transparent huge pages (`MADV_HUGEPAGE`
    /// before the first touch), for latency measurements that must not see TLB misses.
    pub fn new_huge(len: usize) -> Buffer {
        Buffer::map(len, true)
    }

    fn map(len: usize, huge: bool) -> Buffer {
        let map_len = len.max(1).div_ceil(PAGE) * PAGE;
        // SAFETY: an anonymous private mapping with no address hint has no
        // preconditions; the result is checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | if huge { 0 } else { libc::MAP_POPULATE },
                -1,
                0,
            )
        };
        assert!(
            p != libc::MAP_FAILED,
            "blockmem lab: cannot map {map_len} bytes: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: `p` is the mapping just created, `map_len` its length. The advice is
        // only a preference; failure (e.g. THP compiled out) is harmless.
        unsafe {
            libc::madvise(
                p,
                map_len,
                if huge {
                    libc::MADV_HUGEPAGE
                } else {
                    libc::MADV_NOHUGEPAGE
                },
            )
        };
        let ptr = NonNull::new(p.cast::<u8>()).expect("mmap returned null");
        let mut b = Buffer { ptr, len: map_len };
        // Write every page: MAP_POPULATE maps the shared zero page for reads on some
        // kernels; a write makes each page private before timing starts. Huge-page
        // buffers (used only by the untimed LLC chase, which may use a fraction of
        // them) fault in on first use instead.
        if !huge {
            for page in b.as_mut_slice().chunks_mut(PAGE) {
                page[0] = 1;
                page[0] = 0;
            }
        }
        b
    }

    /// Length in bytes (a whole number of pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if empty (never: at least one page is mapped).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Start of the buffer.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Start of the buffer, writable.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping is `len` bytes, readable, initialised (zero pages) and
        // owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Fills the buffer with pseudo-random bytes from `rng`.
    pub fn fill_random(&mut self, rng: &mut fastrand::Rng) {
        for chunk in self.as_mut_slice().chunks_mut(8) {
            let v = rng.u64(..).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `new`; no borrow outlives
        // `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_page_aligned_zeroed_and_sized() {
        let b = Buffer::new(10_000);
        assert_eq!(b.as_ptr() as usize % PAGE, 0);
        assert_eq!(b.len(), 12_288);
        assert!(b.as_slice().iter().all(|&x| x == 0));
    }

    #[test]
    fn random_fill_is_deterministic_per_seed() {
        let mut a = Buffer::new(100);
        let mut b = Buffer::new(100);
        a.fill_random(&mut fastrand::Rng::with_seed(7));
        b.fill_random(&mut fastrand::Rng::with_seed(7));
        assert_eq!(a.as_slice(), b.as_slice());
        assert!(a.as_slice().iter().any(|&x| x != 0));
    }
}
