version = 2
set.auto.cached = from 0: avx2; from 2KiB: rep_stosb
set.reuse.cached = from 0: avx2; from 2KiB: rep_stosb
