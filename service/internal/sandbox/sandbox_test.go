package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The test binary re-executed with SANDBOX_TEST_TRY set applies the
// sandbox to itself, prints its layers, then tries one thing and prints
// what happened (unless the sandbox kills it first).
func TestMain(m *testing.M) {
	if try := os.Getenv("SANDBOX_TEST_TRY"); try != "" {
		// As a cell does (cellcmd.go): a GOMAXPROCS set by hand stops
		// sysmon's once-a-second re-read of the cgroup CPU files, a
		// pread64 the filter kills. A child slow to reach its attempt (a
		// loaded machine) died of it before printing its layers.
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
		var layers []Layer
		if os.Getenv("SANDBOX_TEST_NO_LANDLOCK") != "" {
			// A kernel before 6.12, or a runtime that refuses Landlock:
			// seccomp alone must hold.
			runtime.LockOSThread()
			layers = []Layer{layer(NoNewPrivs, setNoNewPrivs), layer(Seccomp, loadSeccomp)}
		} else {
			layers = Apply(Config{AddressSpace: 1 << 30, OpenFiles: 32})
		}
		json.NewEncoder(os.Stdout).Encode(layers)
		fmt.Println(attempt(try))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// attempt does one thing a sandboxed cell may or may not do.
func attempt(what string) string {
	outcome := func(err error) string {
		if err == nil {
			return "done"
		}
		return err.Error()
	}
	switch what {
	case "open":
		fd, err := syscall.Open("/etc/hostname", syscall.O_RDONLY, 0)
		syscall.Close(fd)
		return outcome(err)
	case "socket":
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		syscall.Close(fd)
		return outcome(err)
	case "exec":
		return outcome(syscall.Exec("/bin/true", []string{"true"}, nil))
	case "fork":
		_, _, errno := syscall.RawSyscall(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0)
		return outcome(errnoErr(errno))
	case "signal-parent":
		return outcome(syscall.Kill(os.Getppid(), 0))
	case "fcntl-setown":
		// With O_ASYNC, the kernel would send the owner SIGIO (or the
		// F_SETSIG signal) whenever the descriptor is ready: a way to
		// signal the supervisor that kill's own-PID rule does not see.
		_, err := unix.FcntlInt(0, unix.F_SETOWN, os.Getppid())
		return outcome(err)
	case "fcntl-setown-ex":
		_, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, 0, unix.F_SETOWN_EX, 0)
		return outcome(errnoErr(errno))
	case "fcntl-setsig":
		_, err := unix.FcntlInt(0, unix.F_SETSIG, int(syscall.SIGKILL))
		return outcome(err)
	case "fcntl-async":
		fl, err := unix.FcntlInt(0, unix.F_GETFL, 0)
		if err == nil {
			_, err = unix.FcntlInt(0, unix.F_SETFL, fl|unix.O_ASYNC)
		}
		return outcome(err)
	case "fcntl-needed":
		// What the Go runtime and glibc do with descriptors.
		fl, err := unix.FcntlInt(0, unix.F_GETFL, 0)
		if err == nil {
			_, err = unix.FcntlInt(0, unix.F_SETFL, fl|unix.O_NONBLOCK)
		}
		if err == nil {
			_, err = unix.FcntlInt(0, unix.F_GETFD, 0)
		}
		if err == nil {
			_, err = unix.FcntlInt(0, unix.F_SETFD, unix.FD_CLOEXEC)
		}
		if err == nil {
			var fd int
			fd, err = unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 0)
			syscall.Close(fd)
		}
		return outcome(err)
	case "fcntl-other":
		_, err := unix.FcntlInt(0, unix.F_DUPFD, 0)
		return outcome(err)
	case "read-parent":
		// What a cell may learn about another process: the supervisor's
		// robust-list pointer (its address layout), affinity, scheduling
		// and limits. Each is refused; the same about itself works.
		ppid := uintptr(os.Getppid())
		var head, size uintptr
		var mask [128]byte
		var param [8]byte
		var lim unix.Rlimit
		var out []string
		for _, c := range []struct {
			name string
			nr   uintptr
			args [4]uintptr
		}{
			{"get_robust_list", unix.SYS_GET_ROBUST_LIST, [4]uintptr{ppid, uintptr(unsafe.Pointer(&head)), uintptr(unsafe.Pointer(&size))}},
			{"sched_getaffinity", unix.SYS_SCHED_GETAFFINITY, [4]uintptr{ppid, uintptr(len(mask)), uintptr(unsafe.Pointer(&mask[0]))}},
			{"sched_getparam", unix.SYS_SCHED_GETPARAM, [4]uintptr{ppid, uintptr(unsafe.Pointer(&param[0]))}},
			{"sched_getscheduler", unix.SYS_SCHED_GETSCHEDULER, [4]uintptr{ppid}},
			{"prlimit64", unix.SYS_PRLIMIT64, [4]uintptr{ppid, unix.RLIMIT_NOFILE, 0, uintptr(unsafe.Pointer(&lim))}},
			{"own sched_getaffinity", unix.SYS_SCHED_GETAFFINITY, [4]uintptr{0, uintptr(len(mask)), uintptr(unsafe.Pointer(&mask[0]))}},
			{"own sched_getaffinity by PID", unix.SYS_SCHED_GETAFFINITY, [4]uintptr{uintptr(os.Getpid()), uintptr(len(mask)), uintptr(unsafe.Pointer(&mask[0]))}},
			{"own sched_getscheduler", unix.SYS_SCHED_GETSCHEDULER, [4]uintptr{0}},
			{"own prlimit64", unix.SYS_PRLIMIT64, [4]uintptr{uintptr(os.Getpid()), unix.RLIMIT_NOFILE, 0, uintptr(unsafe.Pointer(&lim))}},
		} {
			_, _, errno := syscall.Syscall6(c.nr, c.args[0], c.args[1], c.args[2], c.args[3], 0, 0)
			out = append(out, c.name+": "+outcome(errnoErr(errno)))
		}
		return strings.Join(out, "; ")
	case "mount":
		return outcome(syscall.Mount("none", "/tmp", "tmpfs", 0, ""))
	case "threads":
		// New OS threads (clone with CLONE_THREAD) and signals to itself
		// (the Go runtime's preemption) keep working.
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread() // this thread exits with the goroutine: a new one is made
				busy := time.Now().Add(50 * time.Millisecond)
				for time.Now().Before(busy) {
				}
			}()
		}
		wg.Wait()
		runtime.GC()
		return "done"
	case "wait":
		bufio.NewReader(os.Stdin).ReadString('\n')
		return "done"
	}
	return "unknown attempt " + what
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// child runs the test binary sandboxed, trying what.
func child(t *testing.T, what string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_TRY="+what)
	return cmd
}

