//! `naive`: one byte at a time. The reference every other kernel is tested against,
//! and the lab's floor. Obviously correct is the point; speed is not. The accesses are
//! volatile so that the compiler cannot turn the loop into a vectorised one (a plain
//! byte loop compiles to a vector kernel, not a byte loop).

/// Copies `n` bytes forward, one at a time.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap.
pub unsafe extern "C" fn copy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    let mut i = 0;
    while i < n {
        // SAFETY: i < n and both ranges are valid for n bytes.
        unsafe { dst.add(i).write_volatile(src.add(i).read_volatile()) };
        i += 1;
    }
    dst
}

/// Moves `n` bytes: forward when `dst` is below `src` (or the ranges are disjoint),
/// backward otherwise, so every byte is read before it is overwritten.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; overlap allowed.
pub unsafe extern "C" fn move_(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    if (dst as usize).wrapping_sub(src as usize) >= n {
        // SAFETY: forwarded; forward order is safe when dst < src or disjoint.
        unsafe { copy(dst, src, n) };
    } else {
        let mut i = n;
        while i > 0 {
            i -= 1;
            // SAFETY: i < n; dst > src, so descending order reads before it overwrites.
            unsafe { dst.add(i).write_volatile(src.add(i).read_volatile()) };
        }
    };
    dst
}

/// Sets `n` bytes to `byte`, one at a time.
///
/// # Safety
/// `dst` valid for `n` writes.
pub unsafe extern "C" fn set(dst: *mut u8, byte: u8, n: usize) -> *mut u8 {
    let mut i = 0;
    while i < n {
        // SAFETY: i < n.
        unsafe { dst.add(i).write_volatile(byte) };
        i += 1;
    }
    dst
}

/// Zeroes `n` bytes, one at a time.
///
/// # Safety
/// `dst` valid for `n` writes.
pub unsafe extern "C" fn zero(dst: *mut u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded.
    unsafe { set(dst, 0, n) };
    dst
}
