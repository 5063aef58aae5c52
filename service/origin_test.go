package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/origin"
)

// testOrigin is an origin server on 127.0.0.1 that counts the connections
// it accepts: "the origin saw nothing" means not even a TCP connection.
type testOrigin struct {
	*httptest.Server
	conns atomic.Int32
}

func newOrigin(t *testing.T, h http.HandlerFunc) *testOrigin {
	t.Helper()
	o := newOriginOn(t, "127.0.0.1:0", h)
	if o == nil {
		t.Fatal("cannot listen on 127.0.0.1")
	}
	return o
}

// newOriginOn is newOrigin listening on addr, nil when addr cannot be
// listened on (no IPv6 loopback).
func newOriginOn(t *testing.T, addr string, h http.HandlerFunc) *testOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil
	}
	o := &testOrigin{Server: httptest.NewUnstartedServer(h)}
	o.Listener.Close()
	o.Listener = ln
	o.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			o.conns.Add(1)
		}
	}
	o.Start()
	t.Cleanup(o.Close)
	return o
}

// hostPort is the origin's 127.0.0.1:PORT.
func (o *testOrigin) hostPort() string { return strings.TrimPrefix(o.URL, "http://") }

// serveBytes is an origin answering every path with b, under a media type
// that says nothing of it: thumbd sniffs the bytes, as for an upload.
func serveBytes(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	}
}

// originConfig allows patterns, with loopback origins let through or not.
func originConfig(t *testing.T, allowLoopback bool, patterns ...string) config {
	t.Helper()
	cfg := testConfig(t)
	ps, err := origin.ParsePatterns(strings.Join(patterns, ","))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Origins, cfg.AllowLoopback = ps, allowLoopback
	return cfg
}

// thumbURL is thumbd's GET /thumbnail of an origin URL.
func thumbURL(base, originURL, query string) string {
	u := base + "/thumbnail?url=" + url.QueryEscape(originURL)
	if query != "" {
		u += "&" + query
	}
	return u
}

func getError(t *testing.T, u string, status int, code apierr.Code) {
	t.Helper()
	got, _, body := do(t, "GET", u, nil)
	if got != status {
		t.Fatalf("GET %s: status %d, want %d (%s)", u, got, status, body)
	}
	assertError(t, body, code)
}

func TestOriginThumbnail(t *testing.T) {
	src := encodeJPEG(t, scene(400, 300), 90)
	o := newOrigin(t, serveBytes(src))
	srv, d := newTestServer(t, originConfig(t, true, "http://"+o.hostPort()))

	status, h, body := do(t, "GET", thumbURL(srv.URL, o.URL+"/photos/a.jpg", "w=100&h=50&format=webp"), nil)
	if status != 200 || h.Get("Content-Type") != "image/webp" {
		t.Fatalf("status %d %v %s", status, h, body)
	}
	if img, _ := decoded(t, body); img.Bounds().Dx() != 100 || img.Bounds().Dy() != 50 {
		t.Fatalf("size %v", img.Bounds())
	}
	// The same bytes posted give the same ETag: identity is the bytes'.
	_, posted, _ := postThumb(t, srv.URL, "?w=100&h=50&format=webp", src)
	if h.Get("ETag") == "" || h.Get("ETag") != posted.Get("ETag") || h.Get("Cache-Control") == "" {
		t.Errorf("ETag %q, POST's %q", h.Get("ETag"), posted.Get("ETag"))
	}
	status, _, _ = do(t, "GET", thumbURL(srv.URL, o.URL+"/photos/a.jpg", "w=100&h=50&format=webp"), nil, "If-None-Match", h.Get("ETag"))
	if status != 304 {
		t.Errorf("If-None-Match: %d", status)
	}
	if used := d.thumbs.Limits.Budget.Used(); used != 0 {
		t.Errorf("%d bytes still held", used)
	}
}

