"""summary.py SUMMARY.md...: rerun.sh's tables, one per round, as one table:
per row (where, limit, mode, load), the median of thumbnails/s (and the
rounds' values), the 504s summed, and the worst of the probes' p99; then
goodput, the median at 500 clients over the median at 10."""
import re
import statistics
import sys

rows = {}
order = []
for path in sys.argv[1:]:
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 12 or cells[0] in ('where', '---') or not re.match(r'^[0-9.]+$', cells[4]):
            continue
        key = tuple(cells[:4])
        if key not in rows:
            rows[key] = []
            order.append(key)
        rows[key].append(cells)


def num(s):
    try:
        return float(s)
    except ValueError:
        return float('nan')


def worst_p99(cs, i):
    vals = [num(c[i].split('/')[-1]) for c in cs]
    vals = [v for v in vals if v == v]
    return max(vals) if vals else float('nan')


print('| where | limit | mode | load | thumbnails/s, median (rounds) | 504 (all rounds) | 503 (median) | /health p99, bench (worst round) | /health p99, curl (worst) | /ready p99, curl (worst) |')
print('|---|---|---|---|---|---|---|---|---|---|')
med = {}
for key in order:
    cs = rows[key]
    tps = [num(c[4]) for c in cs]
    m = statistics.median(tps)
    med[key] = m
    s504 = sum(int(num(c[7])) for c in cs)
    s503 = statistics.median(num(c[6]) for c in cs)
    print(f"| {' | '.join(key)} | {m:.1f} ({' / '.join(f'{t:.1f}' for t in tps)}) | {s504} | {s503:.0f} | "
          f"{worst_p99(cs, 9):.1f} | {worst_p99(cs, 10):.1f} | {worst_p99(cs, 11):.1f} |")
print()
print('| where | limit | mode | goodput (median at 500 / median at 10) |')
print('|---|---|---|---|')
for key in order:
    if key[3] != '500':
        continue
    ten = med.get(key[:3] + ('10',))
    if ten:
        print(f"| {' | '.join(key[:3])} | {med[key] / ten:.2f} ({med[key]:.1f} / {ten:.1f}) |")
