# blockmem built-in table: amd-zen (AMD Zen with CLZERO before Zen 5, CPUID family
# below 0x1a), used until `blockmem calibrate` measures the host. Rules for every
# built-in table: `builtin.rs`.
# Copies: avx2 (no avx2_pw: it lost on cold destinations of 4KiB-1MiB; no rep_movsb:
# slow for some destination alignments); sets: rep_stosb from 64KiB; streaming copies
# avx2_nt, streaming sets clzero (sets run its stand-in, avx2_nt).
# evidence: docs/results/epyc-zen4-2vcpu/policy-builtin
# evidence: docs/results/epyc-zen4-2vcpu/doors
# evidence (rep_movsb and alignment): docs/results/epyc-zen4-2vcpu/alignment
version = 2
llc_effective = 0  # 0: the host's estimate, cpu::llc_estimate, filled in at start
probe_hit_max = 150  # a probe load of at most this many TSC cycles hit the cache
probe_fault_min = 900  # a first touch of the page slower than this took a page fault
# A block streamed lately and met again soon is written with temporal stores up to:
# evidence: docs/results/epyc-zen4-2vcpu/reuse-loop
# evidence: docs/results/xeon-avx512-16vcpu/reuse-loop
copy.loop_temporal_max = 1MiB
set.loop_temporal_max = half-llc

copy.auto.unknown    = from 0: avx2; from 1MiB: probe
copy.auto.cached     = from 0: avx2
copy.auto.cold       = from 0: avx2; from 8MiB: avx2_nt
copy.auto.fresh      = from 0: avx2

copy.reuse.unknown   = from 0: avx2; from 1MiB: probe
copy.reuse.cached    = from 0: avx2
copy.reuse.cold      = from 0: avx2; from 8MiB: avx2_nt
copy.reuse.fresh     = from 0: avx2

copy.noreuse.unknown = from 0: avx2; from 16KiB: probe
copy.noreuse.cached  = from 0: avx2
copy.noreuse.cold    = from 0: avx2; from 16KiB: avx2_nt
copy.noreuse.fresh   = from 0: avx2

set.auto.unknown     = from 0: avx2; from 64KiB: rep_stosb; from 1MiB: probe
set.auto.cached      = from 0: avx2; from 64KiB: rep_stosb
set.auto.cold        = from 0: avx2; from 64KiB: rep_stosb; from 8MiB: clzero
set.auto.fresh       = from 0: avx2; from 64KiB: rep_stosb

set.reuse.unknown    = from 0: avx2; from 64KiB: rep_stosb; from 1MiB: probe
set.reuse.cached     = from 0: avx2; from 64KiB: rep_stosb
set.reuse.cold       = from 0: avx2; from 64KiB: rep_stosb; from 8MiB: clzero
set.reuse.fresh      = from 0: avx2; from 64KiB: rep_stosb

set.noreuse.unknown  = from 0: avx2; from 16KiB: probe
set.noreuse.cached   = from 0: avx2; from 64KiB: rep_stosb
set.noreuse.cold     = from 0: avx2; from 16KiB: clzero
set.noreuse.fresh    = from 0: avx2; from 64KiB: rep_stosb
