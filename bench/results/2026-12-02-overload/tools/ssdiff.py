import sys
def load(f):
    d={}
    for l in open(f):
        k,rest=l.strip().split('|'); p=rest.split()
        if len(p)<4: continue
        d[p[0]]=(k,int(p[1]),int(p[2]),int(p[3]))
    return d
a,b=load(sys.argv[1]),load(sys.argv[2])
g={}
for tid,(k,r,w,s) in b.items():
    r0,w0,s0=(a[tid][1],a[tid][2],a[tid][3]) if tid in a else (0,0,0)
    x=g.setdefault(k,[0,0,0,0]); x[0]+=r-r0; x[1]+=w-w0; x[2]+=s-s0; x[3]+=1
for k,(r,w,s,n) in g.items():
    print(f"  {k}: {n} threads, on cpu {r/1e9:.2f}s, runqueue wait {w/1e9:.2f}s, {s} slices, wait/slice {w/max(s,1)/1e6:.2f} ms")
