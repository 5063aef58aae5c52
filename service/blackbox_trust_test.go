package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/service/internal/apierr"
)

// The trust goals of issue 20, checked on the built binary as a new user
// would run it, on loopback only: blank signing keys stop start-up; an
// unsigned upload is refused when keys are set; a url= host with U+0130
// gets the answer of an unlisted origin, and no fetch is tried; every
// answer carries nosniff. THUMBD_TEST_BINARY names a binary to check
// instead of building one.
func TestBlackBoxTrust(t *testing.T) {
	bin := os.Getenv("THUMBD_TEST_BINARY") // a binary built elsewhere (a release)
	if bin == "" {
		if testing.Short() {
			t.Skip("builds the binary")
		}
		bin = filepath.Join(t.TempDir(), "thumbd")
		build := exec.Command("go", "build", "-o", bin, ".")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}

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
	o := newOrigin(t, serveBytes(src))
	port := strconv.Itoa(o.Listener.Addr().(*net.TCPAddr).Port)
	env := []string{"THUMBD_SIGNING_KEYS=" + testKeyHex, "THUMBD_SOURCE_DIR=" + dir,
		"THUMBD_ORIGINS=http://images.bigcorp.localhost:" + port, "THUMBD_ORIGINS_ALLOW_LOOPBACK=true"}
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
