"""Runs this directory's measurements and writes the tables of NOTES.md.

usage (from the repository root, release build of blockmem, the shim and the trace
I/O library in target/release):
    python3 docs/results/xeon-clx-2vcpu/trace-fate/measure.py PYTHON [ROUNDS] [REPS]
        [--profile PATH|builtin] [--mib N] [--sink PATH] [--name NAME]

PYTHON is a CPython binary (not a wrapper script). The profile defaults to this host's
calibrated table (docs/results/xeon-clx-2vcpu/one-home/profile); `builtin` is the CPU
class's built-in table. NAME.md and NAME.json are written here (default `measured`)."""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))
REL = os.path.join(ROOT, "target/release")
BLOCKMEM = os.path.join(REL, "blockmem")
SHIM = os.path.join(REL, "libblockmem_preload.so")
TRACEIO = os.path.join(REL, "libblockmem_traceio.so")
CALIBRATED = os.path.join(ROOT, "docs/results/xeon-clx-2vcpu/one-home/profile")
PROFILE = CALIBRATED
PROGRAM_ARGS = []
PROGRAM = os.path.join(HERE, "bytes_fate.py")
OUT = "/tmp/blockmem-trace-fate"


def env(**extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith("BLOCKMEM_")}
    e.pop("LD_PRELOAD", None)
    e["BLOCKMEM_PROFILE"] = PROFILE
    e.update(extra)
    return e


def trace(python, rounds, watch):
    out = os.path.join(OUT, f"watch{watch}")
    subprocess.run(
        [BLOCKMEM, "trace", "--advise", "--out", out, "--watch", str(watch), "--",
         python, PROGRAM, str(rounds), *PROGRAM_ARGS],
        env=env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f), out


