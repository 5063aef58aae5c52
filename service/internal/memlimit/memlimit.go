// Package memlimit finds the memory this process may use: its container's
// limit from cgroup v2 (memory.max, or memory.high when lower) or cgroup v1
// (the hierarchical limit of the memory controller), else the machine's
// MemTotal. It reads a file system given to it (os.DirFS("/") in the
// service, fixture trees in tests), so both layouts are tested without a
// container; /proc's files in it are parsed by internal/procfs. KimMachineGun/automemlimit does the same reading but from
// fixed paths and without memory.high, so it could not be tested here.
package memlimit

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/thumbd/thumbd/internal/procfs"
)

// Limit is the memory found, and where it came from.
type Limit struct {
	Bytes  int64
	Source string // "cgroup v2 memory.max", "cgroup v1 memory.limit_in_bytes", "MemTotal", ...
	// Path is the file the limit was read from (empty for MemTotal).
	Path string
}

// Read finds the limit in root (the root of the file system: "proc/...",
// "sys/fs/cgroup/..."). A cgroup limit above MemTotal is no limit at all
// (cgroup v1 writes "none" as 2^63 rounded to a page), so the smaller of
// the two wins.
func Read(root fs.FS) (Limit, error) {
	total, err := memTotal(root)
	if err != nil {
		return Limit{}, err
	}
	best := Limit{Bytes: total, Source: "MemTotal", Path: "/" + meminfoFile}
	groups, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return best, nil // no cgroup file system visible: the machine's memory
	}
	for _, c := range candidates(groups) {
		if lim, ok := c.read(root); ok && lim.Bytes < best.Bytes {
			best = lim
		}
	}
	return best, nil
}

// candidate is a limit file to read and how to read it.
type candidate struct {
	dir     string // directory in root
	version int    // 1 or 2
}

// candidates lists, for each layout the process is in, its own cgroup's
// directory and every ancestor up to the mount's root: an ancestor's limit
// binds too, and inside a container the process's path (as the host names
// it) may not exist under the mount, whose root is then the container's
// own group.
func candidates(procCgroup []byte) []candidate {
	var out []candidate
	for _, g := range procfs.ParseCgroups(string(procCgroup)) {
		var mount string
		var version int
		switch {
		case g.ID == 0 && len(g.Controllers) == 0:
			mount, version = "sys/fs/cgroup", 2
		case slices.Contains(g.Controllers, "memory"):
			mount, version = "sys/fs/cgroup/memory", 1
		default:
			continue
		}
		for p := path.Clean("/" + g.Path); ; p = path.Dir(p) {
			out = append(out, candidate{dir: path.Join(mount, p), version: version})
			if p == "/" {
				break
			}
		}
	}
	return out
}

// read reads the candidate's limit; ok is false when it has none (the
// files are missing, or say "max").
func (c candidate) read(root fs.FS) (Limit, bool) {
	best := Limit{Bytes: -1}
	try := func(name, source string) {
		file := path.Join(c.dir, name)
		v, ok := readBytes(root, file)
		if ok && (best.Bytes < 0 || v < best.Bytes) {
			best = Limit{Bytes: v, Source: source, Path: "/" + file}
		}
	}
	if c.version == 2 {
		try("memory.max", "cgroup v2 memory.max")
		// memory.high throttles and reclaims hard above it: a budget
		// sized past it would run the process slowly, not safely.
		try("memory.high", "cgroup v2 memory.high")
	} else {
		try("memory.limit_in_bytes", "cgroup v1 memory.limit_in_bytes")
		if v, ok := statValue(root, path.Join(c.dir, "memory.stat"), "hierarchical_memory_limit"); ok && (best.Bytes < 0 || v < best.Bytes) {
			best = Limit{Bytes: v, Source: "cgroup v1 hierarchical_memory_limit", Path: "/" + path.Join(c.dir, "memory.stat")}
		}
	}
	return best, best.Bytes > 0
}

// readBytes reads a file holding one number of bytes, or "max".
func readBytes(root fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && v > 0
}

// statValue reads one "key value" line of a cgroup v1 stat file.
func statValue(root fs.FS, name, key string) (int64, bool) {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil && n > 0
		}
	}
	return 0, false
}

// meminfoFile is /proc/meminfo's name in the root Read is given.
const meminfoFile = "proc/meminfo"

// memTotal is /proc/meminfo's MemTotal in bytes.
func memTotal(root fs.FS) (int64, error) {
	b, err := fs.ReadFile(root, meminfoFile)
	if err != nil {
		return 0, fmt.Errorf("memlimit: %w", err)
	}
	n, err := procfs.ParseMemTotal(string(b))
	if err != nil {
		return 0, fmt.Errorf("memlimit: %w", err)
	}
	return n, nil
}
