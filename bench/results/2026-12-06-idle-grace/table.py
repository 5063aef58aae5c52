# table.py: one row per run of this directory: the answers, the clients'
# errors by kind, the cap's counters, goodput and the probes.
import json, re, sys, glob, collections

def errs(j):
    c = collections.Counter()
    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == 'errors' and isinstance(v, dict):
                    for m, n in v.items():
                        if 'closed idle' in m: c['idle race'] += n
                        elif 'broken pipe' in m: c['broken pipe'] += n
                        elif 'use of closed' in m: c['use of closed'] += n
                        elif m.endswith('EOF'): c['EOF'] += n
                        else: c[m] += n
                walk(v)
        elif isinstance(x, list):
            for v in x: walk(v)
    walk(j)
    return c

def num(pat, s, cast=float):
    m = re.search(pat, s)
    return cast(m.group(1)) if m else 0

rows = []
for out in sorted(glob.glob('*.out'), key=lambda f: int(f.split('-')[0])):
    b = out[:-4]
    s = open(out).read()
    line = [l for l in s.splitlines() if '500 clients:' in l and 'answers' in l]
    if not line: continue
    line = line[-1]
    ok = num(r'(\d+) x 2xx', line, int); r503 = num(r'(\d+) x 503', line, int)
    e = errs(json.load(open(b + '.json')))
    lost = sum(e.values())
    idle = num(r'idle_closed_total (\d+)', s, int); refused = num(r'idle_refused_total (\d+)', s, int)
    gp = num(r'goodput: ([\d.]+)', s)
    p = re.search(r'probe p99 at 500 clients: ([\d.]+) ms; the floor: ([\d.]+) ms \(([\d.]+)x\) at 10 clients, [\d.]+ ms \(([\d.]+)x\).*; (\d+) failed', s)
    kinds = ', '.join(f'{n} {k}' for k, n in e.most_common()) or '-'
    print(f'| {b} | {ok} | {r503} | {idle} | {refused} | **{lost}** ({kinds}) | {gp:.2f} | {p.group(1)} / {p.group(2)} ms ({p.group(3)}x) | {p.group(4)}x | {p.group(5)} |')
