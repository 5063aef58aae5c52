package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/net/bpf"
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
	"epoll_wait", "epoll_pwait", "epoll_pwait2", "epoll_ctl", "close", "fstat", "lseek",
	// memory
	"brk", "mmap", "munmap", "mprotect", "madvise", "mremap", "membarrier",
	// threads and waiting
	"futex", "futex_waitv", "set_robust_list", "rseq", "sched_yield", "gettid", "getpid", "set_tid_address", "exit", "exit_group",
	"restart_syscall", "nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday",
	// signals (the Go runtime preempts goroutines with them)
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
	// reading about itself and the machine (glibc, glib and libvips ask;
	// nothing here changes anything)
	"getrusage", "getrandom", "sysinfo", "uname", "getcpu", "getuid", "geteuid", "getgid", "getegid",
	"getppid", "getrlimit",
	// times: the process's own CPU times, as getrusage. ImageMagick's
	// start-up calls it when Debian's libvips (dev builds: the images link
	// no ImageMagick) asks its magick module whether it knows a buffer no
	// other loader took, such as a TIFF without strips (internal/hostile's
	// Malformed, TestCellsReadEveryInputFormat).
	"times",
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
// fcntl is here for the commands the policy neither allows nor kills.
var refused = []string{
	"open", "openat", "openat2", "creat", "stat", "lstat", "newfstatat", "statx", "access", "faccessat",
	"faccessat2", "readlink", "readlinkat", "getcwd", "getdents64", "statfs", "fstatfs",
	"unlink", "unlinkat", "mkdir", "mkdirat", "rename", "renameat", "renameat2",
	"ioctl", "fcntl", "dup", "dup2", "dup3", "pipe", "pipe2", "eventfd", "eventfd2", "memfd_create",
	"get_mempolicy", "set_mempolicy", "mbind", "sched_setaffinity", "sched_setscheduler", "setpriority",
	// Another thread's robust-list pointer is an address of its process
	// (the supervisor's, without Landlock): its layout given away. The
	// runtime and glibc only ever set their own.
	"get_robust_list",
}

// aboutItself are calls that read about a process: the cell may ask them
// about itself only (PID 0, or its own PID); about any other process they
// fail with EPERM (glibc and glib ask about the calling thread by PID 0).
var aboutItself = []string{"sched_getaffinity", "sched_getparam", "sched_getscheduler"}

// policy is the filter: the calls above, clone only for threads, clone3
// answered ENOSYS (its flags are behind a pointer the filter cannot read;
// glibc then falls back to clone), signals only to this process, fcntl
// only for what the Go runtime and glibc do with a descriptor (flags,
// close-on-exec, a duplicate), prctl only to name threads and memory
// regions, prlimit64 only to read, the reads about a process
// (aboutItself, prlimit64) only about the cell itself, and any other call
// kills the process.
//
// fcntl is narrowed because signals have a second path: a descriptor's
// owner (F_SETOWN, F_SETOWN_EX) is sent SIGIO, or the F_SETSIG signal
// (SIGKILL, SIGSTOP), whenever it is ready and O_ASYNC is on, and leases
// (F_SETLEASE) and directory notices (F_NOTIFY) signal too. kill's
// own-PID rule does not see that; only Landlock's signal scoping (Linux
// 6.12+) would, and a runtime may refuse Landlock. Those commands kill the
// cell like any other call only an attacker makes.
func policy(pid int) (filter, error) {
	info, err := runningArch()
	if err != nil {
		return filter{}, err
	}
	return newFilter(info, rules(pid))
}

