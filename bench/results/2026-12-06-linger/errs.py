import json,sys,re,collections
for f in sys.argv[1:]:
    d=json.load(open(f))
    c=collections.Counter()
    def walk(x):
        if isinstance(x,dict):
            for k,v in x.items():
                if k=='errors' and isinstance(v,dict):
                    for m,n in v.items():
                        m=re.sub(r'127\.0\.0\.1:\d+','ADDR',m); m=re.sub(r'Post "[^"]*"','Post',m)
                        c[m]+=n
                walk(v)
        elif isinstance(x,list):
            for v in x: walk(v)
    walk(d)
    print(f, dict(c))
