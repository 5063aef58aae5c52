package main

import (
	"bytes"
	"encoding/json"
	"github.com/thumbd/thumbd/service/internal/memplan"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/memlimit"
)

func limitOf(mib int64) memlimit.Limit {
	return memlimit.Limit{Bytes: mib << 20, Source: "cgroup v2 memory.max", Path: "/sys/fs/cgroup/memory.max"}
}

// With nothing set, every part is derived and the parts add up to no more
// than the limit, at every limit a user may give.
func TestPlanMemoryDerivesEverythingWithinTheLimit(t *testing.T) {
	none := func(string) bool { return false }
	for _, engine := range []string{engineInProcess, engineCells} {
		for _, l := range []int64{128, 256, 384, 512, 1024, 4096, 24 << 10} {
			c := testConfig(t)
			c.Engine = engine
			p, err := planMemory(c, limitOf(l), none, "")
			if err != nil {
				t.Fatalf("%s at %d MiB: %v", engine, l, err)
			}
			sum := memplan.BaseMemory + p.Sources + p.Outputs + p.Cells + p.Jobs
			if sum > l<<20 || p.Jobs <= 0 || p.Sources < c.MaxBodyBytes || p.Queue < 8 || p.Queue > 1024 {
				t.Errorf("%s at %d MiB: %+v (parts add up to %d)", engine, l, p, sum)
			}
			// Go's heap (sources, answers) and libvips' jobs share the
			// limit: the Go limit leaves the jobs their budget.
			if p.GoLimit+p.Jobs+p.Cells+memplan.BaseMemory-memplan.GoRuntimeMemory > l<<20 {
				t.Errorf("%s at %d MiB: Go limit %d + jobs %d over the limit", engine, l, p.GoLimit, p.Jobs)
			}
		}
	}
	c := testConfig(t)
	c.Concurrency = 8 // 128 queue places a slot: the limit, not the slots, bounds the queue here
	p256, _ := planMemory(c, limitOf(256), none, "")
	p1g, _ := planMemory(c, limitOf(1024), none, "")
	if p1g.Jobs <= 3*p256.Jobs || p1g.Queue != 1024 || p256.Queue != 256 {
		t.Errorf("budgets do not follow the limit: 256 MiB %+v, 1 GiB %+v", p256, p1g)
	}
	// With 2 slots the queue stops at what they finish within the
	// deadline (128 places each), however large the limit.
	c.Concurrency = 2
	for _, l := range []int64{256, 1024, 8192} {
		if p, _ := planMemory(c, limitOf(l), none, ""); p.Queue != 256 || p.Connections != 258 {
			t.Errorf("2 slots, %d MiB: queue %d, cap %d; want 256 and 258", l, p.Queue, p.Connections)
		}
	}
	if p, _ := planMemory(c, limitOf(128), none, ""); p.Queue != 128 {
		t.Errorf("2 slots, 128 MiB: queue %d, want 128 (a place per MiB)", p.Queue)
	}
	if p, _ := planMemory(c, limitOf(256), none, "300MiB"); p.GoLimit != 0 {
		t.Errorf("GOMEMLIMIT given: the plan still sets the Go limit to %d", p.GoLimit)
	}
}

// The source budget is a quarter of what the limit leaves up to about
// 470 MiB (2 slots), and at most 5 largest sources above; with more slots,
// 2 x concurrency + 1 of them, a source in each slot and one read ahead
// for each. A larger budget lets a burst's uploads all be read at once:
// the slots wait for them, and their fresh buffers cost page faults
// (bench/results/2026-12-02-overload3/door4.md,
// bench/results/2026-12-02-coldstart2/faults-budget.txt).
func TestPlanMemorySourceBudgetCap(t *testing.T) {
	none := func(string) bool { return false }
	c := testConfig(t)
	for _, tc := range []struct {
		slots int
		mib   int64
		want  int64
	}{
		{2, 256, 54106521}, // 51.6 MiB: a quarter, under the cap
		{2, 1024, 5 * c.MaxBodyBytes},
		{2, 1280, 5 * c.MaxBodyBytes},
		{2, 8 << 10, 5 * c.MaxBodyBytes},
		{1, 24 << 10, 5 * c.MaxBodyBytes},
		{2, 24 << 10, 5 * c.MaxBodyBytes},
		{3, 24 << 10, 7 * c.MaxBodyBytes},
		{8, 24 << 10, 17 * c.MaxBodyBytes},
		{8, 512, 114504499}, // 109.2 MiB: a quarter, under 8 slots' cap
	} {
		c.Concurrency = tc.slots
		p, err := planMemory(c, limitOf(tc.mib), none, "")
		if err != nil || p.Sources != tc.want {
			t.Errorf("%d slots at %d MiB: source budget %d, %v; want %d", tc.slots, tc.mib, p.Sources, err, tc.want)
		}
	}
}

