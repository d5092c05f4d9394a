//! C ABI for blockmem: `blockmem_copy`, `blockmem_move`, `blockmem_set`,
//! `blockmem_zero`, each taking a hint. The header, cdylib/staticlib build and
//! pkg-config file arrive with the C-library issue; these four entry points are
//! already real.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]

use blockmem::Hint;

/// Hint values of the C ABI: 0 = auto, 1 = reuse, 2 = noreuse; anything else is auto.
fn hint(h: u32) -> Hint {
    match h {
        1 => Hint::Reuse,
        2 => Hint::NoReuse,
        _ => Hint::Auto,
    }
}

/// `memcpy` with a hint.
///
/// # Safety
/// As C `memcpy`.
#[no_mangle]
pub unsafe extern "C" fn blockmem_copy(dst: *mut u8, src: *const u8, n: usize, h: u32) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { blockmem::copy_raw(dst, src, n, hint(h)) }
}

/// `memmove` with a hint.
///
/// # Safety
/// As C `memmove`.
#[no_mangle]
pub unsafe extern "C" fn blockmem_move(dst: *mut u8, src: *const u8, n: usize, h: u32) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { blockmem::move_raw(dst, src, n, hint(h)) }
}

/// `memset` with a hint (the byte is `c` converted to `unsigned char`).
///
/// # Safety
/// As C `memset`.
#[no_mangle]
pub unsafe extern "C" fn blockmem_set(dst: *mut u8, c: i32, n: usize, h: u32) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { blockmem::set_raw(dst, c as u8, n, hint(h)) }
}

/// `bzero` with a hint; returns `dst`.
///
/// # Safety
/// As C `bzero`.
#[no_mangle]
pub unsafe extern "C" fn blockmem_zero(dst: *mut u8, n: usize, h: u32) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { blockmem::zero_raw(dst, n, hint(h)) }
}
