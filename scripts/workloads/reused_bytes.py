"""Builds `header + payload` again and again, as a program framing one payload does:
each result is a new bytes object that the allocator places in the block the last one
freed (below glibc's mmap threshold once it has risen), so every copy writes the same
heap block. A table that streams blocks it finds cold would find this one cold on every
call because its own last call streamed it; the dispatcher remembers the blocks it
streamed and writes one met again soon with temporal stores.

usage: python3 scripts/workloads/reused_bytes.py [SIZE_KIB] [ROUNDS]
Run it under the shim with `blockmem run --compare --profile builtin --profile P -- ...`."""
import sys

size = (int(sys.argv[1]) if len(sys.argv) > 1 else 1024) << 10
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1250
payload = bytes(range(256)) * (size // 256)
check = 0
for i in range(rounds):
    framed = i.to_bytes(8, "little") + payload
    check += framed[8 + (i * 4099) % size]
expected = sum(((i * 4099) % size) % 256 for i in range(rounds))
if check != expected:
    sys.exit(f"wrong bytes: {check} != {expected}")
