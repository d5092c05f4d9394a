"""Copies a large bytes-like object again and again: every `bytes(src)` allocates a new
object (over glibc's largest mmap threshold, 32 MiB, so a new anonymous mapping) and
copies into it, so each copy lands in never-touched pages and takes their page faults:
the commonest state of a large destination in real programs.

usage: python3 scripts/workloads/fresh_bytes.py [SIZE_MIB] [ROUNDS]
Run it under the shim with `blockmem run --compare --profile builtin --profile P -- ...`."""
import sys

size = (int(sys.argv[1]) if len(sys.argv) > 1 else 64) << 20
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 40
src = bytearray(range(256)) * (size // 256)
check = 0
for i in range(rounds):
    copy = bytes(src)
    check += copy[(i * 4099) % size]
    del copy
expected = sum(((i * 4099) % size) % 256 for i in range(rounds))
if check != expected:
    sys.exit(f"wrong bytes: {check} != {expected}")
