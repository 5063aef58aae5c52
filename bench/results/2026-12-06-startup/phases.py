import sys, json, subprocess, collections, datetime
tot = collections.Counter(); per = collections.defaultdict(collections.Counter)
for i in range(1, 9):
    marks = {}
    for line in open(f"/tmp/prof/log{i}.txt"):
        try: d = json.loads(line)
        except: continue
        t = d["time"]; base, frac = t[:-1].split(".")
        ts = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp() + float("0." + frac)
        marks.setdefault(d["msg"], ts)
    out = subprocess.run(["perf", "script", "-i", f"/tmp/prof/p{i}.data", "-F", "comm,time,ip,sym"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2: continue
        # format: comm time: addr sym (dso)
        try:
            idx = [k for k, p in enumerate(parts) if p.endswith(":")][0]
        except IndexError: continue
        ts = float(parts[idx][:-1]); comm = " ".join(parts[:idx])
        sym = " ".join(parts[idx+2:]) if len(parts) > idx+2 else "?"
        if ts < marks["memory"]: ph = "0 before main's log"
        elif ts < marks["listening"]: ph = "1 to listening"
        elif ts < marks["engine started"]: ph = "2 to engine started"
        elif ts < marks["draining"]: ph = "3 to first thumbnail"
        else: continue
        if comm == "taskset": ph = "0 before main's log"
        tot[ph] += 1; per[ph][(comm, sym)] += 1
for ph in sorted(tot):
    print(f"== {ph}: {tot[ph]/8:.0f} samples/start ({tot[ph]/8/20:.2f} ms at 20 kHz)")
    for (c, s), n in per[ph].most_common(14):
        print(f"   {n/8:6.1f} {c[:16]:16} {s[:90]}")
