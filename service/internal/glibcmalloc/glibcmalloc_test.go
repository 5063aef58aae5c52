package glibcmalloc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGiven(t *testing.T) {
	cases := []struct {
		env  map[string]string
		name string
		want bool
	}{
		{nil, "mmap_threshold", false},
		{map[string]string{"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}, "mmap_threshold", false},
		{map[string]string{"GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=1048576"}, "mmap_threshold", true},
		{map[string]string{"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold_x=1"}, "mmap_threshold", false},
		{map[string]string{"MALLOC_TRIM_THRESHOLD_": "0"}, "trim_threshold", true},
		{map[string]string{"MALLOC_TRIM_THRESHOLD_": "0"}, "mmap_threshold", false},
		{map[string]string{"GLIBC_TUNABLES": Tunables()}, "trim_threshold", true},
	}
	for _, c := range cases {
		lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
		if got := Given(lookup, c.name); got != c.want {
			t.Errorf("Given(%v, %q) = %v, want %v", c.env, c.name, got, c.want)
		}
	}
}

// TestTunables: the string names glibc's parameters as glibc spells them
// (a misspelt one is ignored without a word) and the thresholds as set.
func TestTunables(t *testing.T) {
	got := map[string]string{}
	for _, kv := range strings.Split(Tunables(), ":") {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	want := map[string]string{"glibc.malloc.hugetlb": "1", "glibc.malloc.mmap_threshold": "33554432", "glibc.malloc.trim_threshold": "67108864"}
	if len(got) != len(want) {
		t.Fatalf("Tunables() = %q, want %v", Tunables(), want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Tunables(): %s=%q, want %q", k, got[k], v)
		}
	}
}

// TestDockerfilesSetTunables: both images run with Tunables.
func TestDockerfilesSetTunables(t *testing.T) {
	for _, name := range []string{"Dockerfile.slim", "Dockerfile.scratch"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(strings.Split(string(b), "\n"), "ENV GLIBC_TUNABLES="+Tunables()) {
			t.Errorf("%s has no line ENV GLIBC_TUNABLES=%s", name, Tunables())
		}
	}
}
