#!/usr/bin/env python3
"""ab.py OUT [-v]: per experiment of ab.sh and per build, the geometric mean over cells
of the median over rounds of libc's median time / auto's (> 1: auto faster), and each
round's own geometric mean; -v adds every cell."""
import glob, json, math, statistics as st, sys

def ratios(path):
    cells = {}
    for r in json.load(open(path))['results']:
        parts = r['key'].split('/')
        cells.setdefault('/'.join(parts[:1] + parts[2:]), {})[parts[1]] = r['median_ns']
    return {k: d['libc'] / d['auto'] for k, d in cells.items() if {'libc', 'auto'} <= d.keys()}

def gmean(xs):
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))

out = sys.argv[1]
names = {'nb': 'neighbour --quick', 'fl': 'fleet --quick', 'fm': 'fleet --quick, avx512f masked'}
for exp, name in names.items():
    per = {}
    for b in ['a', 'b']:
        runs = [ratios(p) for p in sorted(glob.glob(f'{out}/{exp}-{b}-*.json'))]
        if not runs:
            continue
        per[b] = {k: st.median(r[k] for r in runs if k in r) for k in runs[0]}
        each = ' '.join(f'{gmean(r.values()):.3f}' for r in runs)
        print(f'{name}, build {b}: {len(runs)} rounds, geomean {gmean(per[b].values()):.3f}'
              f' (rounds: {each})')
    if '-v' in sys.argv and len(per) == 2:
        for k in per['a']:
            print(f'  {k[:80]:80s} a {per["a"][k]:.2f}  b {per["b"].get(k, math.nan):.2f}')
