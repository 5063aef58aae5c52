package procfs

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ParseMemTotal is /proc/meminfo's MemTotal, in bytes.
func ParseMemTotal(meminfo string) (int64, error) {
	v, ok := statusField(meminfo, "MemTotal")
	if !ok {
		return 0, fmt.Errorf("procfs: meminfo has no MemTotal")
	}
	n, err := kibibytes("MemTotal", v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("procfs: meminfo: MemTotal %q", v)
	}
	return n, nil
}

// Cgroup is one line of /proc/PID/cgroup: a hierarchy the process is in.
type Cgroup struct {
	// ID is the hierarchy's number; 0 with no controllers is cgroup v2's
	// unified hierarchy.
	ID          int
	Controllers []string // cgroup v1: "memory", "cpu", "cpuacct"...; v2: none
	Path        string   // the process's group, from the hierarchy's root
}

// ParseCgroups reads /proc/PID/cgroup ("ID:controllers:path" lines);
// lines of another shape are skipped.
func ParseCgroups(text string) []Cgroup {
	var out []Cgroup
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		id, err := strconv.Atoi(parts[0])
		if err != nil {
			continue
		}
		var ctrl []string
		if parts[1] != "" {
			ctrl = strings.Split(parts[1], ",")
		}
		out = append(out, Cgroup{ID: id, Controllers: ctrl, Path: parts[2]})
	}
	return out
}

// ParseCPUModel is the first "model name" of a /proc/cpuinfo text; empty
// where the kernel names none (some ARM machines).
func ParseCPUModel(cpuinfo string) string {
	for _, line := range strings.Split(cpuinfo, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// CPUModel reads the machine's CPU model from /proc/cpuinfo.
func CPUModel() (string, error) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "", err
	}
	return ParseCPUModel(string(b)), nil
}
