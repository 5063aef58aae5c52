package sandbox

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filter as the kernel would run it, in x/net/bpf's interpreter: each
// case is one system call with its arguments and the action the filter
// must return. Argument checks load the arguments into the filter's one
// register; the cases after a failed check (a kill of another PID, a
// fork) are the ones that see whether the system call number is read
// again before the next rule.
func TestFilterDecides(t *testing.T) {
	const pid = 4242
	_, vm := filterVM(t, pid)
	allow, kill := uint32(seccomp.ActionAllow), uint32(seccomp.ActionKillProcess)
	eperm, enosys := uint32(seccomp.ActionErrno)|uint32(unix.EPERM), uint32(seccomp.ActionErrno)|uint32(unix.ENOSYS)
	for _, tc := range []struct {
		name string
		nr   uintptr
		args []uint64
		want uint32
	}{
		{"read", unix.SYS_READ, nil, allow},
		{"openat", unix.SYS_OPENAT, nil, eperm},
		{"execve", unix.SYS_EXECVE, nil, kill},
		{"clone3", unix.SYS_CLONE3, nil, enosys},
		{"an unlisted call", unix.SYS_MOUNT, nil, kill},
		{"a thread", unix.SYS_CLONE, []uint64{unix.CLONE_THREAD | unix.CLONE_VM}, allow},
		{"a fork", unix.SYS_CLONE, []uint64{uint64(unix.SIGCHLD)}, kill},
		// 302 is prlimit64's number, and its own rule wants its third
		// argument 0: a filter that compares arguments with call numbers
		// lets these through.
		{"a fork whose flags are a call's number", unix.SYS_CLONE, []uint64{unix.SYS_PRLIMIT64}, kill},
		{"kill itself", unix.SYS_KILL, []uint64{pid, 9}, allow},
		{"kill another", unix.SYS_KILL, []uint64{1, 9}, kill},
		{"kill a PID that is a call's number", unix.SYS_KILL, []uint64{unix.SYS_PRLIMIT64, 9}, kill},
		{"tgkill itself", unix.SYS_TGKILL, []uint64{pid, pid, 23}, allow},
		{"tgkill another", unix.SYS_TGKILL, []uint64{1, 1, 9}, kill},
		{"prctl PR_SET_NAME", unix.SYS_PRCTL, []uint64{unix.PR_SET_NAME}, allow},
		{"prctl PR_SET_DUMPABLE", unix.SYS_PRCTL, []uint64{unix.PR_SET_DUMPABLE, 1}, kill},
		{"prlimit64 to read", unix.SYS_PRLIMIT64, []uint64{0, unix.RLIMIT_AS, 0, 0x1000}, allow},
		{"prlimit64 to set", unix.SYS_PRLIMIT64, []uint64{0, unix.RLIMIT_AS, 0x1000}, kill},
		// Reading about a process: only about the cell itself (PID 0 or
		// its own); another's (the supervisor's robust-list pointer gives
		// away its address layout) is refused.
		{"prlimit64 to read another's", unix.SYS_PRLIMIT64, []uint64{1, unix.RLIMIT_AS, 0, 0x1000}, eperm},
		{"prlimit64 to read its own by PID", unix.SYS_PRLIMIT64, []uint64{pid, unix.RLIMIT_AS, 0, 0x1000}, allow},
		{"prlimit64 to set its own by PID", unix.SYS_PRLIMIT64, []uint64{pid, unix.RLIMIT_AS, 0x1000}, kill},
		{"prlimit64 to read, PID with high bits", unix.SYS_PRLIMIT64, []uint64{1<<32 | 1, unix.RLIMIT_AS, 0, 0x1000}, eperm},
		{"get_robust_list of itself", unix.SYS_GET_ROBUST_LIST, []uint64{0, 0x1000, 0x2000}, eperm},
		{"get_robust_list of another", unix.SYS_GET_ROBUST_LIST, []uint64{1, 0x1000, 0x2000}, eperm},
		{"set_robust_list", unix.SYS_SET_ROBUST_LIST, []uint64{0x1000, 24}, allow},
		{"sched_getaffinity of itself (0)", unix.SYS_SCHED_GETAFFINITY, []uint64{0, 128, 0x1000}, allow},
		{"sched_getaffinity of itself (PID)", unix.SYS_SCHED_GETAFFINITY, []uint64{pid, 128, 0x1000}, allow},
		{"sched_getaffinity of another", unix.SYS_SCHED_GETAFFINITY, []uint64{1, 128, 0x1000}, eperm},
		{"sched_getaffinity of a PID that is a call's number", unix.SYS_SCHED_GETAFFINITY, []uint64{unix.SYS_PRLIMIT64, 128, 0x1000}, eperm},
		{"sched_getparam of itself", unix.SYS_SCHED_GETPARAM, []uint64{0, 0x1000}, allow},
		{"sched_getparam of another", unix.SYS_SCHED_GETPARAM, []uint64{1, 0x1000}, eperm},
		{"sched_getscheduler of itself", unix.SYS_SCHED_GETSCHEDULER, []uint64{pid}, allow},
		{"sched_getscheduler of another", unix.SYS_SCHED_GETSCHEDULER, []uint64{1}, eperm},
		{"fcntl F_GETFL", unix.SYS_FCNTL, []uint64{3, unix.F_GETFL}, allow},
		{"fcntl F_SETFL O_NONBLOCK", unix.SYS_FCNTL, []uint64{3, unix.F_SETFL, unix.O_NONBLOCK | unix.O_RDWR}, allow},
		{"fcntl F_SETFL O_ASYNC", unix.SYS_FCNTL, []uint64{3, unix.F_SETFL, unix.O_NONBLOCK | unix.O_ASYNC}, kill},
		{"fcntl F_SETOWN", unix.SYS_FCNTL, []uint64{3, unix.F_SETOWN, 1}, kill},
		{"fcntl F_SETSIG", unix.SYS_FCNTL, []uint64{3, unix.F_SETSIG, 9}, kill},
		{"fcntl F_SETOWN with high bits", unix.SYS_FCNTL, []uint64{3, 1<<32 | unix.F_SETOWN, 1}, kill},
		{"fcntl F_DUPFD", unix.SYS_FCNTL, []uint64{3, unix.F_DUPFD}, eperm},
		{"fcntl F_DUPFD_CLOEXEC", unix.SYS_FCNTL, []uint64{3, unix.F_DUPFD_CLOEXEC}, allow},
	} {
		got, err := vm.Run(seccompData(tc.nr, tc.args))
		if err != nil {
			t.Fatal(err)
		}
		if uint32(got) != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.name, uint32(got), tc.want)
		}
	}
}

