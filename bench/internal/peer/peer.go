// Package peer measures thumbd against imgproxy side by side: the same
// imgproxy URLs (thumbd with THUMBD_IMGPROXY=true), the same sources from
// one directory, each server pinned to one CPU with one worker, merging and
// caches off, hey's clients on the other CPU, interleaved rounds. It
// reports each server's answers a second and thumbd's rate over
// imgproxy's, per source format and per transform (issue 49).
//
// imgproxy is not built here: its source is fetched and built against the
// recipe's libvips by hand (bench/README.md, "bench peer"), and its binary
// given as -imgproxy.
package peer

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/affinity"
	"github.com/thumbd/thumbd/bench/internal/load"
	"github.com/thumbd/thumbd/internal/launch"
)

// Case is one URL both servers answer: an imgproxy path after the
// signature segment.
type Case struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// FormatCases are the 12 MP photo in each source format, to a 256x256
// WebP cover (the table).
func FormatCases() []Case {
	var out []Case
	for _, ext := range []string{"jpg", "webp", "avif", "heic", "jxl", "tif", "png"} {
		out = append(out, Case{Name: "photo12." + ext, Path: "/rs:fill:256:256/f:webp/plain/local:///photo12." + ext})
	}
	return out
}

// TransformCases are the transforms on the 1920x1280 JPEG, to a 256x256
// WebP cover.
func TransformCases() []Case {
	var out []Case
	for _, t := range []string{"", "bl:2", "sh:1", "pix:8", "pd:16", "rot:90", "c:960:640", "t:10"} {
		name, opts := "plain", "/rs:fill:256:256"
		if t != "" {
			name, opts = t, opts+"/"+t
		}
		out = append(out, Case{Name: "large.jpg " + name, Path: opts + "/f:webp/plain/local:///large.jpg"})
	}
	return out
}

// Row is one case's figures in one round.
type Row struct {
	Round    int     `json:"round"`
	Case     Case    `json:"case"`
	Thumbd   float64 `json:"thumbd_rps"`
	Imgproxy float64 `json:"imgproxy_rps"`
	Ratio    float64 `json:"ratio"` // thumbd over imgproxy
	// Bytes are each server's answer's size, for a look at what is
	// compared.
	ThumbdBytes   int64 `json:"thumbd_bytes"`
	ImgproxyBytes int64 `json:"imgproxy_bytes"`
	// Answers are the 2xx each rate counts: a rate of few answers moves
	// by one answer's share of it.
	ThumbdAnswers   int64 `json:"thumbd_answers"`
	ImgproxyAnswers int64 `json:"imgproxy_answers"`
}

type flags struct {
	thumbd, imgproxy, sources, out string
	tunables                       string // thumbd's GLIBC_TUNABLES
	rounds, clients, answers       int
	duration, bound                time.Duration
	match                          string
	cases                          string
	cpus                           affinity.Split
	serverLog                      io.Writer // the servers' output
}

// ImageTunables is the images' GLIBC_TUNABLES (Dockerfile.scratch's ENV
// line; a test holds them equal): thumbd runs as its images run it.
const ImageTunables = "glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864"

