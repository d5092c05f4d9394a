/work/wt-ab/target-old/release/deps/blockmem-c1347b46c7f28d9e.d: crates/blockmem/src/lib.rs crates/blockmem/src/arch/mod.rs crates/blockmem/src/arch/all/mod.rs crates/blockmem/src/arch/all/naive.rs crates/blockmem/src/arch/all/portable.rs crates/blockmem/src/arch/all/small.rs crates/blockmem/src/arch/generic.rs crates/blockmem/src/arch/x86_64/mod.rs crates/blockmem/src/arch/x86_64/avx2.rs crates/blockmem/src/arch/x86_64/avx2_nt.rs crates/blockmem/src/arch/x86_64/avx2_pf.rs crates/blockmem/src/arch/x86_64/avx2_pf_nt.rs crates/blockmem/src/arch/x86_64/avx2_pw.rs crates/blockmem/src/arch/x86_64/avx512.rs crates/blockmem/src/arch/x86_64/avx512_nt.rs crates/blockmem/src/arch/x86_64/avx512_pw.rs crates/blockmem/src/arch/x86_64/clzero.rs crates/blockmem/src/arch/x86_64/entry.rs crates/blockmem/src/arch/x86_64/masked.rs crates/blockmem/src/arch/x86_64/rep_movsb.rs crates/blockmem/src/arch/x86_64/rep_stosb.rs crates/blockmem/src/arch/x86_64/sse2.rs crates/blockmem/src/arch/x86_64/vector.rs crates/blockmem/src/autoload.rs crates/blockmem/src/builtin.rs crates/blockmem/src/cpu.rs crates/blockmem/src/dispatch/mod.rs crates/blockmem/src/dispatch/ladder.rs crates/blockmem/src/dispatch/large.rs crates/blockmem/src/dispatch/memory.rs crates/blockmem/src/dispatch/publish.rs crates/blockmem/src/dispatch/query.rs crates/blockmem/src/dispatch/wide.rs crates/blockmem/src/kernel.rs crates/blockmem/src/kernel/op.rs crates/blockmem/src/policy.rs crates/blockmem/src/probe.rs crates/blockmem/src/profile.rs crates/blockmem/src/sys.rs /work/wt-ab/target-old/release/build/blockmem-76862281142c5797/out/builtin_tables.rs /work/wt-b289832/crates/blockmem/tables/amd-zen.profile /work/wt-b289832/crates/blockmem/tables/amd-zen5.profile /work/wt-b289832/crates/blockmem/tables/avx2.profile /work/wt-b289832/crates/blockmem/tables/baseline.profile /work/wt-b289832/crates/blockmem/tables/intel-avx512.profile crates/blockmem/src/kernel/list.rs

/work/wt-ab/target-old/release/deps/libblockmem-c1347b46c7f28d9e.rlib: crates/blockmem/src/lib.rs crates/blockmem/src/arch/mod.rs crates/blockmem/src/arch/all/mod.rs crates/blockmem/src/arch/all/naive.rs crates/blockmem/src/arch/all/portable.rs crates/blockmem/src/arch/all/small.rs crates/blockmem/src/arch/generic.rs crates/blockmem/src/arch/x86_64/mod.rs crates/blockmem/src/arch/x86_64/avx2.rs crates/blockmem/src/arch/x86_64/avx2_nt.rs crates/blockmem/src/arch/x86_64/avx2_pf.rs crates/blockmem/src/arch/x86_64/avx2_pf_nt.rs crates/blockmem/src/arch/x86_64/avx2_pw.rs crates/blockmem/src/arch/x86_64/avx512.rs crates/blockmem/src/arch/x86_64/avx512_nt.rs crates/blockmem/src/arch/x86_64/avx512_pw.rs crates/blockmem/src/arch/x86_64/clzero.rs crates/blockmem/src/arch/x86_64/entry.rs crates/blockmem/src/arch/x86_64/masked.rs crates/blockmem/src/arch/x86_64/rep_movsb.rs crates/blockmem/src/arch/x86_64/rep_stosb.rs crates/blockmem/src/arch/x86_64/sse2.rs crates/blockmem/src/arch/x86_64/vector.rs crates/blockmem/src/autoload.rs crates/blockmem/src/builtin.rs crates/blockmem/src/cpu.rs crates/blockmem/src/dispatch/mod.rs crates/blockmem/src/dispatch/ladder.rs crates/blockmem/src/dispatch/large.rs crates/blockmem/src/dispatch/memory.rs crates/blockmem/src/dispatch/publish.rs crates/blockmem/src/dispatch/query.rs crates/blockmem/src/dispatch/wide.rs crates/blockmem/src/kernel.rs crates/blockmem/src/kernel/op.rs crates/blockmem/src/policy.rs crates/blockmem/src/probe.rs crates/blockmem/src/profile.rs crates/blockmem/src/sys.rs /work/wt-ab/target-old/release/build/blockmem-76862281142c5797/out/builtin_tables.rs /work/wt-b289832/crates/blockmem/tables/amd-zen.profile /work/wt-b289832/crates/blockmem/tables/amd-zen5.profile /work/wt-b289832/crates/blockmem/tables/avx2.profile /work/wt-b289832/crates/blockmem/tables/baseline.profile /work/wt-b289832/crates/blockmem/tables/intel-avx512.profile crates/blockmem/src/kernel/list.rs

