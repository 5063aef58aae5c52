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
	head := "POST /thumbnail?w=64 HTTP/1.1\r\nHost: thumbd\r\nContent-Type: application/octet-stream\r\nContent-Length: 1048576\r\n\r\n"
	var stalled []net.Conn
	defer func() {
		for _, s := range stalled {
			s.Close()
		}
	}()
	for range clients {
		s, err := net.Dial("tcp", strings.TrimPrefix(c.addr, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, s)
		s.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(s, head+strings.Repeat("\xff", 64<<10)); err != nil {
			t.Fatalf("upload: %v", err)
		}
	}

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
