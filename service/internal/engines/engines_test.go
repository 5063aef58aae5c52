package engines

import (
	"slices"
	"testing"

	"github.com/thumbd/thumbd/service/internal/glibcmalloc"
)

// TestCellEnviron: a cell inherits the allocator's, libvips' and Go's
// variables and nothing else; it is given thumbd's GLIBC_TUNABLES unless
// the supervisor has its own.
func TestCellEnviron(t *testing.T) {
	got := cellEnviron([]string{"THUMBD_SIGNING_KEY=secret", "AWS_SECRET_ACCESS_KEY=x", "MALLOC_ARENA_MAX=2", "VIPS_WARNING=0", "GOGC=300", "GODEBUG=madvdontneed=1"})
	want := []string{"MALLOC_ARENA_MAX=2", "VIPS_WARNING=0", "GOGC=300", "GLIBC_TUNABLES=" + glibcmalloc.Tunables(), "GODEBUG=madvdontneed=1,containermaxprocs=0"}
	if !slices.Equal(got, want) {
		t.Errorf("cellEnviron = %q,\nwant %q", got, want)
	}
	own := cellEnviron([]string{"GLIBC_TUNABLES=glibc.malloc.arena_max=1"})
	if want := []string{"GLIBC_TUNABLES=glibc.malloc.arena_max=1", "GODEBUG=containermaxprocs=0"}; !slices.Equal(own, want) {
		t.Errorf("with the supervisor's GLIBC_TUNABLES, cellEnviron = %q, want %q", own, want)
	}
}
