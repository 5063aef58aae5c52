// Package originload is `bench origin`: does fetching from an origin cost
// thumbd throughput, and does checking a signature cost a GET anything? It
// serves the bench's sources from a file server on loopback (in this
// process, as an origin would be another machine's work), starts one
// thumbd allowed to fetch from it and, unless -signed=false, a second one
// with a signing key, and loads, at the same concurrency, GET
// /thumbnail?url= of each source against POST /thumbnail of the same
// bytes, and the same GET signed against unsigned, both as a thumbnail
// (200) and as a revalidation (If-None-Match, 304: the cheapest request a
// signature guards, what a CDN sends): interleaved steps, rounds in
// rotating order, servers and driver pinned to different CPUs. It prints
// Markdown tables of requests/s (median of the rounds, with the range),
// p50 and server CPU per answer, GET's ratio to POST and signed's to
// unsigned. It holds the bench lock while it measures.
//
//	bench origin -- bin/thumbd-static
//	bench origin -image thumbd:scratch -rounds 5
package originload

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/affinity"
	"github.com/thumbd/thumbd/bench/internal/benchlock"
	"github.com/thumbd/thumbd/bench/internal/load"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/bench/internal/target"
	"github.com/thumbd/thumbd/internal/launch"
)

// config is the subcommand's flags.
type config struct {
	target.Flags
	query, dir, lock string
	sources          []string
	clients, rounds  int
	signed           bool
	duration, warmup time.Duration
	cpus             affinity.Split
}

func parse(args []string, stderr io.Writer) (config, error) {
	c := config{}
	fs := flag.NewFlagSet("origin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.Register(fs, "a container image, on the host network (else: the command after --)")
	names := fs.String("sources", "small,large", "the bench sources to serve and POST (comma-separated)")
	fs.StringVar(&c.dir, "source-dir", "bench/results/tmp/sources", "where the sources are (made when missing)")
	fs.StringVar(&c.query, "query", "w=256&h=256", "thumbnail options, the same for GET and POST")
	fs.IntVar(&c.clients, "clients", 10, "concurrent clients")
	fs.IntVar(&c.rounds, "rounds", 3, "interleaved rounds; the report gives their median")
	fs.BoolVar(&c.signed, "signed", true, "also GET signed against unsigned, as a thumbnail and as a 304 revalidation (a second thumbd, with a signing key)")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time per step")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured load before each step")
	c.cpus.Register(fs, "this driver: the load generator and the origin")
	benchlock.Flag(fs, &c.lock)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench origin [flags] (-image IMAGE | -- CMD ARGS...)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if err := c.Parsed(fs); err != nil {
		fs.Usage()
		return c, err
	}
	c.sources = strings.Split(*names, ",")
	var err error
	if err = c.cpus.Parsed(); err != nil {
		return c, err
	}
	if c.clients < 1 || c.rounds < 1 || c.duration <= 0 || c.warmup < 0 {
		fs.Usage()
		return c, errors.New("-clients, -rounds and -duration positive")
	}
	return c, nil
}