// seccompData is struct seccomp_data for the running architecture, laid
// out for x/net/bpf's interpreter, which loads words big-endian where the
// kernel loads them in the machine's order: each 32-bit word the filter
// reads is written at its offset in big-endian.
func seccompData(nr uintptr, args []uint64) []byte {
	b := make([]byte, 64)
	info, _ := arch.GetInfo("")
	binary.BigEndian.PutUint32(b[0:], uint32(nr))
	binary.BigEndian.PutUint32(b[4:], uint32(info.ID))
	for i, a := range args {
		lo, hi := 16+8*i, 16+8*i+4
		if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
			lo, hi = hi, lo
		}
		binary.BigEndian.PutUint32(b[lo:], uint32(a))
		binary.BigEndian.PutUint32(b[hi:], uint32(a>>32))
	}
	return b
}

// filterVM is the filter a cell of that PID would load, and its program
// in x/net/bpf's interpreter.
func filterVM(t *testing.T, pid int) (filter, *bpf.VM) {
	f, err := policy(pid)
	if err != nil {
		t.Fatal(err)
	}
	insts, err := f.program()
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	return f, vm
}

// The assembled filter agrees with its rules read directly (a model: the
// first rule whose call number matches and one of whose condition sets
// all hold decides; no rule, a kill) on random calls: the policy's call
// numbers and others, with arguments drawn from the values the conditions
// test (0, the cell's PID, another PID, commands, flags, call numbers,
// the same with high bits set) and random ones.
func TestFilterAgreesWithItsRules(t *testing.T) {
	const pid = 4242
	f, vm := filterVM(t, pid)
	var nrs []uint32
	pool := []uint64{0, 1, pid, pid + 1, 1 << 32, 1<<32 | pid, unix.CLONE_THREAD, unix.CLONE_THREAD | unix.CLONE_VM, uint64(unix.SIGCHLD),
		unix.O_ASYNC, unix.O_NONBLOCK, unix.PR_SET_NAME, unix.PR_SET_VMA, unix.PR_SET_DUMPABLE}
	for _, r := range f.rules {
		nrs = append(nrs, r.nr)
		pool = append(pool, uint64(r.nr))
		for _, set := range r.when {
			for _, c := range set {
				pool = append(pool, c.value, c.value|1<<32, c.value+1)
			}
		}
	}
	rng := rand.New(rand.NewPCG(28, 4))
	const cases = 50_000
	for i := 0; i < cases; i++ {
		nr := nrs[rng.IntN(len(nrs))]
		if rng.IntN(8) == 0 {
			nr = uint32(rng.IntN(500))
		}
		var args [6]uint64
		for j := range args {
			if rng.IntN(6) == 0 {
				args[j] = rng.Uint64()
			} else {
				args[j] = pool[rng.IntN(len(pool))]
			}
		}
		got, err := vm.Run(seccompData(uintptr(nr), args[:]))
		if err != nil {
			t.Fatal(err)
		}
		if want := f.model(nr, args); uint32(got) != want {
			t.Fatalf("call %d %#x: filter %#x, rules %#x", nr, args, uint32(got), want)
		}
	}
}

// model is the filter's decision read from its rules, for the running
// architecture (the filter's own arch check and x32 guard aside).
func (f filter) model(nr uint32, args [6]uint64) uint32 {
	if f.arch.x86_64 && nr >= uint32(arch.X32.SeccompMask) {
		return uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)
	}
	holds := func(c cond) bool {
		a := args[c.arg]
		switch c.op {
		case eq64:
			return a == c.value
		case bitsSet:
			return uint32(a)&uint32(c.value) != 0
		case bitsClear:
			return uint32(a)&uint32(c.value) == 0
		}
		return uint32(a) == uint32(c.value)
	}
	for _, r := range f.rules {
		if r.nr != nr {
			continue
		}
		if len(r.when) == 0 {
			return uint32(r.action)
		}
		for _, set := range r.when {
			all := true
			for _, c := range set {
				all = all && holds(c)
			}
			if all {
				return uint32(r.action)
			}
		}
	}
	return uint32(seccomp.ActionKillProcess)
}