func TestOriginAnswers(t *testing.T) {
	big := encodeJPEG(t, scene(1600, 1200), 95)
	mux := http.NewServeMux()
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) })
	for _, status := range []int{500, 502, 503, 403, 401, 400, 204, 206, 304, 300} {
		mux.HandleFunc("/status/"+strconv.Itoa(status), func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) })
	}
	mux.HandleFunc("/text", serveBytes([]byte("<html>not an image</html>")))
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	})
	mux.HandleFunc("/slow-body", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2000")
		w.Write(big[:1000])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	})
	mux.HandleFunc("/short-body", func(w http.ResponseWriter, r *http.Request) {
		// Says more than it sends, then hangs up.
		w.Header().Set("Content-Length", "2000")
		w.Write(big[:1000])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	mux.HandleFunc("/declared-too-large", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(big)))
		w.Write(big)
	})
	mux.HandleFunc("/chunked-too-large", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < len(big); i += 4096 {
			w.Write(big[i:min(i+4096, len(big))])
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/lying-length", func(w http.ResponseWriter, r *http.Request) {
		// Content-Length says 1000 bytes; the body goes on past the limit.
		// (Go's client logs the bytes it finds after the body.)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: 1000\r\n\r\n")
		buf.Write(big[:1000])
		buf.WriteString(strings.Repeat("and more bytes than declared ", len(big)/20))
		buf.Flush()
	})
	o := newOrigin(t, mux.ServeHTTP)
	cfg := originConfig(t, true, "http://"+o.hostPort())
	cfg.MaxBodyBytes = int64(len(big)) / 2
	cfg.FetchTimeout = 300 * time.Millisecond
	srv, d := newTestServer(t, cfg)

	tests := []struct {
		path   string
		status int
		code   apierr.Code
	}{
		{"/missing", 404, apierr.SourceNotFound},
		{"/gone", 404, apierr.SourceNotFound},
		{"/status/500", 502, apierr.OriginError},
		{"/status/502", 502, apierr.OriginError},
		{"/status/503", 502, apierr.OriginError},
		{"/status/403", 502, apierr.OriginError},
		{"/status/401", 502, apierr.OriginError},
		{"/status/400", 502, apierr.OriginError},
		{"/status/204", 502, apierr.OriginError},
		{"/status/206", 502, apierr.OriginError},
		{"/status/304", 502, apierr.OriginError},
		{"/status/300", 502, apierr.OriginError},
		{"/short-body", 502, apierr.OriginError},
		{"/text", 415, apierr.UnsupportedFormat},
		{"/slow", 504, apierr.OriginTimeout},
		{"/slow-body", 504, apierr.OriginTimeout},
		{"/declared-too-large", 422, apierr.SourceTooLarge},
		{"/chunked-too-large", 422, apierr.SourceTooLarge},
		// Only the 1000 bytes declared are read: a truncated JPEG.
		{"/lying-length", 422, apierr.UnprocessableImage},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			start := time.Now()
			getError(t, thumbURL(srv.URL, o.URL+tc.path, ""), tc.status, tc.code)
			if time.Since(start) > 10*cfg.FetchTimeout+5*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
		})
	}
	if used := d.thumbs.Limits.Budget.Used(); used != 0 {
		t.Errorf("%d bytes still held", used)
	}
	// The fetch metrics: errors by code, bytes of what was read whole.
	_, _, metrics := do(t, "GET", srv.URL+"/metrics", nil)
	for _, want := range []string{
		`thumbd_origin_fetch_errors_total{code="source_not_found"} 2`,
		`thumbd_origin_fetch_errors_total{code="origin_error"} 11`,
		`thumbd_origin_fetch_errors_total{code="origin_timeout"} 2`,
		`thumbd_origin_fetch_errors_total{code="source_too_large"} 2`,
		"thumbd_origin_fetch_duration_seconds_count 19",
		"thumbd_origin_fetch_bytes_count 2",
		"thumbd_origin_fetch_bytes_sum 1025",
	} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if !regexp.MustCompile(`thumbd_thumbnail_rejections_total\{reason="origin_timeout"\} 2`).Match(metrics) {
		t.Error("rejections do not count origin_timeout")
	}
}