// Run is `bench peer`.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f flags
	fs := flag.NewFlagSet("peer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.thumbd, "thumbd", "bin/thumbd-static", "thumbd binary")
	fs.StringVar(&f.tunables, "tunables", ImageTunables, "thumbd's GLIBC_TUNABLES, as its images set it (\"\": none, glibc's defaults for the huge pages; the thresholds are set in process either way)")
	fs.StringVar(&f.imgproxy, "imgproxy", os.Getenv("IMGPROXY_BIN"), "imgproxy binary, built against the recipe's libvips (default $IMGPROXY_BIN)")
	fs.StringVar(&f.sources, "sources", "", "directory holding photo12.{jpg,webp,avif,heic,jxl,tif,png} and large.jpg (bench peer -make-sources makes them)")
	fs.IntVar(&f.rounds, "rounds", 2, "interleaved rounds")
	fs.IntVar(&f.clients, "clients", 10, "hey's clients")
	fs.DurationVar(&f.duration, "duration", 8*time.Second, "each server's step per case and round, at least")
	fs.IntVar(&f.answers, "answers", 0, "at least this many answers a step too: a step short of them after -duration goes on for the rest, so that a 1/s source's rate counts as many answers as a 15/s one's (0: -duration alone)")
	fs.DurationVar(&f.bound, "bound", 3*time.Minute, "with -answers: the most a step's rest may last")
	fs.StringVar(&f.match, "match", "", "only the cases whose name holds this text (for example jxl)")
	fs.StringVar(&f.cases, "cases", "formats,transforms", "formats, transforms, or both")
	fs.StringVar(&f.out, "json", "", "write the rows as JSON to this file")
	makeSources := fs.Bool("make-sources", false, "make the sources in -sources (from its photo12.jpg) first, with Debian's vips, heif-enc and cjxl")
	f.cpus.Register(fs, "hey")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.answers < 0 {
		return fmt.Errorf("peer: -answers %d: want 0 (off) or more", f.answers)
	}
	if f.duration <= 0 || f.bound <= 0 {
		return fmt.Errorf("peer: -duration %v, -bound %v: want both above 0", f.duration, f.bound)
	}
	if err := f.cpus.Parsed(); err != nil {
		return err
	}
	if f.imgproxy == "" || f.sources == "" {
		return errors.New("peer: -imgproxy and -sources are needed (bench/README.md, \"bench peer\")")
	}
	if *makeSources {
		if err := MakeSources(f.sources); err != nil {
			return err
		}
	}
	var cases []Case
	for _, c := range strings.Split(f.cases, ",") {
		switch c {
		case "formats":
			cases = append(cases, FormatCases()...)
		case "transforms":
			cases = append(cases, TransformCases()...)
		default:
			return fmt.Errorf("peer: -cases: %q is neither formats nor transforms", c)
		}
	}
	cases = slices.DeleteFunc(cases, func(c Case) bool { return !strings.Contains(c.Name, f.match) })
	if len(cases) == 0 {
		return fmt.Errorf("peer: -match %q: no case's name holds it", f.match)
	}
	if err := f.cpus.PinDriver(); err != nil {
		return err
	}
	serverLog, err := os.CreateTemp("", "bench-peer-*.log")
	if err != nil {
		return err
	}
	defer serverLog.Close()
	f.serverLog = serverLog
	fmt.Fprintf(stderr, "peer: the servers' output goes to %s\n", serverLog.Name())
	servers := []server{
		// Both measured for throughput, not overload: sources up to
		// 64 MiB (the 25 MB TIFF, the 31 MB PNG) and a minute's deadline,
		// so that 10 clients queued behind one slot are served, not
		// refused. thumbd runs with its images' GLIBC_TUNABLES (-tunables);
		// imgproxy with what this process has, as its docs leave malloc.
		{name: "thumbd", bin: f.thumbd, env: []string{"THUMBD_SOURCE=" + f.sources, "THUMBD_IMGPROXY=true",
			"THUMBD_MERGE=false", "THUMBD_CONCURRENCY=1", "THUMBD_MAX_BODY_BYTES=67108864", "THUMBD_DEADLINE=60s", "THUMBD_WRITE_TIMEOUT=90s",
			"THUMBD_LOG_LEVEL=warn", "GLIBC_TUNABLES=" + f.tunables}, health: "/ready", prefix: "/insecure"},
		{name: "imgproxy", bin: f.imgproxy, env: []string{"IMGPROXY_LOCAL_FILESYSTEM_ROOT=" + f.sources, "IMGPROXY_WORKERS=1",
			"IMGPROXY_MAX_SRC_FILE_SIZE=67108864", "IMGPROXY_TIMEOUT=60", "IMGPROXY_LOG_LEVEL=warn"}, health: "/health", prefix: "/insecure", bind: true},
	}
	var rows []Row
	for round := 1; round <= f.rounds; round++ {
		for _, c := range cases {
			row := Row{Round: round, Case: c}
			// Alternate which server goes first, round by round.
			order := []int{0, 1}
			if round%2 == 0 {
				order = []int{1, 0}
			}
			for _, i := range order {
				out, bytes, err := servers[i].measure(ctx, c, f, stderr)
				if err != nil {
					return fmt.Errorf("peer: %s, %s: %w", servers[i].name, c.Name, err)
				}
				if i == 0 {
					row.Thumbd, row.ThumbdBytes, row.ThumbdAnswers = out.RPS, bytes, out.OK
				} else {
					row.Imgproxy, row.ImgproxyBytes, row.ImgproxyAnswers = out.RPS, bytes, out.OK
				}
			}
			if row.Imgproxy > 0 {
				row.Ratio = row.Thumbd / row.Imgproxy
			}
			fmt.Fprintf(stderr, "peer: round %d %-22s thumbd %7.2f/s (%d) imgproxy %7.2f/s (%d) ratio %.2f\n", round, c.Name,
				row.Thumbd, row.ThumbdAnswers, row.Imgproxy, row.ImgproxyAnswers, row.Ratio)
			rows = append(rows, row)
		}
	}
	writeTable(stdout, rows, f.rounds)
	if f.out != "" {
		b, _ := json.MarshalIndent(rows, "", "  ")
		return os.WriteFile(f.out, append(b, '\n'), 0o644)
	}
	return nil
}

