package main

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
)

// TestAdminPortAnswersWhileUploadsStall: thumbd as a process with an admin
// port and a cap of 4 connections; 12 clients start uploads and stall
// mid-body. /health on the admin port answers throughout (within 1 s, a
// bound for a noisy machine, not a measure), the serving port never has
// more than 4 connections open, and once the clients go it serves again.
// SIGTERM then stops both servers.
func TestAdminPortAnswersWhileUploadsStall(t *testing.T) {
	const limit, clients = 4, 12
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "THUMBD_ADMIN_PORT="+strconv.Itoa(port), "THUMBD_MAX_CONNECTIONS="+strconv.Itoa(limit))
	admin := "http://127.0.0.1:" + strconv.Itoa(port)
	probe := &http.Client{Timeout: time.Second}
	defer probe.CloseIdleConnections()

	// Each client sends its headers and the first 64 KiB of a 1 MiB body,
	// then nothing: those past the cap wait for a place, unread, their
	// bytes in the kernel's buffers.
	stalled := stallUploads(t, c.addr, clients, 64<<10)

	// Throughout: /health on the admin port answers, the serving port's
	// connections stay within the cap and reach it.
	var most int
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		start := time.Now()
		if status, _, err := fetch(probe, admin+"/health"); err != nil || status != 200 {
			t.Fatalf("/health on the admin port after %s: %d, %v", time.Since(start), status, err)
		}
		open := metricValue(t, probe, admin, "thumbd_connections_open")
		if open > limit {
			t.Fatalf("%v connections open on the serving port, past the cap of %d", open, limit)
		}
		most = max(most, int(open))
	}
	if most != limit {
		t.Fatalf("at most %d connections open with %d clients: the cap of %d was never reached", most, clients, limit)
	}
	if at := metricValue(t, probe, admin, "thumbd_connections_at_cap_seconds_total"); at <= 0 {
		t.Fatalf("thumbd_connections_at_cap_seconds_total %v after 2 s at the cap", at)
	}
	if status, _, err := fetch(probe, admin+"/ready"); err != nil || status != 200 {
		t.Fatalf("/ready on the admin port: %d, %v", status, err)
	}

	// The clients go: the serving port takes new connections again, and
	// serves no /metrics (the admin port does).
	for _, s := range stalled {
		s.Close()
	}
	serving := &http.Client{Timeout: 30 * time.Second}
	if status, _, err := fetch(serving, c.addr+"/health"); err != nil || status != 200 {
		t.Fatalf("/health on the serving port once the clients left: %d, %v", status, err)
	}
	if status, _, err := fetch(serving, c.addr+"/metrics"); err != nil || status != 404 {
		t.Fatalf("/metrics on the serving port with an admin port: %d, %v; want 404", status, err)
	}
	if status, _, err := fetch(probe, admin+"/thumbnail"); err != nil || status != 404 {
		t.Fatalf("/thumbnail on the admin port: %d, %v; want 404", status, err)
	}
	serving.CloseIdleConnections()
	probe.CloseIdleConnections()

	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit code %d; logs:\n%s", code, c.logs)
	}
	if _, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		t.Fatal("the admin port still accepts after exit")
	}
}