// Without Landlock (kernels before 6.12 have no signal scoping; some
// runtimes refuse Landlock altogether), seccomp alone must keep a cell
// from arranging for the kernel to signal its supervisor: the fcntl
// commands that set a descriptor's owner or signal kill the cell, other
// commands it does not need are refused, the ones it needs work.
func TestFcntlWithoutLandlock(t *testing.T) {
	for _, tc := range []struct {
		try     string
		outcome string // the line printed, or "" when the process is killed
	}{
		{"fcntl-setown", ""},
		{"fcntl-setown-ex", ""},
		{"fcntl-setsig", ""},
		{"fcntl-async", ""},
		{"fcntl-other", "operation not permitted"},
		{"fcntl-needed", "done"},
	} {
		t.Run(tc.try, func(t *testing.T) {
			cmd := child(t, tc.try)
			cmd.Env = append(cmd.Env, "SANDBOX_TEST_NO_LANDLOCK=1")
			out, err := cmd.Output()
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			var layers []Layer
			if json.Unmarshal([]byte(lines[0]), &layers) != nil || len(layers) != 2 || !layers[0].On || !layers[1].On {
				t.Fatalf("want no_new_privs and seccomp on, got %q (%v)", out, err)
			}
			var ee *exec.ExitError
			if tc.outcome == "" {
				if ws, ok := exitStatus(err, &ee); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
					t.Fatalf("want death by SIGSYS, got %v, output %q", err, out)
				}
				return
			}
			if err != nil || len(lines) < 2 || lines[1] != tc.outcome {
				t.Fatalf("want %q, got %q (%v)", tc.outcome, out, err)
			}
		})
	}
}

// Without Landlock (which would keep a cell from another process's
// /proc and ptrace-like reads), seccomp alone lets a cell read about
// itself only: the supervisor's robust-list pointer, affinity, scheduling
// and limits are refused (EPERM, so that a library asking copes).
func TestReadsAboutOtherProcessesWithoutLandlock(t *testing.T) {
	cmd := child(t, "read-parent")
	cmd.Env = append(cmd.Env, "SANDBOX_TEST_NO_LANDLOCK=1")
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := "get_robust_list: operation not permitted; sched_getaffinity: operation not permitted; " +
		"sched_getparam: operation not permitted; sched_getscheduler: operation not permitted; " +
		"prlimit64: operation not permitted; own sched_getaffinity: done; own sched_getaffinity by PID: done; " +
		"own sched_getscheduler: done; own prlimit64: done"
	if err != nil || len(lines) < 2 || lines[1] != want {
		t.Fatalf("got %q (%v)\nwant %q", out, err, want)
	}
}

