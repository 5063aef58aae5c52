# Median over rounds of each round's value, per case and target; ratio to sharp.
import sys, statistics, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 3:
        d[(p[0], p[1])].append(float(p[2]))
cases = sorted({c for c, _ in d}, key=lambda c: (["photo12", "large", "small"].index(c.split('/')[0]), ["jpeg", "webp", "png"].index(c.split('/')[1])))
targets = [t for t in ["base", "main", "sharp"] if any(k[1] == t for k in d)]
print("| case | " + " | ".join(targets) + " | main/base |")
print("|---" * (len(targets) + 2) + "|")
for c in cases:
    m = {t: statistics.median(d[(c, t)]) for t in targets}
    cells = [f"{m[t]:.2f}" + (f" ({m[t]/m['sharp']:.2f}x)" if t != "sharp" else "") for t in targets]
    print(f"| {c} | " + " | ".join(cells) + f" | {m['main']/m['base']:.3f} |")

# Paired: each round's main/base, the median over rounds (the machine's
# speed drifts between rounds; a round's two builds run back to back).
print("\n| case | main/base per round (median) | rounds | main faster in |")
print("|---|---|---|---|")
for c in cases:
    b, m = d[(c, "base")], d[(c, "main")]
    r = [y / x for x, y in zip(b, m)]
    print(f"| {c} | {statistics.median(r):.3f} | {len(r)} | {sum(1 for v in r if v < 1)} |")
