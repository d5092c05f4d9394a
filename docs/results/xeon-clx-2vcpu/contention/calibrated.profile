# blockmem profile: the decision table of one host
# host: Intel(R) Xeon(R) Processor @ 2.50GHz (2 CPUs available)
# written by `blockmem calibrate --quick` at unix time 1795924856 in 120.4 s
# effective LLC 36608KiB (CPUID per-level leaf says 36608KiB)
# probe: LLC hits 106 cycles, flushed lines 258: a hit is <= 182 cycles; a probe costs a call 155 ns (cached) / 1110 ns (cold)
# page faults: the probe's confirming touch took at most 1198 cycles in cold blocks (p99), at least 1884 in fresh ones (p5, a second fault): touches over 1502 cycles took a fault; a probe costs a call to a fresh destination 2450 ns
# timing: each call timed until its stores drained; destinations hot, evicted (clean) and fresh (never touched)
# each row's comments: at the sizes where its kernel changes, every candidate's regret (its worst time over the row's scenarios / the best kernel's there)
# kernels measured: avx2_pf, avx2_pf_nt, avx512, avx512_nt, avx512_pw, rep_movsb, rep_stosb
# copy loops: one block copied into again and again, the fourth call, ns per KiB, fastest temporal / fastest streaming kernel: 64KiB 34/168 128KiB 32/165 256KiB 28/153 512KiB 39/153 1MiB 60/163 2MiB 82/171 4MiB 96/185 8MiB 185/250 16MiB 197/254 32MiB 198/256
# set loops: one block set again and again, the fourth call, ns per KiB, fastest temporal / fastest streaming kernel: 64KiB 31/153 128KiB 27/149 256KiB 23/147 512KiB 20/146 1MiB 40/157 2MiB 44/156 4MiB 58/167 8MiB 136/163 16MiB 153/155 32MiB 158/160
# contended rows: the cells from 256KiB up measured again while 1 thread(s) on CPUs [1] copying 128MiB blocks with libc (4.5 GB/s), 2 calls in flight
version = 2
llc_effective = 36608KiB  # probes of larger blocks read the line half this from the end
probe_hit_max = 182  # a probe load of at most this many TSC cycles hit the cache
probe_fault_min = 1502  # a first touch of the page slower than this took a page fault
copy.loop_temporal_max = 32MiB  # a block streamed lately and met again soon is written with temporal stores up to this size
set.loop_temporal_max = 32MiB  # a block streamed lately and met again soon is written with temporal stores up to this size
contended_calls = 2  # the contended rows serve a call while this many large calls run at once, itself included

copy.auto.unknown    = from 0: avx512; from 16KiB: avx512_pw; from 256KiB: probe
#   256 over hot,hot+read,clean,clean+read,fresh,fresh+read: avx512 1.08 (0.97x libc) avx512_nt 1.08 (1.00x libc) avx2_pf 1.20 (0.98x libc) avx512_pw 1.20 (0.95x libc)
#   16KiB over hot,hot+read,clean,clean+read,fresh,fresh+read: avx512_pw 1.09 (1.01x libc) rep_movsb 1.41 (0.96x libc)
#   256KiB over hot,hot+read,clean,clean+read,fresh,fresh+read: rep_movsb 1.19 (0.96x libc)
#   1MiB over hot,hot+read,clean,clean+read,fresh,fresh+read: avx512_pw 1.09 (0.97x libc)
#   probe from 256KiB: it gains 7.1x its cost (155 ns cached, 1110 ns cold) in some state and costs at most 1.0% in any
copy.auto.cached     = from 0: avx2_pf; from 1KiB: avx512; from 16KiB: rep_movsb; from 1MiB: avx512_pw
#   256 over hot,hot+read: avx2_pf 1.00 (1.10x libc) avx512 1.08 (1.02x libc) avx2_pf_nt 1.08 (1.03x libc) avx512_nt 1.08 (1.01x libc)
#   1KiB over hot,hot+read: avx512_pw 1.00 (1.04x libc) avx512 1.02 (1.03x libc) rep_movsb 1.31 (0.97x libc)
#   16KiB over hot,hot+read: rep_movsb 1.00 (1.03x libc) avx512_pw 1.02 (1.01x libc)
#   1MiB over hot,hot+read: avx512_pw 1.00 (0.97x libc)
copy.auto.cold       = from 0: avx512; from 2KiB: avx512_pw
#   256 over clean,clean+read: avx512_nt 1.01 (1.00x libc) avx2_pf 1.04 (0.98x libc) avx512 1.05 (0.97x libc) avx2_pf_nt 1.05 (0.96x libc)
#   2KiB over clean,clean+read: avx512_pw 1.00 (1.00x libc)
copy.auto.fresh      = from 0: avx512
#   256 over fresh,fresh+read: avx512 1.00 (1.03x libc) avx512_nt 1.02 (1.03x libc) avx2_pf 1.20 (1.00x libc) avx512_pw 1.20 (0.97x libc)

