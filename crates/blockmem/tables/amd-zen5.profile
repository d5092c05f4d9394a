# blockmem built-in table: amd-zen5 (AMD Zen 5 and later, CPUID family 0x1a on), used
# until `blockmem calibrate` measures the host. Rules for every built-in table:
# `builtin.rs`.
# rep_movsb for copies and rep_stosb for sets from 2KiB (glibc's window on AMD), where
# the destination is cold, cached or not probed; copies into fresh pages keep avx2; sets
# below 1MiB into a destination known cached (written lately: dispatch::written_lately)
# keep avx2; streaming as amd-zen.
# evidence: docs/results/epyc-zen5-2vcpu/builtin-zen5
# evidence (sets of blocks written lately): docs/results/epyc-zen5-2vcpu/written-lately
# evidence (copies at glibc's rep_movsb threshold): docs/results/epyc-zen5-2vcpu/copy-2112
version = 2
llc_effective = 0  # 0: the host's estimate, cpu::llc_estimate, filled in at start
probe_hit_max = 150  # a probe load of at most this many TSC cycles hit the cache
probe_fault_min = 900  # a first touch of the page slower than this took a page fault
# A block streamed lately and met again soon is written with temporal stores up to:
# evidence: docs/results/epyc-zen4-2vcpu/reuse-loop
# evidence: docs/results/xeon-avx512-16vcpu/reuse-loop
copy.loop_temporal_max = 1MiB
set.loop_temporal_max = half-llc

copy.auto.unknown    = from 0: avx2; from 2KiB: rep_movsb; from 1MiB: probe
copy.auto.cached     = from 0: avx2; from 2KiB: rep_movsb
copy.auto.cold       = from 0: avx2; from 2KiB: rep_movsb; from 8MiB: avx2_nt
copy.auto.fresh      = from 0: avx2

copy.reuse.unknown   = from 0: avx2; from 2KiB: rep_movsb; from 1MiB: probe
copy.reuse.cached    = from 0: avx2; from 2KiB: rep_movsb
copy.reuse.cold      = from 0: avx2; from 2KiB: rep_movsb; from 8MiB: avx2_nt
copy.reuse.fresh     = from 0: avx2

copy.noreuse.unknown = from 0: avx2; from 2KiB: rep_movsb; from 16KiB: probe
copy.noreuse.cached  = from 0: avx2; from 2KiB: rep_movsb
copy.noreuse.cold    = from 0: avx2; from 2KiB: rep_movsb; from 16KiB: avx2_nt
copy.noreuse.fresh   = from 0: avx2

set.auto.unknown     = from 0: avx2; from 2KiB: rep_stosb; from 1MiB: probe
set.auto.cached      = from 0: avx2; from 1MiB: rep_stosb
set.auto.cold        = from 0: avx2; from 2KiB: rep_stosb; from 8MiB: clzero
set.auto.fresh       = from 0: avx2; from 2KiB: rep_stosb

set.reuse.unknown    = from 0: avx2; from 2KiB: rep_stosb; from 1MiB: probe
set.reuse.cached     = from 0: avx2; from 1MiB: rep_stosb
set.reuse.cold       = from 0: avx2; from 2KiB: rep_stosb; from 8MiB: clzero
set.reuse.fresh      = from 0: avx2; from 2KiB: rep_stosb

set.noreuse.unknown  = from 0: avx2; from 2KiB: rep_stosb; from 16KiB: probe
set.noreuse.cached   = from 0: avx2; from 2KiB: rep_stosb
set.noreuse.cold     = from 0: avx2; from 2KiB: rep_stosb; from 16KiB: clzero
set.noreuse.fresh    = from 0: avx2; from 2KiB: rep_stosb
