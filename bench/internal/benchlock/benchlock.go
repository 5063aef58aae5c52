// Package benchlock takes the machine's timing lock: every timing on this
// shared machine (the bench, the soak, the engine comparison, the cold-start
// and memory tools, scripts through `bench lock`) holds an exclusive flock
// on one file while it measures, so two measurements never overlap.
package benchlock

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Path is the lock file every timing takes.
const Path = "/tmp/thumbd-bench.lock"

// Flag registers the -lock flag every timing subcommand takes: the lock
// file, Path by default, "" for none.
func Flag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "lock", Path, "flock held while measuring (\"\" for none)")
}

// Hold is the prologue of every timing: it takes the lock at path, or none
// when path is "" (release is then a no-op).
func Hold(ctx context.Context, path string, w io.Writer) (release func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	return Acquire(ctx, path, w)
}

// Acquire takes an exclusive flock on path, waiting (and saying so once on
// w) while someone else holds it; ctx ends the wait. release gives it back.
func Acquire(ctx context.Context, path string, w io.Writer) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	waiting, told := time.Now(), false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		if !told {
			fmt.Fprintf(w, "waiting for %s (someone else is timing)...\n", path)
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if d := time.Since(waiting); d > time.Second {
		fmt.Fprintf(w, "got %s after %s\n", path, d.Round(time.Second))
	}
	return func() { f.Close() }, nil
}
