// Package procfs reads a process's memory and CPU figures from /proc.
package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Status holds the memory lines of /proc/PID/status, in bytes.
type Status struct {
	VmRSS   int64 `json:"vm_rss"`
	VmSize  int64 `json:"vm_size"`
	VmHWM   int64 `json:"vm_hwm"`
	RssAnon int64 `json:"rss_anon"`
	RssFile int64 `json:"rss_file"`
	Threads int   `json:"threads"`
}

// ParseStatus parses the text of /proc/PID/status. Sizes there are in kB
// (kibibytes); missing lines leave their field at zero, but a file with no
// VmRSS line at all (a kernel thread, a zombie) is an error.
func ParseStatus(r io.Reader) (Status, error) {
	var st Status
	seenRSS := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) == 0 {
			continue
		}
		if key == "Threads" {
			n, err := strconv.Atoi(fields[0])
			if err != nil {
				return Status{}, fmt.Errorf("procfs: Threads %q: %w", val, err)
			}
			st.Threads = n
			continue
		}
		var dst *int64
		switch key {
		case "VmRSS":
			dst, seenRSS = &st.VmRSS, true
		case "VmSize":
			dst = &st.VmSize
		case "VmHWM":
			dst = &st.VmHWM
		case "RssAnon":
			dst = &st.RssAnon
		case "RssFile":
			dst = &st.RssFile
		default:
			continue
		}
		n, err := kibibytes(key, val)
		if err != nil {
			return Status{}, err
		}
		*dst = n
	}
	if err := sc.Err(); err != nil {
		return Status{}, err
	}
	if !seenRSS {
		return Status{}, fmt.Errorf("procfs: no VmRSS line (kernel thread or exited process)")
	}
	return st, nil
}

// kibibytes is the value of a "Key:   N kB" line of /proc (status,
// smaps_rollup), in bytes.
func kibibytes(key, val string) (int64, error) {
	fields := strings.Fields(val)
	if len(fields) == 0 {
		return 0, fmt.Errorf("procfs: %s: no value", key)
	}
	n, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("procfs: %s %q: %w", key, val, err)
	}
	if len(fields) > 1 && fields[1] != "kB" {
		return 0, fmt.Errorf("procfs: %s: unknown unit %q", key, fields[1])
	}
	return n * 1024, nil
}

// Read reads /proc/PID/status.
func Read(pid int) (Status, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Status{}, err
	}
	return ParseStatus(bytes.NewReader(b))
}

// Children lists the processes whose parent is pid (a thumbd's cells).
func Children(pid int) ([]int, error) {
	tree, err := processTree()
	return tree[pid], err
}

// processTree maps every process's PID to its children's, from one pass
// over /proc (each /proc/N/stat names its parent, not its children).
func processTree() (map[int][]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	tree := make(map[int][]int)
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if st, err := ParseStat(string(b)); err == nil {
			tree[st.PPID] = append(tree[st.PPID], child)
		}
	}
	return tree, nil
}

// ChildrenRSS is the VmRSS of pid's children, summed: in cells mode, what
// the cells hold beside the supervisor.
func ChildrenRSS(pid int) (int64, error) {
	kids, err := Children(pid)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, k := range kids {
		if st, err := Read(k); err == nil {
			sum += st.VmRSS
		}
	}
	return sum, nil
}

// ParsePss returns the Pss line of /proc/PID/smaps_rollup in bytes.
func ParsePss(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if key, val, _ := strings.Cut(sc.Text(), ":"); key == "Pss" {
			return kibibytes(key, val)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("procfs: smaps_rollup: no Pss line")
}

// TreePss is the proportional set size of pid and its children, summed:
// what they hold together, the pages they share (in cells mode the
// binary's, which every cell maps again) counted once across them instead
// of once in each VmRSS. Exact while no other process maps the same pages.
func TreePss(pid int) (int64, error) {
	kids, err := Children(pid)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, p := range append([]int{pid}, kids...) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", p))
		if err != nil {
			if p == pid {
				return 0, err
			}
			continue // a cell that ended meanwhile
		}
		pss, err := ParsePss(bytes.NewReader(b))
		if err != nil {
			return 0, err
		}
		sum += pss
	}
	return sum, nil
}

// Stat is what the project reads of /proc/PID/stat, times in clock ticks.
type Stat struct {
	State                        string // R, S, D, Z...
	PPID                         int
	UTime, STime, CUTime, CSTime int64 // CUTime, CSTime: children waited for
	StartTime                    int64 // since boot
	Nice                         int64 // -20..19; a thread's own (/proc/PID/task/TID/stat)
}

