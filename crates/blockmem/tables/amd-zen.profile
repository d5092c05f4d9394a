# blockmem profile: the decision table of one host
version = 2
llc_effective = 0  # probes of larger blocks read the line half this from the end
probe_hit_max = 150  # a probe load of at most this many TSC cycles hit the cache
probe_fault_min = 900  # a first touch of the page slower than this took a page fault
copy.loop_temporal_max = 1MiB  # a block streamed lately and met again soon is written with temporal stores up to this size
set.loop_temporal_max = half-llc  # a block streamed lately and met again soon is written with temporal stores up to this size

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