// rules are the policy's rules for a cell of that PID, by call name.
func rules(pid int) []rule {
	self := []cond{{arg: 0, op: eq32, value: uint64(pid)}}
	// The kernel reads a pid_t: 32 bits. PID 0 is the caller itself.
	itself := [][]cond{{{arg: 0, op: eq32, value: 0}}, self}
	fcntl := func(cmd int, more ...cond) []cond {
		return append([]cond{{arg: 1, op: eq32, value: uint64(cmd)}}, more...)
	}
	always := [][]cond(nil)
	var rules []rule
	add := func(action action, names []string, when [][]cond) {
		for _, n := range names {
			rules = append(rules, rule{name: n, when: when, action: action})
		}
	}
	add(actAllow, allowed, always)
	add(actAllow, []string{"clone"}, [][]cond{{{arg: 0, op: bitsSet, value: unix.CLONE_THREAD}}})
	add(actAllow, []string{"tgkill", "kill"}, [][]cond{self})
	add(actAllow, []string{"prctl"}, [][]cond{
		{{arg: 0, op: eq32, value: unix.PR_SET_NAME}},
		{{arg: 0, op: eq32, value: unix.PR_SET_VMA}},
	})
	add(actAllow, aboutItself, itself)
	add(errnoAction(unix.EPERM), aboutItself, always)
	// reading its own limit, never setting one: reading another's is
	// refused, setting any kills (below, as an unmatched call)
	readLimit := cond{arg: 2, op: eq64, value: 0}
	add(actAllow, []string{"prlimit64"}, [][]cond{{itself[0][0], readLimit}, {self[0], readLimit}})
	add(errnoAction(unix.EPERM), []string{"prlimit64"}, [][]cond{{readLimit}})
	add(actAllow, []string{"fcntl"}, [][]cond{
		fcntl(unix.F_GETFD), fcntl(unix.F_SETFD), fcntl(unix.F_GETFL), fcntl(unix.F_DUPFD_CLOEXEC),
		fcntl(unix.F_SETFL, cond{arg: 2, op: bitsClear, value: unix.O_ASYNC}),
	})
	add(errnoAction(unix.ENOSYS), []string{"clone3"}, always)
	add(actKill, killed, always)
	// Before refused, which takes every other fcntl. F_SETFL here is the
	// one with O_ASYNC: the allowed one matched above.
	add(actKill, []string{"fcntl"}, [][]cond{
		fcntl(unix.F_SETOWN), fcntl(unix.F_SETOWN_EX), fcntl(unix.F_SETSIG), fcntl(unix.F_SETLEASE), fcntl(unix.F_NOTIFY),
		fcntl(unix.F_SETFL),
	})
	add(errnoAction(unix.EPERM), refused, always)
	return rules
}

// action is what the filter answers a call: SECCOMP_RET_ALLOW, _ERRNO
// with its errno, or _KILL_PROCESS.
type action uint32

const (
	actAllow = action(unix.SECCOMP_RET_ALLOW)
	actKill  = action(unix.SECCOMP_RET_KILL_PROCESS)
)

func errnoAction(e unix.Errno) action { return action(unix.SECCOMP_RET_ERRNO | uint32(e)) }

// x32Bit is set in the numbers of the x32 ABI's calls on x86_64
// (__X32_SYSCALL_BIT).
const x32Bit = 0x40000000

// archInfo is the running architecture as the filter sees it: its audit
// architecture and its column of syscallTable. The table is generated
// (syscalls.go, from go-seccomp-bpf's tables by TestSyscallTable) rather
// than read from go-seccomp-bpf's arch package at run time: that package
// builds the name and number maps of five architectures in its
// initialiser, 0.3-0.7 ms and 165 KB at every start of every thumbd, cells
// mode or not (docs/coldstart.md); a cell needs a hundred names of one.
type archInfo struct {
	id     uint32
	x86_64 bool // the x32 ABI's calls are guarded
}

// runningArch is the architecture thumbd runs on.
func runningArch() (*archInfo, error) {
	switch runtime.GOARCH {
	case "amd64":
		return &archInfo{id: unix.AUDIT_ARCH_X86_64, x86_64: true}, nil
	case "arm64":
		return &archInfo{id: unix.AUDIT_ARCH_AARCH64}, nil
	}
	return nil, fmt.Errorf("seccomp policy: no system call table for %s", runtime.GOARCH)
}

