//! Kernels, one module per kernel, over shared building blocks.
//!
//! * `all/`: the small-size ladder and the kernels every target has (`naive`, `portable`).
//! * `generic`: block algorithms written once over a vector type.
//! * `x86_64/`: vector types and the x86-64 kernels.

pub mod all;
pub mod generic;
#[cfg(target_arch = "x86_64")]
#[macro_use]
pub mod x86_64;
