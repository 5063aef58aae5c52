package peer

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/bench/internal/load"
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

// -match keeps the cases whose name holds it, and refuses a text no case
// holds; -duration and -bound must be above 0. All before anything starts.
func TestMatchAndDurationFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-match", "webm"}, `-match "webm"`},
		{[]string{"-duration", "0s"}, "-duration 0s"},
		{[]string{"-answers", "50", "-bound", "-1s"}, "-bound -1s"},
	} {
		var out, errs strings.Builder
		args := append(c.args, "-imgproxy", "/nonexistent", "-sources", t.TempDir())
		if err := Run(t.Context(), args, &out, &errs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// A step short of -answers goes on: the joined rate is both steps'
// answers over both walls, and their errors add up.
func TestJoined(t *testing.T) {
	a := load.Outcome{Wall: 8, Requests: 17, OK: 16, RPS: 2, ErrorCount: 1, Non2xx: map[string]int{"503": 1}}
	b := load.Outcome{Wall: 12, Requests: 34, OK: 34, RPS: 34.0 / 12, Errors: map[string]int{"EOF": 0}}
	j := joined(a, b)
	if j.OK != 50 || j.Requests != 51 || j.Wall != 20 || j.RPS != 2.5 || j.ErrorCount != 1 || j.Non2xx["503"] != 1 {
		t.Errorf("joined: %+v", j)
	}
	if _, ok := j.Errors["EOF"]; !ok {
		t.Errorf("joined errors: %v", j.Errors)
	}
	if a.Non2xx["503"] != 1 || len(a.Non2xx) != 1 {
		t.Errorf("joined changed its first step: %v", a.Non2xx)
	}
}

// TestImageTunablesAreTheImages': thumbd is measured with the
// GLIBC_TUNABLES both images set.
func TestImageTunablesAreTheImages(t *testing.T) {
	for _, name := range []string{"Dockerfile.slim", "Dockerfile.scratch"} {
		b, err := os.ReadFile("../../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(strings.Split(string(b), "\n"), "ENV GLIBC_TUNABLES="+ImageTunables) {
			t.Errorf("%s has no line ENV GLIBC_TUNABLES=%s", name, ImageTunables)
		}
	}
}
