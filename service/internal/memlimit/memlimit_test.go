package memlimit

import (
	"os"
	"testing"
	"testing/fstest"
)

const meminfo = "MemTotal:       24576000 kB\nMemFree:        1000 kB\n"

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

// The layouts a process meets: cgroup v2 (current Kubernetes nodes, with
// and without a cgroup namespace), cgroup v1 (this machine's Docker),
// hybrid, and none.
func TestRead(t *testing.T) {
	const total = 24576000 << 10
	cases := []struct {
		name   string
		files  fstest.MapFS
		want   int64
		source string
	}{
		{"no cgroup file system: MemTotal", fstest.MapFS{"proc/meminfo": file(meminfo)}, total, "MemTotal"},
		{"v2, namespaced, limit", fstest.MapFS{
			"proc/meminfo":              file(meminfo),
			"proc/self/cgroup":          file("0::/\n"),
			"sys/fs/cgroup/memory.max":  file("268435456\n"),
			"sys/fs/cgroup/memory.high": file("max\n"),
		}, 256 << 20, "cgroup v2 memory.max"},
		{"v2, memory.high lower than memory.max", fstest.MapFS{
			"proc/meminfo":              file(meminfo),
			"proc/self/cgroup":          file("0::/\n"),
			"sys/fs/cgroup/memory.max":  file("536870912\n"),
			"sys/fs/cgroup/memory.high": file("402653184\n"),
		}, 384 << 20, "cgroup v2 memory.high"},
		{"v2, no limit (max)", fstest.MapFS{
			"proc/meminfo":             file(meminfo),
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
		}, total, "MemTotal"},
		{"v2, the pod's limit on the parent of the container's group", fstest.MapFS{
			"proc/meminfo":     file(meminfo),
			"proc/self/cgroup": file("0::/kubepods/pod1/ctr\n"),
			"sys/fs/cgroup/kubepods/pod1/ctr/memory.max": file("max\n"),
			"sys/fs/cgroup/kubepods/pod1/memory.max":     file("1073741824\n"),
			"sys/fs/cgroup/kubepods/memory.max":          file("max\n"),
		}, 1 << 30, "cgroup v2 memory.max"},
		{"v1, container's group at the mount's root (Docker)", fstest.MapFS{
			"proc/meminfo":     file(meminfo),
			"proc/self/cgroup": file("12:pids:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/docker/abc\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("268435456\n"),
		}, 256 << 20, "cgroup v1 memory.limit_in_bytes"},
		{"v1, unlimited (2^63 rounded to a page)", fstest.MapFS{
			"proc/meminfo":     file(meminfo),
			"proc/self/cgroup": file("4:memory:/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, total, "MemTotal"},
		{"v1, the hierarchical limit binds", fstest.MapFS{
			"proc/meminfo":     file(meminfo),
			"proc/self/cgroup": file("4:cpuacct,memory:/a/b\n"),
			"sys/fs/cgroup/memory/a/b/memory.limit_in_bytes": file("9223372036854771712\n"),
			"sys/fs/cgroup/memory/a/b/memory.stat":           file("cache 0\nhierarchical_memory_limit 536870912\nrss 1\n"),
		}, 512 << 20, "cgroup v1 hierarchical_memory_limit"},
		{"hybrid: v1 memory controller beside an empty unified line", fstest.MapFS{
			"proc/meminfo":     file(meminfo),
			"proc/self/cgroup": file("4:memory:/x\n0::/\n"),
			"sys/fs/cgroup/memory/x/memory.limit_in_bytes": file("805306368\n"),
		}, 768 << 20, "cgroup v1 memory.limit_in_bytes"},
		{"a limit above MemTotal is none", fstest.MapFS{
			"proc/meminfo":             file(meminfo),
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("107374182400\n"),
		}, total, "MemTotal"},
		{"garbage in a limit file is no limit", fstest.MapFS{
			"proc/meminfo":             file(meminfo),
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("lots\n"),
		}, total, "MemTotal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Read(c.files)
			if err != nil {
				t.Fatal(err)
			}
			if got.Bytes != c.want || got.Source != c.source {
				t.Errorf("Read = %d (%s, %s), want %d (%s)", got.Bytes, got.Source, got.Path, c.want, c.source)
			}
		})
	}
}

func TestReadWithoutMeminfoFails(t *testing.T) {
	if _, err := Read(fstest.MapFS{"proc/self/cgroup": file("0::/\n")}); err == nil {
		t.Fatal("Read without /proc/meminfo: no error")
	}
}

// On this machine: whatever the layout, a positive limit no larger than
// the machine's memory.
func TestReadThisMachine(t *testing.T) {
	got, err := Read(os.DirFS("/"))
	if err != nil {
		t.Fatal(err)
	}
	total, _ := memTotal(os.DirFS("/"))
	if got.Bytes <= 0 || got.Bytes > total {
		t.Fatalf("Read = %+v, want 0 < limit <= MemTotal %d", got, total)
	}
	t.Logf("%+v", got)
}
