// Package sandbox locks a cell process down once libvips has started and
// before it reads its first job: resource limits, no capabilities, no new
// privileges,
// Landlock (no file access, no TCP, no signals or abstract sockets outside
// the cell) and a seccomp allow-list of the system calls a cell makes.
//
// Each layer is applied on its own: one the kernel or the container
// runtime refuses is reported off with the reason, and the cell runs with
// the others. Apply reports every layer.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/thumbd/thumbd/internal/procfs"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// Layer is one layer of the sandbox and whether it is on.
type Layer struct {
	Name   string `json:"name"`
	On     bool   `json:"on"`
	Detail string `json:"detail,omitempty"` // what it is, or why it is off
}

// The layers, in the order Apply sets them up.
const (
	RLimits      = "rlimits"
	Capabilities = "capabilities"
	NoNewPrivs   = "no_new_privs"
	Landlock     = "landlock"
	Seccomp      = "seccomp"
)

// Names lists every layer, in order.
func Names() []string { return []string{RLimits, Capabilities, NoNewPrivs, Landlock, Seccomp} }

// Config bounds the process.
type Config struct {
	// AddressSpace is how much address space the process may map beyond
	// what it has mapped when Apply runs (RLIMIT_AS is set to the sum, so
	// that what libvips and the Go runtime reserved at start-up is not
	// counted against a job).
	AddressSpace uint64
	// OpenFiles is RLIMIT_NOFILE: a cell holds its socket and the
	// runtime's few descriptors, and opens nothing.
	OpenFiles uint64
}

// Apply sets up every layer on the whole process (all threads, libvips'
// included) and reports each. It is final: nothing undoes it.
func Apply(cfg Config) []Layer {
	// no_new_privs and the seccomp filter are set from one thread (the
	// filter is synchronised to the others, and needs the flag on the
	// thread that installs it).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return []Layer{
		layer(RLimits, func() (string, error) { return setRLimits(cfg) }),
		layer(Capabilities, dropCapabilities),
		layer(NoNewPrivs, setNoNewPrivs),
		layer(Landlock, restrictLandlock),
		layer(Seccomp, loadSeccomp),
	}
}

// layer applies one layer: on with what it does, or off with why.
func layer(name string, apply func() (string, error)) Layer {
	detail, err := apply()
	if err != nil {
		return Layer{Name: name, Detail: err.Error()}
	}
	return Layer{Name: name, On: true, Detail: detail}
}

// setRLimits caps the address space, open files and core dumps (a crash
// dump of a cell would hold a hostile image and would be slow to write).
func setRLimits(cfg Config) (string, error) {
	mapped, err := mappedBytes()
	if err != nil {
		return "", err
	}
	as := mapped + cfg.AddressSpace
	limits := []struct {
		resource int
		value    uint64
		name     string
	}{
		{unix.RLIMIT_AS, as, "RLIMIT_AS"},
		{unix.RLIMIT_NOFILE, cfg.OpenFiles, "RLIMIT_NOFILE"},
		{unix.RLIMIT_CORE, 0, "RLIMIT_CORE"},
	}
	var errs []error
	for _, l := range limits {
		if err := unix.Setrlimit(l.resource, &unix.Rlimit{Cur: l.value, Max: l.value}); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", l.name, err))
		}
	}
	return fmt.Sprintf("address space %d MiB, %d open files, no core dumps", as>>20, cfg.OpenFiles), errors.Join(errs...)
}

// mappedBytes is the process's address space now (VmSize).
func mappedBytes() (uint64, error) {
	st, err := procfs.Read(os.Getpid())
	if err != nil {
		return 0, err
	}
	return uint64(st.VmSize), nil
}

// dropCapabilities empties every thread's capabilities: a supervisor run
// as root starts its cells with all of them (CapEff 000001fffeffffff),
// and code that took a cell over would hold them inside the sandbox
// (CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_KILL over every process of the
// user). Capabilities belong to threads, and libvips' already run, so each
// call goes to every thread through libpsx, as go-landlock's do. The
// bounding set goes first, while CAP_SETPCAP (which dropping from it
// needs) is still held; a process without it has nothing there to fear,
// as no_new_privs and the seccomp filter stop every exec.
func dropCapabilities() (string, error) {
	pid := os.Getpid()
	// The main thread's sets: every thread of a cell has the same until
	// this function changes them.
	caps, err := procfs.TaskCaps(pid, pid)
	if err != nil {
		return "", err
	}
	detail := "none held, on every thread"
	if caps.Effective&(1<<unix.CAP_SETPCAP) != 0 {
		for c := uintptr(0); ; c++ {
			_, _, errno := psx.Syscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0, 0, 0, 0)
			if errno == unix.EINVAL { // past the kernel's last capability
				break
			}
			if errno != 0 {
				return "", fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, errno)
			}
		}
		detail = "all dropped, bounding set included, on every thread"
	}
	if _, _, errno := psx.Syscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); errno != 0 {
		return "", fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", errno)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if _, _, errno := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&none[0])), 0); errno != 0 {
		return "", fmt.Errorf("capset: %w", errno)
	}
	// What the kernel says of each thread, not what the calls returned.
	tasks, err := procfs.Tasks(pid)
	if err != nil {
		return "", err
	}
	for _, tid := range tasks {
		c, err := procfs.TaskCaps(pid, tid)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			continue // the thread has exited
		}
		if err != nil {
			return "", fmt.Errorf("thread %d: %w", tid, err)
		}
		if c.Inheritable|c.Permitted|c.Effective|c.Ambient != 0 {
			return "", fmt.Errorf("thread %d: capabilities inheritable %x, permitted %x, effective %x, ambient %x after dropping", tid, c.Inheritable, c.Permitted, c.Effective, c.Ambient)
		}
	}
	return detail, nil
}

// setNoNewPrivs stops execve from granting privileges (setuid binaries,
// file capabilities); it is also what lets an unprivileged process install
// a seccomp filter. The filter's thread synchronisation (and Landlock's)
// carries the flag to every thread.
func setNoNewPrivs() (string, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return "", fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return "", nil
}

// restrictLandlock denies every file system access, TCP bind and connect,
// and signals and abstract Unix sockets reaching outside the cell, as far
// as the kernel's Landlock ABI goes. go-landlock applies it to every
// thread (libvips' too), through libpsx on kernels before ABI 8.
func restrictLandlock() (string, error) {
	abi, err := llsys.LandlockGetABIVersion()
	switch {
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP):
		return "", errors.New("the kernel has no Landlock, or it is not enabled at boot")
	case errors.Is(err, unix.EPERM):
		return "", errors.New("landlock_create_ruleset was refused (EPERM): the container runtime's seccomp profile blocks it")
	case err != nil:
		return "", fmt.Errorf("landlock_create_ruleset: %w", err)
	case abi < 1:
		return "", fmt.Errorf("landlock ABI %d", abi)
	}
	if err := landlock.V7.BestEffort().Restrict(); err != nil {
		return "", err
	}
	return fmt.Sprintf("ABI %d", abi), nil
}
