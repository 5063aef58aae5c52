package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/thumbd/thumbd/bench/internal/benchlock"
	"github.com/thumbd/thumbd/bench/internal/cellarms"
	"github.com/thumbd/thumbd/bench/internal/coldstart"
	"github.com/thumbd/thumbd/bench/internal/engine"
	"github.com/thumbd/thumbd/bench/internal/hotkey"
	"github.com/thumbd/thumbd/bench/internal/memory"
	"github.com/thumbd/thumbd/bench/internal/originload"
	"github.com/thumbd/thumbd/bench/internal/overload"
	"github.com/thumbd/thumbd/bench/internal/peer"
	"github.com/thumbd/thumbd/bench/internal/probe"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/bench/internal/storage"
)

// exitCode ends the driver with this status and no message: a command run
// by `lock` or `serve` failed, and said why itself.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// command is one subcommand of the driver.
type command struct {
	name, args, summary string
	run                 func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"engine", "[flags]", "per-thumbnail engine time and bytes of each thumbd build next to sharp (one libvips thread)", engine.Run},
		{"cells", "[flags]", "the cell overhead study's arms: in process, native cell reused and fresh per job, containerised cell; time, faults, RSS", cellarms.Run},
		{"coldstart", "[flags] IMAGE|exec:BINARY...", "scale from zero: hardened containers from docker run to the first thumbnail", coldstart.Run},
		{"memory", "[flags] (-image IMAGE | -- CMD ARGS...)", "memory of one thumbd under thumbnail load: idle and peak RSS, cgroup peak, glibc arenas", memory.Run},
		{"overload", "[flags] (-image IMAGE | -- CMD ARGS...)", "one thumbd under 500 clients against 10: goodput, answers, and probes' p50/p99/max from their own process and cgroup, beside their floor in the same run", overload.Run},
		{"probe", "[flags] URL...", "liveness probes as a kubelet's, a line each (what overload runs in a cgroup of its own)", probe.RunProber},
		{"hello", "[-addr ADDR]", "the floor's idle server: net/http answering GET /health", probe.RunHello},
		{"peer", "[flags] -imgproxy BIN -sources DIR", "thumbd against imgproxy, side by side on one CPU each: the same imgproxy URLs of a 12 MP photo in every source format and of the transforms, answers/s and their ratio per round", peer.Run},
		{"origin", "[flags] (-image IMAGE | -- CMD ARGS...)", "GET /thumbnail?url= from a loopback origin against POST of the same bytes, and signed against unsigned (200 and 304): requests/s at 10 clients", originload.Run},
		{"hotkey", "[flags] -- CMD ARGS...", "the same thumbnail from many clients: a herd on one uncached 12 MP thumbnail (engine jobs, time), cache hit against miss, cache memory under distinct keys", hotkey.Run},
		{"storage", "[flags] -- CMD ARGS...", "object storage against a real S3 server (versitygw): a bucket source against a directory and the identity check's cost, a result store hit on a fresh process, misses with the store on and off, the store killed under load", storage.Run},
		{"sources", "DIR [NAME...]", "make the test sources (small, large, photo12; huge on demand) that DIR lacks", runSources},
		{"serve", "[flags] (-image IMAGE | -- CMD ARGS...)", "start a thumbd on a free port, wait for /ready, run -run with THUMBD_URL, stop it", runServe},
		{"lock", "[-path FILE] -- CMD ARGS...", "run CMD holding the bench lock (" + benchlock.Path + ")", runLock},
	}
}

// run is the driver: a subcommand when the first argument names one, the
// bench suite otherwise.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return runSuite(ctx, args, stdout, stderr)
	}
	if args[0] == "help" {
		usage(stdout)
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	usage(stderr)
	return fmt.Errorf("unknown subcommand %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: bench [flags]              the bench suite (bench -h lists its flags)")
	for _, c := range commands() {
		fmt.Fprintf(w, "       bench %s %s\n           %s\n", c.name, c.args, c.summary)
	}
}

func runSources(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New("usage: bench sources DIR [NAME...]   (names: " + strings.Join(sourceNames(), ", ") + ")")
	}
	paths, err := sources.Ensure(args[0], args[1:]...)
	if err != nil {
		return err
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %d bytes\n", p, fi.Size())
	}
	return nil
}

func sourceNames() []string {
	var names []string
	for _, r := range sources.Recipes() {
		names = append(names, r.Name)
	}
	return names
}

func runLock(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lock", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("path", benchlock.Path, "the lock file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: bench lock [-path FILE] -- CMD ARGS...")
	}
	release, err := benchlock.Acquire(ctx, *path, stderr)
	if err != nil {
		return err
	}
	defer release()
	return runCommand(ctx, fs.Args(), nil, stdout, stderr)
}

// runCommand runs argv with this process's stdin and extra environment; a
// non-zero exit becomes an exitCode.
func runCommand(ctx context.Context, argv, env []string, stdout, stderr io.Writer) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Env = append(os.Environ(), env...)
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if code := exit.ExitCode(); code > 0 {
			return exitCode(code)
		}
	}
	return err
}
