"""Copies, slices and joins bytes, bytearray and memoryview objects from 1 B to 256 MiB
and prints one SHA-256 over everything produced, plus a line per size. CPython does
these with memcpy/memmove/memset, so under the shim every size class goes through
blockmem; the output must be identical with and without it."""
import hashlib
import sys

MAX = 256 << 20
digest = hashlib.sha256()
pattern = bytes(range(251))  # a prime length: no alignment with powers of two

size = 1
while size <= MAX:
    reps = size // len(pattern) + 1
    data = (pattern * reps)[:size]                 # repeat (memcpy) + slice (memcpy)
    buf = bytearray(data)                          # copy
    half = size // 2
    buf[1:half + 1] = data[:half]                  # slice assignment
    buf[0:size - 1] = buf[1:size]                  # overlapping move (memmove)
    view = memoryview(buf)
    tail = bytes(view[size // 3:])                 # copy out of a view
    joined = b"".join([tail, data[: size // 4], bytes(view[:7])])
    zeros = bytearray(size)                        # calloc/memset
    zeros[size // 5 : size // 5 + len(tail) // 2] = tail[: len(tail) // 2]
    for chunk in (data, buf, tail, joined, zeros):
        digest.update(chunk)
    print(size, len(joined), hashlib.sha256(joined).hexdigest()[:16])
    del data, buf, view, tail, joined, zeros
    size = size * 4 if size < MAX // 4 else (MAX if size < MAX else MAX + 1)

print("sha256", digest.hexdigest())
sys.stdout.flush()
