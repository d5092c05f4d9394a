"""A CPython program whose large copies meet three fates: `bytes(bytearray)` copies
that are hashed at once (read by loads), slices handed to the kernel (read by it:
written to a file, or to /dev/null, which reads nothing), and bytearray copies kept but
never read again.

usage: bytes_fate.py [ROUNDS] [MIB] [SINK]   (defaults 40, 8, /dev/null; a SINK file is
overwritten at offset 0 each round, so the kernel copies the slice into its page cache)"""
import hashlib
import os
import sys

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
size = int(sys.argv[2]) << 20 if len(sys.argv) > 2 else 8 << 20
sink_path = sys.argv[3] if len(sys.argv) > 3 else os.devnull
data = os.urandom(size)
sink = os.open(sink_path, os.O_WRONLY | os.O_CREAT, 0o600)
kept = []
digest = hashlib.sha256()
for i in range(rounds):
    hashed = bytes(bytearray(data))      # copied, then read by sha256
    digest.update(hashed)
    written = data[i % 64 + 1:]          # copied, then handed to pwrite(2)
    os.pwrite(sink, written, 0)
    kept.append(bytearray(data))         # copied, never read again
    if len(kept) > 4:
        kept.pop(0)
print(digest.hexdigest()[:16], len(kept))
