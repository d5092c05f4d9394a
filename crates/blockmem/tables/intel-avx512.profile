# blockmem built-in table: intel-avx512 (Intel with AVX-512BW and FSRM), used until
# `blockmem calibrate` measures the host. Rules for every built-in table: `builtin.rs`.
# Copies: avx512 in cache, avx512_pw from 4KiB where the destination may be cold; sets:
# rep_stosb from 2KiB; probes from 1MiB (16KiB with noreuse); avx512_nt streams a
# destination probed cold from 8MiB (16KiB with noreuse), never a fresh one.
# evidence: docs/results/xeon-avx512-2vcpu/policy-builtin
# evidence: docs/results/xeon-avx512-16vcpu/policy-builtin
# evidence: docs/results/xeon-avx512-2vcpu/doors
# evidence (fresh destinations keep temporal stores): docs/results/xeon-avx512-2vcpu/fresh
version = 2
llc_effective = 0  # 0: the host's estimate, cpu::llc_estimate, filled in at start
probe_hit_max = 150  # a probe load of at most this many TSC cycles hit the cache
probe_fault_min = 900  # a first touch of the page slower than this took a page fault
# A block streamed lately and met again soon is written with temporal stores up to:
# evidence: docs/results/epyc-zen4-2vcpu/reuse-loop
# evidence: docs/results/xeon-avx512-16vcpu/reuse-loop
copy.loop_temporal_max = 1MiB
set.loop_temporal_max = half-llc

copy.auto.unknown    = from 0: avx512; from 4KiB: avx512_pw; from 1MiB: probe
copy.auto.cached     = from 0: avx512; from 4KiB: avx512_pw
copy.auto.cold       = from 0: avx512; from 4KiB: avx512_pw; from 8MiB: avx512_nt
copy.auto.fresh      = from 0: avx512; from 4KiB: avx512_pw

copy.reuse.unknown   = from 0: avx512; from 4KiB: avx512_pw; from 1MiB: probe
copy.reuse.cached    = from 0: avx512; from 4KiB: avx512_pw
copy.reuse.cold      = from 0: avx512; from 4KiB: avx512_pw; from 8MiB: avx512_nt
copy.reuse.fresh     = from 0: avx512; from 4KiB: avx512_pw

copy.noreuse.unknown = from 0: avx512; from 4KiB: avx512_pw; from 16KiB: probe
copy.noreuse.cached  = from 0: avx512; from 4KiB: avx512_pw
copy.noreuse.cold    = from 0: avx512; from 4KiB: avx512_pw; from 16KiB: avx512_nt
copy.noreuse.fresh   = from 0: avx512; from 4KiB: avx512_pw

set.auto.unknown     = from 0: avx512; from 2KiB: rep_stosb; from 1MiB: probe
set.auto.cached      = from 0: avx512; from 2KiB: rep_stosb
set.auto.cold        = from 0: avx512; from 2KiB: rep_stosb; from 8MiB: avx512_nt
set.auto.fresh       = from 0: avx512; from 2KiB: rep_stosb

set.reuse.unknown    = from 0: avx512; from 2KiB: rep_stosb; from 1MiB: probe
set.reuse.cached     = from 0: avx512; from 2KiB: rep_stosb
set.reuse.cold       = from 0: avx512; from 2KiB: rep_stosb; from 8MiB: avx512_nt
set.reuse.fresh      = from 0: avx512; from 2KiB: rep_stosb

set.noreuse.unknown  = from 0: avx512; from 2KiB: rep_stosb; from 16KiB: probe
set.noreuse.cached   = from 0: avx512; from 2KiB: rep_stosb
set.noreuse.cold     = from 0: avx512; from 2KiB: rep_stosb; from 16KiB: avx512_nt
set.noreuse.fresh    = from 0: avx512; from 2KiB: rep_stosb
