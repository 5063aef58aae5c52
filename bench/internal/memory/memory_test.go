package memory

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/launch/launchtest"
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
	for _, want := range []string{"src.jpg 20 requests in", "2 clients: idle VmRSS ", "glibc arenas besides the main one; answers: 20 x 2xx\n"} {
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
	for _, want := range []string{"fake:ok src.jpg ", "10 clients", ", cgroup peak unknown", "OOMKilled false;"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out.String(), want)
		}
	}
	run := launchtest.Journal(t, journal)[0]
	if !strings.Contains(run, "-e THUMBD_QUEUE=8 --read-only") || !strings.Contains(run, "--cpus 2 --memory 1280m fake:ok") {
		t.Errorf("docker run: %s", run)
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