// ParseStat parses the text of /proc/PID/stat. The command name (field 2)
// may hold spaces and parentheses, so fields are counted from the last ')'.
func ParseStat(stat string) (Stat, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("procfs: malformed stat line")
	}
	// After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16)
	// cstime(17) ... nice(19) ... starttime(22); f[0] is field 3.
	f := strings.Fields(stat[i+1:])
	if len(f) < 20 {
		return Stat{}, fmt.Errorf("procfs: short stat line")
	}
	st := Stat{State: f[0]}
	var err error
	if st.PPID, err = strconv.Atoi(f[1]); err != nil {
		return Stat{}, fmt.Errorf("procfs: bad ppid %q", f[1])
	}
	for k, dst := range map[int]*int64{14: &st.UTime, 15: &st.STime, 16: &st.CUTime, 17: &st.CSTime, 19: &st.Nice, 22: &st.StartTime} {
		if *dst, err = strconv.ParseInt(f[k-3], 10, 64); err != nil {
			return Stat{}, fmt.Errorf("procfs: bad stat field %d %q", k, f[k-3])
		}
	}
	return st, nil
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	return readStat(fmt.Sprintf("/proc/%d/stat", pid))
}

// ReadTaskStat reads /proc/PID/task/TID/stat: one thread's (its Nice is
// its own; Linux keeps one per thread).
func ReadTaskStat(pid, tid int) (Stat, error) {
	return readStat(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
}

func readStat(path string) (Stat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(string(b))
}

// ThreadStates are the state letters of pid's threads (/proc/PID/task/*/stat):
// a process stopped by SIGSTOP is stopped once every one is "T".
func ThreadStates(pid int) ([]string, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil {
		return nil, err
	}
	var states []string
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			continue // the thread ended meanwhile
		}
		st, err := ParseStat(string(b))
		if err != nil {
			return nil, err
		}
		states = append(states, st.State)
	}
	if len(states) == 0 {
		return nil, fmt.Errorf("procfs: no threads of %d", pid)
	}
	return states, nil
}

// State is pid's state letter ("Z" a zombie), "" when it is gone.
func State(pid int) string {
	st, err := ReadStat(pid)
	if err != nil {
		return ""
	}
	return st.State
}

// Age is how long pid has run (0 when it is gone).
func Age(pid int) time.Duration {
	st, err := ReadStat(pid)
	up, err2 := os.ReadFile("/proc/uptime")
	f := strings.Fields(string(up))
	if err != nil || err2 != nil || len(f) == 0 {
		return 0
	}
	uptime, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	// uptime has two decimals: rounded to the millisecond, it is exact,
	// where uptime*1e9 truncated could read 1 ns under a start time of the
	// same centisecond (an age of -1 ns, seen in CI).
	return time.Duration(math.Round(uptime*1e3))*time.Millisecond - ticks(st.StartTime)
}

// ticks converts clock ticks to a duration.
func ticks(n int64) time.Duration {
	return time.Duration(n) * (time.Second / time.Duration(ClockTicks())) // no overflow: USER_HZ divides 1e9
}

// atClktck is AT_CLKTCK of <linux/auxvec.h>: the auxiliary vector entry
// where the kernel hands every process its USER_HZ, the unit of /proc's
// times (proc(5), "/proc/pid/stat": "in clock ticks (divide by
// sysconf(_SC_CLK_TCK))"; glibc's sysconf(_SC_CLK_TCK) and so `getconf
// CLK_TCK` return this entry). golang.org/x/sys/unix has no sysconf, but
// it exposes the auxiliary vector the runtime kept.
const atClktck = 17

// ClockTicks is the system's clock ticks a second (USER_HZ): the auxiliary
// vector's AT_CLKTCK, or 100 (the value Linux fixes for every
// architecture Go supports) where the vector does not say.
func ClockTicks() int64 {
	auxv, err := unix.Auxv()
	if err == nil {
		for _, kv := range auxv {
			if kv[0] == atClktck && kv[1] > 0 {
				return int64(kv[1])
			}
		}
	}
	return 100
}

// ParseStatCPU returns utime+stime from the text of /proc/PID/stat.
func ParseStatCPU(stat string) (time.Duration, error) {
	st, err := ParseStat(stat)
	return ticks(st.UTime + st.STime), err
}

// CPUTime reads the CPU time (user + system) PID has used so far.
func CPUTime(pid int) (time.Duration, error) {
	own, _, err := statTimes(pid)
	return own, err
}

// statTimes reads pid's own CPU time and that of the children it has
// waited for.
func statTimes(pid int) (own, reaped time.Duration, err error) {
	st, err := ReadStat(pid)
	if err != nil {
		return 0, 0, err
	}
	return ticks(st.UTime + st.STime), ticks(st.CUTime + st.CSTime), nil
}

// TreeCPUTime is the CPU time of pid and of every process under it, live
// or already reaped: in cells mode the cells do the thumbnails, so the
// server's cost per answer is the supervisor's and its cells'. A cell that
// exits moves from the live sum to its parent's reaped one, so the total
// only grows (a descendant not yet reaped when it exits is lost between
// two reads: at most the last job of a killed cell).
func TreeCPUTime(pid int) (time.Duration, error) {
	tree, err := processTree()
	if err != nil {
		return 0, err
	}
	own, reaped, err := statTimes(pid)
	if err != nil {
		return 0, err
	}
	total := own + reaped
	for next := tree[pid]; len(next) > 0; {
		k := next[0]
		next = append(next[1:], tree[k]...)
		if own, reaped, err := statTimes(k); err == nil { // a child may exit meanwhile
			total += own + reaped
		}
	}
	return total, nil
}

