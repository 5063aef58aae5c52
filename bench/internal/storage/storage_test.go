package storage

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
)

func TestParse(t *testing.T) {
	c, err := parse([]string{"-versitygw", "/v", "-quick", "--", "bin/thumbd"}, io.Discard)
	if err != nil || c.samples != 10 || c.rounds != 2 || c.command[0] != "bin/thumbd" {
		t.Fatalf("%+v %v", c, err)
	}
	if len(c.steps) != 4 {
		t.Errorf("steps %q, want all four", c.steps)
	}
	if c, err := parse([]string{"-versitygw", "/v", "-steps", "sources,killed", "--", "x"}, io.Discard); err != nil || strings.Join(c.steps, ",") != "sources,killed" {
		t.Errorf("-steps sources,killed: %q %v", c.steps, err)
	}
	for _, bad := range [][]string{{"-versitygw", "/v"}, {"-versitygw", "", "--", "x"}, {"-versitygw", "/v", "-samples", "1", "--", "x"},
		{"-versitygw", "/v", "-kill-window", "2s", "--", "x"}, {"-versitygw", "/v", "-steps", "hit,nope", "--", "x"},
		{"-versitygw", "/v", "-steps", "hit,hit", "--", "x"}, {"-versitygw", "/v", "-steps", "", "--", "x"}} {
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
	if !hit.MatchString(report) || !strings.Contains(report, "on / off: requests/s") || !strings.Contains(report, "store on: 0 store hits") || !killed.MatchString(report) {
		t.Errorf("store steps:\n%s\nlog:\n%s", report, errs.String())
	}
}

// The misses and killed steps' keys: all distinct, w within its band, and
// the same cost wherever a run is: every missWidths keys in a row hold
// each width once. Enough of them that the default kill window's process
// at five times the fastest rate seen (68 requests/s) asks none twice.
func TestMissKeys(t *testing.T) {
	if need := 5 * 68 * int((60 * time.Second).Seconds()); missKeys < need {
		t.Fatalf("%d keys, want at least %d", missKeys, need)
	}
	type key struct {
		w  int
		fx float64
	}
	seen := make(map[key]int, missKeys)
	widths := make([]int, missKeys)
	for i := range missKeys {
		q, err := url.ParseQuery(missQuery(i))
		if err != nil {
			t.Fatal(err)
		}
		w, err := strconv.Atoi(q.Get("w"))
		if err != nil || w < 240 || w > 271 {
			t.Fatalf("key %d: w %q, want 240-271", i, q.Get("w"))
		}
		// The service keys fx as %g of its float: distinct floats are
		// distinct keys.
		fx, err := strconv.ParseFloat(q.Get("fx"), 64)
		if err != nil || fx < 0 || fx >= 1 || q.Get("fy") != "0.5" || q.Get("gravity") != "focal" || len(q) != 4 {
			t.Fatalf("key %d: %q", i, missQuery(i))
		}
		k := key{w, fx}
		if j, ok := seen[k]; ok {
			t.Fatalf("keys %d and %d are both %q", j, i, missQuery(i))
		}
		seen[k] = i
		widths[i] = w
	}
	for i := 0; i+missWidths <= missKeys; i++ {
		sum := 0
		for _, w := range widths[i : i+missWidths] {
			sum += w
		}
		if want := missWidths*240 + missWidths*(missWidths-1)/2; sum != want {
			t.Fatalf("keys %d-%d: widths sum to %d, want %d (each width once)", i, i+missWidths-1, sum, want)
		}
	}
}

// Each process's sequence starts from the first key (the arms ask for the
// same thumbnails), and one sent more requests than keys is an error.
func TestMissSeq(t *testing.T) {
	srv := &launch.Server{Addr: "127.0.0.1:1"}
	var a, b missSeq
	na, nb := a.next(srv, "large.jpg", "h=256"), b.next(srv, "large.jpg", "h=256")
	first := na()
	if first != nb() || !strings.Contains(first, "src=large.jpg&"+missQuery(0)+"&h=256") || na() == first {
		t.Fatalf("first keys: %q", first)
	}
	if err := a.wrapped(); err != nil {
		t.Fatal(err)
	}
	for range missKeys - 1 {
		na()
	}
	if err := a.wrapped(); err == nil {
		t.Fatal("no error after more requests than keys")
	}
}

// The killed step's parts: 200s counted in the half-open window they end in.
func TestRate(t *testing.T) {
	r := loadResult{ends: []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second}}
	if got := r.rate(time.Second, 2*time.Second); got != 2 {
		t.Errorf("rate over 1-2 s: %v, want 2", got)
	}
	b := &bench{c: config{killSpan: 6 * time.Second}}
	out := b.phases(r, loadResult{ends: []time.Duration{1500 * time.Millisecond}})
	if !strings.Contains(out, "| store killed (1s-2s) | 2.0 | 1.0 | 50.0 % |") {
		t.Errorf("phases:\n%s", out)
	}
}