// Run is the subcommand.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	paths, err := sources.Ensure(c.dir, c.sources...)
	if err != nil {
		return err
	}
	bodies := make([][]byte, len(paths))
	for i, p := range paths {
		if bodies[i], err = os.ReadFile(p); err != nil {
			return err
		}
	}
	release, err := benchlock.Hold(ctx, c.lock, stderr)
	if err != nil {
		return err
	}
	defer release()
	// Before the origin starts: its goroutines run on the driver's CPUs.
	if err := c.cpus.PinDriver(); err != nil {
		return err
	}
	origin, err := serveDir(ctx, c.dir)
	if err != nil {
		return err
	}
	// servers[0] is unsigned, servers[1] (with -signed) checks signatures.
	key := make([]byte, 32)
	rand.Read(key)
	envs := [][]string{nil}
	if c.signed {
		envs = append(envs, []string{"THUMBD_SIGNING_KEYS=" + hex.EncodeToString(key)})
	}
	var servers []*launch.Server
	var pids []int
	for _, env := range envs {
		srv, err := start(ctx, c, origin, env)
		if err != nil {
			return err
		}
		defer srv.Stop(5 * time.Second)
		pid, err := srv.PID(ctx)
		if err != nil {
			return err
		}
		servers, pids = append(servers, srv), append(pids, pid)
	}

	arms := make([][]arm, len(paths))
	for i, p := range paths {
		if arms[i], err = armsOf(ctx, c, servers, key, origin+"/"+filepath.Base(p), bodies[i]); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(p), err)
		}
	}
	results := make([][][]load.Outcome, len(paths)) // [source][arm][round]
	for i := range results {
		results[i] = make([][]load.Outcome, len(arms[i]))
	}
	for r := 0; r < c.rounds; r++ {
		for i := range paths {
			n := len(arms[i])
			for k := range n {
				m := (k + r) % n // rotate which arm goes first
				a := arms[i][m]
				step := load.Step{Request: a.req, Concurrency: c.clients, ServerPID: pids[a.server], Timeout: 30 * time.Second}
				if c.warmup > 0 {
					step.Duration = c.warmup
					if _, err := load.Run(step); err != nil {
						return err
					}
				}
				step.Duration = c.duration
				o, err := load.Run(step)
				if err != nil {
					return err
				}
				if err := servers[a.server].Exited(); err != nil {
					return fmt.Errorf("thumbd died under load: %w", err)
				}
				fmt.Fprintf(stderr, "round %d %s %s: %.1f rps, %d errors\n", r+1, filepath.Base(paths[i]), a.name, o.RPS, o.ErrorCount)
				results[i][m] = append(results[i][m], o)
			}
		}
	}
	fmt.Fprintf(stdout, "%s, %s, %d clients, %d rounds of %s (+%s warm-up), thumbd on CPUs %s, driver and origin on %s\n\n",
		c.Name(), c.query, c.clients, c.rounds, c.duration, c.warmup, affinity.Format(c.cpus.Server), affinity.Format(c.cpus.Client))
	fmt.Fprintln(stdout, "| source | bytes | POST rps | GET ?url= rps | GET / POST | p50 POST / GET ms | server CPU µs per answer, POST / GET | errors |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|")
	for i, p := range paths {
		post, get := results[i][armPost], results[i][armGet]
		fmt.Fprintf(stdout, "| %s | %d | %s | %s | %.3f | %.1f / %.1f | %.0f / %.0f | %d / %d |\n",
			filepath.Base(p), len(bodies[i]), spread(post, rps), spread(get, rps), median(get, rps)/median(post, rps),
			median(post, p50), median(get, p50), median(post, cpu), median(get, cpu), errs(post), errs(get))
	}
	if !c.signed {
		return nil
	}
	fmt.Fprintln(stdout, "\nGET ?url= signed against unsigned (two thumbds, one with a signing key; 304: a revalidation with If-None-Match, which still fetches and hashes the source):")
	fmt.Fprintln(stdout, "")
	fmt.Fprintln(stdout, "| source | answer | unsigned rps | signed rps | signed / unsigned | server CPU µs per answer, unsigned / signed | CPU, signed / unsigned | errors |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|")
	for i, p := range paths {
		for _, pair := range []struct{ answer, unsigned, signed int }{{200, armGet, armSigned}, {304, armGet304, armSigned304}} {
			un, si := results[i][pair.unsigned], results[i][pair.signed]
			fmt.Fprintf(stdout, "| %s | %d | %s | %s | %.3f | %.0f / %.0f | %.3f | %d / %d |\n",
				filepath.Base(p), pair.answer, spread(un, rps), spread(si, rps), median(si, rps)/median(un, rps),
				median(un, cpu), median(si, cpu), median(si, cpu)/median(un, cpu), errs(un), errs(si))
		}
	}
	return nil
}

// The arms of one source, in this order.
const (
	armPost      = iota // POST the bytes (unsigned thumbd)
	armGet              // GET ?url= (unsigned thumbd)
	armSigned           // the same GET signed (signed thumbd)
	armGet304           // armGet with If-None-Match: 304
	armSigned304        // armSigned with If-None-Match: 304
)

// arm is one request loaded in a step, and the server it goes to.
type arm struct {
	name   string
	server int // index in the servers
	req    load.Request
}

// armsOf is the arms for the source at originURL (bytes body), checked
// before anything is timed: POST and every GET answer 200 with the same
// ETag (the same thumbnail; a signature thumbd refuses would be a 403),
// and each revalidation a 304.
func armsOf(ctx context.Context, c config, servers []*launch.Server, key []byte, originURL string, body []byte) ([]arm, error) {
	q, err := url.ParseQuery(c.query)
	if err != nil {
		return nil, fmt.Errorf("-query: %w", err)
	}
	q.Set("url", originURL)
	unsigned := servers[0].URL() + "/thumbnail?" + q.Encode()
	arms := []arm{
		{"POST", 0, load.Request{Method: "POST", URL: servers[0].URL() + "/thumbnail?" + c.query, Body: body, ContentType: "image/jpeg"}},
		{"GET ?url=", 0, load.Request{Method: "GET", URL: unsigned}},
	}
	if len(servers) > 1 {
		arms = append(arms, arm{"GET ?url= signed", 1, load.Request{Method: "GET", URL: servers[1].URL() + signPath(key, "/thumbnail", q)}})
	}
	if err := sameAnswer(ctx, arms); err != nil {
		return nil, err
	}
	if len(servers) == 1 {
		return arms, nil
	}
	tag, err := etagOf(ctx, arms[armGet].req)
	if err != nil {
		return nil, err
	}
	for _, k := range []int{armGet, armSigned} {
		a := arms[k]
		a.name += " 304"
		a.req.Header, a.req.Status = map[string]string{"If-None-Match": tag}, http.StatusNotModified
		if status, _, body, err := answer(ctx, a.req); err != nil || status != http.StatusNotModified {
			return nil, fmt.Errorf("%s: %d %v %.200s, want 304", a.name, status, err, body)
		}
		arms = append(arms, a)
	}
	return arms, nil
}

