#!/usr/bin/env python3
"""A/B two shims through the doors driver's plain door, alternated; paired per-job ratios."""
import subprocess, sys, statistics, math, random, os
A, B, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
drv = '/tmp/ab/jobs/doors'; jobs = '/tmp/ab/jobs/jobs.bin'
res = {'A': {}, 'B': {}}
def run(v, path, layout):
    env = dict(os.environ); env['LD_PRELOAD'] = path
    out = subprocess.run([drv, jobs, 'plain', 'blockmem', '3', '50000000', '0', str(layout)], env=env, capture_output=True, text=True, check=True).stdout
    for l in out.splitlines():
        f = l.split('\t'); key = (f[0], f[1], f[2])
        s = sorted(float(x) for x in f[4].split(','))
        res[v].setdefault(key, []).append(s[len(s)//2])
for r in range(rounds):
    order = [('A', A), ('B', B)] if r % 2 == 0 else [('B', B), ('A', A)]
    for v, p in order:
        run(v, p, r * 3)
def gm(xs): return math.exp(sum(math.log(x) for x in xs) / len(xs))
groups = {}
for key in res['A']:
    a, b = res['A'][key], res['B'][key]
    ratio = statistics.median([x / y for x, y in zip(a, b)])  # A time / B time, paired by round
    fixed = key[0].split('_')[0] in ('fixed', 'chain', 'cold')
    g = ('fixed' if fixed else 'fleet', key[2])
    groups.setdefault(g, []).append(ratio)
    if len(sys.argv) > 4: print('\t'.join(key), f'{ratio:.3f}')
for g, xs in sorted(groups.items()):
    # bootstrap over jobs for an interval on the gmean
    random.seed(7); bs = sorted(gm([random.choice(xs) for _ in xs]) for _ in range(1000))
    print(f'{g[0]:6s} {g[1]:5s} jobs={len(xs):3d}  time A/B gmean {gm(xs):.4f}  [{bs[25]:.4f}-{bs[974]:.4f}]')