copy.reuse.unknown   = from 0: avx512; from 16KiB: avx512_pw
#   256 over hot+read,clean+read,fresh+read: avx2_pf_nt 1.07 (0.96x libc) avx512 1.08 (1.00x libc) avx512_nt 1.08 (1.00x libc) avx2_pf 1.20 (1.01x libc)
#   16KiB over hot+read,clean+read,fresh+read: avx512_pw 1.03 (1.02x libc) rep_movsb 1.35 (1.03x libc)
copy.reuse.cached    = from 0: avx2_pf; from 1KiB: avx512; from 16KiB: avx512_pw
#   256 over hot+read: avx2_pf 1.00 (1.10x libc) avx2_pf_nt 1.07 (1.03x libc) avx512 1.08 (1.02x libc) avx512_nt 1.08 (1.01x libc)
#   1KiB over hot+read: avx512_pw 1.00 (1.04x libc) avx512 1.01 (1.03x libc) rep_movsb 1.02 (1.01x libc)
#   16KiB over hot+read: rep_movsb 1.00 (1.03x libc) avx512_pw 1.01 (1.02x libc)
copy.reuse.cold      = from 0: avx512; from 2KiB: avx512_pw
#   256 over clean+read: avx2_pf 1.00 (1.01x libc) avx512 1.00 (1.00x libc) avx512_nt 1.01 (1.00x libc) avx2_pf_nt 1.05 (0.96x libc)
#   2KiB over clean+read: avx512_pw 1.00 (1.11x libc) avx2_pf 1.08 (1.03x libc) avx512 1.10 (1.01x libc)
copy.reuse.fresh     = from 0: avx512; from 16KiB: avx512_pw
#   256 over fresh+read: avx512 1.00 (1.27x libc) avx2_pf_nt 1.02 (1.25x libc) avx512_nt 1.02 (1.25x libc) avx2_pf 1.20 (1.07x libc)
#   16KiB over fresh+read: avx2_pf 1.00 (1.24x libc) avx512_pw 1.03 (1.20x libc) avx512 1.08 (1.15x libc) rep_movsb 1.12 (1.10x libc)

copy.noreuse.unknown = from 0: avx512_pw; from 4KiB: avx512; from 16KiB: avx512_pw; from 64KiB: avx512; from 256KiB: probe
#   256 over hot,clean,fresh: avx512_nt 1.03 (1.02x libc) avx2_pf 1.04 (0.98x libc) avx512 1.05 (0.97x libc) avx512_pw 1.07 (0.97x libc)
#   4KiB over hot,clean,fresh: avx512 1.01 (1.00x libc)
#   16KiB over hot,clean,fresh: avx512_pw 1.09 (1.01x libc) rep_movsb 1.41 (0.96x libc)
#   64KiB over hot,clean,fresh: avx512 1.04 (1.02x libc)
#   256KiB over hot,clean,fresh: rep_movsb 1.17 (0.96x libc)
#   1MiB over hot,clean,fresh: avx512_pw 1.00 (1.03x libc) avx512 1.17 (0.98x libc)
#   probe from 256KiB: it gains 4.5x its cost (155 ns cached, 1110 ns cold) in some state and costs at most 1.0% in any
copy.noreuse.cached  = from 0: avx512; from 16KiB: rep_movsb; from 16MiB: avx512_pw
#   256 over hot: avx2_pf 1.00 (1.11x libc) avx512 1.03 (1.07x libc) avx512_nt 1.03 (1.07x libc) avx512_pw 1.04 (1.06x libc)
#   16KiB over hot: rep_movsb 1.00 (1.04x libc) avx512_pw 1.02 (1.01x libc)
#   16MiB over hot: avx512_pw 1.00 (1.14x libc) avx512 1.16 (0.98x libc)
copy.noreuse.cold    = from 0: avx512_pw
#   256 over clean: avx512_nt 1.00 (1.02x libc) avx2_pf_nt 1.03 (0.99x libc) avx2_pf 1.04 (0.98x libc) avx512_pw 1.04 (0.98x libc)
copy.noreuse.fresh   = from 0: avx512; from 256KiB: avx512_pw
#   256 over fresh: avx512 1.00 (1.03x libc) avx512_nt 1.00 (1.03x libc) avx2_pf 1.03 (1.00x libc) avx512_pw 1.07 (0.97x libc)
#   256KiB over fresh: avx2_pf 1.00 (1.13x libc) avx512_pw 1.00 (1.13x libc) avx512 1.06 (1.06x libc) rep_movsb 1.11 (1.02x libc)

