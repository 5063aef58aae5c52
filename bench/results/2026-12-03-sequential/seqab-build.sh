#!/usr/bin/env bash
# Builds thumbd-static variants with the source path's steps switched off.
set -euo pipefail
cd /work/wt-seqab
mkdir -p /tmp/seqab
build() { scripts/build.sh static slim >/dev/null 2>&1 || scripts/build.sh static slim; cp bin/thumbd-static /tmp/seqab/$1; git checkout -q -- service; echo built $1; }
build main
sed -i 's/^\tprefault.Write(space)$/\t_ = prefault.Write; \/\/ off/' service/internal/source/source.go; grep -q '// off' service/internal/source/source.go; build noprefault
sed -i 's/^\t\truntime.Gosched()$/\t\t_ = runtime.Gosched \/\/ off/' service/internal/source/source.go; grep -q '// off' service/internal/source/source.go; build noyield
sed -i 's/^\t\tif t.hashers != nil {$/\t\tif false && t.hashers != nil { \/\/ off/' service/internal/source/source.go; grep -q 'false &&' service/internal/source/source.go; build nohashers
sed -i 's/^\tprefault.Write(space)$/\t_ = prefault.Write; \/\/ off/' service/internal/source/source.go
sed -i 's/^\t\truntime.Gosched()$/\t\t_ = runtime.Gosched \/\/ off/' service/internal/source/source.go
sed -i 's/^\t\tif t.hashers != nil {$/\t\tif false && t.hashers != nil {/' service/internal/source/source.go; build none
sed -i 's/^\t\tt.h.Write(p\[:n\])$/\t\t_ = t.h \/\/ off/' service/internal/source/source.go; grep -q '_ = t.h' service/internal/source/source.go; build nosha
