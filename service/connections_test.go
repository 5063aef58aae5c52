package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
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
	// then nothing: those past the cap wait in the backlog, their bytes in
	// the kernel's buffers.
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
// still answers; once the uploads go, requests are served again.
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
	serving := &http.Client{Timeout: 5 * time.Second}
	resp, err := serving.Get(c.addr + "/health")
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
	for _, s := range stalled {
		s.Close()
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if status, _, err := fetch(serving, c.addr+"/health"); err == nil && status == 200 {
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