// TestRefusalPastTheConnectionCap: with THUMBD_PAST_CONNECTION_CAP=refuse
// and a cap of 2, two stalled uploads hold the places; a further request
// is answered at once with a 503 queue_full and Retry-After, counted in
// thumbd_connections_refused_total, while /health on the admin port
// still answers, and on the serving port too (the probes' reserve); once
// the uploads go, requests are served again.
func TestRefusalPastTheConnectionCap(t *testing.T) {
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "THUMBD_ADMIN_PORT="+strconv.Itoa(port), "THUMBD_MAX_CONNECTIONS=2", "THUMBD_PAST_CONNECTION_CAP=refuse")
	admin := "http://127.0.0.1:" + strconv.Itoa(port)
	probe := &http.Client{Timeout: 5 * time.Second}
	defer probe.CloseIdleConnections()
	// The start-up check's keep-alive connection holds a place until it
	// has been idle past the cap's bound (1 s): then the second upload
	// closes it to take its place, rather than be refused.
	time.Sleep(1200 * time.Millisecond)
	stalled := stallUploads(t, c.addr, 2, 1)
	for end := time.Now().Add(5 * time.Second); metricValue(t, probe, admin, "thumbd_connections_open") < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the two stalled uploads never held the cap's places")
		}
	}
	if n := metricValue(t, probe, admin, "thumbd_connections_refused_total"); n != 0 {
		t.Fatalf("thumbd_connections_refused_total %v before any request past the cap, want 0", n)
	}
	// A transport of its own: a new connection past the cap. (The start-up
	// check's connection, taken back idle, would still answer a request
	// sent on it in its grace, with a 503 of its own kind.)
	serving := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	resp, err := serving.Get(c.addr + "/nothing")
	if err != nil {
		t.Fatalf("a request past the cap: %v; want a 503", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), `"code":"queue_full"`) {
		t.Fatalf("past the cap: %d, Retry-After %q, %s; want 503 queue_full with Retry-After: 1", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if n := metricValue(t, probe, admin, "thumbd_connections_refused_total"); n != 1 {
		t.Fatalf("thumbd_connections_refused_total %v, want 1", n)
	}
	if status, _, err := fetch(probe, admin+"/health"); err != nil || status != 200 {
		t.Fatalf("/health on the admin port at the cap: %d, %v", status, err)
	}
	if status, _, _ := freshGet(t, c.addr+"/health", "127.0.0.1"); status != 200 {
		t.Fatalf("/health on the serving port at the cap: %d; want 200", status)
	}
	if n := metricValue(t, probe, admin, "thumbd_connections_refused_total"); n != 1 {
		t.Fatalf("thumbd_connections_refused_total %v after a probe, want still 1", n)
	}
	for _, s := range stalled {
		s.Close()
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if status, _, err := fetch(serving, c.addr+"/nothing"); err == nil && status == 404 {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the serving port did not serve again once the uploads left")
		}
	}
	serving.CloseIdleConnections()
}

// stallUploads starts n uploads of a 1 MiB body to base, each sending its
// head and the body's first sent bytes, then nothing; closed at the
// test's end.
func stallUploads(t *testing.T, base string, n, sent int) []net.Conn {
	t.Helper()
	head := "POST /thumbnail?w=64 HTTP/1.1\r\nHost: thumbd\r\nContent-Type: application/octet-stream\r\nContent-Length: 1048576\r\n\r\n"
	var stalled []net.Conn
	for range n {
		s, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stalled = append(stalled, s)
		s.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(s, head+strings.Repeat("\xff", sent)); err != nil {
			t.Fatalf("upload: %v", err)
		}
	}
	return stalled
}

// fetch GETs url and reads the answer.
func fetch(client *http.Client, url string) (int, []byte, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// metricValue is the value of an unlabelled metric on base's /metrics.
func metricValue(t *testing.T, client *http.Client, base, name string) float64 {
	t.Helper()
	status, b, err := fetch(client, base+"/metrics")
	if err != nil || status != 200 {
		t.Fatalf("/metrics: %d, %v", status, err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("/metrics has no %s:\n%s", name, firstLines(b, 20))
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func firstLines(b []byte, n int) string {
	lines := bytes.SplitN(b, []byte("\n"), n+1)
	return string(bytes.Join(lines[:min(n, len(lines))], []byte("\n")))
}

// startCapped starts thumbd as a process with an admin port and env, and
// returns it with the admin port's base URL. The ready check's keep-alive
// connection is closed first, so that only the test's own connections
// hold the serving port's places.
func startCapped(t *testing.T, env ...string) (*child, string) {
	t.Helper()
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c := startChild(t, append([]string{"THUMBD_ADMIN_PORT=" + strconv.Itoa(port)}, env...)...)
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	admin := "http://127.0.0.1:" + strconv.Itoa(port)
	probe := &http.Client{Timeout: 5 * time.Second}
	defer probe.CloseIdleConnections()
	waitConnections(t, probe, admin, 0)
	return c, admin
}

// waitCap waits until the serving port has reached its cap (it may have
// closed a connection since to make room).
func waitCap(t *testing.T, probe *http.Client, admin string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); metricValue(t, probe, admin, "thumbd_connections_at_cap_seconds_total") == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the cap never reached: %v connections open", metricValue(t, probe, admin, "thumbd_connections_open"))
		}
	}
}

// waitConnections waits until the serving port has n connections open.
func waitConnections(t *testing.T, probe *http.Client, admin string, n float64) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); metricValue(t, probe, admin, "thumbd_connections_open") != n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("thumbd_connections_open %v, want %v", metricValue(t, probe, admin, "thumbd_connections_open"), n)
		}
	}
}

// freshGet asks url over a new connection from the loopback address
// from, and returns the answer's status, its body and how long it took
// (within 5 s).
func freshGet(t *testing.T, url, from string) (int, []byte, time.Duration) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	start := time.Now()
	status, body, err := fetch(client, url)
	if err != nil {
		t.Fatalf("%s from %s after %s: %v", url, from, time.Since(start), err)
	}
	return status, body, time.Since(start)
}

