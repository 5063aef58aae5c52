package main

import (
	"bytes"
	"cmp"
	"context"
	"net"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/service/internal/apierr"
)

// The trust goals of issues 20 and 28, checked on the built binary as a
// new user would run it, on loopback only: blank signing keys stop
// start-up; an unsigned upload is refused when keys are set; a url= host
// with U+0130 gets the answer of an unlisted origin, and no fetch is
// tried; every answer carries nosniff; a zoned IPv6 host is refused before
// any connection, whatever wildcard entry its text ends in; a url=
// thumbnail carries the origin's caching rules; client hints do not widen
// a signed URL unless it signs hints=on; the OTLP exporter follows no
// redirect. THUMBD_TEST_BINARY names a binary to check instead of
// building one.
func TestBlackBoxTrust(t *testing.T) {
	bin := trustBinary(t)

	t.Run("blank keys stop start-up", func(t *testing.T) {
		for _, blank := range []string{"", " , "} {
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "PORT=0", "THUMBD_SIGNING_KEYS="+blank)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(stderr.String(), "THUMBD_SIGNING_KEYS") {
					t.Errorf("THUMBD_SIGNING_KEYS=%q: %v\n%s", blank, err, stderr.String())
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Errorf("THUMBD_SIGNING_KEYS=%q: still running after 10s\n%s", blank, stderr.String())
			}
		}
	})

	src := encodeJPEG(t, scene(40, 30), 90)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.jpg"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s.jpg"), encodeJPEG(t, scene(64, 48), 90), 0o644); err != nil {
		t.Fatal(err)
	}
	o := newOrigin(t, serveBytes(src))
	port := strconv.Itoa(o.Listener.Addr().(*net.TCPAddr).Port)
	// An origin on IPv6 loopback, named by no entry but a wildcard's port.
	v6 := newOriginOn(t, "[::1]:0", serveBytes(src))
	v6Port := ""
	if v6 != nil {
		v6Port = strconv.Itoa(v6.Listener.Addr().(*net.TCPAddr).Port)
	}
	// An origin whose caching rules are the path: /no-store, /private,
	// /max-age=5.
	rules := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", strings.TrimPrefix(r.URL.Path, "/"))
		serveBytes(src)(w, r)
	})
	env := []string{"THUMBD_SIGNING_KEYS=" + testKeyHex, "THUMBD_SOURCE_DIR=" + dir, "THUMBD_CLIENT_HINTS=true",
		"THUMBD_ORIGINS=http://images.bigcorp.localhost:" + port + ",http://" + rules.hostPort() + ",http://*.static.example.net:" + cmp.Or(v6Port, "1"),
		"THUMBD_ORIGINS_ALLOW_LOOPBACK=true"}
	logs := &launch.Log{}
	srv, err := launch.Start(context.Background(), launch.Spec{Command: []string{bin}, Env: env, Stderr: logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(5 * time.Second) })
	if err := srv.WaitReady(context.Background(), 20*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	base := srv.URL()
	// Every answer below is checked for nosniff.
	answer := func(method, path string, body []byte) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s (%d): X-Content-Type-Options %q", method, path, resp.StatusCode, got)
		}
		return resp.StatusCode, b.Bytes()
	}
	wantError := func(method, path string, body []byte, code apierr.Code) []byte {
		t.Helper()
		status, got := answer(method, path, body)
		if status != code.Status() {
			t.Errorf("%s %s: %d %.200q, want %s", method, path, status, got, code)
			return got
		}
		assertError(t, got, code)
		return got
	}

	t.Run("unsigned upload refused", func(t *testing.T) {
		wantError("POST", "/thumbnail?w=4096&format=avif", src, apierr.SignatureMissing)
		wantError("POST", "/thumbnail?w=20", src, apierr.SignatureMissing)
	})

	t.Run("a U+0130 host is an unlisted origin, not fetched", func(t *testing.T) {
		for _, host := range []string{"images.b\u0130gcorp.localhost", "images.b%C4%B0gcorp.localhost", "images.unlisted.localhost"} {
			path := signBinary(t, bin, env, "/thumbnail?url="+url.QueryEscape("http://"+host+":"+port+"/a.jpg")+"&w=20")
			wantError("GET", path, nil, apierr.OriginNotAllowed)
		}
		_, metrics := answer("GET", "/metrics", nil)
		if !regexp.MustCompile(`(?m)^thumbd_origin_fetch_duration_seconds_count 0$`).Match(metrics) {
			t.Errorf("a fetch was tried:\n%s", regexp.MustCompile(`(?m)^thumbd_origin_fetch.*$`).FindAll(metrics, -1))
		}
		if n := o.conns.Load(); n != 0 {
			t.Errorf("the origin saw %d connections", n)
		}
	})

	t.Run("zoned host refused", func(t *testing.T) {
		if v6 == nil {
			t.Skip("no IPv6 loopback")
		}
		for _, host := range []string{"[::1%25x.static.example.net]", "[::1%2525x.static.example.net]", "x%25y.static.example.net"} {
			path := signBinary(t, bin, env, "/thumbnail?url="+url.QueryEscape("http://"+host+":"+v6Port+"/a.jpg")+"&w=20")
			wantError("GET", path, nil, apierr.BadURL)
		}
		if n := v6.conns.Load(); n != 0 {
			t.Errorf("::1 saw %d connections through a wildcard entry", n)
		}
	})

	t.Run("origin cache rules reach the answer", func(t *testing.T) {
		for rule, want := range map[string]*regexp.Regexp{
			"no-store":  regexp.MustCompile(`^no-store$`),
			"private":   regexp.MustCompile(`^private, no-cache$`),
			"max-age=5": regexp.MustCompile(`^public, max-age=[45]$`),
		} {
			path := signBinary(t, bin, env, "/thumbnail?url="+url.QueryEscape(rules.URL+"/"+rule)+"&w=20")
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if cc := resp.Header.Get("Cache-Control"); resp.StatusCode != 200 || !want.MatchString(cc) {
				t.Errorf("origin %s: %d, Cache-Control %q", rule, resp.StatusCode, cc)
			}
		}
	})

	t.Run("hints under signatures", func(t *testing.T) {
		width := func(path, hint string) int {
			t.Helper()
			req, _ := http.NewRequest("GET", base+path, nil)
			req.Header.Set("Sec-CH-Width", hint)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
			}
			img, _ := decoded(t, b)
			return img.Bounds().Dx()
		}
		// The review's case: a 64x48 source, no w, Sec-CH-Width: 4096 was a
		// 4096x3072 PNG. Signed without hints=on: the default box.
		if w := width(signBinary(t, bin, env, "/thumbnail?src=s.jpg"), "4096"); w != 256 {
			t.Errorf("signed without hints=on: %d wide, want the default 256", w)
		}
		if w := width(signBinary(t, bin, env, "/thumbnail?src=s.jpg&hints=on"), "300"); w != 300 {
			t.Errorf("signed with hints=on: %d wide, want the hint's 300", w)
		}
		wantError("GET", signBinary(t, bin, env, "/thumbnail?src=s.jpg")+"&hints=on", nil, apierr.BadSignature) // hints= is signed
	})

	t.Run("nosniff on every answer", func(t *testing.T) {
		if status, body := answer("GET", signBinary(t, bin, env, "/thumbnail?src=a.jpg&w=20"), nil); status != 200 {
			t.Errorf("a signed GET: %d %.200q", status, body)
		}
		for _, path := range []string{"/health", "/ready", "/json", "/compute?n=10", "/hash?data=x"} {
			if status, body := answer("GET", path, nil); status != 200 {
				t.Errorf("GET %s: %d %s", path, status, body)
			}
		}
		wantError("GET", "/thumbnail?src=a.jpg", nil, apierr.SignatureMissing)
		wantError("GET", "/no/such/route", nil, apierr.NotFound)
		wantError("DELETE", "/health", nil, apierr.MethodNotAllowed)
	})
}