set.auto.unknown     = from 0: avx512; from 256KiB: probe
#   256 over hot,hot+read,clean,clean+read,fresh,fresh+read: avx512 1.05 (0.77x libc) avx512_nt 1.11 (0.76x libc)
#   1MiB over hot,hot+read,clean,clean+read,fresh,fresh+read: rep_stosb 1.05 (0.99x libc)
#   probe from 256KiB: it gains 5.0x its cost (155 ns cached, 1110 ns cold) in some state and costs at most 2.0% in any
set.auto.cached      = from 0: avx512; from 64KiB: rep_stosb; from 64MiB: avx512
#   256 over hot,hot+read: avx512_nt 1.02 (0.76x libc) avx512 1.05 (0.77x libc)
#   64KiB over hot,hot+read: rep_stosb 1.00 (1.02x libc)
#   64MiB over hot,hot+read: avx512 1.00 (1.05x libc) avx512_nt 1.09 (0.98x libc) rep_stosb 1.10 (1.00x libc)
set.auto.cold        = from 0: avx512; from 256KiB: rep_stosb
#   256 over clean,clean+read: avx512 1.01 (0.96x libc) avx512_nt 1.04 (0.97x libc)
#   256KiB over clean,clean+read: rep_stosb 1.00 (1.06x libc)
set.auto.fresh       = from 0: avx512
#   256 over fresh,fresh+read: avx512 1.00 (1.04x libc)

set.reuse.unknown    = from 0: avx512; from 256KiB: rep_stosb; from 64MiB: probe
#   256 over hot+read,clean+read,fresh+read: avx512_nt 1.02 (0.97x libc) avx512 1.05 (0.96x libc)
#   256KiB over hot+read,clean+read,fresh+read: rep_stosb 1.00 (0.98x libc) avx512 1.09 (0.97x libc)
#   probe from 64MiB: it gains 5887.2x its cost (155 ns cached, 1110 ns cold) in some state and costs at most 0.0% in any
set.reuse.cached     = from 0: avx512; from 64KiB: rep_stosb; from 64MiB: avx512
#   256 over hot+read: avx512_nt 1.00 (1.25x libc) avx512 1.05 (1.20x libc) rep_stosb 1.30 (0.96x libc)
#   64KiB over hot+read: rep_stosb 1.00 (1.02x libc)
#   64MiB over hot+read: avx512 1.00 (1.05x libc) rep_stosb 1.05 (1.00x libc) avx512_nt 1.06 (0.98x libc)
set.reuse.cold       = from 0: avx512; from 256KiB: rep_stosb
#   256 over clean+read: avx512_nt 1.00 (0.97x libc) avx512 1.01 (0.96x libc)
#   256KiB over clean+read: rep_stosb 1.00 (1.06x libc) avx512 1.09 (0.97x libc)
set.reuse.fresh      = from 0: avx512
#   256 over fresh+read: avx512 1.00 (1.05x libc) avx512_nt 1.02 (1.04x libc)

set.noreuse.unknown  = from 0: avx512; from 256KiB: probe
#   256 over hot,clean,fresh: avx512 1.00 (0.77x libc) avx512_nt 1.11 (0.76x libc)
#   1MiB over hot,clean,fresh: rep_stosb 1.05 (0.99x libc)
#   64MiB over hot,clean,fresh: avx512 1.00 (1.10x libc) rep_stosb 1.10 (1.00x libc) avx512_nt 1.31 (1.02x libc)
#   probe from 256KiB: it gains 5.0x its cost (155 ns cached, 1110 ns cold) in some state and costs at most 2.0% in any
set.noreuse.cached   = from 0: avx512; from 64KiB: rep_stosb; from 64MiB: avx512
#   256 over hot: avx512 1.00 (0.77x libc) avx512_nt 1.02 (0.76x libc)
#   64KiB over hot: rep_stosb 1.00 (1.04x libc)
#   64MiB over hot: avx512 1.00 (1.11x libc) avx512_nt 1.09 (1.02x libc) rep_stosb 1.10 (1.00x libc)
set.noreuse.cold     = from 0: avx512; from 256KiB: rep_stosb
#   256 over clean: avx512 1.00 (1.06x libc) avx512_nt 1.04 (1.02x libc)
#   256KiB over clean: rep_stosb 1.00 (1.07x libc)
set.noreuse.fresh    = from 0: avx512
#   256 over fresh: avx512 1.00 (1.04x libc)

# While other large calls run (contended_calls); rows not given here are the rows above.
copy.auto.cached.contended = from 0: avx2_pf; from 1KiB: avx512; from 16KiB: rep_movsb; from 16MiB: avx512_pw
copy.reuse.unknown.contended = from 0: avx512; from 16KiB: avx512_pw; from 256KiB: probe
copy.reuse.cached.contended = from 0: avx2_pf; from 1KiB: avx512; from 16KiB: rep_movsb; from 1MiB: avx512_pw
copy.noreuse.fresh.contended = from 0: avx512
set.auto.cached.contended = from 0: avx512; from 64KiB: rep_stosb; from 16MiB: avx512; from 64MiB: avx512_nt
set.auto.cold.contended = from 0: avx512; from 256KiB: rep_stosb; from 1MiB: avx512
set.reuse.unknown.contended = from 0: avx512; from 256KiB: probe
set.reuse.cached.contended = from 0: avx512; from 64KiB: rep_stosb; from 16MiB: avx512
set.reuse.cold.contended = from 0: avx512
set.noreuse.cached.contended = from 0: avx512; from 64KiB: rep_stosb; from 16MiB: avx512; from 64MiB: rep_stosb
set.noreuse.cold.contended = from 0: avx512; from 256KiB: rep_stosb; from 1MiB: avx512
