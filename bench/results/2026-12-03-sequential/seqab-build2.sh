#!/usr/bin/env bash
set -euo pipefail
cd /work/wt-seqab
build() { scripts/build.sh static slim >/dev/null 2>&1 || scripts/build.sh static slim; cp bin/thumbd-static /tmp/seqab/$1; git checkout -q -- service; echo built $1; }
off_hashers() { sed -i 's/^\t\tif t.hashers != nil {$/\t\tif false \&\& t.hashers != nil {/' service/internal/source/source.go; grep -q 'if false && t.hashers' service/internal/source/source.go; }
off_prefault() { sed -i 's/^\tprefault.Write(space)$/\t_ = prefault.Write/' service/internal/source/source.go; grep -q '_ = prefault.Write' service/internal/source/source.go; }
off_yield() { sed -i 's/^\t\truntime.Gosched()$/\t\t_ = runtime.Gosched/' service/internal/source/source.go; grep -q '_ = runtime.Gosched' service/internal/source/source.go; }
off_sha() { sed -i 's/^\t\tt.h.Write(p\[:n\])$/\t\t_ = t.h/' service/internal/source/source.go; grep -q '_ = t.h$' service/internal/source/source.go; }
off_hashers; build nohashers
off_sha; build nosha
off_hashers; off_prefault; off_yield; build none
