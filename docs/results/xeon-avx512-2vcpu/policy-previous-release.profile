# blockmem calibration profile
# host: Intel(R) Xeon(R) Processor (2 cores online)
# written by `blockmem calibrate --quick` at unix time 1795562851 in 28.3 s
# effective LLC 27784KiB (CPUID per-level leaf says 480MiB)
# timing: every call timed until its stores drained: the cost to a caller that stores, copies or fences next
# copy_temporal: avx512 is within 2% of the best temporal kernel on cached copies (hot→hot, sizes <= LLC/2)
# rep_movsb window: beats avx512 by >5% (on cached copies, to cold destinations while not >5% slower on cached ones, or in expected time with 1 call in 20 cold while at most 15% slower on cached ones), or is the safer choice for an unknown state (its worst state, cached or cold, loses less), from 8KiB, with no upper end
# copy_stream: avx512_nt is the fastest streaming kernel to a cold destination (sizes >= 64 KiB)
# stream_auto_cold_dst: avx512_nt beats avx512 to a cold destination from 4KiB up
# stream_auto: no hot crossover measured; the effective LLC, 27784KiB
# copy_temporal_large: avx512_pw (on hot→hot copies from 27784KiB, alone and read after: avx512_pw is within 1% of the best, rep_movsb within 13%)
# stream_no_reuse: as stream_auto_cold_dst (at least 16KiB)
# copy_cold_src candidate avx2_pf: 112% of avx512's time from a cold source
# copy_cold_src candidate avx2_pw: 104% of avx512's time from a cold source
# copy_cold_src candidate avx512_pw: 91% of avx512's time from a cold source
# copy_cold_src candidate avx2: 107% of avx512's time from a cold source
# copy_cold_src candidate avx512: 99% of avx512's time from a cold source
# copy_cold_src candidate rep_movsb: 100% of avx512's time from a cold source
# copy_cold_src candidate sse2: 113% of avx512's time from a cold source
# copy_cold_src: avx512_pw
# probe_src_min: 1MiB: a probe costs 507 ns on a cold block (page walk, page mate and line from memory, fenced) and 56 ns on a cached one; from here avx512_pw gains 4x that on a cold source
# copy_cold_dst: avx512_pw (99% of the otherwise chosen kernels' time to a cold destination, sizes 16 KiB..LLC/2)
# copy_robust: avx512_pw from 4KiB to stream_auto wherever no probe is taken: without probing it is as fast as probing and then running each state's kernel, on average over the measured states, and at most 5% slower in any, at every measured size in that range (its worst state at 95% of the probing path's time, geometric mean over the sizes; on average over the states 81% of it)
# stream_reuse: from 1MiB; streaming + read is 1.09x as fast past the LLC (seed 003 Fig. 3)
# set_temporal: avx512 is within 2% of the best on cached destinations
# rep_stosb window: beats avx512 by >5% (on cached destinations, on cold ones while not >5% slower on cached ones, or in expected time with 1 call in 20 cold while at most 15% slower on cached ones), or is the safer choice for an unknown state (its worst state, cached or cold, loses less), from 16KiB, with no upper end
# set_cold_dst: rep_stosb (100% of the temporal choice's time to a cold destination, sizes 16 KiB..LLC/2)
# set_stream: avx512_nt
# zero_stream: avx512_nt
# probe: lines in the LLC 56 cycles (p80 136), flushed 412 (p20 388): hit at <= 262 cycles; a probe costs ~507 ns when the lines are cold, paid back 4x, and ~56 ns when cached, under 5% of a cached copy, from 64KiB
# stream_auto_cold_dst raised to 1MiB: below it streaming a cold destination loses once the destination is read back (NoReuse keeps streaming from 16KiB)
version = 1

# Auto, nothing known: non-temporal stores from this size
stream_auto = 27784KiB

# Auto, destination probes cold: non-temporal stores from this size
stream_auto_cold_dst = 1MiB

# NoReuse: non-temporal stores from this size
stream_no_reuse = 16KiB

# Reuse: non-temporal stores only from this size
stream_reuse = 1MiB

# probe a line of dst (the middle; past llc_effective, llc_effective/2 from its end) (and of src from probe_src_min) from this size, NoReuse from its streaming size (0 = never)
probe_min = 64KiB

# a probe load of at most this many TSC cycles hit the cache
probe_hit_max = 262

# a probing copy probes its source too (for copy_cold_src) from this size (0: wherever it probes; 18446744073709551615: never)
probe_src_min = 1MiB

# copy kernel with temporal stores
copy_temporal = avx512

# copy kernel with temporal stores from stream_auto up (there it replaces the rep movsb window)
copy_temporal_large = avx512_pw

# copy kernel for every cache state from copy_robust_min to copy_robust_max, below stream_auto (no probe needed)
copy_robust = avx512_pw

# copy_robust serves every unprobed, unstreamed copy from this size (18446744073709551615: never)
copy_robust_min = 4KiB

# end of copy_robust's range, exclusive (18446744073709551615: up to stream_auto)
copy_robust_max = 18446744073709551615

# temporal copy kernel when the source probes cold
copy_cold_src = avx512_pw

# temporal copy kernel when the destination probes cold
copy_cold_dst = avx512_pw

# copy kernel with non-temporal stores
copy_stream = avx512_nt

# set/zero kernel with temporal stores
set_temporal = avx512

# temporal set/zero kernel when the destination probes cold
set_cold_dst = rep_stosb

# set kernel with non-temporal stores
set_stream = avx512_nt

# zero kernel bypassing the cache
zero_stream = avx512_nt

# rep movsb window start (0 with rep_movsb_max 0: never)
rep_movsb_min = 8KiB

# rep movsb window end (exclusive; 18446744073709551615: no end)
rep_movsb_max = 18446744073709551615

# rep stosb window start (0 with rep_stosb_max 0: never)
rep_stosb_min = 16KiB

# rep stosb window end (exclusive; 18446744073709551615: no end)
rep_stosb_max = 18446744073709551615

# measured effective last-level cache size
llc_effective = 27784KiB
