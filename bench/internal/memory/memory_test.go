package memory

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/bench/internal/load"
	"github.com/thumbd/thumbd/internal/launch/launchtest"
)

func TestMain(m *testing.M) { launchtest.Run(m) }

func TestMemoryOfAProcess(t *testing.T) {
	var out, errs bytes.Buffer
	args := []string{"-lock", "", "-source", launchtest.Source(t), "-clients", "2", "-requests", "20"}
	for _, e := range launchtest.ServerEnv("") {
		args = append(args, "-env", e)
	}
	err := Run(context.Background(), append(args, "--", os.Args[0]), &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	for _, want := range []string{"src.jpg 20 requests in", "2 clients: ", "thumbnails/s; answers: 20 x 2xx\n", ": idle VmRSS ", "glibc arenas besides the main one\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "cgroup") {
		t.Error("a process has no cgroup figure")
	}
}

func TestMemoryOfAContainer(t *testing.T) {
	docker, journal := launchtest.Docker(t)
	var out, errs bytes.Buffer
	err := Run(context.Background(), []string{"-lock", filepath.Join(t.TempDir(), "lock"), "-docker", docker, "-image", "fake:ok",
		"-env", "THUMBD_QUEUE=8", "-source", launchtest.Source(t), "-duration", "300ms"}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	for _, want := range []string{"fake:ok --memory 1280m src.jpg ", "10 clients", ", cgroup peak unknown", "OOMKilled false;", "/health "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out.String(), want)
		}
	}
	run := launchtest.Journal(t, journal)[0]
	if !strings.Contains(run, "-e THUMBD_QUEUE=8 --read-only") || !strings.Contains(run, "--cpus 2 --memory 1280m --memory-swap 1280m fake:ok") {
		t.Errorf("docker run: %s", run)
	}
}

// Several limits run one after another ("none": no --memory), each with
// every source in turn, and the liveness probe reports.
func TestMemoryLimitsAndSources(t *testing.T) {
	docker, journal := launchtest.Docker(t)
	src := launchtest.Source(t)
	var out, errs bytes.Buffer
	err := Run(context.Background(), []string{"-lock", "", "-docker", docker, "-image", "fake:ok", "-memory", "256m,none",
		"-source", src + "," + src, "-duration", "600ms", "-probe", "100ms", "-check"}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	runs := launchtest.Journal(t, journal)
	var started []string
	for _, r := range runs {
		if strings.HasPrefix(r, "run ") {
			started = append(started, r)
		}
	}
	if len(started) != 2 || !strings.Contains(started[0], "--memory 256m --memory-swap 256m") || strings.Contains(started[1], "--memory") {
		t.Errorf("docker runs: %q", started)
	}
	if n := strings.Count(out.String(), "src.jpg 1 s, 10 clients") + strings.Count(out.String(), "src.jpg 0 s, 10 clients"); n != 4 {
		t.Errorf("want 4 load lines (2 limits x 2 sources), got %d:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "failed (at most 0 in a row)") {
		t.Errorf("no probe line:\n%s", out.String())
	}
}

// -check fails a server that died under load, saying why.
func TestMemoryCheckFails(t *testing.T) {
	var out, errs bytes.Buffer
	args := []string{"-lock", "", "-source", launchtest.Source(t), "-clients", "4", "-duration", "1s", "-check"}
	for _, e := range launchtest.ServerEnv("dies") {
		args = append(args, "-env", e)
	}
	err := Run(context.Background(), append(args, "--", os.Args[0]), &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "memory check failed") || !strings.Contains(err.Error(), "the server died") {
		t.Fatalf("a server that died: %v\n%s", err, out.String())
	}
}

func TestMemoryRefuses(t *testing.T) {
	docker, _ := launchtest.Docker(t)
	src := launchtest.Source(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-source", src}, "want -image or a command"},
		{[]string{"-source", src, "-image", "x", "--", "y"}, "want -image or a command"},
		{[]string{"-source", "/no/such.jpg", "--", "true"}, "no such file"},
		{[]string{"-source", src, "-docker", docker, "-image", "fake:crash"}, "exited"},
		{[]string{"-source", src, "--", "false"}, "false exited"},
	} {
		err := Run(context.Background(), append([]string{"-lock", ""}, tc.args...), &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// -admin starts thumbd with an admin port and probes /health there (the
// fake answers /health only on it when it has one).
func TestMemoryProbesTheAdminPort(t *testing.T) {
	docker, journal := launchtest.Docker(t)
	for _, admin := range []bool{true, false} {
		var out, errs bytes.Buffer
		args := []string{"-lock", "", "-docker", docker, "-image", "fake:ok", "-source", launchtest.Source(t), "-duration", "400ms", "-probe", "50ms"}
		if admin {
			args = append(args, "-admin")
		}
		if err := Run(context.Background(), args, &out, &errs); err != nil {
			t.Fatalf("%v\n%s", err, errs.String())
		}
		if got := strings.Contains(out.String(), "failed (at most 0 in a row)") && strings.Contains(out.String(), "on the admin port"); got != admin {
			t.Errorf("-admin=%v: output %q", admin, out.String())
		}
	}
	runs := launchtest.Journal(t, journal)
	if !strings.Contains(runs[0], "-e THUMBD_ADMIN_PORT=") {
		t.Errorf("docker run without the admin port: %s", runs[0])
	}
}

// TransportErrors tells requests the server never read (a 503's reset, an
// idle connection closed at the connection cap) from lost answers.
func TestTransportErrors(t *testing.T) {
	o := load.Outcome{Errors: map[string]int{
		`Post "http://x/thumbnail": http: server closed idle connection`:                    3,
		`Post "http://x/thumbnail": write tcp 127.0.0.1:1->127.0.0.1:2: write: broken pipe`: 2,
		`Post "http://x/thumbnail": EOF`:                                                    1,
		`Post "http://x/thumbnail": context deadline exceeded (Client.Timeout exceeded)`:    4,
	}}
	if lost, refused := TransportErrors(o); lost != 4 || refused != 6 {
		t.Errorf("lost %d, refused unread %d; want 4 and 6", lost, refused)
	}
}