func TestOriginRedirects(t *testing.T) {
	src := encodeJPEG(t, scene(200, 150), 90)
	unlisted := newOrigin(t, serveBytes(src))
	listed := newOrigin(t, serveBytes(src))
	var o *testOrigin
	o = newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/img":
			w.Write(src)
		case strings.HasPrefix(p, "/chain/"):
			// /chain/N redirects N times, relatively, before the image.
			n, _ := strconv.Atoi(strings.TrimPrefix(p, "/chain/"))
			next := "/img"
			if n > 1 {
				next = "/chain/" + strconv.Itoa(n-1)
			}
			http.Redirect(w, r, next, http.StatusFound)
		case p == "/to-listed":
			http.Redirect(w, r, listed.URL+"/img", http.StatusMovedPermanently)
		case p == "/to-unlisted":
			http.Redirect(w, r, unlisted.URL+"/img", http.StatusTemporaryRedirect)
		case p == "/to-elsewhere":
			http.Redirect(w, r, "http://images.elsewhere.test/img", http.StatusPermanentRedirect)
		case p == "/to-https":
			http.Redirect(w, r, "https://"+o.hostPort()+"/img", http.StatusFound)
		case p == "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case p == "/to-credentials":
			http.Redirect(w, r, "http://user:pw@"+o.hostPort()+"/img", http.StatusFound)
		}
	})
	srv, _ := newTestServer(t, originConfig(t, true, "http://"+o.hostPort(), "http://"+listed.hostPort()))
	for _, path := range []string{"/chain/1", "/chain/3", "/to-listed"} {
		if status, _, body := do(t, "GET", thumbURL(srv.URL, o.URL+path, "w=20"), nil); status != 200 {
			t.Errorf("%s: %d %s", path, status, body)
		}
	}
	for path, want := range map[string]apierr.Code{
		"/chain/4":        apierr.TooManyRedirects,
		"/to-unlisted":    apierr.OriginNotAllowed,
		"/to-elsewhere":   apierr.OriginNotAllowed,
		"/to-https":       apierr.OriginNotAllowed,
		"/to-file":        apierr.URLSchemeNotAllowed,
		"/to-credentials": apierr.URLCredentials,
	} {
		t.Run(path, func(t *testing.T) {
			getError(t, thumbURL(srv.URL, o.URL+path, ""), want.Status(), want)
		})
	}
	if n := unlisted.conns.Load(); n != 0 {
		t.Errorf("the unlisted origin saw %d connections", n)
	}
	if n := listed.conns.Load(); n == 0 {
		t.Error("the listed origin saw nothing")
	}
}

// Every redirect hop's connection passes the guard, not only the first
// one's: a listed name that resolves to an address the guard refuses even
// with the loopback switch on (0.0.0.0, "this network") is refused on the
// redirect, and the port it names sees no connection. (Linux delivers a
// connect to 0.0.0.0 to the host's own loopback, so even a broken guard
// would send nothing off this machine.)
func TestOriginRedirectHopIsGuarded(t *testing.T) {
	target := newOrigin(t, serveBytes(encodeJPEG(t, scene(40, 30), 90)))
	hop := "http://hop.redirect.test:" + strconv.Itoa(target.Listener.Addr().(*net.TCPAddr).Port)
	first := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, hop+"/a.jpg", http.StatusFound) })
	cfg := originConfig(t, true, "http://"+first.hostPort(), hop)
	d := newTestDeps(t, cfg)
	dns := startFakeDNS(t, netip.IPv4Unspecified())
	d.thumbs.Sources.Origins = newOrigins(cfg, d.thumbs.Limits, d.metrics, dns.resolver, d.tracing)
	srv := newTestServerFrom(t, d)
	getError(t, thumbURL(srv.URL, first.URL+"/a.jpg", ""), 403, apierr.OriginAddressBlocked)
	if first.conns.Load() == 0 || dns.queries.Load() == 0 {
		t.Fatal("the redirect was not followed to the name")
	}
	if n := target.conns.Load(); n != 0 {
		t.Errorf("the redirect's target saw %d connections", n)
	}
}

