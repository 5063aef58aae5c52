package peer

import (
	"strings"
	"testing"
)

// Every case is an imgproxy path to a 256x256 WebP cover of a source the
// sources directory holds; the table has a line a case, lowest ratio last.
func TestCasesAndTable(t *testing.T) {
	cases := append(FormatCases(), TransformCases()...)
	if len(cases) != 15 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, c := range cases {
		if !strings.HasPrefix(c.Path, "/rs:fill:256:256/") || !strings.Contains(c.Path, "/f:webp/plain/local:///") {
			t.Errorf("%s: %s", c.Name, c.Path)
		}
	}
	var b strings.Builder
	writeTable(&b, []Row{{Round: 1, Case: cases[0], Thumbd: 10, Imgproxy: 8, Ratio: 1.25}, {Round: 2, Case: cases[0], Thumbd: 9, Imgproxy: 10, Ratio: 0.9}}, 2)
	if !strings.Contains(b.String(), "| photo12.jpg |") || !strings.HasSuffix(strings.TrimSpace(b.String()), "0.90 |") {
		t.Errorf("table:\n%s", b.String())
	}
}

// A negative -answers is refused before anything starts.
func TestAnswersFlag(t *testing.T) {
	var out, errs strings.Builder
	err := Run(t.Context(), []string{"-answers", "-1", "-imgproxy", "/nonexistent", "-sources", t.TempDir()}, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "-answers -1") {
		t.Errorf("-answers -1: %v", err)
	}
}
