//! Kernels and building blocks that compile for every target.

pub mod naive;
pub mod portable;
pub mod small;