// Sampler polls a process's VmRSS and keeps the largest value seen.
type Sampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak int64
	n    int
	kids []int // pid's children as last listed
}

// kidsEvery is how many samples a list of children serves: listing them
// reads every /proc/N/stat, too much to do every 20 ms on the driver's
// core; cells live for many jobs, and a new one is seen within a second.
const kidsEvery = 50

// StartSampler samples pid every interval until Stop: the VmRSS of pid and
// of its children summed (a cells-mode thumbd's supervisor and its cells;
// the process alone for any other target).
func StartSampler(pid int, interval time.Duration) *Sampler {
	s := &Sampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop(interval)
	return s
}

func (s *Sampler) loop(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.sample()
		select {
		case <-s.stop:
			s.sample()
			return
		case <-t.C:
		}
	}
}

func (s *Sampler) sample() {
	st, err := Read(s.pid)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n%kidsEvery == 0 {
		s.kids, _ = Children(s.pid)
	}
	s.n++
	rss := st.VmRSS
	for _, k := range s.kids {
		if kst, err := Read(k); err == nil { // a recycled cell is gone
			rss += kst.VmRSS
		}
	}
	if rss > s.peak {
		s.peak = rss
	}
}

// Stop ends sampling and returns the peak VmRSS in bytes and how many
// samples were taken.
func (s *Sampler) Stop() (peak int64, samples int) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.n
}

// HostCPU is the machine-wide "cpu" line of /proc/stat, in clock ticks.
type HostCPU struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// ParseHostCPU reads the first "cpu " line of /proc/stat's text.
func ParseHostCPU(stat string) (HostCPU, error) {
	for _, line := range strings.Split(stat, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var v [8]uint64
		for i := range v {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return HostCPU{}, fmt.Errorf("procfs: /proc/stat: %w", err)
			}
			v[i] = n
		}
		return HostCPU{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]}, nil
	}
	return HostCPU{}, fmt.Errorf("procfs: no cpu line in /proc/stat")
}

// ReadHostCPU reads /proc/stat.
func ReadHostCPU() (HostCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return HostCPU{}, err
	}
	return ParseHostCPU(string(b))
}

func (h HostCPU) total() uint64 {
	return h.User + h.Nice + h.System + h.Idle + h.IOWait + h.IRQ + h.SoftIRQ + h.Steal
}

// Share returns, between a and b, the fractions of all CPU time that were
// idle, stolen by the hypervisor (a busy or noisy host shows here), and
// spent in interrupts (loopback traffic's softirqs land there, charged to
// no process).
func Share(a, b HostCPU) (idle, steal, irq float64) {
	t := float64(b.total() - a.total())
	if t <= 0 {
		return 0, 0, 0
	}
	return float64((b.Idle+b.IOWait)-(a.Idle+a.IOWait)) / t, float64(b.Steal-a.Steal) / t,
		float64((b.IRQ+b.SoftIRQ)-(a.IRQ+a.SoftIRQ)) / t
}

// glibcHeap is the size glibc aligns and reserves each non-main malloc
// arena's heap to (HEAP_MAX_SIZE on 64-bit).
const glibcHeap = 64 << 20

// ParseArenas counts glibc malloc arenas besides the main one in the text
// of /proc/PID/maps. Such an arena is a heap aligned to its 64 MiB maximum,
// mapped as a read-write anonymous part followed by reserved anonymous
// rest, 64 MiB in all. (Go's heap does not have this shape: with
// MALLOC_ARENA_MAX=1 the count is 0.)
func ParseArenas(maps string) (int, error) {
	type region struct {
		lo, hi uint64
		rw     bool
		anon   bool
	}
	var regs []region
	for _, line := range strings.Split(strings.TrimSpace(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil {
			return 0, fmt.Errorf("procfs: maps line %q", line)
		}
		regs = append(regs, region{a, b, f[1] == "rw-p", len(f) == 5})
	}
	n := 0
	for i, r := range regs {
		if r.lo%glibcHeap != 0 || !r.rw || !r.anon {
			continue
		}
		var size uint64
		for j := i; j < len(regs) && regs[j].lo < r.lo+glibcHeap && regs[j].anon; j++ {
			size += regs[j].hi - regs[j].lo
		}
		if size == glibcHeap {
			n++
		}
	}
	return n, nil
}

// Arenas counts the glibc malloc arenas of pid besides the main one.
func Arenas(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0, err
	}
	return ParseArenas(string(b))
}

// Environ is pid's environment, KEY=VALUE each (/proc/PID/environ).
func Environ(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}
