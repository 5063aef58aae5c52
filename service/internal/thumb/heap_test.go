package thumb

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/glibcmalloc"
)

// heapSeen is what a child process of TestHeap saw: whether a 24 MiB
// block was mapped on its own, how much the arenas held once it was freed,
// and how many bytes of huge pages writing a 64 MiB block brought.
type heapSeen struct {
	Mapped    bool
	Held      int64
	HugePages int64
}

// heapChild is TestHeap's child (TestMain runs it before libvips starts):
// malloc's state is per process and fixed by glibc at start from
// GLIBC_TUNABLES, so each case runs in a fresh one. mode "tune" tunes the
// heap as Start does, "bare" leaves glibc's defaults. It prints what it saw.
func heapChild(mode string) int {
	if mode == "tune" {
		tuneHeap(os.LookupEnv)
	}
	var got heapSeen
	got.Mapped, got.Held = heapProbe(24 << 20)
	before, err := anonHugePages()
	free := touched(64 << 20)
	after, err2 := anonHugePages()
	free()
	if err := errors.Join(err, err2); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	got.HugePages = after - before
	out, _ := json.Marshal(got)
	fmt.Printf("HEAP %s\n", out)
	return 0
}

// anonHugePages is the process's AnonHugePages, in bytes.
func anonHugePages() (int64, error) {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "AnonHugePages:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no AnonHugePages in /proc/self/smaps_rollup")
}

// runHeapChild runs heapChild in a fresh process with env added.
func runHeapChild(t *testing.T, mode string, env ...string) heapSeen {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(withoutMallocSettings(os.Environ()), append([]string{"THUMBD_HEAP_CHILD=" + mode}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s %v: %v\n%s", mode, env, err, out)
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, "HEAP "); ok {
			var got heapSeen
			if err := json.Unmarshal([]byte(rest), &got); err != nil {
				t.Fatal(err)
			}
			return got
		}
	}
	t.Fatalf("child %s %v said nothing:\n%s", mode, env, out)
	return heapSeen{}
}

// withoutMallocSettings is environ without the test's own GLIBC_TUNABLES
// and MALLOC_ variables: each case sets its own.
func withoutMallocSettings(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); name != "GLIBC_TUNABLES" && !strings.HasPrefix(name, "MALLOC_") {
			out = append(out, kv)
		}
	}
	return out
}

// TestHeap: libvips' Start keeps a 24 MiB block in an arena (glibc's
// default maps it), unless the operator set the threshold; and the images'
// GLIBC_TUNABLES brings huge pages to a 64 MiB block where glibc's
// defaults bring none (docs/configuration.md, "The C heap").
func TestHeap(t *testing.T) {
	if got := runHeapChild(t, "bare"); !got.Mapped {
		t.Fatalf("glibc's defaults kept a 24 MiB block in an arena: the test cannot tell a tuned heap (%+v)", got)
	}
	if got := runHeapChild(t, "tune"); got.Mapped {
		t.Errorf("after tuneHeap a 24 MiB block is still mapped on its own: the threshold was not set")
	} else if got.Held < 24<<20 {
		t.Errorf("after tuneHeap the arenas hold %d MiB once a 24 MiB block is freed: the trim threshold was not set", got.Held>>20)
	}
	// Second in the list: glibc writes NULs over the original string's
	// colons as it parses it (/proc/PID/environ shows it cut), and the
	// process must still read the whole value.
	if got := runHeapChild(t, "tune", "GLIBC_TUNABLES=glibc.malloc.hugetlb=0:glibc.malloc.mmap_threshold=1048576"); !got.Mapped {
		t.Errorf("the operator's mmap_threshold (1 MiB) lost to tuneHeap's")
	}
	// tuneHeap leaves both thresholds to the images' string, which names
	// them: a name glibc does not know (it ignores it without a word) fails
	// here.
	if got := runHeapChild(t, "tune", "GLIBC_TUNABLES="+glibcmalloc.Tunables()); got.Mapped {
		t.Errorf("with the images' GLIBC_TUNABLES a 24 MiB block is mapped on its own")
	} else if got.Held < 24<<20 {
		t.Errorf("with the images' GLIBC_TUNABLES the arenas hold %d MiB once a 24 MiB block is freed: glibc did not take its trim_threshold", got.Held>>20)
	}

	thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || bytes.Contains(thp, []byte("[never]")) {
		t.Skipf("transparent huge pages are off on this kernel (%q, %v): hugetlb=1 cannot be checked", thp, err)
	}
	tuned := runHeapChild(t, "tune", "GLIBC_TUNABLES="+glibcmalloc.Tunables())
	if tuned.HugePages < 32<<20 {
		t.Errorf("with GLIBC_TUNABLES=%s, writing 64 MiB brought %d MiB of huge pages, want at least 32: glibc did not take hugetlb=1",
			glibcmalloc.Tunables(), tuned.HugePages>>20)
	}
	if bytes.Contains(thp, []byte("[always]")) {
		return // every mapping gets huge pages: no control
	}
	if plain := runHeapChild(t, "tune"); plain.HugePages >= 32<<20 {
		t.Errorf("without the tunables writing 64 MiB brought %d MiB of huge pages: the check above cannot fail", plain.HugePages>>20)
	}
}