// TestSlowBodiesDoNotHoldTheCap: thumbd as a process with a cap of 8
// connections and a client stall timeout of 300 ms. 8 uploads send their
// head (a Content-Length of 1 MiB), then a byte every 2 s: they hold
// every place. A fresh client's request on the serving port (an unknown
// path: answered at once, as a cache hit is, and no probe, which the
// probes' reserve would serve past the cap) is answered within a second
// all the same: at the cap, the uploads whose body stalled are closed to
// let it in, and counted as body_stalled. Before, they held the places
// for the 30 s read timeout, and could renew them. Each upload closed is
// answered first, a 503 queue_full with Retry-After, never cut silently.
func TestSlowBodiesDoNotHoldTheCap(t *testing.T) {
	const limit = 8
	c, admin := startCapped(t, "THUMBD_MAX_CONNECTIONS="+strconv.Itoa(limit), "THUMBD_CLIENT_STALL_TIMEOUT=300ms")
	probe := &http.Client{Timeout: 5 * time.Second}
	defer probe.CloseIdleConnections()
	uploads := stallUploads(t, c.addr, limit, 0)
	for _, u := range uploads {
		// A byte every 2 s, until thumbd or the test's end closes it.
		var next func()
		next = func() {
			if _, err := u.Write([]byte{0xff}); err == nil {
				time.AfterFunc(2*time.Second, next)
			}
		}
		time.AfterFunc(2*time.Second, next)
	}
	waitCap(t, probe, admin)
	freshServedPast(t, c, probe, admin, "body_stalled")
	if open := metricValue(t, probe, admin, "thumbd_connections_open"); open > limit {
		t.Fatalf("%v connections open past the cap of %d", open, limit)
	}
	// Every upload the cap closed read its 503 first; the others still
	// wait.
	answered := 0
	for _, u := range uploads {
		u.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		got, err := io.ReadAll(u)
		switch {
		case isTimeout(err) && len(got) == 0:
		case bytes.HasPrefix(got, []byte("HTTP/1.1 503 ")) && bytes.Contains(got, []byte("\r\nRetry-After: 1\r\n")) && bytes.Contains(got, []byte(`"code":"queue_full"`)):
			answered++
		default:
			t.Fatalf("a stalled upload read %q, %v; want a 503 queue_full with Retry-After, or still its place", got, err)
		}
	}
	if answered == 0 {
		t.Fatal("no stalled upload was answered a 503")
	}
}

// isTimeout: err is a deadline's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// freshServedPast checks that a fresh client's request on the serving
// port, held by slow clients, is answered within a second, and that slow
// connections were closed for reason.
func freshServedPast(t *testing.T, c *child, probe *http.Client, admin, reason string) {
	t.Helper()
	status, _, took := freshGet(t, c.addr+"/nothing", "127.0.0.1")
	if status != 404 || took > time.Second {
		t.Fatalf("/nothing with the cap held by slow clients: %d after %s; want 404 within 1 s", status, took)
	}
	series := `thumbd_connections_slow_closed_total{reason="` + reason + `"}`
	if n := metricValue(t, probe, admin, series); n < 1 {
		t.Fatalf("%s %v, want 1 at least", series, n)
	}
	t.Logf("/nothing answered after %s", took)
}

