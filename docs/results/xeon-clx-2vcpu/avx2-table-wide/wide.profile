# blockmem built-in table: avx512 (AVX2 without FSRM or CLZERO: Intel, in practice, with
# or without AVX-512), used until `blockmem calibrate` measures the host. Rules for every
# built-in table: `builtin.rs`.
# Copies: rep_movsb from 8KiB where the destination may be cached (glibc's threshold on
# such CPUs with AVX-512; below it `rep movsb` lost to vectors on destinations out of
# cache, 0.6x glibc at 4 KiB), avx512_pw from 4KiB to a destination probed cold or fresh;
# sets: rep_stosb from 64KiB; avx512_nt streams a destination probed cold.
# evidence: docs/results/xeon-avx512-2vcpu/policy-builtin-avx2-emulated
# evidence: docs/results/xeon-avx512-2vcpu/doors-avx2-emulated
# evidence: docs/results/xeon-clx-2vcpu/avx2-table
version = 2
llc_effective = 0  # 0: the host's estimate, cpu::llc_estimate, filled in at start
probe_hit_max = 150  # a probe load of at most this many TSC cycles hit the cache
probe_fault_min = 900  # a first touch of the page slower than this took a page fault
# A block streamed lately and met again soon is written with temporal stores up to:
# evidence: docs/results/epyc-zen4-2vcpu/reuse-loop
# evidence: docs/results/xeon-avx512-16vcpu/reuse-loop
copy.loop_temporal_max = 1MiB
set.loop_temporal_max = half-llc

copy.auto.unknown    = from 0: avx512; from 8KiB: rep_movsb; from 1MiB: probe
copy.auto.cached     = from 0: avx512; from 8KiB: rep_movsb
copy.auto.cold       = from 0: avx512; from 4KiB: avx512_pw; from 8MiB: avx512_nt
copy.auto.fresh      = from 0: avx512; from 4KiB: avx512_pw

copy.reuse.unknown   = from 0: avx512; from 8KiB: rep_movsb; from 1MiB: probe
copy.reuse.cached    = from 0: avx512; from 8KiB: rep_movsb
copy.reuse.cold      = from 0: avx512; from 4KiB: avx512_pw; from 8MiB: avx512_nt
copy.reuse.fresh     = from 0: avx512; from 4KiB: avx512_pw

copy.noreuse.unknown = from 0: avx512; from 8KiB: rep_movsb; from 16KiB: probe
copy.noreuse.cached  = from 0: avx512; from 8KiB: rep_movsb
copy.noreuse.cold    = from 0: avx512; from 4KiB: avx512_pw; from 16KiB: avx512_nt
copy.noreuse.fresh   = from 0: avx512; from 4KiB: avx512_pw

set.auto.unknown     = from 0: avx512; from 64KiB: rep_stosb; from 1MiB: probe
set.auto.cached      = from 0: avx512; from 64KiB: rep_stosb
set.auto.cold        = from 0: avx512; from 64KiB: rep_stosb; from 8MiB: avx512_nt
set.auto.fresh       = from 0: avx512; from 64KiB: rep_stosb

set.reuse.unknown    = from 0: avx512; from 64KiB: rep_stosb; from 1MiB: probe
set.reuse.cached     = from 0: avx512; from 64KiB: rep_stosb
set.reuse.cold       = from 0: avx512; from 64KiB: rep_stosb; from 8MiB: avx512_nt
set.reuse.fresh      = from 0: avx512; from 64KiB: rep_stosb

set.noreuse.unknown  = from 0: avx512; from 16KiB: probe
set.noreuse.cached   = from 0: avx512; from 64KiB: rep_stosb
set.noreuse.cold     = from 0: avx512; from 16KiB: avx512_nt
set.noreuse.fresh    = from 0: avx512; from 64KiB: rep_stosb
