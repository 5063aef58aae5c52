package procmem

import (
	"os"
	"os/exec"
	"slices"
	"strings"
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

func TestSampler(t *testing.T) {
	s := StartSampler(os.Getpid(), time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	peak, n := s.Stop()
	if peak <= 0 || n < 2 {
		t.Fatalf("peak %d after %d samples", peak, n)
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
	if ppid, err := ParseStatPPID("12 (a (b) c) S 7 12 12 0"); err != nil || ppid != 7 {
		t.Fatalf("%d %v", ppid, err)
	}
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
