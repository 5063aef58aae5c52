package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/apierr"
)

// Short versions of the soak's shutdown and slowloris modes
// (bench/cmd/soak), against the real program in a child process.

// loggedAnswers parses the child's request log lines (debug level logs
// every request): request ID -> status.
func loggedAnswers(logs string) map[string]int {
	out := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Msg       string `json:"msg"`
			RequestID string `json:"request_id"`
			Status    int    `json:"status"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "request" {
			out[rec.RequestID] = rec.Status
		}
	}
	return out
}

type loadResult struct {
	id       string
	sent     time.Time
	done     time.Time
	status   int
	complete bool
	err      error
}

func TestSIGTERMUnderLoadLosesNothing(t *testing.T) {
	c := startChild(t, "THUMBD_QUEUE=8")
	waitReady(t, c.addr)
	src := encodeJPEG(t, scene(400, 300), 85)
	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	var (
		mu      sync.Mutex
		results []loadResult
		stop    atomic.Bool
		seq     atomic.Int64
		wg      sync.WaitGroup
	)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				r := loadResult{id: fmt.Sprintf("term-%d", seq.Add(1)), sent: time.Now()}
				// Each client its own height: identical uploads in flight
				// would share one job, and this test needs many.
				req, _ := http.NewRequest("POST", fmt.Sprintf("%s/thumbnail?w=256&h=%d", c.addr, 200+w), bytes.NewReader(src))
				req.Header.Set("X-Request-Id", r.id)
				resp, err := client.Do(req)
				if err == nil {
					var body []byte
					body, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					r.status = resp.StatusCode
					r.complete = err == nil && fmt.Sprint(len(body)) == resp.Header.Get("Content-Length") &&
						(resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "")
				}
				r.err, r.done = err, time.Now()
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
				if err != nil || r.status == 503 {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	waitRunning(t, c.addr, 2)
	time.Sleep(500 * time.Millisecond) // the queue fills
	termAt := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := c.wait(t)
	exitAt := time.Now()
	time.Sleep(200 * time.Millisecond) // requests keep arriving after exit
	stop.Store(true)
	wg.Wait()
	if code != 0 {
		t.Fatalf("exit code %d; logs:\n%.2000s", code, c.logs)
	}
	logged := loggedAnswers(c.logs.String())
	var afterTerm, refused int
	for _, r := range results {
		status, wasLogged := logged[r.id]
		switch {
		case r.err == nil && !r.complete:
			t.Errorf("%s: incomplete %d answer", r.id, r.status)
		case r.err == nil && r.status >= 500 && r.status != 503:
			t.Errorf("%s: status %d", r.id, r.status)
		case r.err == nil && r.sent.After(exitAt):
			t.Errorf("%s: sent after exit, answered %d", r.id, r.status)
		case r.err == nil:
			if r.done.After(termAt) && r.status == 200 {
				afterTerm++
			}
		case wasLogged:
			// thumbd answered it, the client did not get it: lost.
			t.Errorf("%s: thumbd answered %d, client got %v", r.id, status, r.err)
		default:
			// Never read by thumbd: a refused dial, or a keep-alive
			// connection Shutdown closed as the request was being written.
			refused++
		}
	}
	if afterTerm == 0 {
		t.Fatal("no admitted thumbnail finished after SIGTERM: nothing was proven")
	}
	t.Logf("%d requests; %d thumbnails completed after SIGTERM; %d refused at connection level; exit %s after SIGTERM",
		len(results), afterTerm, refused, exitAt.Sub(termAt).Round(time.Millisecond))
}

// slowConns opens n connections to addr: even ones send a request's
// headers a byte every 100 ms, odd ones make one request and stay idle.
// It returns how many are open and a function that closes them all.
func slowConns(t *testing.T, addr string, n int) (int, func()) {
	t.Helper()
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
		done  = make(chan struct{})
	)
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Logf("dial %d: %v", i, err)
			break
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		wg.Add(1)
		go func(i int, c net.Conn) {
			defer wg.Done()
			if i%2 == 1 {
				fmt.Fprint(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
				io.Copy(io.Discard, c) // the answer, then idle until closed
				return
			}
			req := "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("s", 100) + "\r\n\r\n"
			for j := 0; j < len(req); j++ {
				select {
				case <-done:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := c.Write([]byte{req[j]}); err != nil {
					return
				}
			}
		}(i, c)
		if i%200 == 199 {
			time.Sleep(10 * time.Millisecond) // stay within the accept backlog
		}
	}
	return len(conns), func() {
		close(done)
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}

// 1000 slow connections (half trickling their request head, half idle
// after one request) against a child process. Under the connection cap
// (THUMBD_MAX_CONNECTIONS above the flood) they hold no place: /health and
// thumbnails answer as on an idle machine. Past the cap (its default with
// 2 slots, 258) they take every place; the cap closes those without a
// request in the works past a second, so the backlog drains, and /health
// on the admin port answers throughout.
func TestSlowlorisDoesNotStarveHealthOrThumbnails(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 2300 {
		t.Skipf("ulimit -n %d: 1000 connections need about 2300 descriptors (both ends here)", lim.Cur)
	}
	src := encodeJPEG(t, scene(400, 300), 85)
	t.Run("under the cap", func(t *testing.T) {
		c := startChild(t, "THUMBD_MAX_CONNECTIONS=2000")
		open, closeAll := slowConns(t, strings.TrimPrefix(c.addr, "http://"), 1000)
		defer closeAll()
		if open < 1000 {
			t.Fatalf("only %d connections opened", open)
		}
		health, thumbs, slowest := healthAndThumbnails(t, c.addr, c.addr, src)
		// Generous: both answer in milliseconds on an idle machine.
		if slowest > 5*time.Second {
			t.Fatalf("a /health + /thumbnail pair took %s", slowest)
		}
		t.Logf("%d slow connections: %d /health and %d thumbnails answered, slowest pair %s", open, health, thumbs, slowest.Round(time.Millisecond))
	})
	t.Run("past the cap", func(t *testing.T) {
		port, err := launch.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		admin := "http://127.0.0.1:" + strconv.Itoa(port)
		c := startChild(t, "THUMBD_CONCURRENCY=2", "THUMBD_MEMORY_LIMIT=1073741824", "THUMBD_ADMIN_PORT="+strconv.Itoa(port))
		open, closeAll := slowConns(t, strings.TrimPrefix(c.addr, "http://"), 1000)
		defer closeAll()
		if open < 1000 {
			t.Fatalf("only %d connections opened", open)
		}
		health, thumbs, slowest := healthAndThumbnails(t, admin, c.addr, src)
		// The thumbnail waits in the backlog behind the slow connections
		// until the cap has closed enough of them (about 2-3 s here).
		if slowest > 10*time.Second {
			t.Fatalf("a /health + /thumbnail pair took %s", slowest)
		}
		probe := &http.Client{Timeout: time.Second}
		if cap := metricValue(t, probe, admin, "thumbd_connections_max"); cap != 258 {
			t.Fatalf("thumbd_connections_max %v, want the default 258 (2 slots)", cap)
		}
		if closed := metricValue(t, probe, admin, "thumbd_connections_idle_closed_total"); closed < 100 {
			t.Fatalf("thumbd_connections_idle_closed_total %v: the slow connections were not closed at the cap", closed)
		}
		t.Logf("%d slow connections past a cap of 258: %d /health (admin port) and %d thumbnails answered, slowest pair %s", open, health, thumbs, slowest.Round(time.Millisecond))
	})
}

// healthAndThumbnails asks for /health at health and a thumbnail of src at
// base, one after the other, for 3 s (at least one pair); every answer
// must be a 200, and /health within a second.
func healthAndThumbnails(t *testing.T, health, base string, src []byte) (healths, thumbs int, slowest time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: 15 * time.Second}
	probe := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(3 * time.Second); healths == 0 || time.Now().Before(deadline); {
		start := time.Now()
		resp, err := probe.Get(health + "/health")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("/health at %s: %v", health, err)
		}
		resp.Body.Close()
		healths++
		resp, err = client.Post(base+"/thumbnail?w=128&h=128", "image/jpeg", bytes.NewReader(src))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("/thumbnail: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		thumbs++
		slowest = max(slowest, time.Since(start))
	}
	return healths, thumbs, slowest
}

// slowUpload starts a POST /thumbnail declaring length bytes and sends
// only the first sent of them; closing the connection ends it.
func slowUpload(t *testing.T, base string, length int, sent []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /thumbnail HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", length)
	c.Write(sent)
	t.Cleanup(func() { c.Close() })
	return c
}

// Uploads that trickle in hold none of the gate's places: more of them
// than places (slots + queue) leave thumbnails served. They used to take a
// place each before their body was read, and 34 such clients at a byte a
// second turned every thumbnail away for the whole read timeout.
func TestSlowUploadsHoldNoPlace(t *testing.T) {
	cfg := testConfig(t)
	cfg.Concurrency, cfg.Queue = 1, 1
	srv, d := newTestServer(t, cfg)
	for i := 0; i < 6; i++ {
		slowUpload(t, srv.URL, 100000, []byte("\xff\xd8\xff"))
	}
	deadline := time.Now().Add(5 * time.Second)
	for d.thumbs.Limits.Budget.Used() < 6*3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if status, _, body := postThumb(t, srv.URL, "?w=32&h=32", encodeJPEG(t, scene(64, 48), 85)); status != 200 {
		t.Fatalf("with 6 slow uploads and 2 places: status %d (%s)", status, body)
	}

	// The bodies' bytes are bounded: past the budget, a 503 with Retry-After.
	cfg.MaxBodyBytes, cfg.SourceBudget = 1000, 1000
	srv, d = newTestServer(t, cfg)
	slowUpload(t, srv.URL, 1000, make([]byte, 990))
	for d.thumbs.Limits.Budget.Used() < 990 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	status, h, body := postThumb(t, srv.URL, "", encodeJPEG(t, scene(64, 48), 85)[:999])
	if status != 503 || h.Get("Retry-After") != "1" {
		t.Fatalf("past the body budget: status %d Retry-After %q (%s)", status, h.Get("Retry-After"), body)
	}
	assertError(t, body, apierr.QueueFull)
}

// With every place taken, a POST is refused before its body is read, and
// its connection closed without reading it, whatever its size: the 503
// comes back, then the server's close (EOF), though the client never sends
// a byte of its body. net/http by itself reads up to 256 KB of an unread
// body before closing (it would wait here for the body until the read
// timeout), and under overload that read was most of what a refusal cost.
func TestFullGateRefusesWithoutReadingBody(t *testing.T) {
	for _, length := range []int{1 << 20, 200 << 10} {
		t.Run(strconv.Itoa(length), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Concurrency, cfg.Queue = 1, 0
			srv, d := newTestServer(t, cfg)
			held, err := d.thumbs.Gate.Admit(0)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Release()
			c := slowUpload(t, srv.URL, length, nil)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer without the body: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !resp.Close {
				t.Fatalf("status %d, Retry-After %q, close %v", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Close)
			}
			assertError(t, body, apierr.QueueFull)
			if n, err := br.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("after the answer: %d bytes, %v; want the server's close (EOF) without the body sent", n, err)
			}
		})
	}
}

// A request the queue would keep past its deadline is refused at the door,
// its upload unread, after the door's wait (not at once: closed-loop
// clients would send again at once), with the queue's estimated wait as
// its Retry-After.
func TestLateRequestRefusedUnreadWithRetryAfter(t *testing.T) {
	srv, gate, cfg := measuredServer(t)
	// 10 such jobs ahead on one slot: about 3 s of wait, past 2 s.
	for range 10 {
		held, err := gate.Admit(0)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release()
	}
	c := slowUpload(t, srv.URL, 1<<20, nil)
	c.SetReadDeadline(time.Now().Add(10 * cfg.Deadline))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer without the body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 503 || retry < 3 || !resp.Close {
		t.Fatalf("status %d, Retry-After %q, close %v; want 503, the queue's wait (3 s or more), close", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Close)
	}
	assertError(t, body, apierr.QueueFull)
	if !strings.Contains(string(body), "deadline") {
		t.Fatalf("the refusal does not say why: %s", body)
	}
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the answer: %d bytes, %v; want the server's close (EOF) without the body sent", n, err)
	}
}

// A job admitted in time whose slot does not come before its latest start
// (its deadline less the slowest recent service time) is refused there
// with a 503 and Retry-After, not left to wait out its deadline for a 504:
// no 504 from work that was admitted.
func TestAdmittedJobRefusedAtItsLatestStart(t *testing.T) {
	srv, gate, _ := measuredServer(t)
	// One job holds the only slot: 300 ms of work ahead, which the door
	// lets a 2 s request past; the slot never comes.
	held, err := gate.Admit(0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if err := held.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	status, h, body := postThumb(t, srv.URL, "?w=32&h=32", encodeJPEG(t, scene(64, 48), 85))
	took := time.Since(began)
	if status != 503 || h.Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q: %s; want 503 with Retry-After", status, h.Get("Retry-After"), body)
	}
	assertError(t, body, apierr.QueueFull)
	if took < 1200*time.Millisecond || took > 1900*time.Millisecond {
		t.Fatalf("answered after %v; want at the latest start, about 1.7 s (2 s less 300 ms), before the deadline", took)
	}
}

// measuredServer is a server with one slot and a 2 s deadline whose gate
// has measured three jobs of 300 ms each: the service time its deadline
// estimates read.
func measuredServer(t *testing.T) (*httptest.Server, *admission.Gate, config) {
	t.Helper()
	cfg := testConfig(t)
	cfg.Concurrency, cfg.Queue, cfg.Deadline = 1, 20, 2*time.Second
	srv, d := newTestServer(t, cfg)
	gate := d.thumbs.Gate
	for range 3 {
		tk, err := gate.Admit(0)
		if err != nil {
			t.Fatal(err)
		}
		if err := tk.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		tk.Release()
	}
	return srv, gate, cfg
}
