#!/usr/bin/env python3
"""Builds through one door of the `lab doors` driver, alternated round by round.

usage: abpair.py ROUNDS DOOR DIR_A DIR_B [DIR_C ...]
Each DIR holds a build's libblockmem_preload.so and libblockmem.so.0 (the C ABI
library); DOOR is plain (the shim) or cabi (the C ABI library, linked by name). The
driver `doors` and a `jobs.bin` captured from `blockmem lab doors` are taken from
$ABPAIR_JOBS (default /tmp/ab/jobs). Each round runs every build once, the order rotated
round by round. Prints, for each build after the first and each group of jobs, the
geometric mean over jobs of the median paired ratio time A / time build (> 1: the build
is faster than A) with a bootstrap 95% interval over jobs.
"""
import math, os, random, statistics, subprocess, sys

rounds, door, builds = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
jobs_dir = os.environ.get('ABPAIR_JOBS', '/tmp/ab/jobs')
times = [{} for _ in builds]


def run(k, layout):
    build = builds[k]
    env = dict(os.environ, LD_LIBRARY_PATH=build)
    env.pop('LD_PRELOAD', None)
    if door == 'plain':
        env['LD_PRELOAD'] = os.path.join(build, 'libblockmem_preload.so')
    cmd = [os.path.join(jobs_dir, 'doors'), os.path.join(jobs_dir, 'jobs.bin'), door,
           'blockmem', '3', '50000000', '0', str(layout)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split('\t')
        samples = sorted(float(x) for x in f[4].split(','))
        times[k].setdefault((f[0], f[1], f[2]), []).append(samples[len(samples) // 2])


for r in range(rounds):
    n = len(builds)
    order = [(r + i) % n for i in range(n)]
    if (r // n) % 2:
        order.reverse()
    for k in order:
        run(k, r * 3)


def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


print(f'door {door}, {rounds} rounds; A = {builds[0]}')
for k in range(1, len(builds)):
    groups = {}
    for key, a in times[0].items():
        ratio = statistics.median(x / y for x, y in zip(a, times[k][key]))
        fixed = key[0].split('_')[0] in ('fixed', 'chain', 'cold')
        for op in (key[1], 'all'):
            groups.setdefault(('fixed' if fixed else 'fleet', key[2], op), []).append(ratio)
    print(f'time A / time {builds[k]}:')
    for (kind, temp, op), xs in sorted(groups.items()):
        random.seed(7)
        boot = sorted(gmean([random.choice(xs) for _ in xs]) for _ in range(1000))
        print(f'  {kind:6s} {temp:5s} {op:5s} jobs={len(xs):3d}  {gmean(xs):.4f}'
              f'  [{boot[25]:.4f}-{boot[974]:.4f}]')
