package formats

import (
	"slices"
	"testing"
)

func TestOutputsAndQualities(t *testing.T) {
	if got := Names(); !slices.Equal(got, []string{"png", "jpeg", "webp", "avif"}) {
		t.Errorf("outputs %v", got)
	}
	for f, want := range map[string]int{"png": 0, "jpeg": 80, "webp": 80, "avif": 58} {
		if q, ok := Quality(f); !ok || q != want {
			t.Errorf("%s: q %d %v, want %d", f, q, ok, want)
		}
	}
	if _, ok := Quality("gif"); ok {
		t.Error("gif is read, not written")
	}
}
