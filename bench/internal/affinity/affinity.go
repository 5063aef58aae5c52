// Package affinity pins the driver and the processes it spawns to CPUs.
//
// runtime.LockOSThread alone pins nothing: Linux keeps one CPU mask per
// thread, a Go process has many threads, and a child inherits the mask of
// the thread that forked it. So PinProcess sets the mask of every thread of
// this process (threads created later inherit it from their creator), and
// Start forks from a locked thread whose mask is briefly the child's.
package affinity

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/thumbd/thumbd/internal/procfs"
	"golang.org/x/sys/unix"
)

// ParseList parses a CPU list such as "1", "0,2" or "0-3"; "" is nil.
func ParseList(s string) ([]int, error) {
	var cpus []int
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("affinity: bad CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("affinity: bad CPU list %q", s)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Format writes cpus as a list for taskset or docker --cpuset-cpus.
func Format(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

func set(cpus []int) *unix.CPUSet {
	var cs unix.CPUSet
	for _, c := range cpus {
		cs.Set(c)
	}
	return &cs
}

// PinProcess restricts every thread of this process to cpus. It runs over
// the thread list twice so that a thread being created during the first
// pass is caught by the second.
func PinProcess(cpus []int) error {
	cs := set(cpus)
	for pass := 0; pass < 2; pass++ {
		tasks, err := procfs.Tasks(os.Getpid())
		if err != nil {
			return err
		}
		for _, tid := range tasks {
			if err := unix.SchedSetaffinity(tid, cs); err != nil && err != unix.ESRCH {
				return fmt.Errorf("affinity: thread %d: %w", tid, err)
			}
		}
	}
	return nil
}

// Start starts cmd with its CPU mask set to cpus from its first
// instruction (no window where it runs elsewhere, no taskset exec in the
// timed path). With no cpus it is cmd.Start.
func Start(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return err
	}
	if err := unix.SchedSetaffinity(0, set(cpus)); err != nil {
		return fmt.Errorf("affinity: %w", err)
	}
	err := cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &old); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// Allowed returns the Cpus_allowed_list of a process, for the report.
func Allowed(pid int) (string, error) {
	return procfs.CPUsAllowed(pid)
}

// Split is a subcommand's CPU split: the server under test on Server, the
// driver (its load generator, an origin it serves) on Client; an empty
// list: not pinned.
type Split struct {
	Server, Client []int
	server, client string
}

// Register adds -server-cpus and -client-cpus to fs; driver says what runs
// on the client CPUs.
func (s *Split) Register(fs *flag.FlagSet, driver string) {
	fs.StringVar(&s.server, "server-cpus", "1", "CPUs for thumbd (\"\": not pinned)")
	fs.StringVar(&s.client, "client-cpus", "0", "CPUs for "+driver+" (\"\": not pinned)")
}

// Parsed reads the two lists once fs is parsed.
func (s *Split) Parsed() (err error) {
	if s.Server, err = ParseList(s.server); err != nil {
		return err
	}
	s.Client, err = ParseList(s.client)
	return err
}

// PinDriver pins this process to the client CPUs, when there are any.
func (s *Split) PinDriver() error {
	if len(s.Client) == 0 {
		return nil
	}
	return PinProcess(s.Client)
}