// A setting given wins; one that cannot fit the limit is an error that
// names it, the limit and what would fit; so is a limit too small for any
// job.
func TestPlanMemoryExplicitSettings(t *testing.T) {
	c := testConfig(t)
	set := func(names ...string) func(string) bool {
		return func(env string) bool { return strings.Contains(strings.Join(names, ","), env) }
	}
	c.SourceBudget, c.Queue = 30<<20, 7
	p, err := planMemory(c, limitOf(512), set("THUMBD_SOURCE_BUDGET", "THUMBD_QUEUE"), "")
	if err != nil || p.Sources != 30<<20 || p.Queue != 7 {
		t.Fatalf("explicit budget and queue: %+v, %v", p, err)
	}
	c.SourceBudget = 600 << 20
	_, err = planMemory(c, limitOf(512), set("THUMBD_SOURCE_BUDGET"), "")
	for _, want := range []string{"THUMBD_SOURCE_BUDGET=629145600", "512 MiB", "cgroup v2 memory.max", "at most"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("source budget over the limit: %v; want it to say %q", err, want)
		}
	}
	c = testConfig(t)
	c.MemoryBudget = 900 << 20
	_, err = planMemory(c, limitOf(1024), set("THUMBD_MEMORY_BUDGET"), "")
	if err == nil || !strings.Contains(err.Error(), "THUMBD_MEMORY_BUDGET=943718400") || !strings.Contains(err.Error(), "at most") {
		t.Errorf("memory budget over the limit: %v", err)
	}
	c.MemoryBudget = 100 << 20
	if p, err := planMemory(c, limitOf(1024), set("THUMBD_MEMORY_BUDGET"), ""); err != nil || p.Jobs != 100<<20 {
		t.Errorf("memory budget that fits: %+v, %v", p, err)
	}
	_, err = planMemory(testConfig(t), limitOf(48), set(), "")
	if err == nil || !strings.Contains(err.Error(), "give thumbd at least") {
		t.Errorf("48 MiB: %v, want a start-up error saying what would do", err)
	}
}

// The environment path: THUMBD_MEMORY_LIMIT, the error at start-up, and
// the smallest limit that serves the largest job the defaults allow.
func TestMemoryLimitSetting(t *testing.T) {
	c, err := loadConfig(nil, envOf(map[string]string{"THUMBD_MEMORY_LIMIT": "268435456"}), io.Discard)
	if err != nil || c.memory.Limit.Bytes != 256<<20 || c.MemoryBudget != c.memory.Jobs || c.Queue != 256 || c.SourceBudget >= 640<<20 {
		t.Fatalf("THUMBD_MEMORY_LIMIT=256 MiB: %+v, %v", c.memory, err)
	}
	_, err = loadConfig(nil, envOf(map[string]string{"THUMBD_MEMORY_LIMIT": "268435456", "THUMBD_SOURCE_BUDGET": "209715200"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "THUMBD_SOURCE_BUDGET=209715200 does not fit the memory limit of 256 MiB") {
		t.Errorf("k8s/base's old budget at 256 MiB: %v", err)
	}
	small := memplan.SmallestLimit(testConfig(t).memorySettings())
	p, _ := planMemory(testConfig(t), memlimit.Limit{Bytes: small}, func(string) bool { return false }, "")
	below, _ := planMemory(testConfig(t), memlimit.Limit{Bytes: small - 1<<20}, func(string) bool { return false }, "")
	if p.Jobs < p.Largest || below.Jobs >= below.Largest {
		t.Errorf("smallest limit %d: jobs %d, largest %d; 1 MiB below: jobs %d", small, p.Jobs, p.Largest, below.Jobs)
	}
	t.Logf("smallest limit serving the default largest job: %s (job %s)", memplan.MiB(small), memplan.MiB(p.Largest))
}

// A job whose estimate is over the whole budget is refused at once with
// its own code, and the budget is exported.
func TestNeedsMoreMemory(t *testing.T) {
	cfg := testConfig(t)
	cfg.MemoryBudget = 40 << 20
	d := newTestDeps(t, cfg)
	srv := httptest.NewServer(newServer(d))
	defer srv.Close()
	src, err := os.ReadFile("internal/thumb/testdata/sources/large.jpg")
	if err != nil {
		t.Fatal(err)
	}
	post := func(q string) (*http.Response, []byte) {
		resp, err := http.Post(srv.URL+"/thumbnail?"+q, "image/jpeg", bytes.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	if resp, b := post("w=256&h=256"); resp.StatusCode != 200 {
		t.Fatalf("a small thumbnail within a 40 MiB budget: %d %s", resp.StatusCode, b)
	}
	resp, b := post("w=4096&h=4096&format=avif")
	var e struct{ Code, Error string }
	json.Unmarshal(b, &e)
	if resp.StatusCode != 422 || e.Code != "needs_more_memory" || !strings.Contains(e.Error, "40 MiB") {
		t.Fatalf("a 4096x4096 AVIF within 40 MiB: %d %s", resp.StatusCode, b)
	}
	if _, used := d.thumbs.Gate.Memory(); used != 0 {
		t.Errorf("memory still held after the answers: %d", used)
	}
	metrics, _ := http.Get(srv.URL + "/metrics")
	mb, _ := io.ReadAll(metrics.Body)
	metrics.Body.Close()
	for _, want := range []string{`thumbd_memory_budget_bytes{budget="jobs"} 4.194304e+07`, `thumbd_memory_budget_used_bytes{budget="sources"} 0`, "thumbd_memory_limit_bytes ", "thumbd_thumbnail_memory_waiting 0"} {
		if !strings.Contains(string(mb), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// Without GOGC the collector's goal is defaultGCPercent, set with the
// memory plan; with GOGC the runtime's reading of it stands.
func TestGCPercentUnlessGOGC(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want int
	}{
		{map[string]string{"THUMBD_MEMORY_LIMIT": "1073741824"}, defaultGCPercent},
		{map[string]string{"THUMBD_MEMORY_LIMIT": "1073741824", "GOGC": "50"}, 0},
	} {
		c, err := loadConfig(nil, envOf(tc.env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.gcPercent != tc.want {
			t.Errorf("%v: GC percent %d, want %d", tc.env, c.gcPercent, tc.want)
		}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	c, err := loadConfig(nil, envOf(map[string]string{"THUMBD_MEMORY_LIMIT": "1073741824"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	applyMemoryPlan(c, slog.New(slog.DiscardHandler))
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Fatalf("after the plan the collector's GOGC is %d, want %d", got, defaultGCPercent)
	}
}
