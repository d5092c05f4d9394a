"""Slices a 256 KiB bytes object again and again at random offsets, 2-64 KiB a slice,
as a parser or a protocol layer cutting records out of a buffer does: every slice is a
new bytes object whose bytes one `memcpy` writes, from anywhere in the source to a
heap block the allocator reuses, so source and destination sit at unrelated offsets
and both stay in the caches. This is where a vector loop and `rep movsb` part on AMD
Zen: on a Zen 4 the string microcode copies such blocks about 1.5 times as fast.

usage: python3 scripts/workloads/sliced_bytes.py [MIN_KIB] [MAX_KIB] [ROUNDS]
Run it under the shim with `blockmem run --compare --profile builtin --profile P -- ...`
(the program itself, not a launcher script that starts it: every process a launcher
starts pays the shim's start-up)."""
import random
import sys

lo = (int(sys.argv[1]) if len(sys.argv) > 1 else 2) << 10
hi = (int(sys.argv[2]) if len(sys.argv) > 2 else 64) << 10
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 60
source = bytes(range(256)) * 1024
rng = random.Random(1)
cuts = [(rng.randrange(0, len(source) - hi), rng.randrange(lo + 1, hi + 1)) for _ in range(4096)]
check = 0
for _ in range(rounds):
    for at, n in cuts:
        piece = source[at : at + n]
        check += piece[-1]
expected = rounds * sum((at + n - 1) % 256 for at, n in cuts)
if check != expected:
    sys.exit(f"wrong bytes: {check} != {expected}")
