//! The LD_PRELOAD shim. Not built as a preloadable object yet: exporting `memcpy` from
//! this crate before the shim issue's safeguards (no recursion, AT_SECURE, fallbacks)
//! exist would be unsafe for host programs. Until then it only re-exports the core.
#![no_std]

pub use blockmem;