def timed(cmd, e):
    t = time.perf_counter()
    subprocess.run(cmd, env=e, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def overhead(cmd, reps):
    """Wall seconds of `cmd` per configuration, alternated in one run."""
    both = f"{SHIM}:{TRACEIO}"
    configs = {
        "plain (libc)": env(),
        "shim, untraced": env(LD_PRELOAD=SHIM),
        "traced, traps off (--watch 0)": env(LD_PRELOAD=both, BLOCKMEM_TRACE=os.path.join(OUT, "t"),
                                             BLOCKMEM_TRACE_WATCH="0"),
        "traced, traps on (--watch 1)": env(LD_PRELOAD=both, BLOCKMEM_TRACE=os.path.join(OUT, "t"),
                                            BLOCKMEM_TRACE_WATCH="1"),
    }
    times = {k: [] for k in configs}
    for _ in range(reps):
        for k, e in configs.items():
            for f in os.listdir(OUT):
                if f == "t" or f.startswith("t."):
                    os.remove(os.path.join(OUT, f))
            times[k].append(timed(cmd, e))
    return times


def site_rows(report):
    rows = {}
    for a in report["advice"]:
        rows[a["site"]] = a
    return rows


def main():
    global PROFILE, PROGRAM_ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("python")
    ap.add_argument("rounds", nargs="?", type=int, default=40)
    ap.add_argument("reps", nargs="?", type=int, default=5)
    ap.add_argument("--profile", default=CALIBRATED)
    ap.add_argument("--mib", type=int, default=8)
    ap.add_argument("--sink", default=os.devnull)
    ap.add_argument("--name", default="measured")
    opts = ap.parse_args()
    python, rounds, reps = opts.python, opts.rounds, opts.reps
    os.makedirs(OUT, exist_ok=True)
    if opts.profile == "builtin":
        PROFILE = os.path.join(OUT, "builtin.profile")
        with open(PROFILE, "w") as f:
            f.write("# blockmem profile: the built-in table (no rows given)\nversion = 2\n")
    else:
        PROFILE = os.path.abspath(opts.profile)
    PROGRAM_ARGS = [str(opts.mib), opts.sink]
    before, dir0 = trace(python, rounds, 0)
    after, dir1 = trace(python, rounds, 1)
    program = [python, PROGRAM, str(rounds), *PROGRAM_ARGS]
    times = overhead(program, reps)
    two_sites = os.path.join(OUT, "two_sites")
    subprocess.run(["cc", "-O2", os.path.join(ROOT, "crates/blockmem-preload/tests/c/two_sites.c"),
                    "-o", two_sites], check=True)
    c_times = overhead([two_sites, "64"], reps)
    maps = [os.path.join(OUT, f"{name}.hints") for name in ("before", "after")]
    for d, m in zip((dir0, dir1), maps):
        shutil.copyfile(os.path.join(d, "hints"), m)
    compare = subprocess.run(
        [BLOCKMEM, "run", "--compare", "--runs", str(reps), "--profile", PROFILE,
         "--hints", maps[0], "--hints", maps[1],
         "--", *program],
        env=env(), check=True, capture_output=True, text=True)
    lines = []
    w = lines.append
    table = "the built-in table" if opts.profile == "builtin" else os.path.relpath(PROFILE, ROOT)
    w(f"Host: {platform.node()} — Intel Xeon Cascade Lake, 2 vCPU KVM guest, AVX-512, no FSRM, glibc 2.36; decision table: {table}.")
    w(f"Program: `{os.path.basename(python)} bytes_fate.py {rounds} {opts.mib} {opts.sink}` ({python}).")
    w("")
    w("## Advice per site, before (block operations only: `--watch 0`) and after (page traps: `--watch 1`)")
    w("")
    w("| site | calls | sizes | before: hint | before: read again % | after: hint | after: observed calls | after: read again % (by loads / by the kernel) |")
    w("|---|---|---|---|---|---|---|---|")
    b, a = site_rows(before), site_rows(after)
    for site, x in a.items():
        if x["sizes"][1] < min(16384, opts.mib << 19):
            continue
        y = b.get(site, {})
        pct = lambda v: "-" if v is None else f"{v:.0f}"
        lk = f"{pct(x['reused_percent'])} ({pct(x['load_read_percent'])} / {pct(x['kernel_read_percent'])})"
        w(f"| {site} | {x['calls']} | {x['sizes'][0]}–{x['sizes'][1]} | {y.get('hint') or '-'} | {pct(y.get('reused_percent'))} | {x['hint'] or '-'} | {x['observed_calls']} | {lk} |")
    w("")
    w("Hint map entries (sites whose hint makes this host's plan pick another kernel):")
    w("")
    for name, d in (("before", dir0), ("after", dir1)):
        with open(os.path.join(d, "hints")) as f:
            entries = [l.strip() for l in f if l.strip() and not l.startswith("#") and not l.startswith("blockmem-hints")]
        w(f"- {name}: {len(entries)}" + ("" if not entries else ": " + "; ".join(f"`{e}`" for e in entries)))
    w("")
    w("## Observed fate (seed 003 Table 3, every access), after")
    w("")
    for t in after["tables"]:
        if t["title"].startswith("Destination fate, observed") or t["title"].startswith("Kernel I/O"):
            w(f"### {t['title']}")
            w("")
            w("| " + " | ".join(t["header"]) + " |")
            w("|" + "---|" * len(t["header"]))
            for r in t["rows"]:
                w("| " + " | ".join(r) + " |")
            w("")
    for what, tt in ((f"`python3 bytes_fate.py {' '.join(program[2:])}`", times),
                     ("`two_sites 64` (tests/c/two_sites.c: 128 copies of 8 MiB)", c_times)):
        w(f"## Tracing overhead, traps on and off: {what} ({reps} runs each, alternated, wall seconds)")
        w("")
        w("| configuration | min | median | max |")
        w("|---|---|---|---|")
        for k, v in tt.items():
            v = sorted(v)
            w(f"| {k} | {v[0]:.3f} | {v[len(v)//2]:.3f} | {v[-1]:.3f} |")
        w("")
    w("## `blockmem run --compare --hints before.hints --hints after.hints`")
    w("")
    w("```")
    w(compare.stdout.strip() or compare.stderr.strip())
    w("```")
    with open(os.path.join(HERE, f"{opts.name}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(HERE, f"{opts.name}.json"), "w") as f:
        json.dump({"times": times, "c_times": c_times, "before": before["advice"], "after": after["advice"]}, f, indent=1)


if __name__ == "__main__":
    main()
