"""A CPython program whose large copies meet three fates: `bytes(bytearray)` copies
that are hashed at once (read by loads), slices written to /dev/null (read by the
kernel), and bytearray copies kept but never read again."""
import hashlib
import os
import sys

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
data = os.urandom(8 << 20)
sink = os.open(os.devnull, os.O_WRONLY)
kept = []
digest = hashlib.sha256()
for i in range(rounds):
    hashed = bytes(bytearray(data))      # copied, then read by sha256
    digest.update(hashed)
    written = data[i + 1:]               # copied, then handed to write(2)
    os.write(sink, written)
    kept.append(bytearray(data))         # copied, never read again
    if len(kept) > 4:
        kept.pop(0)
print(digest.hexdigest()[:16], len(kept))
