package storage

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	c, err := parse([]string{"-versitygw", "/v", "-quick", "--", "bin/thumbd"}, io.Discard)
	if err != nil || c.samples != 10 || c.rounds != 2 || c.command[0] != "bin/thumbd" {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range [][]string{{"-versitygw", "/v"}, {"-versitygw", "", "--", "x"}, {"-versitygw", "/v", "-samples", "1", "--", "x"},
		{"-versitygw", "/v", "-kill-window", "2s", "--", "x"}} {
		if _, err := parse(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The quick run end to end: a real thumbd (built here) against versitygw.
// A build without the result store measures sources and says n/a for the
// rest; one with it fills every table, with no 5xx while the store dies.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs thumbd")
	}
	vgw := os.Getenv("THUMBD_VERSITYGW")
	if vgw == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI: THUMBD_VERSITYGW must name the versitygw binary (scripts/test.sh sets it)")
		}
		t.Skip("THUMBD_VERSITYGW is unset: THUMBD_VERSITYGW=$(scripts/build-versitygw.sh) runs this test")
	}
	bin := filepath.Join(t.TempDir(), "thumbd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/thumbd/thumbd/service").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var out, errs bytes.Buffer
	err := Run(context.Background(), []string{"-quick", "-lock", "", "-versitygw", vgw, "-source-dir", t.TempDir(),
		"-server-cpus", "", "-client-cpus", "", "--", bin}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	report := out.String()
	rows := regexp.MustCompile(`(?m)^\| (photo12|small)\.jpg \| [\d.]+ \| [\d.]+ \| [\d.]+x \| [+-][\d.]+ \|$`)
	check := regexp.MustCompile(`the check's cost \(a HEAD on loopback\): [+-][\d.]+ ms per request`)
	if len(rows.FindAllString(report, -1)) != 2 || !check.MatchString(report) {
		t.Fatalf("sources:\n%s\nlog:\n%s", report, errs.String())
	}
	if strings.Count(report, "n/a: this build has no result store") == 3 {
		return // this build has no store
	}
	hit := regexp.MustCompile(`(?m)^\| store hit \(0 engine jobs\) \| [\d.]+ \|`)
	killed := regexp.MustCompile(`(?m)^\| on, killed and restarted \| [\d.]+ \| \d+ \| 0 \| \d+ \|$`)
	if !hit.MatchString(report) || !strings.Contains(report, "on / off: requests/s") || !killed.MatchString(report) {
		t.Errorf("store steps:\n%s\nlog:\n%s", report, errs.String())
	}
}