// server is one of the two under test.
type server struct {
	name, bin string
	env       []string
	health    string // the path that says it is ready
	prefix    string // the URL's signature segment
	bind      bool   // takes its address as IMGPROXY_BIND, not PORT
}

// measure starts the server pinned to the server CPUs, checks the case's
// answer, runs hey on it for the step and stops the server: each step on
// a fresh process, as the other's. It returns hey's outcome and the size
// of the case's answer.
func (s server) measure(ctx context.Context, c Case, f flags, log io.Writer) (load.Outcome, int64, error) {
	var none load.Outcome
	port, err := launch.FreePort()
	if err != nil {
		return none, 0, err
	}
	env := s.env
	if s.bind {
		env = append(env, "IMGPROXY_BIND=127.0.0.1:"+strconv.Itoa(port))
	}
	cpus := f.cpus.Server
	srv, err := launch.Start(ctx, launch.Spec{Command: []string{s.bin}, Env: env, Port: port, Stdout: f.serverLog, Stderr: f.serverLog,
		StartProcess: func(cmd *exec.Cmd) error { return affinity.Start(cmd, cpus) }})
	if err != nil {
		return none, 0, err
	}
	defer srv.Stop(5 * time.Second)
	base := "http://" + srv.Addr
	if err := waitFor(ctx, base+s.health, srv.Exited); err != nil {
		return none, 0, err
	}
	url := base + s.prefix + c.Path
	resp, err := http.Get(url)
	if err != nil {
		return none, 0, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return none, 0, fmt.Errorf("%s: %d %.200s", url, resp.StatusCode, body)
	}
	pid, _ := srv.PID(ctx)
	step := load.Step{Request: load.Request{Method: http.MethodGet, URL: url}, Concurrency: f.clients,
		Duration: f.duration, Timeout: 30 * time.Second, ServerPID: pid}
	out, err := load.Run(step)
	if err != nil {
		return none, 0, err
	}
	// Short of -answers after -duration: the rest, as a step of its own
	// on the same process, and one rate over both steps' answers and
	// walls (each wall holds its step's drain).
	if rest := int64(f.answers) - out.OK; rest > 0 {
		// hey gives each client N/C requests: N rounds up to C's multiple.
		c := int64(f.clients)
		step.Duration, step.MaxRequests = f.bound, int((rest+c-1)/c*c)
		more, err := load.Run(step)
		if err != nil {
			return none, 0, err
		}
		out = joined(out, more)
	}
	if out.ErrorCount > 0 {
		fmt.Fprintf(log, "peer: %s %s: %d errors %v %v\n", s.name, c.Name, out.ErrorCount, out.Non2xx, out.Errors)
	}
	return out, int64(len(body)), nil
}