func landlockAvailable() bool {
	abi, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	return errno == 0 && int(abi) >= 1
}

func TestSandboxedProcess(t *testing.T) {
	for _, tc := range []struct {
		try     string
		outcome string // the line printed, or "" when the process is killed
		signal  syscall.Signal
	}{
		{"open", "operation not permitted", 0},
		{"socket", "", syscall.SIGSYS},
		{"exec", "", syscall.SIGSYS},
		{"fork", "", syscall.SIGSYS},
		{"signal-parent", "", syscall.SIGSYS},
		{"mount", "", syscall.SIGSYS},
		{"threads", "done", 0},
	} {
		t.Run(tc.try, func(t *testing.T) {
			out, err := child(t, tc.try).Output()
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			var layers []Layer
			if len(lines) == 0 || json.Unmarshal([]byte(lines[0]), &layers) != nil {
				t.Fatalf("no layers printed: %q, %v", out, err)
			}
			for _, l := range layers {
				if !l.On && (l.Name != Landlock || landlockAvailable()) {
					t.Errorf("layer %s off: %s", l.Name, l.Detail)
				}
			}
			var ee *exec.ExitError
			switch {
			case tc.signal != 0:
				ws, ok := exitStatus(err, &ee)
				if !ok || !ws.Signaled() || ws.Signal() != tc.signal {
					t.Fatalf("want death by %v, got %v, output %q", tc.signal, err, out)
				}
			case err != nil || len(lines) < 2 || lines[1] != tc.outcome:
				t.Fatalf("want %q, got %q (%v)", tc.outcome, out, err)
			}
		})
	}
}

func exitStatus(err error, ee **exec.ExitError) (syscall.WaitStatus, bool) {
	if !errors.As(err, ee) {
		return 0, false
	}
	ws, ok := (*ee).Sys().(syscall.WaitStatus)
	return ws, ok
}

// What /proc says of a sandboxed process: the filter, no_new_privs and the
// limits.
func TestSandboxedProcessStatus(t *testing.T) {
	cmd := child(t, "wait")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	status, _ := os.ReadFile("/proc/" + pid + "/status")
	for _, want := range []string{"\nSeccomp:\t2\n", "\nNoNewPrivs:\t1\n"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("status lacks %q", strings.TrimSpace(want))
		}
	}
	// Capabilities are per thread: every thread, libvips' in a cell too,
	// holds none (the test runs as root, so it starts with all of them).
	tasks, err := os.ReadDir("/proc/" + pid + "/task")
	if err != nil || len(tasks) < 2 {
		t.Fatalf("threads: %v, %v", tasks, err)
	}
	for _, task := range tasks {
		status, _ := os.ReadFile("/proc/" + pid + "/task/" + task.Name() + "/status")
		for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb", "CapBnd"} {
			if want := "\n" + set + ":\t0000000000000000\n"; !strings.Contains(string(status), want) {
				line := regexp.MustCompile(set + `:\t\S+`).FindString(string(status))
				t.Errorf("thread %s: %s, want 0", task.Name(), line)
			}
		}
	}
	limits, _ := os.ReadFile("/proc/" + pid + "/limits")
	for _, want := range []string{"Max core file size        0                    0", "Max open files            32                   32"} {
		if !strings.Contains(string(limits), want) {
			t.Errorf("limits lack %q:\n%s", want, limits)
		}
	}
}

func TestPolicyNamesOnlyKnownCalls(t *testing.T) {
	f, err := policy(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	insts, err := f.program()
	if err != nil {
		t.Fatal(err)
	}
	if insts[len(insts)-1] != (bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)}) {
		t.Error("a call off the list must kill the cell")
	}
	seen := map[string]bool{}
	for _, list := range [][]string{allowed, refused, killed} {
		for _, n := range list {
			if seen[n] {
				t.Errorf("%s is listed twice", n)
			}
			seen[n] = true
		}
	}
}

// A name no architecture has is a typo: the call it meant would fall to
// the default action (or be allowed by nobody), so the policy must not
// build. Each list is tried, since each is filtered on its own.
func TestPolicyRefusesMisspeltCall(t *testing.T) {
	for _, list := range []*[]string{&allowed, &refused, &killed} {
		saved := *list
		*list = append(slices.Clone(saved), "opne")
		_, err := policy(os.Getpid())
		*list = saved
		if err == nil || !strings.Contains(err.Error(), "opne") {
			t.Errorf("a policy naming opne: %v, want an error naming it", err)
		}
	}
}
