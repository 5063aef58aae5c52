package cellpool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/procfs"
	"github.com/thumbd/thumbd/service/internal/cell"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/thumb"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// TestArms is the cell overhead study's arms, run by `bench cells` (which
// builds this test binary with the flavour of the thumbd it compares): per
// source, a 256x256 cover PNG made
//
//   - in process: libvips in this test process;
//   - in a native cell, reused: one `thumbd cell` for every job;
//   - in a native cell, fresh for every job: each job on a cell that has
//     started and said hello but never made a thumbnail (the next one is
//     started ahead, before the job is timed): the first-call cost alone;
//   - the same, pre-warmed: the fresh cell first makes an untimed 64x64
//     thumbnail of a synthetic image (the study's pre-warming);
//   - in a containerised cell, reused: `thumbd cell` in `docker run` with a
//     read-only root, every capability dropped, no new privileges, a
//     non-root user and no network, reached through a Unix socket on a
//     shared volume.
//
// Each job is timed from the supervisor's side (for a cell: the options and
// source sent, the image read back); a cell reports the minor page faults
// its job took. The measurement runs when asked:
//
//	THUMBD_ARMS=1 THUMBD_ARMS_BIN=bin/thumbd-static [THUMBD_ARMS_IMAGE=thumbd:scratch] \
//	THUMBD_ARMS_SOURCES=a.jpg,b.jpg THUMBD_ARMS_OUT=arms.json go test -run TestArms ./service/internal/cellpool
//
// Otherwise it is a smoke run, so that the study cannot rot unseen: one
// job per arm but the container's, on a small synthetic source, with this
// test binary as a real cell (libvips, the protocol; armsCell).
func TestArms(t *testing.T) {
	bin, image, out := os.Getenv("THUMBD_ARMS_BIN"), os.Getenv("THUMBD_ARMS_IMAGE"), os.Getenv("THUMBD_ARMS_OUT")
	samples := envInt(t, "THUMBD_ARMS_SAMPLES", 30)
	fresh := envInt(t, "THUMBD_ARMS_FRESH", 15)
	var srcs []armSource
	cellEnv := []string{"MALLOC_ARENA_MAX=2"}
	if os.Getenv("THUMBD_ARMS") != "1" {
		bin, image, out, samples, fresh = os.Args[0], "", filepath.Join(t.TempDir(), "arms.json"), 1, 1
		srcs = []armSource{{"smoke", warmup(t)}}
		cellEnv = append(cellEnv, armsCellEnv+"=1")
	}
	if bin == "" || out == "" {
		t.Fatal("THUMBD_ARMS_BIN and THUMBD_ARMS_OUT are required")
	}
	for _, p := range strings.Split(os.Getenv("THUMBD_ARMS_SOURCES"), ",") {
		if len(srcs) > 0 && srcs[0].name == "smoke" {
			break
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, armSource{strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)), b})
	}
	// One libvips thread everywhere, as `bench engine`: the arms differ
	// only in where the job runs.
	engCfg := thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxAnimationPixels: 16_777_216, MaxSide: 4096, Threads: 1}
	settings, err := cell.Settings{Engine: engCfg, MaxSource: 64 << 20, LogLevel: slog.LevelWarn}.Env()
	if err != nil {
		t.Fatal(err)
	}
	native := &cell.Spec{Path: bin, Args: []string{"cell"}, Env: append([]string{settings}, cellEnv...), Stderr: os.Stderr,
		MaxSource: 64 << 20, MaxSide: 4096, MaxAnimationPixels: 1 << 24}
	inproc := thumb.New(engCfg)
	inproc.Start()

	var results []ArmResult
	for _, src := range srcs {
		results = append(results, inProcessArm(t, inproc, src, samples))
		results = append(results, reusedArm(t, "native cell, reused", native, src, samples, nil))
		results = append(results, freshArm(t, "native cell, fresh per job", native, src, fresh, nil))
		results = append(results, freshArm(t, "native cell, fresh, pre-warmed", native, src, fresh, warmup(t)))
		if image != "" {
			spec, rss := containerSpec(t, image, settings)
			results = append(results, reusedArm(t, "containerised cell, reused", spec, src, samples, rss))
		}
	}
	for _, r := range results {
		if r.OutBytes == 0 || len(r.Ms) == 0 {
			t.Errorf("%s on %s: no thumbnail timed: %+v", r.Arm, r.Source, r)
		}
	}
	b, _ := json.MarshalIndent(results, "", "  ")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// armsCellEnv, set to 1, makes this test binary a real cell (armsCell).
const armsCellEnv = "THUMBD_ARMS_CELL"

// armsCell is `thumbd cell` without the sandbox: libvips and the protocol,
// which is what the arms time.
func armsCell() int {
	conn, err := cell.Socket(os.Getenv)
	if err != nil {
		return 9
	}
	set, err := cell.ReadSettings(os.Getenv)
	if err != nil {
		return 8
	}
	eng := thumb.New(set.Engine)
	eng.Start()
	w := cell.Worker{Engine: eng, MaxSource: set.MaxSource, Memory: thumb.Memory}
	if err := w.Serve(conn, cell.Hello{PID: os.Getpid(), Libvips: thumb.Version()}); err != nil {
		return 2
	}
	return 0
}

type armSource struct {
	name string
	src  []byte
}

