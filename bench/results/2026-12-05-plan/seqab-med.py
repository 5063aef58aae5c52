import sys,statistics,collections
d=collections.defaultdict(list)
for line in open(sys.argv[1]):
    p=line.split()
    if len(p)==3: d[(p[0],p[1])].append(float(p[2])*1000)
cases=sorted({c for c,_ in d}, key=lambda c:(["photo12","large","small"].index(c.split('/')[0]), c))
targets=[]
for c,t in d:
    if t not in targets: targets.append(t)
print("| case | "+" | ".join(targets)+" |")
print("|---"*(len(targets)+1)+"|")
for c in cases:
    sh=statistics.median(d[(c,'sharp')]) if (c,'sharp') in d else None
    cells=[]
    for t in targets:
        m=statistics.median(d[(c,t)])
        cells.append(f"{m:.2f}"+(f" ({m/sh:.2f}x)" if sh and t!='sharp' else ""))
    print(f"| {c} | "+" | ".join(cells)+" |")