// number is the call's number on a, whether a has it, and whether any
// architecture go-seccomp-bpf knows has it (a name none has is a typo,
// which skipping would hide; arm64 has no open, which it must skip).
func (a *archInfo) number(name string) (nr int, has, known bool) {
	i, found := slices.BinarySearchFunc(syscallTable[:], name, func(s syscallNumbers, name string) int { return strings.Compare(s.name, name) })
	if !found {
		return 0, false, false
	}
	s := syscallTable[i]
	nr = int(s.aarch64)
	if a.x86_64 {
		nr = int(s.x86_64)
	}
	return nr, nr >= 0, s.known
}

// loadSeccomp installs the filter on every thread of the process
// (SECCOMP_FILTER_FLAG_TSYNC), with no_new_privs.
func loadSeccomp() (string, error) {
	f, err := policy(os.Getpid())
	if err != nil {
		return "", err
	}
	if err := f.load(); err != nil {
		if errors.Is(err, unix.EPERM) {
			return "", errors.New("seccomp(2) was refused (EPERM): the container runtime's seccomp profile blocks it")
		}
		return "", err
	}
	return fmt.Sprintf("%d system calls allowed (%d more with conditions), any other kills the cell",
		f.count(actAllow, false), f.count(actAllow, true)), nil
}

// The filter is assembled here rather than by go-seccomp-bpf's Policy:
// its v1.6.0 assembler leaves an argument in the register after a call's
// argument checks fail, and compares it with the next rules' call numbers,
// so kill(302, SIGKILL) matched prlimit64's rule (302 on x86_64) and was
// allowed, and so was a clone whose flags were 302 (TestFilterDecides).
// Here every rule reads the call number itself. The library still gives
// the call tables and the action values.

// op is how a condition tests an argument.
type op int

const (
	eq32      op = iota // the low 32 bits equal value: the kernel reads int arguments (a PID, a command) as 32 bits
	eq64                // all 64 bits equal value
	bitsSet             // some bit of value (within the low 32) is set
	bitsClear           // no bit of value (within the low 32) is set
)

// cond tests one argument of a call.
type cond struct {
	arg   int
	op    op
	value uint64
}

// rule gives a call an action when any one of its condition sets holds
// (all conditions of the set); with no sets, always. Rules are tried in
// order; the first that matches decides.
type rule struct {
	name   string
	nr     uint32
	when   [][]cond
	action action
}

// filter is the rules for one architecture; any call no rule matches
// kills the process.
type filter struct {
	arch  *archInfo
	rules []rule
}

// newFilter numbers the rules for info, dropping names it lacks that
// another architecture has, and refusing names that none has.
func newFilter(info *archInfo, rules []rule) (filter, error) {
	f := filter{arch: info}
	var unknown []string
	for _, r := range rules {
		nr, ok, known := info.number(r.name)
		if !ok {
			if !known {
				unknown = append(unknown, r.name)
			}
			continue
		}
		for _, set := range r.when {
			for _, c := range set {
				if c.arg < 0 || c.arg > 5 || (c.op != eq64 && c.value>>32 != 0) {
					return filter{}, fmt.Errorf("seccomp policy: %s: condition %+v", r.name, c)
				}
			}
		}
		r.nr = uint32(nr)
		f.rules = append(f.rules, r)
	}
	if len(unknown) > 0 {
		return filter{}, fmt.Errorf("seccomp policy: no architecture has a system call named %s", strings.Join(unknown, ", "))
	}
	return f, nil
}

// count is the number of calls with that action, with or without
// conditions.
func (f filter) count(action action, conditional bool) int {
	n := 0
	for _, r := range f.rules {
		if r.action == action && (len(r.when) > 0) == conditional {
			n++
		}
	}
	return n
}

// struct seccomp_data: the call number, the audit architecture, the
// instruction pointer, then six 64-bit arguments.
const (
	dataNr   = 0
	dataArch = 4
	dataArgs = 16
)