// A collector that answers 307 to another address gets the spans and
// the OTEL_EXPORTER_OTLP_HEADERS (an API key) there if the exporter
// follows: the built binary's does not. The spans of a traced request are
// flushed at SIGTERM; the redirect's target must see nothing, and the
// failed export is logged.
func TestBlackBoxTrustOTLPRedirect(t *testing.T) {
	bin := trustBinary(t)
	var elsewhere, redirected atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer target.Close()
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected.Add(1)
		http.Redirect(w, r, target.URL+"/v1/traces", http.StatusTemporaryRedirect)
	}))
	defer collector.Close()
	logs := &launch.Log{}
	srv, err := launch.Start(context.Background(), launch.Spec{Command: []string{bin}, Stderr: logs,
		Env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_EXPORTER_OTLP_HEADERS=api-key=secret"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitReady(context.Background(), 20*time.Second); err != nil {
		srv.Stop(5 * time.Second)
		t.Fatalf("%v\n%s", err, logs)
	}
	resp, err := http.Get(srv.URL() + "/json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	srv.Stop(10 * time.Second) // SIGTERM: the spans are flushed
	if redirected.Load() == 0 {
		t.Fatalf("the collector got no export\n%s", logs)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target got %d exports", n)
	}
	if !strings.Contains(logs.String(), "redirect") {
		t.Errorf("the failed export is not logged:\n%s", logs)
	}
}

// trustBinary is the binary the black-box trust tests run:
// THUMBD_TEST_BINARY (one built elsewhere, a release), else one built here.
func trustBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("THUMBD_TEST_BINARY"); bin != "" {
		return bin
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "thumbd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// signBinary signs path with the built binary's `thumbd sign`, in env.
func signBinary(t *testing.T, bin string, env []string, path string) string {
	t.Helper()
	cmd := exec.Command(bin, "sign", path)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("thumbd sign %s: %v\n%s", path, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
