package imagecheck

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// builderStage returns the instructions of a Dockerfile's builder stage
// (comments and blank lines dropped, continuation lines kept as written).
func builderStage(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stage []string
	in := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "FROM ") && strings.HasSuffix(line, " AS builder"):
			in = true
		case strings.HasPrefix(line, "FROM "):
			in = false
		}
		if in && line != "" && !strings.HasPrefix(line, "#") {
			stage = append(stage, line)
		}
	}
	if len(stage) == 0 {
		t.Fatalf("%s: no builder stage", path)
	}
	return stage
}

// The two images' builder stages must be the same instructions up to the
// last that Dockerfile.slim has, so that the second image's build reuses
// the first's layers (the thumbd build among them) instead of compiling
// again. Dockerfile.scratch may add steps after them.
func TestBuilderStagesShared(t *testing.T) {
	slim := builderStage(t, "../../../Dockerfile.slim")
	scratch := builderStage(t, "../../../Dockerfile.scratch")
	if len(scratch) < len(slim) || !slices.Equal(slim, scratch[:len(slim)]) {
		t.Errorf("Dockerfile.scratch's builder stage does not start with Dockerfile.slim's:\nslim:\n%s\nscratch:\n%s",
			strings.Join(slim, "\n"), strings.Join(scratch, "\n"))
	}
}