// joined is one rate over two steps run one after the other: their
// answers over their walls, their errors added up (the latencies stay the
// first step's: the table compares rates only).
func joined(a, b load.Outcome) load.Outcome {
	out := a
	out.Wall, out.Requests, out.OK, out.ErrorCount = a.Wall+b.Wall, a.Requests+b.Requests, a.OK+b.OK, a.ErrorCount+b.ErrorCount
	out.RPS = 0
	if out.Wall > 0 {
		out.RPS = float64(out.OK) / out.Wall
	}
	out.Non2xx, out.Errors = addCounts(a.Non2xx, b.Non2xx), addCounts(a.Errors, b.Errors)
	return out
}

func addCounts(a, b map[string]int) map[string]int {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]int{}
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}

// waitFor polls url until it answers 200, for at most 60 s, or the
// server is gone.
func waitFor(ctx context.Context, url string, exited func() error) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if err := exited(); err != nil {
			return fmt.Errorf("exited before %s answered: %w", url, err)
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer 200 within 60 s", url)
}

// writeTable prints each case's ratio per round and its lowest.
func writeTable(w io.Writer, rows []Row, rounds int) {
	byCase := map[string][]Row{}
	var names []string
	for _, r := range rows {
		if _, ok := byCase[r.Case.Name]; !ok {
			names = append(names, r.Case.Name)
		}
		byCase[r.Case.Name] = append(byCase[r.Case.Name], r)
	}
	header := "| case | thumbd bytes | imgproxy bytes |"
	sep := "|---|---|---|"
	for i := 1; i <= rounds; i++ {
		header += fmt.Sprintf(" round %d (thumbd/s, imgproxy/s, ratio) |", i)
		sep += "---|"
	}
	fmt.Fprintln(w, header+" lowest ratio |")
	fmt.Fprintln(w, sep+"---|")
	for _, n := range names {
		rs := byCase[n]
		sort.Slice(rs, func(i, j int) bool { return rs[i].Round < rs[j].Round })
		line := fmt.Sprintf("| %s | %d | %d |", n, rs[0].ThumbdBytes, rs[0].ImgproxyBytes)
		low := 0.0
		for i, r := range rs {
			line += fmt.Sprintf(" %.1f, %.1f, **%.2f** |", r.Thumbd, r.Imgproxy, r.Ratio)
			if i == 0 || r.Ratio < low {
				low = r.Ratio
			}
		}
		fmt.Fprintf(w, "%s %.2f |\n", line, low)
	}
}

// MakeSources writes into dir the 12 MP photo (bench sources' photo12)
// in each source format of FormatCases, and large.jpg, with Debian's
// tools: vips (WebP, AVIF, TIFF LZW, PNG), heif-enc (HEIC) and cjxl (JPEG
// XL), at their usual settings. photo12.jpg and large.jpg must be there
// (bench sources DIR photo12 large).
func MakeSources(dir string) error {
	src := filepath.Join(dir, "photo12.jpg")
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("peer: %w (bench sources %s photo12 large makes it)", err, dir)
	}
	steps := []struct {
		out string
		cmd []string
	}{
		{"photo12.webp", []string{"vips", "webpsave", src, "OUT", "--Q", "80"}},
		{"photo12.avif", []string{"vips", "heifsave", src, "OUT", "--compression", "av1", "--Q", "60", "--effort", "2"}},
		{"photo12.heic", []string{"heif-enc", "-q", "80", "-o", "OUT", src}},
		{"photo12.jxl", []string{"cjxl", "-q", "85", src, "OUT"}},
		{"photo12.tif", []string{"vips", "tiffsave", src, "OUT", "--compression", "lzw"}},
		{"photo12.png", []string{"vips", "pngsave", src, "OUT", "--compression", "6"}},
	}
	for _, s := range steps {
		out := filepath.Join(dir, s.out)
		if _, err := os.Stat(out); err == nil {
			continue
		}
		cmd := append([]string(nil), s.cmd...)
		for i, a := range cmd {
			if a == "OUT" {
				cmd[i] = out
			}
		}
		if msg, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("peer: %s: %v: %s", strings.Join(cmd, " "), err, msg)
		}
	}
	return nil
}
