# blockmem built-in table: baseline (SSE2 only, the x86-64 baseline, or not x86-64),
# used until `blockmem calibrate` measures the host. Rules for every built-in table:
# `builtin.rs`.
# sse2 everywhere (no streaming kernel without AVX2), still probing so that a set into
# a cold destination gets rep_stosb from 64KiB.
# evidence: docs/results/xeon-avx512-2vcpu/policy-builtin-sse2-emulated
version = 2
llc_effective = 0  # 0: the host's estimate, cpu::llc_estimate, filled in at start
probe_hit_max = 150  # a probe load of at most this many TSC cycles hit the cache
probe_fault_min = 900  # a first touch of the page slower than this took a page fault
# A block streamed lately and met again soon is written with temporal stores up to:
# evidence: docs/results/epyc-zen4-2vcpu/reuse-loop
# evidence: docs/results/xeon-avx512-16vcpu/reuse-loop
copy.loop_temporal_max = 1MiB
set.loop_temporal_max = half-llc

copy.auto.unknown    = from 0: sse2; from 1MiB: probe
copy.auto.cached     = from 0: sse2
copy.auto.cold       = from 0: sse2
copy.auto.fresh      = from 0: sse2

copy.reuse.unknown   = from 0: sse2; from 1MiB: probe
copy.reuse.cached    = from 0: sse2
copy.reuse.cold      = from 0: sse2
copy.reuse.fresh     = from 0: sse2

copy.noreuse.unknown = from 0: sse2; from 16KiB: probe
copy.noreuse.cached  = from 0: sse2
copy.noreuse.cold    = from 0: sse2
copy.noreuse.fresh   = from 0: sse2

set.auto.unknown     = from 0: sse2; from 64KiB: rep_stosb; from 1MiB: probe
set.auto.cached      = from 0: sse2; from 64KiB: rep_stosb
set.auto.cold        = from 0: sse2; from 64KiB: rep_stosb; from 8MiB: sse2
set.auto.fresh       = from 0: sse2; from 64KiB: rep_stosb

set.reuse.unknown    = from 0: sse2; from 64KiB: rep_stosb; from 1MiB: probe
set.reuse.cached     = from 0: sse2; from 64KiB: rep_stosb
set.reuse.cold       = from 0: sse2; from 64KiB: rep_stosb; from 8MiB: sse2
set.reuse.fresh      = from 0: sse2; from 64KiB: rep_stosb

set.noreuse.unknown  = from 0: sse2; from 16KiB: probe
set.noreuse.cached   = from 0: sse2; from 64KiB: rep_stosb
set.noreuse.cold     = from 0: sse2
set.noreuse.fresh    = from 0: sse2; from 64KiB: rep_stosb
