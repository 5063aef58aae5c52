#!/usr/bin/env python3
"""agg.py SUMMARY...: issue 40's table from rounds of the overload tool's
summary.md: per where/limit/mode, the goodput of each round (500 clients'
thumbnails/s over the same round's 10 clients'), its median, the 504s,
and the curl probes' /health and /ready p99 at 500 clients (each round's,
the worst of the rounds)."""
import sys, statistics, collections
rows = collections.OrderedDict()
for r, path in enumerate(sys.argv[1:]):
    for line in open(path):
        c = [x.strip() for x in line.split('|')[1:-1]]
        if len(c) < 12 or c[0] not in ('process', 'container') or 'skipped' in c[4]:
            continue
        key = (c[0], c[1], c[2])
        d = rows.setdefault(key, collections.defaultdict(dict))
        d[c[3]][r] = c
def num(s):
    try: return float(s)
    except: return None
print("| where | limit | mode | goodput per round | median | 504 | /health p99 per round (ms) | /ready p99 per round (ms) |")
print("|---|---|---|---|---|---|---|---|")
for key, d in rows.items():
    g, h, rd, s504 = [], [], [], 0
    for r in sorted(d.get('500', {})):
        big, ten = d['500'][r], d.get('10', {}).get(r)
        if ten and num(big[4]) and num(ten[4]):
            g.append(num(big[4]) / num(ten[4]))
        s504 += int(big[7] or 0)
        h.append(big[10].split('/')[-1].strip()); rd.append(big[11].split('/')[-1].strip())
    med = statistics.median(g) if g else float('nan')
    print(f"| {key[0]} | {key[1]} | {key[2]} | {', '.join(f'{x:.2f}' for x in g)} | {med:.2f} | {s504} | {', '.join(h)} | {', '.join(rd)} |")
