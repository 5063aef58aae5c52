// Package machine describes where a bench ran: CPU, cores, kernel and the
// versions of the toolchains and libraries under test.
package machine

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/thumbd/thumbd/internal/procfs"
	"golang.org/x/sys/unix"
)

// Info is the report's "machine" section.
type Info struct {
	Hostname      string `json:"hostname"`
	CPU           string `json:"cpu"`
	Cores         int    `json:"cores"`
	MemoryBytes   int64  `json:"memory_bytes"`
	Kernel        string `json:"kernel"`
	OS            string `json:"os"`
	Go            string `json:"go"`
	Node          string `json:"node"`
	Libvips       string `json:"libvips"`       // the system libvips (bin/thumbd links it)
	SharpLibvips  string `json:"sharp_libvips"` // the libvips sharp bundles (the Node twin)
	Sharp         string `json:"sharp"`
	Docker        string `json:"docker"`
	GOMAXPROCSCPU int    `json:"driver_gomaxprocs"`
}

// Collect gathers Info; twinDir is the Node twin's directory (for sharp's
// versions). Anything it cannot find is left empty.
func Collect(ctx context.Context, twinDir, docker string) Info {
	in := Info{Cores: runtime.NumCPU(), Go: runtime.Version(), Docker: docker, GOMAXPROCSCPU: runtime.GOMAXPROCS(0)}
	in.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		in.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Machine[:])
	}
	in.CPU = cpuModel()
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		in.MemoryBytes = int64(si.Totalram) * int64(si.Unit)
	}
	in.OS = osRelease()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	in.Node = run(ctx, "", "node", "--version")
	in.Libvips = run(ctx, "", "pkg-config", "--modversion", "vips")
	if in.Libvips == "" {
		in.Libvips = strings.TrimPrefix(run(ctx, "", "vips", "--version"), "vips-")
	}
	if twinDir != "" {
		v := run(ctx, twinDir, "node", "--input-type=module", "-e",
			`import s from "sharp"; console.log(s.versions.sharp + " " + s.versions.vips)`)
		if sharp, vips, ok := strings.Cut(v, " "); ok {
			in.Sharp, in.SharpLibvips = sharp, vips
		}
	}
	return in
}

func run(ctx context.Context, dir, name string, args ...string) string {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func cpuModel() string {
	model, _ := procfs.CPUModel()
	return model
}

func osRelease() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