// signPath is path and q signed with key as docs/signing.md's "Signed URLs"
// tells a site to, written here apart from thumbd's own signer so that the
// check before the load also checks that recipe: the canonical form (path,
// "?", the parameters sorted by name, each name=value with every byte
// outside A-Z a-z 0-9 - . _ ~ written %XX), then its HMAC-SHA256 in
// base64url without padding as sig=.
func signPath(key []byte, path string, q url.Values) string {
	escape := func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }
	var b strings.Builder
	b.WriteString(path + "?")
	for i, name := range slices.Sorted(maps.Keys(q)) {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(escape(name) + "=" + escape(q.Get(name)))
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(b.String()))
	return b.String() + "&sig=" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// serveDir serves dir's files on a loopback port until ctx is done and
// returns its URL: the origin.
func serveDir(ctx context.Context, dir string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	context.AfterFunc(ctx, func() { srv.Close() })
	return "http://" + ln.Addr().String(), nil
}

// start runs thumbd allowed to fetch from origin (a loopback address, hence
// THUMBD_ORIGINS_ALLOW_LOOPBACK), with the -env settings and more, and
// waits for it to be ready.
func start(ctx context.Context, c config, origin string, more []string) (*launch.Server, error) {
	var dockerArgs []string
	if len(c.cpus.Server) > 0 {
		dockerArgs = []string{"--cpuset-cpus", affinity.Format(c.cpus.Server)}
	}
	// The host network: a container reaches the origin on 127.0.0.1.
	spec := c.Spec("host", dockerArgs, []string{"THUMBD_ORIGINS=" + origin, "THUMBD_ORIGINS_ALLOW_LOOPBACK=true"})
	spec.Env = append(spec.Env, more...)
	if len(c.cpus.Server) > 0 && c.Image == "" {
		spec.StartProcess = func(cmd *exec.Cmd) error { return affinity.Start(cmd, c.cpus.Server) }
	}
	srv, err := launch.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := srv.WaitReady(ctx, 30*time.Second); err != nil {
		srv.Stop(0)
		return nil, err
	}
	return srv, nil
}

// sameAnswer checks, before anything is timed, that every arm answers 200
// with an ETag and the same thumbnail. The bytes are compared, not the
// ETags: an upload's identity is a keyed hash of its bytes, an origin's
// its URL and validators (issue 49), so their ETags differ for the same
// picture.
func sameAnswer(ctx context.Context, arms []arm) error {
	var tags []string
	var first []byte
	for i, a := range arms {
		status, tag, body, err := answer(ctx, a.req)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("%s %s: %d %.200s", a.req.Method, a.req.URL, status, body)
		}
		tags = append(tags, tag)
		if i == 0 {
			first = body
		} else if !bytes.Equal(body, first) {
			return fmt.Errorf("the answers differ: %s gave %d bytes, %s %d", arms[0].name, len(first), a.name, len(body))
		}
	}
	if slices.Contains(tags, "") {
		return fmt.Errorf("an answer without an ETag: %q", tags)
	}
	return nil
}

// etagOf is the ETag of r's 200 answer.
func etagOf(ctx context.Context, r load.Request) (string, error) {
	status, tag, body, err := answer(ctx, r)
	if err == nil && (status != http.StatusOK || tag == "") {
		err = fmt.Errorf("%s %s: %d, ETag %q %.200s", r.Method, r.URL, status, tag, body)
	}
	return tag, err
}

// answer sends r once and returns its answer's status, ETag and body.
func answer(ctx context.Context, r load.Request) (status int, etag string, body []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return 0, "", nil, err
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("ETag"), body, err
}

func rps(o load.Outcome) float64 { return o.RPS }
func p50(o load.Outcome) float64 { return o.P50 }
func cpu(o load.Outcome) float64 { return o.CPUPerOK }

func median(os []load.Outcome, f func(load.Outcome) float64) float64 {
	v := make([]float64, len(os))
	for i, o := range os {
		v[i] = f(o)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// spread is the median with the range of the rounds.
func spread(os []load.Outcome, f func(load.Outcome) float64) string {
	lo, hi := f(os[0]), f(os[0])
	for _, o := range os {
		lo, hi = min(lo, f(o)), max(hi, f(o))
	}
	if len(os) == 1 {
		return fmt.Sprintf("%.1f", lo)
	}
	return fmt.Sprintf("%.1f (%.1f-%.1f)", median(os, f), lo, hi)
}

func errs(os []load.Outcome) int64 {
	var n int64
	for _, o := range os {
		n += o.ErrorCount
	}
	return n
}
