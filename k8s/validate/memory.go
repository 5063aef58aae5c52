package validate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The memory limit is the one memory knob: at start the service reads the
// container's limit and derives from it the queue, the source budget, the
// libvips budget for jobs and the Go runtime's memory limit
// (service/memory.go, planMemory). Written in a manifest, these would be
// sized by hand again, and go wrong when the limit changes.
var derivedMemoryEnv = []string{
	"THUMBD_QUEUE", "THUMBD_SOURCE_BUDGET", "THUMBD_MEMORY_BUDGET", "THUMBD_MEMORY_LIMIT",
	// The Go runtime's own knobs: the service sets the Go memory limit from
	// the container's unless GOMEMLIMIT overrides it, and GOGC changes how
	// the heap grows under it.
	"GOMEMLIMIT", "GOGC",
}

// checkDerivedMemory refuses the memory settings the service derives from
// the container's memory limit.
func checkDerivedMemory(c *corev1.Container, env map[string]string, p *problems) {
	for _, name := range derivedMemoryEnv {
		if _, set := env[name]; set {
			p.addf("container %s sets %s: the service derives its memory settings (THUMBD_QUEUE, THUMBD_SOURCE_BUDGET, THUMBD_MEMORY_BUDGET, the Go memory limit) from the container's memory limit; set resources.limits.memory instead (k8s/README.md, \"Memory\")", c.Name, name)
		}
	}
}

// checkMemoryLimit starts the service binary bin with the container's
// settings and its memory limit as THUMBD_MEMORY_LIMIT, and requires it to
// start without the warning that the limit cannot serve the largest job the
// settings allow (such jobs would answer 422 needs_more_memory). The figure
// is the binary's own, from its memory model. bin "" skips the check.
func checkMemoryLimit(c *corev1.Container, env map[string]string, bin string, p *problems) {
	lim, set := c.Resources.Limits[corev1.ResourceMemory]
	if bin == "" || !set { // checkResources reports a missing limit
		return
	}
	warning, err := StartupMemory(bin, env, lim.Value())
	switch {
	case err != nil:
		p.addf("container %s: thumbd with these settings under a memory limit of %s: %v", c.Name, lim.String(), err)
	case warning != "":
		p.addf("container %s: memory limit %s does not serve the largest job the settings allow; thumbd says at start: %s", c.Name, lim.String(), warning)
	}
}

// directorySettings may name a directory (else a bucket), which thumbd
// opens at start.
var directorySettings = []string{"THUMBD_SOURCE", "THUMBD_SOURCE_DIR", "THUMBD_RESULT_STORE"}

// StartupMemory runs bin with the settings env under a memory limit of
// limit bytes (THUMBD_MEMORY_LIMIT, as the cgroup's would be read), on port
// 0, until it has logged its memory plan and is listening, then kills it.
// It returns the start-up warning about the memory limit, if any, or the
// error that kept the service from starting.
func StartupMemory(bin string, env map[string]string, limit int64) (warning string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	// The test's own environment, without any setting that would change
	// the plan, then the pod's settings (those from Secrets are left out:
	// they resolve to ""), then the limit.
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "THUMBD_") && !slices.Contains(derivedMemoryEnv, name) && name != "PORT" && name != "GOMAXPROCS" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// A directory a setting names is a volume of the pod: here, an empty
	// one each (their contents do not change the plan; one for all would
	// put the result store inside the sources, which thumbd refuses).
	volumes, err := os.MkdirTemp("", "thumbd-volumes-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(volumes)
	for _, name := range slices.Sorted(maps.Keys(env)) {
		v := env[name]
		if slices.Contains(directorySettings, name) && strings.HasPrefix(v, "/") {
			v = filepath.Join(volumes, name)
			if err := os.Mkdir(v, 0o755); err != nil {
				return "", err
			}
		}
		if v != "" {
			cmd.Env = append(cmd.Env, name+"="+v)
		}
	}
	cmd.Env = append(cmd.Env, "THUMBD_MEMORY_LIMIT="+strconv.FormatInt(limit, 10), "PORT=0", "THUMBD_LOG_LEVEL=info")
	if env["THUMBD_ADMIN_PORT"] != "" {
		// Free ports both, so that runs side by side never collide.
		cmd.Env = append(cmd.Env, "THUMBD_ADMIN_PORT=0")
	}
	// Its own process group, so that cells it may have started go too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	var out bytes.Buffer
	planned, listening := false, false
	sc := bufio.NewScanner(stderr)
	for !listening && sc.Scan() {
		out.Write(sc.Bytes())
		out.WriteByte('\n')
		var line struct{ Level, Msg string }
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch {
		case line.Msg == "memory":
			planned = true
		case line.Level == "WARN" && strings.HasPrefix(line.Msg, "memory limit"):
			warning = line.Msg
		case line.Msg == "listening":
			listening = true
		}
	}
	cancel() // kills the group
	_ = cmd.Wait()
	if !listening || !planned {
		return warning, fmt.Errorf("%s did not start and log its memory plan: %s", bin, strings.TrimSpace(out.String()))
	}
	return warning, nil
}