// URLs refused before any connection is made: the origin sees nothing.
func TestOriginURLChecks(t *testing.T) {
	o := newOrigin(t, serveBytes(encodeJPEG(t, scene(40, 30), 90)))
	hp, port := o.hostPort(), strconv.Itoa(o.Listener.Addr().(*net.TCPAddr).Port)
	srv, _ := newTestServer(t, originConfig(t, true, "http://"+hp, "https://images.example.test"))
	for raw, want := range map[string]apierr.Code{
		"http://user:pw@" + hp + "/a.jpg":     apierr.URLCredentials,
		"http://user@" + hp + "/a.jpg":        apierr.URLCredentials,
		"ftp://" + hp + "/a.jpg":              apierr.URLSchemeNotAllowed,
		"file:///etc/passwd":                  apierr.URLSchemeNotAllowed,
		"https://" + hp + "/a.jpg":            apierr.OriginNotAllowed,
		"http://images.example.test/a.jpg":    apierr.OriginNotAllowed,
		"http://localhost:" + port + "/a.jpg": apierr.OriginNotAllowed,
		"http://127.0.0.2:" + port + "/a.jpg": apierr.OriginNotAllowed,
		"//" + hp + "/a.jpg":                  apierr.BadURL,
		"http://[::1/":                        apierr.BadURL,
	} {
		t.Run(raw, func(t *testing.T) {
			getError(t, thumbURL(srv.URL, raw, ""), want.Status(), want)
		})
	}
	getError(t, srv.URL+"/thumbnail?url=", 400, apierr.BadURL)
	getError(t, srv.URL+"/thumbnail?url=x&src=y", 400, apierr.BadParameter)
	getError(t, srv.URL+"/thumbnail?w=10", 400, apierr.BadParameter)
	if n := o.conns.Load(); n != 0 {
		t.Errorf("the origin saw %d connections", n)
	}
}

func TestOriginsDisabled(t *testing.T) {
	o := newOrigin(t, serveBytes(nil))
	srv, _ := newTestServer(t, testConfig(t))
	getError(t, thumbURL(srv.URL, o.URL+"/a.jpg", ""), 404, apierr.OriginsDisabled)
	if o.conns.Load() != 0 {
		t.Error("the origin was contacted")
	}
}

// With the loopback switch off, a loopback origin is refused, even when
// listed, and sees no connection.
func TestOriginLoopbackRefused(t *testing.T) {
	o := newOrigin(t, serveBytes(encodeJPEG(t, scene(40, 30), 90)))
	v6 := "http://[::ffff:127.0.0.1]:" + strconv.Itoa(o.Listener.Addr().(*net.TCPAddr).Port)
	srv, _ := newTestServer(t, originConfig(t, false, "http://"+o.hostPort(), v6))
	getError(t, thumbURL(srv.URL, o.URL+"/a.jpg", ""), 403, apierr.OriginAddressBlocked)
	getError(t, thumbURL(srv.URL, v6+"/a.jpg", ""), 403, apierr.OriginAddressBlocked)
	if n := o.conns.Load(); n != 0 {
		t.Errorf("the origin saw %d connections", n)
	}
}

// DNS rebinding: an allowed name that resolves to loopback (127.0.0.1, or
// ::1 or ::ffff:127.0.0.1 in an AAAA record) is refused at the dial,
// whatever the allow-list says, and the origin sees no connection. The
// loopback switch lets through only entries that are loopback names
// (localhost, *.localhost) or literals: with it on, an ordinary name
// (and a wildcard) that resolves to loopback is still refused, and a
// .localhost name is fetched (so the test resolver really was asked and
// its answer dialed).
func TestOriginDNSRebinding(t *testing.T) {
	src := encodeJPEG(t, scene(40, 30), 90)
	o := newOrigin(t, serveBytes(src))
	port := strconv.Itoa(o.Listener.Addr().(*net.TCPAddr).Port)
	name := "http://images.rebind.test:" + port
	// get fetches target, with entry allowed and the resolver answering.
	get := func(allow bool, answer, entry, target string) (int, []byte) {
		t.Helper()
		dns := startFakeDNS(t, netip.MustParseAddr(answer))
		cfg := originConfig(t, allow, entry)
		d := newTestDeps(t, cfg)
		d.thumbs.Sources.Origins = newOrigins(cfg, d.thumbs.Limits, d.metrics, dns.resolver, d.tracing)
		status, _, body := do(t, "GET", thumbURL(newTestServerFrom(t, d).URL, target+"/a.jpg", "w=10"), nil)
		if dns.queries.Load() == 0 {
			t.Fatalf("%s: the test resolver was never asked", answer)
		}
		return status, body
	}
	for _, answer := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1"} {
		status, body := get(false, answer, name, name)
		if status != 403 {
			t.Fatalf("%s, switch off: %d %s", answer, status, body)
		}
		assertError(t, body, apierr.OriginAddressBlocked)
		if n := o.conns.Load(); n != 0 {
			t.Fatalf("%s: the origin saw %d connections", answer, n)
		}
	}
	for _, answer := range []string{"127.0.0.1", "::1"} {
		for _, entry := range []string{name, "http://*.rebind.test:" + port} {
			status, body := get(true, answer, entry, name)
			if status != 403 {
				t.Fatalf("%s, switch on, %s: %d (%d bytes)", answer, entry, status, len(body))
			}
			assertError(t, body, apierr.OriginAddressBlocked)
		}
		if n := o.conns.Load(); n != 0 {
			t.Fatalf("%s: the origin saw %d connections", answer, n)
		}
	}
	local := "http://images.rebind.localhost:" + port
	if status, body := get(true, "127.0.0.1", local, local); status != 200 {
		t.Fatalf("switch on, a .localhost name: %d %s", status, body)
	}
}

