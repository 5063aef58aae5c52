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
		"-runs", "3", "-timeout", "10s", "fake:one", "fake:two"}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	t.Log("\n" + out.String())
	for _, want := range []string{"fake:one", "fake:two", "first thumbnail 200", "median", "--memory 1280m"} {
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
	if started != 6 || removed != 6 {
		t.Errorf("started %d, removed %d; want 6 of each", started, removed)
	}
}

func TestColdStartOfAProcess(t *testing.T) {
	for _, kv := range launchtest.ServerEnv("") {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	var out, errs bytes.Buffer
	err := Run(context.Background(), []string{"-lock", "", "-source", launchtest.Source(t), "-runs", "2", "-timeout", "10s", "exec:" + os.Args[0]}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	if !strings.Contains(out.String(), "exec:") || !strings.Contains(out.String(), "first thumbnail 200") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestColdStartGivesUp(t *testing.T) {
	docker, _ := launchtest.Docker(t)
	src := launchtest.Source(t)
	for _, tc := range []struct {
		target string
		want   []string
	}{
		{"fake:never", []string{"no thumbnail within 3s", "HTTP 503", "fake container log line"}},
		{"fake:missing", []string{"Unable to find image"}},
		{"exec:false", []string{"false exited: exit status 1"}},
	} {
		var out, errs bytes.Buffer
		err := Run(context.Background(), []string{"-docker", docker, "-lock", "", "-source", src, "-runs", "1", "-timeout", "3s", tc.target}, &out, &errs)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want it to say %q", tc.target, err, w)
			}
		}
	}
	for _, args := range [][]string{{}, {"-runs", "0", "fake:x"}, {"-source", "/no/such.jpg", "fake:x"}, {"-bogus"}} {
		if err := Run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
