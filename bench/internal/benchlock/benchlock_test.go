package benchlock

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAcquireExcludesAndWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	var out bytes.Buffer
	release, err := Acquire(context.Background(), path, &out)
	if err != nil {
		t.Fatal(err)
	}
	// A second holder waits until ctx ends...
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, path, &out); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Acquire while held: %v", err)
	}
	if !strings.Contains(out.String(), "waiting for "+path) {
		t.Errorf("the wait was not told: %q", out.String())
	}
	// ... and gets it once released.
	got := make(chan error, 1)
	go func() {
		r, err := Acquire(context.Background(), path, &bytes.Buffer{})
		if err == nil {
			r()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the lock was not handed over")
	}
}

func TestAcquireReportsAnUnopenablePath(t *testing.T) {
	if _, err := Acquire(context.Background(), filepath.Join(t.TempDir(), "no", "dir", "lock"), &bytes.Buffer{}); err == nil {
		t.Fatal("no error")
	}
}

// Hold with no path takes nothing; with one it is Acquire; Flag defaults
// to the machine's lock.
func TestHoldAndFlag(t *testing.T) {
	release, err := Hold(context.Background(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	release()
	path := filepath.Join(t.TempDir(), "lock")
	release, err = Hold(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, path, io.Discard); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("while Hold holds it: %v", err)
	}
	release()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var lock string
	Flag(fs, &lock)
	if lock != Path {
		t.Fatalf("default %q", lock)
	}
	if err := fs.Parse([]string{"-lock", ""}); err != nil || lock != "" {
		t.Fatalf("-lock \"\": %q %v", lock, err)
	}
}
