package overload

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/bench/internal/probe"
	"github.com/thumbd/thumbd/internal/launch/launchtest"
)

// The test binary doubles as the fake thumbd, the prober and the floor's
// server.
func TestMain(m *testing.M) {
	probe.Child()
	launchtest.Run(m)
}

// A quick run end to end against a fake thumbd: both steps, goodput, the
// probes of thumbd and of the idle server in each step from probers moved
// into their cgroup (a directory standing in for one), the p99 stated
// against its floor, and the JSON document.
func TestQuickRun(t *testing.T) {
	cgroup := filepath.Join(t.TempDir(), "probe")
	doc := filepath.Join(t.TempDir(), "run.json")
	args := []string{"-lock", "", "-quick", "-source", launchtest.Source(t), "-probe-cgroup", cgroup, "-json", doc}
	for _, e := range launchtest.ServerEnv("") {
		args = append(args, "-env", e)
	}
	var out, errs bytes.Buffer
	if err := Run(t.Context(), append(args, "--", os.Args[0]), &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	for _, want := range []string{
		"src.jpg, 2 clients: ", "src.jpg, 10 clients: ", "goodput: ", "the server's connection counters: n/a",
		"probes: from processes of their own in the CPU cgroup " + cgroup,
		"| thumbd /health, /ready (the serving port) | 2 | ", "| an idle Go server /health | 10 | ",
		"probe p99 at 10 clients: ", "x) at 2 clients, ", "x) on an idle Go server under the same load; 0 failed\n",
		"fewer than 200 probes in a step",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if b, err := os.ReadFile(filepath.Join(cgroup, "cgroup.procs")); err != nil || len(b) == 0 {
		t.Errorf("no prober was moved into the cgroup: %q, %v", b, err)
	}
	var res Result
	b, err := os.ReadFile(doc)
	if err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatalf("the JSON document: %v\n%s", err, b)
	}
	if len(res.Steps) != 2 || res.Steps[1].Probes.N < 10 || res.Steps[1].FloorProbes.N < 10 || res.Steps[1].Probes.Failed != 0 || res.Goodput <= 0 {
		t.Errorf("the JSON document: %+v", res)
	}
}

func TestBadFlags(t *testing.T) {
	var out bytes.Buffer
	for _, args := range [][]string{
		{"-lock", "", "-clients", "500", "--", "x"},
		{"-lock", "", "-clients", "10,zero", "--", "x"},
		{"-lock", "", "-probe-every", "0s", "--", "x"},
		{"-lock", ""},
	} {
		if err := Run(t.Context(), args, &out, &out); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
