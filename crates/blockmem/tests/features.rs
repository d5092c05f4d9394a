//! Masking CPU features (what `BLOCKMEM_TEST_DISABLE` and the lab use) removes kernels
//! from the available set and from the policy's choices. Its own test binary: the mask
//! is process-wide.

use blockmem::cpu::{self, Features};
use blockmem::kernel::{self, Op};
use blockmem::{dispatch, Hint};

#[test]
fn masking_avx_removes_avx2_kernels_and_decisions() {
    let before = cpu::features();
    cpu::disable(Features::AVX);
    let now = cpu::features();
    assert!(
        !now.contains(Features::AVX)
            && !now.contains(Features::AVX2)
            && !now.contains(Features::AVX512F)
    );
    for k in kernel::available() {
        assert!(
            !k.kernel().requires.contains(Features::AVX2),
            "{} still available",
            k.name()
        );
    }
    for op in Op::ALL {
        for hint in Hint::ALL {
            for n in [200, 1 << 20, 1 << 30] {
                let k = dispatch::choose(op, n, hint, false);
                let entry = k.kernel().expect("chosen kernel exists");
                assert!(
                    entry.is_available() && entry.supports(op),
                    "{op:?} {n} {hint:?} -> {}",
                    k.name()
                );
            }
        }
    }
    // The masked path still copies correctly through the public API.
    let src: Vec<u8> = (0..3_000_000u32).map(|i| (i ^ (i >> 8)) as u8).collect();
    let mut dst = vec![0u8; src.len()];
    blockmem::copy_with(&mut dst, &src, Hint::NoReuse);
    assert_eq!(dst, src);
    cpu::enable_all();
    assert_eq!(cpu::features(), before);
    assert!(cpu::detected_features().contains(before));
}

#[test]
fn forcing_a_kernel_applies_only_where_it_can_run() {
    dispatch::force(Some(blockmem::KernelId::RepMovsb));
    assert_eq!(
        dispatch::choose(Op::Copy, 1 << 20, Hint::Auto, false),
        blockmem::KernelId::RepMovsb
    );
    // rep_movsb has no set: the policy decides.
    assert_ne!(
        dispatch::choose(Op::Set, 1 << 20, Hint::Auto, false),
        blockmem::KernelId::RepMovsb
    );
    let src = vec![7u8; 100_000];
    let mut dst = vec![0u8; 100_000];
    blockmem::copy(&mut dst, &src);
    assert_eq!(dst, src);
    dispatch::force(None);
    assert_eq!(dispatch::forced(), None);
}
