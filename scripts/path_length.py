#!/usr/bin/env python3
"""Instructions one call executes, counted by single-stepping it in gdb.

    python3 scripts/path_length.py [--shim SO] [--ffi SO] [SIZE...]

For each size (default 16 64 256) it counts the instructions from the call to the
return of memcpy and memset as a C program sees them: the system library's (plain
run), the preload shim's (LD_PRELOAD=SO) and the C ABI's blockmem_copy/blockmem_set
(linked against the C ABI library SO). The PLT jump is counted, the call is not. The
buffers are hot and 64-byte aligned; the call is made once before the counted one, so
lazy binding and first-call initialisation are not counted. Needs gdb and cc.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

DRIVER = r"""
#include <stdlib.h>
#include <string.h>
#ifdef CABI
#include "blockmem.h"
#define COPY(d, s, n) (blockmem_copy)(d, s, n, BLOCKMEM_HINT_AUTO)
#define SET(d, c, n) (blockmem_set)(d, c, n, BLOCKMEM_HINT_AUTO)
#else
#define COPY(d, s, n) memcpy(d, s, n)
#define SET(d, c, n) memset(d, c, n)
#endif
static char a[8192] __attribute__((aligned(64))), b[8192] __attribute__((aligned(64)));
__attribute__((noinline)) void counted_copy(size_t n) { COPY(a, b, n); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void counted_set(size_t n) { SET(a, 7, n); __asm__ volatile("" ::: "memory"); }
int main(int argc, char **argv) {
    size_t n = strtoul(argv[1], 0, 10);
    counted_copy(n); counted_set(n);
    counted_copy(n); counted_set(n);
    return 0;
}
"""

GDB_SCRIPT = r"""
import gdb
gdb.execute("set pagination off")
gdb.execute("set confirm off")
results = {}
for fn in ("counted_copy", "counted_set"):
    gdb.execute("tbreak " + fn)
gdb.execute("run")
def count(fn):
    frame = gdb.selected_frame()
    # Step to the call instruction, then count until we are back in fn.
    while True:
        insn = frame.architecture().disassemble(frame.pc())[0]["asm"]
        if insn.startswith("call"):
            break
        gdb.execute("stepi", to_string=True)
        frame = gdb.selected_frame()
    gdb.execute("stepi", to_string=True)
    n = 0
    while gdb.selected_frame().name() != fn:
        n += 1
        gdb.execute("stepi", to_string=True)
    return n
# Stopped at the first counted_copy; the first calls of both are the warm-up.
gdb.execute("continue", to_string=True)
gdb.execute("tbreak counted_copy")
gdb.execute("continue", to_string=True)
results["copy"] = count("counted_copy")
gdb.execute("tbreak counted_set")
gdb.execute("continue", to_string=True)
results["set"] = count("counted_set")
print("RESULT", results["copy"], results["set"])
gdb.execute("kill")
"""


def build(tmp, cabi, ffi):
    src = os.path.join(tmp, "pl.c")
    with open(src, "w") as f:
        f.write(DRIVER)
    exe = os.path.join(tmp, "pl_cabi" if cabi else "pl")
    cmd = ["cc", "-O1", "-g", "-fno-builtin", "-o", exe, src]
    if cabi:
        libdir = os.path.dirname(os.path.abspath(ffi))
        link = os.path.join(tmp, "libblockmem.so.0")
        if not os.path.exists(link):
            os.symlink(os.path.abspath(ffi), link)
        cmd += ["-DCABI", "-I" + os.path.join(ROOT, "crates/blockmem-ffi/include"),
                os.path.abspath(ffi), "-Wl,-rpath," + tmp]
    subprocess.run(cmd, check=True)
    return exe


def measure(exe, n, preload=None):
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(GDB_SCRIPT)
        script = f.name
    args = ["gdb", "-q", "-batch", "-nx"]
    if preload:
        args += ["-ex", "set environment LD_PRELOAD " + os.path.abspath(preload)]
    args += ["-x", script, "--args", exe, str(n)]
    out = subprocess.run(args, capture_output=True, text=True)
    os.unlink(script)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT"):
            c, s = line.split()[1:]
            return int(c), int(s)
    sys.exit("gdb did not finish:\n" + out.stdout + out.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shim", action="append", default=[], help="a preload shim (repeatable)")
    ap.add_argument("--ffi", action="append", default=[], help="a C ABI library (repeatable)")
    ap.add_argument("sizes", nargs="*", type=int, default=[16, 64, 256])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        plain = build(tmp, False, None)
        rows = [("libc memcpy / memset", plain, None)]
        rows += [(f"shim {s}", plain, s) for s in a.shim]
        for i, ffi in enumerate(a.ffi):
            d = os.path.join(tmp, f"ffi{i}")
            os.mkdir(d)
            rows.append((f"C ABI {ffi}", build(d, True, ffi), None))
        print("instructions per call (copy / set), from the call to the return")
        print("%-60s" % "implementation" + "".join("%12s" % f"{n} B" for n in a.sizes))
        for name, exe, pre in rows:
            cells = [measure(exe, n, pre) for n in a.sizes]
            print("%-60s" % name + "".join("%12s" % f"{c} / {s}" for c, s in cells))


if __name__ == "__main__":
    main()
