package procfs

import (
	"net"
	"os"
	"slices"
	"strings"
	"testing"
)

// A status text as Linux 6.1 writes it (the lines the parsers read, and
// their neighbours).
const statusText = `Name:	thumbd
Umask:	0022
State:	S (sleeping)
Tgid:	4242
Threads:	7
CapInh:	0000000000000000
CapPrm:	000001ffffffffff
CapEff:	000001ffffffffff
CapBnd:	000001ffffffffff
CapAmb:	0000000000000000
NoNewPrivs:	0
Seccomp:	0
Cpus_allowed:	3
Cpus_allowed_list:	0-1
Mems_allowed_list:	0
`

func TestParseCaps(t *testing.T) {
	got, err := ParseCaps(statusText)
	want := Caps{Permitted: 0x1ffffffffff, Effective: 0x1ffffffffff, Bounding: 0x1ffffffffff}
	if err != nil || got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	// A set left out must not read as "none held".
	if _, err := ParseCaps(strings.Replace(statusText, "CapAmb:", "CapXyz:", 1)); err == nil || !strings.Contains(err.Error(), "CapAmb") {
		t.Errorf("no CapAmb line: %v", err)
	}
	if _, err := ParseCaps(strings.Replace(statusText, "CapEff:\t000001ffffffffff", "CapEff:\tzz", 1)); err == nil {
		t.Error("CapEff zz parsed")
	}
}

func TestParseCPUsAllowed(t *testing.T) {
	if got, err := ParseCPUsAllowed(statusText); err != nil || got != "0-1" {
		t.Errorf("got %q, %v", got, err)
	}
	// Cpus_allowed (the mask) is a prefix of the list's name: not it.
	if got, err := ParseCPUsAllowed("Cpus_allowed:\t3\n"); err == nil {
		t.Errorf("the mask read as the list: %q", got)
	}
}

func TestParseNetTCPInodes(t *testing.T) {
	const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 912345 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 912399 1 0000000000000000 20 4 30 10 -1
`
	if got := ParseNetTCPInodes(tcp); !slices.Equal(got, []string{"912345", "912399"}) {
		t.Errorf("got %v", got)
	}
}

// The live readers, on this process: its threads, its descriptors (a
// listener it opens among them, as a TCP socket), its capabilities and CPUs.
func TestLiveProcess(t *testing.T) {
	pid := os.Getpid()
	tasks, err := Tasks(pid)
	if err != nil || !slices.Contains(tasks, pid) || !slices.IsSorted(tasks) {
		t.Fatalf("tasks %v, %v: want the main thread %d among them, sorted", tasks, err, pid)
	}
	if _, err := TaskCaps(pid, pid); err != nil {
		t.Errorf("TaskCaps: %v", err)
	}
	if _, err := TaskCaps(pid, 1<<30); err == nil {
		t.Error("TaskCaps of a thread that does not exist: no error")
	}
	if cpus, err := CPUsAllowed(pid); err != nil || cpus == "" {
		t.Errorf("CPUsAllowed: %q, %v", cpus, err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File() // a second descriptor of the socket, whose number we know
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fds, err := FDs(pid)
	if err != nil || !slices.Contains(fds, 0) || !slices.Contains(fds, int(f.Fd())) {
		t.Fatalf("FDs %v, %v: want 0 and %d", fds, err, f.Fd())
	}
	targets, err := FDTargets(pid)
	if err != nil {
		t.Fatal(err)
	}
	sock := targets[int(f.Fd())]
	if !strings.HasPrefix(sock, "socket:[") {
		t.Fatalf("descriptor %d is %q, not a socket", f.Fd(), sock)
	}
	tcp, err := TCPSockets(pid)
	if err != nil || !tcp[sock] {
		t.Errorf("TCPSockets has no %s (%d sockets, %v)", sock, len(tcp), err)
	}
	if _, err := FDs(1 << 30); err == nil {
		t.Error("FDs of a process that does not exist: no error")
	}
}

func TestParseMemTotal(t *testing.T) {
	const meminfo = "MemTotal:        8029176 kB\nMemFree:         1234567 kB\n"
	if got, err := ParseMemTotal(meminfo); err != nil || got != 8029176*1024 {
		t.Errorf("got %d, %v", got, err)
	}
	for _, bad := range []string{"MemFree: 1 kB\n", "MemTotal: lots kB\n", "MemTotal: 0 kB\n", "MemTotal: 12 MB\n"} {
		if got, err := ParseMemTotal(bad); err == nil {
			t.Errorf("%q: %d, no error", bad, got)
		}
	}
}

func TestParseCgroups(t *testing.T) {
	const v1 = "12:memory:/kubepods/pod1/abc\n11:cpu,cpuacct:/kubepods/pod1/abc\nnot a line\n0::/\n"
	got := ParseCgroups(v1)
	if len(got) != 3 {
		t.Fatalf("got %+v", got)
	}
	if g := got[0]; g.ID != 12 || !slices.Equal(g.Controllers, []string{"memory"}) || g.Path != "/kubepods/pod1/abc" {
		t.Errorf("memory line: %+v", g)
	}
	if g := got[1]; !slices.Equal(g.Controllers, []string{"cpu", "cpuacct"}) {
		t.Errorf("cpu line: %+v", g)
	}
	if g := got[2]; g.ID != 0 || g.Controllers != nil || g.Path != "/" {
		t.Errorf("unified line: %+v", g)
	}
	// A path may hold colons: only the first two separate.
	if g := ParseCgroups("0::/a:b\n"); len(g) != 1 || g[0].Path != "/a:b" {
		t.Errorf("path with a colon: %+v", g)
	}
}

func TestParseCPUModel(t *testing.T) {
	const cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
	if got := ParseCPUModel(cpuinfo); got != "AMD EPYC 7B13" {
		t.Errorf("got %q", got)
	}
	if got := ParseCPUModel("processor\t: 0\nmodel\t\t: 1\n"); got != "" {
		t.Errorf("no model name: %q", got)
	}
	if _, err := CPUModel(); err != nil {
		t.Error(err)
	}
}
