package procfs

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func parseFile(t *testing.T, name string) (Status, error) {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return ParseStatus(f)
}

func TestParseStatusNode(t *testing.T) {
	got, err := parseFile(t, "status-node.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := Status{VmRSS: 72092 * 1024, VmSize: 22534140 * 1024, VmHWM: 74112 * 1024, RssAnon: 39876 * 1024, RssFile: 32216 * 1024, Threads: 11}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestParseStatusRealFile(t *testing.T) {
	got, err := parseFile(t, "status-self.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got.VmRSS <= 0 || got.VmSize < got.VmRSS || got.RssAnon+got.RssFile > got.VmRSS+1024*1024 || got.Threads < 1 {
		t.Fatalf("implausible: %+v", got)
	}
}

func TestParseStatusZombie(t *testing.T) {
	if _, err := parseFile(t, "status-zombie.txt"); err == nil {
		t.Fatal("want an error for a status without VmRSS")
	}
}

func TestParseStatusBad(t *testing.T) {
	for _, in := range []string{"VmRSS:\tlots kB\n", "VmRSS:\t12 MB\n", "Threads:\tx\nVmRSS:\t1 kB\n"} {
		if _, err := ParseStatus(strings.NewReader(in)); err == nil {
			t.Errorf("%q: want an error", in)
		}
	}
}

func TestReadSelf(t *testing.T) {
	st, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.VmRSS < 1<<20 {
		t.Fatalf("VmRSS %d: too small for a Go test binary", st.VmRSS)
	}
}

func TestParseStat(t *testing.T) {
	line := "12 (a (b) c) Z 7 12 12 0 -1 4194560 1490 0 0 0 250 75 3 4 20 5 3 0 12345 1000000 500\n"
	got, err := ParseStat(line)
	want := Stat{State: "Z", PPID: 7, UTime: 250, STime: 75, CUTime: 3, CSTime: 4, StartTime: 12345, Nice: 5}
	if err != nil || got != want {
		t.Fatalf("got %+v %v, want %+v", got, err, want)
	}
	for _, bad := range []string{"12 (a) S 7 12 12 0", "12 (a) S x 12 12 0 -1 4194560 1490 0 0 0 250 75 3 4 20 0 3 0 12345", "garbage"} {
		if _, err := ParseStat(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The clock ticks are the system's: what getconf CLK_TCK (glibc's
// sysconf) says.
func TestClockTicksAreGetconfs(t *testing.T) {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		t.Skip("no getconf:", err)
	}
	if got, want := strconv.FormatInt(ClockTicks(), 10), strings.TrimSpace(string(out)); got != want {
		t.Fatalf("ClockTicks %s, getconf CLK_TCK %s", got, want)
	}
}

// A child's state and age are read from its stat line: alive and young,
// then a zombie until reaped, then gone.
func TestStateAndAge(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// A child just started may still be in its exec, paging in sleep's
	// binary: uninterruptible disk sleep (D) then (seen in CI). Any live
	// state is right; "" (gone) or "Z" is not.
	if s := State(pid); s != "S" && s != "R" && s != "D" {
		t.Errorf("state of a sleeping child %q", s)
	}
	if a := Age(pid); a < 0 || a > 10*time.Second {
		t.Errorf("age of a new child %v", a)
	}
	// /proc/uptime and a start time in clock ticks are both 10 ms
	// coarse: a young process may read 0 (seen in CI), never less.
	if a := Age(os.Getpid()); a < 0 || a > time.Hour {
		t.Errorf("own age %v", a)
	}
	cmd.Process.Kill()
	for deadline := time.Now().Add(5 * time.Second); State(pid) != "Z" && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if s := State(pid); s != "Z" {
		t.Errorf("state of a killed, unreaped child %q", s)
	}
	cmd.Wait()
	if s, a := State(pid), Age(pid); s != "" || a != 0 {
		t.Errorf("a reaped child: state %q age %v", s, a)
	}
}

func TestParseStatCPU(t *testing.T) {
	// The name holds a space and a ')' to check fields are counted from the last ')'.
	line := "1234 (we ird) name) S 1 1234 1234 0 -1 4194560 1490 0 0 0 250 75 0 0 20 0 3 0 12345 1000000 500 18446744073709551615\n"
	got, err := ParseStatCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3250 * time.Millisecond; got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := ParseStatCPU("garbage"); err == nil {
		t.Fatal("want an error")
	}
	if _, err := CPUTime(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}

// A busy child's CPU time counts while it runs and after it is reaped,
// and the process's own CPU time (CPUTime) leaves it out.
func TestTreeCPUTime(t *testing.T) {
	self := os.Getpid()
	tree0, err := TreeCPUTime(self)
	if err != nil {
		t.Fatal(err)
	}
	own0, _ := CPUTime(self)
	child := exec.Command("sh", "-c", "while :; do :; done")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	const busy = 300 * time.Millisecond
	var live time.Duration
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if live, _ = CPUTime(child.Process.Pid); live >= busy {
			break
		}
	}
	if live < busy {
		t.Fatalf("the child used %v of CPU in 10 s", live)
	}
	// Read this process's own time before the tree's (and own0 after
	// tree0 above), so its growth between the two reads can only be
	// under-subtracted: a race that once made the child look 10 ms short.
	own1, _ := CPUTime(self)
	tree1, err := TreeCPUTime(self)
	if err != nil {
		t.Fatal(err)
	}
	if got := tree1 - tree0 - (own1 - own0); got < busy {
		t.Errorf("running: the tree grew by %v beyond this process, want at least the child's %v", got, busy)
	}
	child.Process.Kill()
	child.Wait()
	tree2, err := TreeCPUTime(self)
	if err != nil {
		t.Fatal(err)
	}
	if tree2 < tree1 {
		t.Errorf("reaped: the tree's CPU time fell from %v to %v", tree1, tree2)
	}
	if own2, _ := CPUTime(self); own2-own0 >= busy {
		t.Errorf("CPUTime counted the child: %v", own2-own0)
	}
}

func TestSampler(t *testing.T) {
	s := StartSampler(os.Getpid(), time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	peak, n := s.Stop()
	if peak <= 0 || n < 2 {
		t.Fatalf("peak %d after %d samples", peak, n)
	}
}

// The peak counts children: a parent with a child holding 64 MiB peaks
// above the parent alone by about that.
func TestSamplerCountsChildren(t *testing.T) {
	self, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// dd's one 64 MiB block is resident while dd waits to write it to a
	// pipe nobody reads.
	child := exec.Command("dd", "if=/dev/zero", "bs=64M", "count=1", "status=none")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	child.Stdout = pw
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	const want = 60 << 20
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, err := Read(child.Process.Pid); err == nil && st.VmRSS >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("dd never held its block")
		}
	}
	s := StartSampler(os.Getpid(), time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	peak, _ := s.Stop()
	if peak < self.VmRSS+want {
		t.Fatalf("peak %d MiB, want this process's %d MiB plus the child's 60 or more", peak>>20, self.VmRSS>>20)
	}
}

func TestHostCPU(t *testing.T) {
	a, err := ParseHostCPU("cpu  100 0 50 800 10 0 20 20 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ParseHostCPU("cpu  200 0 100 900 10 0 40 70 0 0\n")
	idle, steal, irq := Share(a, b)
	if idle != 100.0/320 || steal != 50.0/320 || irq != 20.0/320 {
		t.Fatalf("idle %v steal %v irq %v", idle, steal, irq)
	}
	if _, err := ParseHostCPU("intr 1 2 3"); err == nil {
		t.Fatal("want an error")
	}
	if _, err := ReadHostCPU(); err != nil {
		t.Fatal(err)
	}
}

func TestParseArenas(t *testing.T) {
	maps := `55d0c0000000-55d0c0021000 r--p 00000000 fe:01 123 /usr/bin/thumbd
7f1c00000000-7f1c00021000 rw-p 00000000 00:00 0
7f1c00021000-7f1c04000000 ---p 00000000 00:00 0
7f1c08000000-7f1c0a000000 rw-p 00000000 00:00 0
7f1c0a000000-7f1c0c000000 ---p 00000000 00:00 0
7f1c10000000-7f1c10021000 rw-p 00000000 00:00 0
7f1c10021000-7f1c12000000 ---p 00000000 00:00 0
7f1c20000000-7f1c24000000 rw-p 00000000 00:00 0
7f1c30000000-7f1c30100000 rw-p 00000000 fe:01 9 /tmp/mapped
`
	// Two full 64 MiB heaps; a short one (32 MiB reserved), a plain 64 MiB
	// read-write mapping (counted too: the same shape) and a file mapping.
	n, err := ParseArenas(maps)
	if err != nil || n != 3 {
		t.Fatalf("got %d arenas, %v; want 3", n, err)
	}
	if _, err := ParseArenas("zz-yy rw-p 0 00:00 0\n"); err == nil {
		t.Fatal("a malformed line: no error")
	}
	if n, err := Arenas(os.Getpid()); err != nil || n < 0 {
		t.Fatalf("own maps: %d %v", n, err)
	}
}

func TestChildren(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	kids, err := Children(os.Getpid())
	if err != nil || !slices.Contains(kids, cmd.Process.Pid) {
		t.Fatalf("%v %v", kids, err)
	}
	if rss, err := ChildrenRSS(os.Getpid()); err != nil || rss <= 0 {
		t.Fatalf("%d %v", rss, err)
	}
}

func TestParsePss(t *testing.T) {
	rollup := "00400000-7ffc1e36f000 ---p 00000000 00:00 0  [rollup]\nRss:  15136 kB\nPss:   5741 kB\nPss_Dirty: 2288 kB\n"
	if got, err := ParsePss(strings.NewReader(rollup)); err != nil || got != 5741<<10 {
		t.Fatalf("%d, %v", got, err)
	}
	for _, bad := range []string{"Rss: 1 kB\n", "Pss: many kB\n"} {
		if _, err := ParsePss(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestHelperSleep is the child of TestTreePssCountsSharedPagesOnce: this
// test binary again, so that the two share the binary's pages.
func TestHelperSleep(t *testing.T) {
	if os.Getenv("PROCMEM_HELPER_SLEEP") == "" {
		t.Skip("the child of TestTreePssCountsSharedPagesOnce")
	}
	time.Sleep(30 * time.Second)
}

// Two processes of one binary: their PSS, summed, counts the pages they
// share once, so it is under the sum of their VmRSS and over either's own.
func TestTreePssCountsSharedPagesOnce(t *testing.T) {
	self := os.Getpid()
	child := exec.Command(os.Args[0], "-test.run", "^TestHelperSleep$")
	child.Env = append(os.Environ(), "PROCMEM_HELPER_SLEEP=1")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	time.Sleep(500 * time.Millisecond) // the child's runtime started and its test sleeping
	kid, err := Read(child.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	both, err := TreePss(self)
	if err != nil {
		t.Fatal(err)
	}
	me, _ := Read(self)
	t.Logf("PSS of both %d; VmRSS %d + %d", both, me.VmRSS, kid.VmRSS)
	if both >= me.VmRSS+kid.VmRSS-256<<10 || both <= max(me.RssAnon, kid.VmRSS/2) {
		t.Errorf("PSS of both %d; VmRSS %d + %d (RssAnon %d)", both, me.VmRSS, kid.VmRSS, me.RssAnon)
	}
}

func TestEnviron(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.Env = []string{"A=1", "MALLOC_ARENA_MAX=2"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	// Start returns once the child is forked, maybe before its exec has
	// replaced the environment (read then: [""]); bounded wait for it.
	var env []string
	var err error
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if env, err = Environ(cmd.Process.Pid); err != nil || slices.Equal(env, cmd.Env) {
			break
		}
	}
	if err != nil || !slices.Equal(env, cmd.Env) {
		t.Fatalf("%q %v, want %q", env, err, cmd.Env)
	}
	if _, err := Environ(1 << 30); err == nil {
		t.Fatal("no such process: no error")
	}
}

// A process's threads are all "T" once SIGSTOP has stopped it, and none
// is before.
func TestThreadStates(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	states, err := ThreadStates(cmd.Process.Pid)
	if err != nil || len(states) == 0 || slices.Contains(states, "T") {
		t.Fatalf("running: %v %v", states, err)
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	deadline := time.Now().Add(5 * time.Second)
	for {
		states, err = ThreadStates(cmd.Process.Pid)
		if err == nil && !slices.ContainsFunc(states, func(s string) bool { return s != "T" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stopped: %v %v", states, err)
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := ThreadStates(1 << 30); err == nil {
		t.Error("a process that does not exist has threads")
	}
}