// program assembles the filter. Every jump is forward and short: a rule
// skips itself when the number differs, and a failed condition skips to
// its set's end; each rule starts by loading the call number, so no rule
// sees what another loaded.
func (f filter) program() ([]bpf.Instruction, error) {
	kill := bpf.RetConstant{Val: uint32(actKill)}
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: dataArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: f.arch.id, SkipTrue: 1},
		kill,
	}
	if f.arch.x86_64 {
		// The x32 ABI's calls (their numbers have bit 30 set) would reach
		// the same kernel code under other numbers.
		p = append(p,
			bpf.LoadAbsolute{Off: dataNr, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
			bpf.RetConstant{Val: uint32(errnoAction(unix.ENOSYS))},
		)
	}
	for _, r := range f.rules {
		block := r.assemble()
		if len(block) > 255 {
			return nil, fmt.Errorf("seccomp policy: %s: %d instructions, more than a jump spans", r.name, len(block))
		}
		p = append(p,
			bpf.LoadAbsolute{Off: dataNr, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: r.nr, SkipTrue: uint8(len(block))},
		)
		p = append(p, block...)
	}
	p = append(p, kill)
	if len(p) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp policy: %d instructions, more than the kernel's %d", len(p), unix.BPF_MAXINSNS)
	}
	return p, nil
}

// assemble is a rule's body, run once the call number matched: each
// condition set in turn, then on to the next rule.
func (r rule) assemble() []bpf.Instruction {
	ret := bpf.RetConstant{Val: uint32(r.action)}
	if len(r.when) == 0 {
		return []bpf.Instruction{ret}
	}
	var out []bpf.Instruction
	for _, set := range r.when {
		var tests [][]bpf.Instruction
		for _, c := range set {
			tests = append(tests, c.assemble())
		}
		// Each test ends in a jump that fails to the set's end: past the
		// tests after it and the return.
		left := 1
		for _, t := range tests {
			left += len(t)
		}
		for _, t := range tests {
			left -= len(t)
			for i, inst := range t {
				if j, ok := inst.(bpf.JumpIf); ok {
					// The jump's failing branch skips what is left of this
					// test and of the set.
					j.SkipFalse = uint8(len(t) - 1 - i + left)
					t[i] = j
				}
			}
			out = append(out, t...)
		}
		out = append(out, ret)
	}
	return out
}

// assemble loads the argument's words and tests them; each JumpIf passes
// on true (to the next instruction) and its SkipFalse is set by the rule.
func (c cond) assemble() []bpf.Instruction {
	lo, hi := uint32(dataArgs+8*c.arg), uint32(dataArgs+8*c.arg+4)
	if !littleEndian() {
		lo, hi = hi, lo
	}
	v := uint32(c.value)
	switch c.op {
	case eq64:
		return []bpf.Instruction{
			bpf.LoadAbsolute{Off: hi, Size: 4}, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(c.value >> 32)},
			bpf.LoadAbsolute{Off: lo, Size: 4}, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v},
		}
	case bitsSet:
		return []bpf.Instruction{bpf.LoadAbsolute{Off: lo, Size: 4}, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: v}}
	case bitsClear:
		return []bpf.Instruction{bpf.LoadAbsolute{Off: lo, Size: 4}, bpf.JumpIf{Cond: bpf.JumpBitsNotSet, Val: v}}
	default: // eq32
		return []bpf.Instruction{bpf.LoadAbsolute{Off: lo, Size: 4}, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v}}
	}
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// load sets no_new_privs (which lets an unprivileged process install a
// filter) and installs the filter on every thread.
func (f filter) load() error {
	insts, err := f.program()
	if err != nil {
		return err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(raw)), Filter: (*unix.SockFilter)(unsafe.Pointer(&raw[0]))}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	switch {
	case errno != 0:
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	case r != 0:
		// TSYNC names the thread it could not synchronise.
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): thread %d could not be synchronised", r)
	}
	return nil
}