// TestSlowReadersDoNotHoldTheCap: the same with 8 clients that ask for a
// large answer (a cache hit of a 2048x2048 noise thumbnail, about 10 MB)
// and never read it, with a receive buffer of a few KiB: once thumbd's
// writes wait on them, a fresh client's /health is answered within a
// second, and they are counted as answer_stalled. Before, they held the
// places for the 60 s write timeout.
func TestSlowReadersDoNotHoldTheCap(t *testing.T) {
	const limit = 8
	dir := t.TempDir()
	noise := image.NewNRGBA(image.Rect(0, 0, 2048, 2048))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise.Pix {
		noise.Pix[i] = byte(rng.Uint32())
		if i%4 == 3 {
			noise.Pix[i] = 255 // opaque
		}
	}
	var src bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&src, noise); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "noise.png"), src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c, admin := startCapped(t, "THUMBD_MAX_CONNECTIONS="+strconv.Itoa(limit), "THUMBD_CLIENT_STALL_TIMEOUT=300ms",
		"THUMBD_SOURCE_DIR="+dir, "THUMBD_CACHE_SIZE=67108864")
	probe := &http.Client{Timeout: 5 * time.Second}
	defer probe.CloseIdleConnections()
	const path = "/thumbnail?src=noise.png&w=2048&h=2048&fit=fill&format=jpeg&q=100"
	warm := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if status, b, err := fetch(warm, c.addr+path); err != nil || status != 200 || len(b) < 8<<20 {
		t.Fatalf("the answer: %d, %d bytes, %v; want 200 and more than the buffers hold (8 MiB)", status, len(b), err)
	}
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	for range limit {
		s, err := d.Dial("tcp", strings.TrimPrefix(c.addr, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := io.WriteString(s, "GET "+path+" HTTP/1.1\r\nHost: thumbd\r\n\r\n"); err != nil {
			t.Fatal(err)
		} // and never reads
	}
	waitCap(t, probe, admin)
	freshServedPast(t, c, probe, admin, "answer_stalled")
}

// TestPerAddressCapServesOthers: with THUMBD_MAX_CONNECTIONS_PER_ADDRESS=2
// (and a cap of 8), two stalled uploads from 127.0.0.1 hold its share: a
// third connection from 127.0.0.1 is answered 503 queue_full with
// Retry-After and counted, while one from 127.0.0.2 is served, and so is
// a probe from 127.0.0.1 (in the probes' reserve).
func TestPerAddressCapServesOthers(t *testing.T) {
	c, admin := startCapped(t, "THUMBD_MAX_CONNECTIONS=8", "THUMBD_MAX_CONNECTIONS_PER_ADDRESS=2")
	probe := &http.Client{Timeout: 5 * time.Second}
	defer probe.CloseIdleConnections()
	stallUploads(t, c.addr, 2, 1)
	waitConnections(t, probe, admin, 2)
	status, body, _ := freshGet(t, c.addr+"/nothing", "127.0.0.1")
	if status != 503 || !strings.Contains(string(body), `"code":"queue_full"`) {
		t.Fatalf("a third connection from 127.0.0.1: %d %s; want 503 queue_full", status, body)
	}
	if status, _, _ := freshGet(t, c.addr+"/nothing", "127.0.0.2"); status != 404 {
		t.Fatalf("a connection from 127.0.0.2: %d; want 404", status)
	}
	if status, _, _ := freshGet(t, c.addr+"/health", "127.0.0.1"); status != 200 {
		t.Fatalf("a probe from 127.0.0.1: %d; want 200", status)
	}
	if n := metricValue(t, probe, admin, "thumbd_connections_address_refused_total"); n != 1 {
		t.Fatalf("thumbd_connections_address_refused_total %v, want 1", n)
	}
}

// TestHealthAnswersPastTheCapByDefault: thumbd as a process with no
// settings (no admin port, the cap its default). Uploads that stall
// mid-body hold every place of the cap, and 50 more wait for one; a
// fresh /health on the serving port, each on a new connection as a
// kubelet's probe, is answered 200 within 1 s (a bound for a noisy
// machine, not a measure), 10 times in a row, and so are /ready and
// /metrics; the uploads past the cap still wait, none answered or
// closed. Before the probes' reserve the probe waited behind the 50
// until the cap closed stalled bodies (5 s, THUMBD_CLIENT_STALL_TIMEOUT).
func TestHealthAnswersPastTheCapByDefault(t *testing.T) {
	c := startChild(t)
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	limit := int(metricValue(t, probe, c.addr, "thumbd_connections_max"))
	if limit < 8 || limit > 2000 {
		t.Fatalf("the default cap is %d", limit)
	}
	const past = 50
	// A small declared length: the places are held, not the source budget.
	head := "POST /thumbnail?w=64 HTTP/1.1\r\nHost: thumbd\r\nContent-Type: application/octet-stream\r\nContent-Length: 65536\r\n\r\n"
	var uploads []net.Conn
	for range limit + past {
		u, err := net.Dial("tcp", strings.TrimPrefix(c.addr, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { u.Close() })
		if _, err := io.WriteString(u, head+strings.Repeat("\xff", 1024)); err != nil {
			t.Fatal(err)
		}
		uploads = append(uploads, u)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		open := metricValue(t, probe, c.addr, "thumbd_connections_open")
		waiting := metricValue(t, probe, c.addr, "thumbd_connections_waiting")
		if int(open) == limit && waiting >= past {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%v connections open and %v waiting; want the cap of %d and %d waiting", open, waiting, limit, past)
		}
	}
	for i := range 10 {
		for _, path := range []string{"/health", "/ready", "/metrics"} {
			status, _, took := freshGet(t, c.addr+path, "127.0.0.1")
			if status != 200 || took > time.Second {
				t.Fatalf("%s on the serving port past the cap, probe %d: %d after %s; want 200 within 1 s", path, i, status, took)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	last := uploads[len(uploads)-1]
	last.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := last.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("an upload waiting past the cap read %d bytes, %v; want it still waiting", n, err)
	}
	if n := metricValue(t, probe, c.addr, "thumbd_connections_probes_total"); n < 30 {
		t.Fatalf("thumbd_connections_probes_total %v after 30 probes past the cap", n)
	}
}
