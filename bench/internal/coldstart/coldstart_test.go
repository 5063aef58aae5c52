package coldstart

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/internal/launch/launchtest"
)

// The test binary doubles as a fake docker client and as the fake
// container's server (internal/launch/launchtest), so the whole loop runs
// without Docker.
func TestMain(m *testing.M) { launchtest.Run(m) }

func TestColdStartAgainstFakeDocker(t *testing.T) {
	docker, journal := launchtest.Docker(t)
	var out, errs bytes.Buffer
	err := Run(context.Background(), []string{"-docker", docker, "-lock", filepath.Join(t.TempDir(), "lock"), "-source", launchtest.Source(t),
		"-runs", "3", "-timeout", "10s", "-settle", "10ms", "-server-cpus", "", "-client-cpus", "", "fake:one", "two=fake:two"}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	t.Log("\n" + out.String())
	for _, want := range []string{"fake:one", "two ", "exec to /health", "exec to thumbnail", "idle VmRSS", "median", "--memory 1280m"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// Every container started was hardened and removed.
	var started, removed int
	for _, line := range launchtest.Journal(t, journal) {
		if strings.HasPrefix(line, "run ") {
			started++
			if !strings.Contains(line, "--read-only --cap-drop ALL --security-opt no-new-privileges --user 65532:65532 --cpus 2 --memory 1280m") {
				t.Errorf("not hardened: %s", line)
			}
		}
		if strings.HasPrefix(line, "rm -f ") {
			removed++
		}
	}
	// 3 runs and 1 idle start each.
	if started != 8 || removed != 8 {
		t.Errorf("started %d, removed %d; want 8 of each", started, removed)
	}
}

func TestColdStartOfAProcess(t *testing.T) {
	for _, kv := range launchtest.ServerEnv("") {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	var out, errs bytes.Buffer
	err := Run(context.Background(), []string{"-lock", "", "-source", launchtest.Source(t), "-runs", "2", "-rounds", "2", "-timeout", "10s", "-settle", "10ms",
		"-server-cpus", "", "-client-cpus", "", "-floor", os.Args[0], "fake=exec:" + os.Args[0]}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	t.Log("\n" + out.String())
	rows := map[string]int{}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && (f[0] == "floor" || f[0] == "fake") {
			rows[f[0]]++
			// Every figure is beside the floor's but the floor's own and
			// the thumbnail's, which the floor does not make.
			if ratio := strings.Contains(line, "x "); ratio != (f[0] == "fake" && !strings.Contains(line, "thumbnail")) {
				t.Errorf("ratio to the floor wrong: %s", line)
			}
		}
	}
	// The floor answers /health only: no thumbnail row.
	if rows["floor"] != 3 || rows["fake"] != 4 {
		t.Errorf("rows %v, want floor 3 and fake 4; output:\n%s", rows, out.String())
	}
}

func TestColdStartGivesUp(t *testing.T) {
	docker, _ := launchtest.Docker(t)
	src := launchtest.Source(t)
	for _, tc := range []struct {
		target string
		want   []string
	}{
		{"fake:never", []string{"no GET /health 200 within 3s", "503", "fake container log line"}},
		{"fake:missing", []string{"Unable to find image"}},
		{"exec:false", []string{"false exited: exit status 1"}},
	} {
		var out, errs bytes.Buffer
		err := Run(context.Background(), []string{"-docker", docker, "-lock", "", "-source", src, "-runs", "1", "-timeout", "3s", "-server-cpus", "", "-client-cpus", "", tc.target}, &out, &errs)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want it to say %q", tc.target, err, w)
			}
		}
	}
	for _, args := range [][]string{{}, {"-runs", "0", "fake:x"}, {"-rounds", "0", "fake:x"}, {"-server-cpus", "x", "fake:x"}, {"-source", "/no/such.jpg", "fake:x"}, {"-bogus"}} {
		if err := Run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
