"""Prints the README's tables from the runs' JSON: python3 table.py"""
import json

def ratios(path):
    out = {}
    for r in json.load(open(path)):
        out.setdefault(r["case"]["name"], {})[r["round"]] = r["ratio"]
    return out

def cell(d, name, rnd):
    v = d.get(name, {}).get(rnd)
    return "" if v is None else "%.2f" % v

first = {v: ratios("first-%s.json" % v) for v in ("bare", "thr", "thp")}
print("| source | defaults | thresholds | thresholds and `hugetlb=1` |")
print("|---|---|---|---|")
for name in first["bare"]:
    print("| %s | %s |" % (name, " | ".join(cell(first[v], name, 1) for v in ("bare", "thr", "thp"))))
print()
tuned, bare = ratios("peer-tuned.json"), ratios("peer-bare.json")
print("| case | images' GLIBC_TUNABLES r1 | r2 | bare binary r1 | r2 |")
print("|---|---|---|---|---|")
for name in tuned:
    print("| %s | %s | %s | %s | %s |" % (name, cell(tuned, name, 1), cell(tuned, name, 2), cell(bare, name, 1), cell(bare, name, 2)))
