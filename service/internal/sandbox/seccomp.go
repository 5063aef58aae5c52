package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// The system calls a cell makes once it is sandboxed, found by tracing
// cells through the whole test corpus (every format, fit and output,
// animated, damaged and hostile sources, the Go garbage collector,
// libvips' thread pool growing and shrinking): reading jobs from and
// writing results to its socket, memory, threads, futexes, signals, time.
// Names the running architecture does not have (arm64 has no open, for
// one) are skipped; a name that no architecture has stops the policy.
var allowed = []string{
	// the socket and the log
	"read", "write", "readv", "writev", "recvfrom", "recvmsg", "sendto", "sendmsg",
	"epoll_wait", "epoll_pwait", "epoll_pwait2", "epoll_ctl", "close", "fcntl", "fstat", "lseek",
	// memory
	"brk", "mmap", "munmap", "mprotect", "madvise", "mremap", "membarrier",
	// threads and waiting
	"futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq", "sched_yield",
	"sched_getaffinity", "gettid", "getpid", "set_tid_address", "exit", "exit_group",
	"restart_syscall", "nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday",
	// signals (the Go runtime preempts goroutines with them)
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
	// reading about itself and the machine (glibc, glib and libvips ask;
	// nothing here changes anything)
	"getrusage", "getrandom", "sysinfo", "uname", "getcpu", "getuid", "geteuid", "getgid", "getegid",
	"getppid", "getrlimit", "sched_getparam", "sched_getscheduler",
	// the file-creation mask: ORC (Debian's libvips) sets it before trying
	// a temporary file for its compiled code, which the sandbox refuses
	"umask",
}

// killed are calls only an attacker makes in a cell: the process dies with
// SIGSYS at the first one (which the supervisor logs and counts).
var killed = []string{
	"execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev",
	"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
}

// refused are calls that libraries make in passing and cope with failing
// (a time zone or cgroup file looked up, ORC's temporary file for its
// compiled code, a terminal check on stderr, glibc's fstat): they fail
// with EPERM instead of killing the cell. Landlock denies the same files.
var refused = []string{
	"open", "openat", "openat2", "creat", "stat", "lstat", "newfstatat", "statx", "access", "faccessat",
	"faccessat2", "readlink", "readlinkat", "getcwd", "getdents64", "statfs", "fstatfs",
	"unlink", "unlinkat", "mkdir", "mkdirat", "rename", "renameat", "renameat2",
	"ioctl", "dup", "dup2", "dup3", "pipe", "pipe2", "eventfd", "eventfd2", "memfd_create",
	"get_mempolicy", "set_mempolicy", "mbind", "sched_setaffinity", "sched_setscheduler", "setpriority",
}

// policy is the filter: the calls above, clone only for threads, clone3
// answered ENOSYS (its flags are behind a pointer the filter cannot read;
// glibc then falls back to clone), signals only to this process, prctl
// only to name threads and memory regions, prlimit64 only to read, and any
// other call kills the process.
func policy(pid int) (seccomp.Policy, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return seccomp.Policy{}, err
	}
	var unknown []string
	known := func(names []string) []string {
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool {
			if _, ok := info.SyscallNames[n]; ok {
				return false
			}
			if !anyArchHas(n) {
				unknown = append(unknown, n)
			}
			return true
		})
	}
	self := seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: uint64(pid)}}
	p := seccomp.Policy{
		DefaultAction: seccomp.ActionKillProcess,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionAllow, Names: known(allowed), NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: unix.CLONE_THREAD}}},
				{Name: "tgkill", Conditions: self},
				{Name: "kill", Conditions: self},
				{Name: "prctl", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.PR_SET_NAME}}},
				{Name: "prctl", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.PR_SET_VMA}}},
				// reading a limit, never setting one
				{Name: "prlimit64", Conditions: seccomp.ArgumentConditions{{Argument: 2, Operation: seccomp.Equal, Value: 0}}},
			}},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: known([]string{"clone3"})},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM), Names: known(refused)},
			{Action: seccomp.ActionKillProcess, Names: known(killed)},
		},
	}
	if len(unknown) > 0 {
		return seccomp.Policy{}, fmt.Errorf("seccomp policy: no architecture has a system call named %s", strings.Join(unknown, ", "))
	}
	return p, nil
}

// anyArchHas reports whether some architecture the filter library knows
// has a call of that name. A name missing on the running architecture is
// skipped only when another has it (arm64 has no open); one that none has
// is a typo, which skipping would hide.
func anyArchHas(name string) bool {
	for _, a := range []*arch.Info{arch.X86_64, arch.AARCH64, arch.I386, arch.ARM, arch.X32} {
		if _, ok := a.SyscallNames[name]; ok {
			return true
		}
	}
	return false
}

// loadSeccomp installs the filter on every thread of the process
// (SECCOMP_FILTER_FLAG_TSYNC), with no_new_privs.
func loadSeccomp() (string, error) {
	p, err := policy(os.Getpid())
	if err != nil {
		return "", err
	}
	if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: p}); err != nil {
		if errors.Is(err, unix.EPERM) {
			return "", errors.New("seccomp(2) was refused (EPERM): the container runtime's seccomp profile blocks it")
		}
		return "", err
	}
	return fmt.Sprintf("%d system calls allowed (%d more with conditions), any other kills the cell",
		len(p.Syscalls[0].Names), len(p.Syscalls[0].NamesWithCondtions)), nil
}