// proxyChildEnv names the proxy TestOriginIgnoresProxyEnvironment's child
// process was started with.
const proxyChildEnv = "THUMBD_TEST_PROXY_CHILD"

// Proxy variables are ignored: through a proxy the guard would judge the
// proxy's address instead of the origin's. net/http reads them once per
// process, at the first request that asks, so setting them in a test that
// runs after any other request proves nothing: the check runs in a child
// process (this test binary again) that has them from its start.
func TestOriginIgnoresProxyEnvironment(t *testing.T) {
	if os.Getenv(proxyChildEnv) != "" {
		originIgnoresProxy(t, os.Getenv(proxyChildEnv))
		return
	}
	src := encodeJPEG(t, scene(40, 30), 90)
	proxy := newOrigin(t, serveBytes(src))
	cmd := exec.Command(os.Args[0], "-test.run=^TestOriginIgnoresProxyEnvironment$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), proxyChildEnv+"="+proxy.URL, "NO_PROXY=", "no_proxy=")
	for _, v := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"} {
		cmd.Env = append(cmd.Env, v+"="+proxy.URL)
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("fetched from the origin, not the proxy")) {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	if n := proxy.conns.Load(); n != 0 {
		t.Errorf("the proxy saw %d connections", n)
	}
}

// originIgnoresProxy is TestOriginIgnoresProxyEnvironment in the child,
// whose proxy variables name proxyURL.
func originIgnoresProxy(t *testing.T, proxyURL string) {
	if os.Getenv("HTTP_PROXY") != proxyURL {
		t.Fatalf("HTTP_PROXY is %q, want %q", os.Getenv("HTTP_PROXY"), proxyURL)
	}
	src := encodeJPEG(t, scene(40, 30), 90)
	o := newOrigin(t, serveBytes(src))
	port := strconv.Itoa(o.Listener.Addr().(*net.TCPAddr).Port)
	dns := startFakeDNS(t, netip.MustParseAddr("127.0.0.1"))
	name := "http://images.proxied.localhost:" + port
	cfg := originConfig(t, true, name)
	d := newTestDeps(t, cfg)
	d.thumbs.Sources.Origins = newOrigins(cfg, d.thumbs.Limits, d.metrics, dns.resolver, d.tracing)
	srv := newTestServerFrom(t, d)
	if status, _, body := do(t, "GET", thumbURL(srv.URL, name+"/a.jpg", "w=10"), nil); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	if o.conns.Load() == 0 {
		t.Fatal("the origin saw no connection")
	}
	t.Log("fetched from the origin, not the proxy")
}

func TestAllowLoopbackWarnsAtStartUp(t *testing.T) {
	c := startChild(t, "THUMBD_ORIGINS=http://127.0.0.1:1", "THUMBD_ORIGINS_ALLOW_LOOPBACK=true")
	c.cmd.Process.Signal(syscall.SIGTERM)
	c.wait(t)
	if !regexp.MustCompile(`"level":"WARN","msg":"THUMBD_ORIGINS_ALLOW_LOOPBACK is on`).MatchString(c.logs.String()) {
		t.Fatalf("no warning:\n%s", c.logs)
	}
}

// fullListener is a TCP port on 127.0.0.1 whose accept queue is full (a
// backlog of 0, one connection made and never accepted): the kernel drops
// the SYN of any further connect, which then hangs until its timeout. A
// connect that does not complete, without a packet leaving loopback.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	filler, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		c.Close()
		t.Skip("this kernel completes connects past a full accept queue")
	}
	return addr
}

