//! x86-64 kernels. Each module is one kernel with the same shape (`copy`, `move_`, `set`,
//! `zero`, whichever it implements); `vector` holds the SSE2 and AVX2 vector types the
//! generic algorithms are instantiated with.

pub mod avx2;
pub mod avx2_nt;
pub mod avx2_pf;
pub mod avx2_pf_nt;
pub mod avx2_pw;
pub mod avx512;
pub mod avx512_nt;
pub mod avx512_pw;
pub mod clzero;
#[macro_use]
pub mod entry;
pub mod rep_movsb;
pub mod rep_stosb;
pub mod sse2;
pub mod vector;