// ArmResult is one arm on one source: the figures `bench cells` reads.
type ArmResult struct {
	Arm    string `json:"arm"`
	Source string `json:"source"`
	// FirstMs is the first job's time (a fresh process's first thumbnail);
	// Ms the warm jobs' times (the fresh arm: every job is a first).
	FirstMs float64   `json:"first_ms"`
	Ms      []float64 `json:"ms"`
	// Minor page faults of the first job and of each warm one.
	FirstFaults int64   `json:"first_faults"`
	Faults      []int64 `json:"faults"`
	// RSS is the cell's resident memory after its jobs (0 in process);
	// StartRSS right after its hello.
	RSS      int64 `json:"rss"`
	StartRSS int64 `json:"start_rss"`
	OutBytes int   `json:"out_bytes"`
	// StartMs is each cell's start: exec to its hello (libvips up, sandbox
	// on).
	StartMs []float64 `json:"start_ms,omitempty"`
}

// warmup is the pre-warming's synthetic source: a 64x64 JPEG of a gradient.
func warmup(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for y := 0; y < 64; y++ {
		for x := 0; x < 64; x++ {
			img.Set(x, y, color.RGBA{uint8(4 * x), uint8(4 * y), 128, 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func coverPNG() thumbjob.Options {
	return thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}
}

func inProcessArm(t *testing.T, e *thumb.Engine, src armSource, samples int) ArmResult {
	r := ArmResult{Arm: "in process", Source: src.name}
	for i := 0; i <= samples; i++ {
		before := minorFaults()
		start := time.Now()
		img, err := e.Thumbnail(context.Background(), src.src, coverPNG())
		ms := float64(time.Since(start).Microseconds()) / 1000
		if err != nil {
			t.Fatal(err)
		}
		r.record(i == 0, ms, minorFaults()-before)
		r.OutBytes = len(img.Bytes)
	}
	return r
}

// reusedArm starts one cell and runs every job on it; rss reads a
// container's cell (nil: the cell's own /proc).
func reusedArm(t *testing.T, name string, spec *cell.Spec, src armSource, samples int, rss func() int64) ArmResult {
	c, startMs := startArmCell(t, spec)
	defer c.Close(10 * time.Second)
	if rss == nil {
		rss = func() int64 { n, _ := c.RSS(); return n }
	}
	r := ArmResult{Arm: name, Source: src.name, StartRSS: rss(), StartMs: []float64{startMs}}
	for i := 0; i <= samples; i++ {
		ms, faults, n := armJob(t, c, src.src)
		r.record(i == 0, ms, faults)
		r.OutBytes = n
	}
	r.RSS = rss()
	return r
}

// freshArm runs each job on a cell that has never made a thumbnail (but
// for an untimed job of warm, when given); the next cell is started, and
// has said hello, before the job is timed.
func freshArm(t *testing.T, name string, spec *cell.Spec, src armSource, jobs int, warm []byte) ArmResult {
	r := ArmResult{Arm: name, Source: src.name}
	next, ms := startArmCell(t, spec)
	r.StartMs = append(r.StartMs, ms)
	for i := 0; i < jobs; i++ {
		c := next
		r.StartRSS, _ = c.RSS()
		if warm != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, _, err := c.Run(ctx, looked(warm), thumbjob.Job{Options: thumbjob.Options{Width: 64, Height: 64, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		next, ms = startArmCell(t, spec)
		r.StartMs = append(r.StartMs, ms)
		ms, faults, n := armJob(t, c, src.src)
		r.record(false, ms, faults)
		r.OutBytes = n
		r.RSS, _ = c.RSS()
		c.Close(10 * time.Second)
	}
	next.Close(10 * time.Second)
	// Every job here is a first one.
	r.FirstMs, r.FirstFaults = median(r.Ms), medianInt(r.Faults)
	return r
}

func (r *ArmResult) record(first bool, ms float64, faults int64) {
	if first {
		r.FirstMs, r.FirstFaults = ms, faults
		return
	}
	r.Ms, r.Faults = append(r.Ms, ms), append(r.Faults, faults)
}

// startArmCell starts a cell and says how long it took to its hello.
func startArmCell(t *testing.T, spec *cell.Spec) (*cell.Cell, float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	c, err := cell.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return c, float64(time.Since(start).Microseconds()) / 1000
}

func armJob(t *testing.T, c *cell.Cell, src []byte) (ms float64, faults int64, outBytes int) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	res, stats, err := c.Run(ctx, looked(src), thumbjob.Job{Options: coverPNG()})
	img := res.Image
	ms = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		t.Fatal(err)
	}
	return ms, stats.MinorFaults, len(img.Bytes)
}

// containerSpec runs the cell in a hardened container whose socket is on a
// shared volume, and reads its RSS through the container's PID on the host.
func containerSpec(t *testing.T, image, settings string) (*cell.Spec, func() int64) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777) // the container's user must reach the socket
	name := fmt.Sprintf("thumbd-arm-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
	args := []string{"run", "--rm", "--name", name, "--read-only", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--user", "65532:65532", "--network", "none",
		"-v", dir + ":/run/cell", "-e", settings, "-e", cell.SocketEnv + "=/run/cell/cell.sock"}
	if cpus := os.Getenv("THUMBD_ARMS_CPUSET"); cpus != "" {
		args = append(args, "--cpuset-cpus", cpus)
	}
	spec := &cell.Spec{Path: "docker", Args: append(args, image, "cell"), Stderr: os.Stderr, Listen: filepath.Join(dir, "cell.sock"),
		MaxSource: 64 << 20, MaxSide: 4096, MaxAnimationPixels: 1 << 24}
	rss := func() int64 {
		out, err := exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", name).Output()
		if err != nil {
			return 0
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		st, _ := procfs.Read(pid)
		return st.VmRSS
	}
	return spec, rss
}

func minorFaults() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Minflt
}

func envInt(t *testing.T, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	return def
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianInt(xs []int64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// looked is src as the pipeline's one look sees it, the source a cell is
// handed.
func looked(src []byte) thumbjob.Source {
	s, _ := memcost.Look(src)
	return s
}
