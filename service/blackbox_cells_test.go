package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
)

// The cells' promises checked on the built binary, started as a user
// would start it (not this test binary): each cell holds no descriptor
// beyond its own (not one the supervisor was handed), no capability (the
// test runs as root, so the supervisor holds them all), and not the
// supervisor's stderr.
func TestBlackBoxCells(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the thumbd binary")
	}
	bin := filepath.Join(t.TempDir(), "thumbd")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	extra, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	defer w.Close()
	logs := &launch.Log{}
	srv, err := launch.Start(context.Background(), launch.Spec{Command: []string{bin},
		Env:    []string{"THUMBD_ENGINE=cells", "THUMBD_CONCURRENCY=1", "THUMBD_CELL_SPARES=1", "THUMBD_SANDBOX_REQUIRED=true"},
		Stderr: logs,
		StartProcess: func(c *exec.Cmd) error {
			c.ExtraFiles = []*os.File{w, w, w, w, w, w, w, w} // fds 3 to 10, not close-on-exec
			return c.Start()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(5 * time.Second) })
	if err := srv.WaitReady(context.Background(), 30*time.Second); err != nil {
		t.Fatalf("%v; logs:\n%s", err, logs)
	}
	if status, _, _ := postThumb(t, srv.URL(), "?w=64&h=64", encodeJPEG(t, scene(80, 60), 85)); status != 200 {
		t.Fatalf("a thumbnail in cells mode: %d; logs:\n%s", status, logs)
	}
	supervisor := srv.Cmd.Process.Pid
	pids := sealedCells(t, supervisor, 2)
	own := cellDescriptors(t, supervisor)
	if !strings.HasPrefix(own[10], "pipe:") || own[2] == "" {
		t.Fatalf("the supervisor's descriptors: %v", own)
	}
	if held := cellCapabilities(t, supervisor); len(held) == 0 {
		t.Fatal("the supervisor holds no capability: run as root, or this test proves nothing")
	}
	for _, pid := range pids {
		fds := cellDescriptors(t, pid)
		if strange := strangeDescriptors(fds); len(strange) > 0 {
			t.Errorf("cell %d holds %s", pid, strings.Join(strange, ", "))
		}
		if fds[2] == own[2] {
			t.Errorf("cell %d writes to the supervisor's stderr (%s)", pid, own[2])
		}
		if held := cellCapabilities(t, pid); len(held) > 0 {
			t.Errorf("cell %d holds capabilities: %s", pid, strings.Join(held, ", "))
		}
	}
}