/work/wt-ab/target-old/release/deps/libblockmem-c1347b46c7f28d9e.rmeta: crates/blockmem/src/lib.rs crates/blockmem/src/arch/mod.rs crates/blockmem/src/arch/all/mod.rs crates/blockmem/src/arch/all/naive.rs crates/blockmem/src/arch/all/portable.rs crates/blockmem/src/arch/all/small.rs crates/blockmem/src/arch/generic.rs crates/blockmem/src/arch/x86_64/mod.rs crates/blockmem/src/arch/x86_64/avx2.rs crates/blockmem/src/arch/x86_64/avx2_nt.rs crates/blockmem/src/arch/x86_64/avx2_pf.rs crates/blockmem/src/arch/x86_64/avx2_pf_nt.rs crates/blockmem/src/arch/x86_64/avx2_pw.rs crates/blockmem/src/arch/x86_64/avx512.rs crates/blockmem/src/arch/x86_64/avx512_nt.rs crates/blockmem/src/arch/x86_64/avx512_pw.rs crates/blockmem/src/arch/x86_64/clzero.rs crates/blockmem/src/arch/x86_64/entry.rs crates/blockmem/src/arch/x86_64/masked.rs crates/blockmem/src/arch/x86_64/rep_movsb.rs crates/blockmem/src/arch/x86_64/rep_stosb.rs crates/blockmem/src/arch/x86_64/sse2.rs crates/blockmem/src/arch/x86_64/vector.rs crates/blockmem/src/autoload.rs crates/blockmem/src/builtin.rs crates/blockmem/src/cpu.rs crates/blockmem/src/dispatch/mod.rs crates/blockmem/src/dispatch/ladder.rs crates/blockmem/src/dispatch/large.rs crates/blockmem/src/dispatch/memory.rs crates/blockmem/src/dispatch/publish.rs crates/blockmem/src/dispatch/query.rs crates/blockmem/src/dispatch/wide.rs crates/blockmem/src/kernel.rs crates/blockmem/src/kernel/op.rs crates/blockmem/src/policy.rs crates/blockmem/src/probe.rs crates/blockmem/src/profile.rs crates/blockmem/src/sys.rs /work/wt-ab/target-old/release/build/blockmem-76862281142c5797/out/builtin_tables.rs /work/wt-b289832/crates/blockmem/tables/amd-zen.profile /work/wt-b289832/crates/blockmem/tables/amd-zen5.profile /work/wt-b289832/crates/blockmem/tables/avx2.profile /work/wt-b289832/crates/blockmem/tables/baseline.profile /work/wt-b289832/crates/blockmem/tables/intel-avx512.profile crates/blockmem/src/kernel/list.rs

crates/blockmem/src/lib.rs:
crates/blockmem/src/arch/mod.rs:
crates/blockmem/src/arch/all/mod.rs:
crates/blockmem/src/arch/all/naive.rs:
crates/blockmem/src/arch/all/portable.rs:
crates/blockmem/src/arch/all/small.rs:
crates/blockmem/src/arch/generic.rs:
crates/blockmem/src/arch/x86_64/mod.rs:
crates/blockmem/src/arch/x86_64/avx2.rs:
crates/blockmem/src/arch/x86_64/avx2_nt.rs:
crates/blockmem/src/arch/x86_64/avx2_pf.rs:
crates/blockmem/src/arch/x86_64/avx2_pf_nt.rs:
crates/blockmem/src/arch/x86_64/avx2_pw.rs:
crates/blockmem/src/arch/x86_64/avx512.rs:
crates/blockmem/src/arch/x86_64/avx512_nt.rs:
crates/blockmem/src/arch/x86_64/avx512_pw.rs:
crates/blockmem/src/arch/x86_64/clzero.rs:
crates/blockmem/src/arch/x86_64/entry.rs:
crates/blockmem/src/arch/x86_64/masked.rs:
crates/blockmem/src/arch/x86_64/rep_movsb.rs:
crates/blockmem/src/arch/x86_64/rep_stosb.rs:
crates/blockmem/src/arch/x86_64/sse2.rs:
crates/blockmem/src/arch/x86_64/vector.rs:
crates/blockmem/src/autoload.rs:
crates/blockmem/src/builtin.rs:
crates/blockmem/src/cpu.rs:
crates/blockmem/src/dispatch/mod.rs:
crates/blockmem/src/dispatch/ladder.rs:
crates/blockmem/src/dispatch/large.rs:
crates/blockmem/src/dispatch/memory.rs:
crates/blockmem/src/dispatch/publish.rs:
crates/blockmem/src/dispatch/query.rs:
crates/blockmem/src/dispatch/wide.rs:
crates/blockmem/src/kernel.rs:
crates/blockmem/src/kernel/op.rs:
crates/blockmem/src/policy.rs:
crates/blockmem/src/probe.rs:
crates/blockmem/src/profile.rs:
crates/blockmem/src/sys.rs:
/work/wt-ab/target-old/release/build/blockmem-76862281142c5797/out/builtin_tables.rs:
/work/wt-b289832/crates/blockmem/tables/amd-zen.profile:
/work/wt-b289832/crates/blockmem/tables/amd-zen5.profile:
/work/wt-b289832/crates/blockmem/tables/avx2.profile:
/work/wt-b289832/crates/blockmem/tables/baseline.profile:
/work/wt-b289832/crates/blockmem/tables/intel-avx512.profile:
crates/blockmem/src/kernel/list.rs:

# env-dep:OUT_DIR=/work/wt-ab/target-old/release/build/blockmem-76862281142c5797/out
