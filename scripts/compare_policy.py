#!/usr/bin/env python3
"""Compares `blockmem lab policy` runs cell by cell: per op and per run, auto's (and
auto_hinted's, libc_again's) paired speed-up over libc (the median over repetitions of
libc's time over the method's), as a geometric mean over every cell and over the cells
all runs share, with the worst cell and the counts under 0.90 and 0.95.

usage: python3 scripts/compare_policy.py NAME=results.json [NAME=results.json ...]"""
import json, math, sys, statistics, collections
def load(p):
    d = json.load(open(p))
    cells = collections.defaultdict(dict)
    for r in d['results']:
        if r['experiment'] != 'policy': continue
        cells[(r['op'], r['size'], r['src'], r['dst'], r['reuse'])][r['method']] = r
    return d, cells
def paired(base, x):
    n = min(len(base), len(x))
    return statistics.median(base[i] / x[i] for i in range(n)) if n else None
def stats(cells, keys, method):
    rs = []
    for k in keys:
        m = cells[k]
        if method in m and 'libc' in m:
            rs.append((paired(m['libc']['samples_ns'], m[method]['samples_ns']), k))
    if not rs: return None
    g = math.exp(sum(math.log(r) for r, _ in rs) / len(rs))
    w = min(rs)
    return dict(n=len(rs), geomean=round(g, 3), worst=round(w[0], 3), worst_cell=w[1],
                below90=sum(r < 0.90 for r, _ in rs), below95=sum(r < 0.95 for r, _ in rs))
runs = {name: load(p) for name, p in (a.split('=') for a in sys.argv[1:])}
common = None
for name, (_, cells) in runs.items():
    ks = set(cells)
    common = ks if common is None else common & ks
for op in ('copy', 'zero'):
    allk = {name: sorted(k for k in cells if k[0] == op) for name, (_, cells) in runs.items()}
    ck = sorted(k for k in common if k[0] == op)
    print(f'== {op}: {len(ck)} cells common to all runs')
    for name, (_, cells) in runs.items():
        for method in ('auto', 'auto_hinted', 'libc_again'):
            s_all = stats(cells, allk[name], method)
            s_c = stats(cells, ck, method)
            if s_all:
                print(f'  {name:14} {method:11} all {s_all["n"]:3} cells: geomean {s_all["geomean"]} worst {s_all["worst"]} {s_all["worst_cell"]} <0.90: {s_all["below90"]} <0.95: {s_all["below95"]} | common: geomean {s_c["geomean"]} worst {s_c["worst"]} <0.90: {s_c["below90"]} <0.95: {s_c["below95"]}')

def percell(a, b, op='copy'):
    _, ca = runs[a]; _, cb = runs[b]
    out = []
    for k in sorted(set(ca) & set(cb)):
        if k[0] != op: continue
        ra = paired(ca[k]['libc']['samples_ns'], ca[k]['auto']['samples_ns'])
        rb = paired(cb[k]['libc']['samples_ns'], cb[k]['auto']['samples_ns'])
        best_b = min((v['median_ns'], n) for n, v in cb[k].items() if n not in ('auto','auto_hinted','libc','libc_again'))
        out.append((rb / ra, k, round(ra, 3), round(rb, 3), best_b[1], round(cb[k]['libc']['median_ns'] / best_b[0], 3)))
    out.sort()
    for o in out[:12]: print(' ', o)
if len(sys.argv) > 2:
    print('per cell, new/prev (auto ratios; best kernel in new and its ratio):')
    percell(list(runs)[0], list(runs)[1])
