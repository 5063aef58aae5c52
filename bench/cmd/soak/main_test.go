package main

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/thumbd/thumbd/internal/launch/launchtest"
)

func TestMain(m *testing.M) { launchtest.Run(m) }

// soak runs the soak against this test binary as a fake thumbd in mode.
func soak(t *testing.T, mode string, args ...string) (string, error) {
	var out strings.Builder
	env := strings.Join(launchtest.ServerEnv(mode), ",")
	err := run(append([]string{"-lock", "", "-bin", os.Args[0], "-env", env, "-sources", "main.go"}, args...), &out)
	return out.String(), err
}

func TestBurstsMode(t *testing.T) {
	bursts := []string{"-modes", "bursts", "-cycles", "3", "-burst", "4", "-burst-clients", "2", "-burst-idle", "10ms", "-burst-timeout", "500ms"}
	out, err := soak(t, "", bursts...)
	if err != nil || !strings.Contains(out, "[OK] bursts") || !strings.Contains(out, "note: 3 of 3 cycles, 4 thumbnails each") {
		t.Fatalf("%v\n%s", err, out)
	}
	// The 10th thumbnail kills the fake in cycle 1; in "stalls" it never answers.
	out, err = soak(t, "dies", bursts...)
	if err == nil || !strings.Contains(out, "FAIL: CRASH in cycle 1: signal: killed, no crash header in its log") {
		t.Fatalf("dies: %v\n%s", err, out)
	}
	out, err = soak(t, "stalls", bursts...)
	if err == nil || !strings.Contains(out, "FAIL: HANG in cycle 1: answers 2x200,2xerror") {
		t.Fatalf("stalls: %v\n%s", err, out)
	}
}

func TestClassify(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{dial, "refused"},
		{errors.New(`Post "http://x": http: server closed idle connection`), "refused"},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, "error"},
		{errors.New("unexpected EOF"), "error"},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

func TestServerLogKeepsThumbnailAnswersAndPanics(t *testing.T) {
	l := newServerLog()
	// As the process writes it: lines cut anywhere.
	io.WriteString(l, `{"level":"DEBUG","msg":"request","request_id":"soak-1","path":"/thum`)
	io.WriteString(l, `bnail","status":200,"duration_ms":12.5}`+"\n"+`{"level":"DEBUG","msg":"request","request_id":"h","path":"/health","status":200,"duration_ms":1}`+"\n")
	io.WriteString(l, `{"level":"WARN","msg":"http: panic serving 127.0.0.1:1: boom"}`+"\n"+`{"level":"INFO","msg":"half`)
	if l.answered["soak-1"] != 200 || len(l.answered) != 1 || l.durMax[200] != 12.5 {
		t.Fatalf("%+v", l)
	}
	if len(l.errors) != 1 {
		t.Fatalf("errors %q", l.errors)
	}
}

func TestHasMagic(t *testing.T) {
	if !hasMagic([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "), "image/webp") || hasMagic([]byte("RIFF"), "image/webp") ||
		!hasMagic([]byte("\x89PNG\r\n\x1a\n"), "image/png") || !hasMagic([]byte{0xFF, 0xD8, 0xFF, 0xE0}, "image/jpeg") ||
		hasMagic([]byte("\x89PNG\r\n\x1a\n"), "image/jpeg") {
		t.Fatal("magic")
	}
}

func TestRunRefusesBeforeStartingAnything(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-modes", "load,soak"}, `unknown mode "soak"`},
		{[]string{"-modes", "bursts", "-bin", "/no/such/thumbd", "-lock", "", "-sources", "main.go"}, "no such file"},
		{[]string{"-malloc", "tcmalloc"}, `unknown allocator "tcmalloc"`},
		{[]string{"-sources", "/no/such.jpg"}, "no such file"},
		{[]string{"-lock", "", "-bin", "false", "-modes", "shutdown", "-sources", "main.go"}, "thumbd never became ready"},
	} {
		err := run(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// The containment checks fail on each broken promise, and pass when the
// kills cost exactly their jobs.
func TestContainmentChecks(t *testing.T) {
	good := func() (*result, *containment) {
		r := &result{Statuses: map[string]int{"200": 900, "500 engine_crashed": 40}}
		c := &containment{Kills: 60, CrashedInJob: 40, CrashedIdle: 18, StartFailed: 2, SIGSEGVDeaths: 60, Deaths: 60,
			CellsAfter: 3, ExpectedCells: 3, FDsStart: 9, FDsAfter: 9,
			SupervisorRSS: []int64{20, 30, 31, 32, 30, 31, 33, 32, 31, 30}, TotalRSSStart: 70, TotalRSSAfter: 75}
		return r, c
	}
	r, c := good()
	checkContainment(r, c, true, true)
	if len(r.Failures) != 0 {
		t.Fatalf("a clean run fails: %v", r.Failures)
	}
	// The heavy mix's bigger sources are not growth.
	r, c = good()
	c.HeavyFrom, c.SupervisorRSS[9] = 9, 100
	if checkContainment(r, c, true, true); len(r.Failures) != 0 {
		t.Fatalf("the heavy mix counted as growth: %v", r.Failures)
	}
	for name, breakIt := range map[string]func(*result, *containment){
		"a kill not counted":       func(r *result, c *containment) { c.SIGSEGVDeaths-- },
		"an unexplained 500":       func(r *result, c *containment) { r.Statuses["500 engine_crashed"]++ },
		"kills unaccounted for":    func(r *result, c *containment) { c.CrashedIdle-- },
		"a cell missing":           func(r *result, c *containment) { c.CellsAfter-- },
		"a zombie":                 func(r *result, c *containment) { c.ZombiesAfter = 1 },
		"a descriptor leaked":      func(r *result, c *containment) { c.FDsAfter++ },
		"the supervisor grew":      func(r *result, c *containment) { c.SupervisorRSS[9] = 100 },
		"memory did not come back": func(r *result, c *containment) {},
		"nothing killed": func(r *result, c *containment) {
			c.Kills, c.SIGSEGVDeaths, c.Deaths, c.CrashedInJob, c.CrashedIdle, c.StartFailed = 0, 0, 0, 0, 0, 0
			r.Statuses["500 engine_crashed"] = 0
		},
		"another crash": func(r *result, c *containment) { c.Deaths++ },
	} {
		r, c := good()
		breakIt(r, c)
		checkContainment(r, c, true, name != "memory did not come back")
		if len(r.Failures) == 0 {
			t.Errorf("%s: no failure", name)
		}
	}
}