// Origins that cannot be fetched: nothing listening, a TLS certificate no
// CA signed, a name without an address (502 origin_error); a connect that
// does not complete, ended by the connect timeout well before the fetch
// timeout (504 origin_timeout).
func TestOriginUnreachable(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()
	tlsOrigin := httptest.NewUnstartedServer(serveBytes(encodeJPEG(t, scene(40, 30), 90)))
	tlsOrigin.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake thumbd refuses
	tlsOrigin.StartTLS()
	t.Cleanup(tlsOrigin.Close)
	hanging := fullListener(t)
	nameless := "http://images.nowhere.test:8080"

	cfg := originConfig(t, true, "http://"+refused, tlsOrigin.URL, "http://"+hanging, nameless)
	cfg.FetchTimeout = 20 * time.Second
	cfg.Deadline, cfg.WriteTimeout = 30*time.Second, 40*time.Second
	d := newTestDeps(t, cfg)
	d.thumbs.Sources.Origins = newOrigins(cfg, d.thumbs.Limits, d.metrics, startFakeDNS(t, netip.Addr{}).resolver, d.tracing)
	srv := newTestServerFrom(t, d)

	for _, u := range []string{"http://" + refused + "/a.jpg", tlsOrigin.URL + "/a.jpg", nameless + "/a.jpg"} {
		getError(t, thumbURL(srv.URL, u, ""), 502, apierr.OriginError)
	}
	start := time.Now()
	got, _, body := do(t, "GET", thumbURL(srv.URL, "http://"+hanging+"/a.jpg", ""), nil)
	took := time.Since(start)
	if got != 504 || !bytes.Contains(body, []byte("connected to within "+origin.ConnectTimeout.String())) {
		t.Fatalf("a connect that hangs: %d %s", got, body)
	}
	assertError(t, body, apierr.OriginTimeout)
	if took < origin.ConnectTimeout-100*time.Millisecond || took > origin.ConnectTimeout+5*time.Second {
		t.Errorf("the connect was given up after %s, want about %s", took, origin.ConnectTimeout)
	}
}

// The request's deadline bounds the fetch too: with a deadline shorter
// than the fetch timeout, a slow origin is the request's 504
// deadline_exceeded, counted as such by the fetch metrics.
func TestOriginFetchEndsWithTheDeadline(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	})
	cfg := originConfig(t, true, "http://"+o.hostPort())
	cfg.Deadline, cfg.FetchTimeout = 300*time.Millisecond, 10*time.Second
	srv, _ := newTestServer(t, cfg)
	start := time.Now()
	getError(t, thumbURL(srv.URL, o.URL+"/slow.jpg", ""), 504, apierr.DeadlineExceeded)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s with a 300ms deadline", took)
	}
	// The fetch runs in the shared job, which ends at the same deadline
	// as the request but apart from it: its count may follow the 504.
	waitFor(t, "the fetch ended by the deadline to be counted", func() bool {
		_, _, metrics := do(t, "GET", srv.URL+"/metrics", nil)
		return bytes.Contains(metrics, []byte(`thumbd_origin_fetch_errors_total{code="deadline_exceeded"} 1`))
	})
}

