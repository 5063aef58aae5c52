#!/usr/bin/env python3
"""probes.py OUT: per variant (OUT/before, OUT/after) and step at 500
clients, the curl probes' p99 per path over the rounds (whole probe, and
the server's part: connect to last byte), and a line of medians. A probe
line is: PATH connect_s starttransfer_s total_s code (the overload tool's
run1 scripts)."""
import sys, glob, os, re, statistics, collections

def p99(v):
    v = sorted(v)
    if not v:
        return float('nan')
    i = max(1, int(len(v) * 0.99 + 0.5))
    return v[i - 1]

out = sys.argv[1]
for variant in ('before', 'after'):
    rows = collections.OrderedDict()
    for path in sorted(glob.glob(f'{out}/{variant}/r*/probe-*-500.txt')):
        r = path.split('/')[-2]
        step = re.sub(r'^probe-|\.txt$', '', os.path.basename(path))
        whole, after = collections.defaultdict(list), collections.defaultdict(list)
        for line in open(path):
            f = line.split()
            if len(f) < 5 or f[4] != '200':
                continue
            whole[f[0]].append(float(f[3]) * 1000)
            after[f[0]].append((float(f[3]) - float(f[1])) * 1000)
        rows.setdefault(step, []).append((r, max(p99(whole[p]) for p in ('/health', '/ready')),
                                          max(p99(after[p]) for p in ('/health', '/ready'))))
    allw, alla = [], []
    print(f'## {variant}\n')
    print('| step | slower path p99 per round (ms) | its server part per round (ms) |')
    print('|---|---|---|')
    for step, runs in rows.items():
        runs.sort()
        print(f'| {step} | ' + ', '.join(f'{w:.1f}' for _, w, _ in runs) + ' | ' + ', '.join(f'{a:.1f}' for _, _, a in runs) + ' |')
        allw += [w for _, w, _ in runs]; alla += [a for _, _, a in runs]
    print(f'\n{len(allw)} runs: slower path p99 <= 20 ms in {sum(w <= 20 for w in allw)}; median {statistics.median(allw):.1f} ms, '
          f'max {max(allw):.1f}; server part median {statistics.median(alla):.1f} ms, max {max(alla):.1f}\n')
