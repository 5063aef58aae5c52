package procfs

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Tasks lists pid's threads (/proc/PID/task), in ascending order. A thread
// that starts while the directory is read may be missing: a caller that
// must catch every thread reads twice.
func Tasks(pid int) ([]int, error) {
	return numbered(fmt.Sprintf("/proc/%d/task", pid))
}

// FDs lists pid's open descriptors (/proc/PID/fd), in ascending order. For
// the calling process it includes the descriptor the listing itself used,
// closed by the time FDs returns.
func FDs(pid int) ([]int, error) {
	return numbered(fmt.Sprintf("/proc/%d/fd", pid))
}

// numbered lists the entries of dir that are numbers.
func numbered(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

// FDTargets maps each of pid's descriptors to what it refers to
// (readlink of /proc/PID/fd/N): a path, "socket:[INODE]", "pipe:[INODE]",
// "anon_inode:[eventpoll]". A descriptor closed meanwhile is left out.
func FDTargets(pid int) (map[int]string, error) {
	fds, err := FDs(pid)
	if err != nil {
		return nil, err
	}
	out := make(map[int]string, len(fds))
	for _, fd := range fds {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd)); err == nil {
			out[fd] = link
		}
	}
	return out, nil
}

// TCPSockets is the set of TCP sockets (IPv4 and IPv6) in pid's network
// namespace, named as FDTargets names a socket: "socket:[INODE]".
func TCPSockets(pid int) (map[string]bool, error) {
	out := map[string]bool{}
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			if os.IsNotExist(err) && f == "tcp6" {
				continue // a kernel without IPv6
			}
			return nil, err
		}
		for _, inode := range ParseNetTCPInodes(string(b)) {
			out["socket:["+inode+"]"] = true
		}
	}
	return out, nil
}

// ParseNetTCPInodes returns the inode column of /proc/PID/net/tcp or tcp6
// (the tenth field of each socket line; the header line has none).
func ParseNetTCPInodes(text string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 9 && strings.HasSuffix(f[0], ":") {
			out = append(out, f[9])
		}
	}
	return out
}

// Caps is a thread's capability sets, from its status file.
type Caps struct {
	Inheritable, Permitted, Effective, Bounding, Ambient uint64
}

// ParseCaps reads the CapInh, CapPrm, CapEff, CapBnd and CapAmb lines of
// a /proc/PID/status (or /proc/PID/task/TID/status) text. Every one must be
// there: a missing set would read as none held.
func ParseCaps(status string) (Caps, error) {
	var c Caps
	for _, s := range []struct {
		name string
		dst  *uint64
	}{{"CapInh", &c.Inheritable}, {"CapPrm", &c.Permitted}, {"CapEff", &c.Effective}, {"CapBnd", &c.Bounding}, {"CapAmb", &c.Ambient}} {
		v, ok := statusField(status, s.name)
		if !ok {
			return Caps{}, fmt.Errorf("procfs: status has no %s line", s.name)
		}
		n, err := strconv.ParseUint(v, 16, 64)
		if err != nil {
			return Caps{}, fmt.Errorf("procfs: %s %q: %w", s.name, v, err)
		}
		*s.dst = n
	}
	return c, nil
}

// TaskCaps reads the capability sets of thread tid of process pid.
func TaskCaps(pid, tid int) (Caps, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
	if err != nil {
		return Caps{}, err
	}
	return ParseCaps(string(b))
}

// ParseCPUsAllowed is the Cpus_allowed_list line of a status text
// ("0-1", "1"): the CPUs the process may run on.
func ParseCPUsAllowed(status string) (string, error) {
	v, ok := statusField(status, "Cpus_allowed_list")
	if !ok {
		return "", fmt.Errorf("procfs: status has no Cpus_allowed_list line")
	}
	return v, nil
}

// CPUsAllowed reads pid's Cpus_allowed_list.
func CPUsAllowed(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", err
	}
	return ParseCPUsAllowed(string(b))
}

// statusField is the value of one "Name:\tvalue" line of a status text.
func statusField(status, name string) (string, bool) {
	for _, line := range strings.Split(status, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == name {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