// A url= host that is not ASCII is matched in the form it would be dialed
// in: images.bİgcorp.test (U+0130) is not images.bigcorp.test, whatever
// Unicode lowercasing says, so it gets the answer of an unlisted origin,
// with no name resolved and no connection made.
func TestOriginNonASCIIHostIsNotFetched(t *testing.T) {
	o := newOrigin(t, serveBytes(encodeJPEG(t, scene(40, 30), 90)))
	port := strconv.Itoa(o.Listener.Addr().(*net.TCPAddr).Port)
	dns := startFakeDNS(t, netip.MustParseAddr("127.0.0.1"))
	cfg := originConfig(t, true, "http://images.bigcorp.localhost:"+port)
	d := newTestDeps(t, cfg)
	d.thumbs.Sources.Origins = newOrigins(cfg, d.thumbs.Limits, d.metrics, dns.resolver, d.tracing)
	srv := newTestServerFrom(t, d)
	unlisted, _, unlistedBody := do(t, "GET", thumbURL(srv.URL, "http://images.unlisted.localhost:"+port+"/x.jpg", ""), nil)
	for _, host := range []string{"images.b\u0130gcorp.localhost", "images.b%C4%B0gcorp.localhost", "IMAGES.B\u0130GCORP.LOCALHOST"} {
		status, _, body := do(t, "GET", thumbURL(srv.URL, "http://"+host+":"+port+"/x.jpg", ""), nil)
		if status != unlisted {
			t.Errorf("%s: %d (%d bytes); an unlisted origin: %d %s", host, status, len(body), unlisted, unlistedBody)
			continue
		}
		assertError(t, body, apierr.OriginNotAllowed)
	}
	if unlisted != 403 {
		t.Errorf("an unlisted origin: %d %s", unlisted, unlistedBody)
	}
	assertError(t, unlistedBody, apierr.OriginNotAllowed)
	if n, q := o.conns.Load(), dns.queries.Load(); n != 0 || q != 0 {
		t.Errorf("the origin saw %d connections, the resolver %d queries", n, q)
	}
}

// An origin URL whose host is an IP literal with a trailing dot is fetched
// from the literal that was checked, not resolved as a name through DNS.
func TestOriginIPLiteralWithTrailingDot(t *testing.T) {
	o := newOrigin(t, serveBytes(encodeJPEG(t, scene(40, 30), 90)))
	port := strconv.Itoa(o.Listener.Addr().(*net.TCPAddr).Port)
	dns := startFakeDNS(t, netip.IPv4Unspecified())
	cfg := originConfig(t, true, "http://127.0.0.1:"+port)
	d := newTestDeps(t, cfg)
	d.thumbs.Sources.Origins = newOrigins(cfg, d.thumbs.Limits, d.metrics, dns.resolver, d.tracing)
	srv := newTestServerFrom(t, d)
	if status, _, body := do(t, "GET", thumbURL(srv.URL, "http://127.0.0.1.:"+port+"/x.jpg", "w=10"), nil); status != 200 {
		t.Errorf("%d %s", status, body)
	}
	if q := dns.queries.Load(); q != 0 {
		t.Errorf("the resolver was asked %d times", q)
	}
}

// A zoned IPv6 host ends in a wildcard entry's domain but is dialed as the
// address before the zone: "[::1%25x.static.example.net]" reached ::1
// through "*.static.example.net", which names no loopback host. It is
// refused before any connection, in the query and in a redirect, and the
// address it names sees nothing.
func TestOriginZonedHostRefused(t *testing.T) {
	target := newOriginOn(t, "[::1]:0", serveBytes(encodeJPEG(t, scene(40, 30), 90)))
	if target == nil {
		t.Skip("no IPv6 loopback")
	}
	port := strconv.Itoa(target.Listener.Addr().(*net.TCPAddr).Port)
	zoned := "http://[::1%25x.static.example.net]:" + port + "/a.jpg"
	first := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, zoned, http.StatusFound) })
	srv, _ := newTestServer(t, originConfig(t, true, "http://"+first.hostPort(), "http://*.static.example.net:"+port))
	getError(t, thumbURL(srv.URL, zoned, "w=20"), 400, apierr.BadURL)
	getError(t, thumbURL(srv.URL, first.URL+"/a.jpg", "w=20"), 400, apierr.BadURL)
	if first.conns.Load() == 0 {
		t.Fatal("the redirect was not asked for")
	}
	if n := target.conns.Load(); n != 0 {
		t.Errorf("::1 saw %d connections through a wildcard entry", n)
	}
}
