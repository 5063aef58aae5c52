package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/internal/launch/launchtest"
)

// The test binary doubles as a fake thumbd and docker client for `serve`.
func TestMain(m *testing.M) { launchtest.Run(m) }

func TestSubcommandDispatch(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"help"}, &out, &out); err != nil || !strings.Contains(out.String(), "bench engine [flags]") {
		t.Fatalf("help: %v %q", err, out.String())
	}
	if err := run(context.Background(), []string{"nope"}, &out, &out); err == nil || !strings.Contains(err.Error(), `unknown subcommand "nope"`) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestLockRunsTheCommandAndPassesItsStatus(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "lock")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"lock", "-path", lock, "--", "sh", "-c", "echo held"}, &out, &out); err != nil || out.String() != "held\n" {
		t.Fatalf("%v %q", err, out.String())
	}
	err := run(context.Background(), []string{"lock", "-path", lock, "--", "sh", "-c", "exit 7"}, &out, &out)
	if code := exitCode(0); !errors.As(err, &code) || code != 7 {
		t.Fatalf("exit 7 became %v", err)
	}
	for _, args := range [][]string{{"lock"}, {"lock", "-path", lock, "--", "/no/such/cmd"}, {"lock", "-path", "/no/dir/lock", "--", "true"}} {
		if err := run(context.Background(), args, &out, &out); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

func TestSourcesMakesWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"sources", dir, "small"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != filepath.Join(dir, "small.jpg")+" 10753 bytes\n" {
		t.Fatalf("%q", out.String())
	}
	for _, args := range [][]string{{"sources"}, {"sources", dir, "nope"}} {
		if err := run(context.Background(), args, &out, &out); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

func serveArgs(mode string, args ...string) []string {
	out := []string{"serve", "-timeout", "10s"}
	for _, e := range launchtest.ServerEnv(mode) {
		out = append(out, "-env", e)
	}
	return append(append(out, args...), "--", os.Args[0])
}

func TestServeRunsTheCommandAgainstAReadyServer(t *testing.T) {
	seen := filepath.Join(t.TempDir(), "seen")
	var out, errs bytes.Buffer
	err := run(context.Background(), serveArgs("", "-run", `curl -fsS "$THUMBD_URL/ready" && echo "$THUMBD_PID" >`+seen), &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	if b, _ := os.ReadFile(seen); len(b) < 2 || !strings.Contains(errs.String(), "serve: ready at http://127.0.0.1:") {
		t.Fatalf("the command did not run: %q %q", b, errs.String())
	}
	docker, journal := launchtest.Docker(t)
	err = run(context.Background(), []string{"serve", "-docker", docker, "-image", "fake:ok", "-docker-arg=--read-only",
		"-run", `test -n "$THUMBD_CONTAINER"`}, &out, &errs)
	if err != nil {
		t.Fatalf("container: %v\n%s", err, errs.String())
	}
	if j := launchtest.Journal(t, journal); !strings.HasSuffix(j[0], "--read-only fake:ok") || !strings.HasPrefix(j[len(j)-1], "rm -f ") {
		t.Errorf("docker commands: %q", j)
	}
}

func TestServeFails(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	docker, _ := launchtest.Docker(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"the command fails", serveArgs("", "-run", "exit 3"), "exit status 3"},
		{"never ready", serveArgs("never", "-timeout", "3s", "-run", "true"), "HTTP 503"},
		{"exits at once", serveArgs("exit", "-log", log, "-run", "true"), "exited"},
		{"dies during the run", serveArgs("", "-run", `kill -9 "$THUMBD_PID"; sleep 0.2`), "died before it was stopped"},
		{"ignores SIGTERM", serveArgs("stubborn", "-grace", "300ms", "-run", "true"), "exited with code -1 on SIGTERM"},
		{"a log it cannot write", serveArgs("", "-log", "/no/dir/log"), "no such file"},
		{"a container that stops", []string{"serve", "-docker", docker, "-image", "fake:ok", "-run", `kill -9 "$THUMBD_PID"; sleep 0.2`}, "the container stopped before it was stopped"},
	} {
		err := run(context.Background(), tc.args, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), "fake server starting") {
		t.Errorf("-log got %q", b)
	}
}
