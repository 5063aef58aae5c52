package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"github.com/thumbd/thumbd/service/internal/engines"
	"github.com/thumbd/thumbd/service/internal/lifecycle"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/signing"
)

const (
	testKeyHex  = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	otherKeyHex = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

func hexKey(t *testing.T, s string) []byte {
	t.Helper()
	k, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// signedPath signs a /thumbnail query (raw, as in a URL) with key.
func signedPath(t *testing.T, key []byte, rawQuery string) string {
	t.Helper()
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		t.Fatal(err)
	}
	flat := map[string]string{}
	for k, v := range q {
		flat[k] = v[0]
	}
	return signing.SignedPath(key, "/thumbnail", flat)
}

// signedServer serves a source directory holding a.jpg and one origin,
// with signed URLs on.
func signedServer(t *testing.T, keys ...[]byte) (base, originURL string, o *testOrigin, d deps) {
	t.Helper()
	src := encodeJPEG(t, scene(120, 90), 90)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.jpg"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	o = newOrigin(t, serveBytes(src))
	cfg := originConfig(t, true, "http://"+o.hostPort())
	cfg.SourceDir, cfg.SigningKeys = dir, keys
	srv, d := newTestServer(t, cfg)
	return srv.URL, o.URL + "/a.jpg", o, d
}

func TestSignedURLs(t *testing.T) {
	key, other := hexKey(t, testKeyHex), hexKey(t, otherKeyHex)
	base, originURL, o, _ := signedServer(t, key)
	ok := func(path string) {
		t.Helper()
		if status, _, body := do(t, "GET", base+path, nil); status != 200 {
			t.Fatalf("GET %s: %d %s", path, status, body)
		}
	}
	ok(signedPath(t, key, "src=a.jpg&w=20"))
	ok(signedPath(t, key, "url="+url.QueryEscape(originURL)+"&w=20&format=webp"))
	future := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	ok(signedPath(t, key, "src=a.jpg&w=20&exp="+future))

	// Reordered and re-escaped: the same canonical form, still valid.
	p := signedPath(t, key, "src=a.jpg&w=20&h=10")
	sig := p[strings.Index(p, "&sig=")+5:]
	ok("/thumbnail?sig=" + sig + "&h=10&w=%32%30&src=a%2Ejpg")

	past := strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)
	for name, tc := range map[string]struct {
		path string
		code apierr.Code
	}{
		"tampered parameter": {strings.Replace(signedPath(t, key, "src=a.jpg&w=20"), "w=20", "w=21", 1), apierr.BadSignature},
		"parameter added":    {signedPath(t, key, "src=a.jpg&w=20") + "&h=5", apierr.BadSignature},
		"tampered path":      {"/thumbnail?" + strings.SplitN(signing.SignedPath(key, "/thumbnails", map[string]string{"src": "a.jpg"}), "?", 2)[1], apierr.BadSignature},
		"unknown key":        {signedPath(t, other, "src=a.jpg&w=20"), apierr.BadSignature},
		"expired":            {signedPath(t, key, "src=a.jpg&w=20&exp="+past), apierr.SignatureExpired},
		"exp pushed back":    {strings.Replace(signedPath(t, key, "src=a.jpg&w=20&exp="+past), "exp="+past, "exp="+future, 1), apierr.BadSignature},
		"missing":            {"/thumbnail?src=a.jpg&w=20", apierr.SignatureMissing},
		"malformed":          {"/thumbnail?src=a.jpg&w=20&sig=abc", apierr.BadSignature},
		// Values are not read before the signature: a bad one unsigned is
		// a 403, not a 400 that would tell what the service takes.
		"bad value unsigned": {"/thumbnail?src=a.jpg&w=0", apierr.SignatureMissing},
		// Names are: an unknown parameter is a 400, signed or not.
		"unknown parameter": {signedPath(t, key, "src=a.jpg") + "&widht=20", apierr.BadParameter},
		"repeated sig":      {signedPath(t, key, "src=a.jpg") + "&sig=x", apierr.BadParameter},
	} {
		t.Run(name, func(t *testing.T) {
			getError(t, base+tc.path, tc.code.Status(), tc.code)
		})
	}
	// Before any file is read or origin contacted: a file that does not
	// exist is a 403, not a 404, and the origin sees no connection.
	conns := o.conns.Load()
	getError(t, base+"/thumbnail?src=missing.jpg", 403, apierr.SignatureMissing)
	getError(t, base+"/thumbnail?url="+url.QueryEscape(originURL)+"&sig="+sig, 403, apierr.BadSignature)
	if o.conns.Load() != conns {
		t.Error("an unsigned request reached the origin")
	}
	getError(t, base+signedPath(t, key, "src=missing.jpg"), 404, apierr.SourceNotFound)
}

// With signing keys set, POST /thumbnail needs a valid sig= over its query
// like a GET (else anyone makes thumbnails of their own bytes at any size
// and format), unless THUMBD_UNSIGNED_UPLOADS=true says unsigned uploads
// are wanted. A refused upload's body is not read.
func TestUploadsAreSignedWhenKeysAreSet(t *testing.T) {
	key := hexKey(t, testKeyHex)
	src := encodeJPEG(t, scene(40, 30), 90)
	past := strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)
	for _, unsigned := range []bool{false, true} {
		t.Run("unsigned uploads "+strconv.FormatBool(unsigned), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.SigningKeys, cfg.UnsignedUploads = [][]byte{key}, unsigned
			srv, _ := newTestServer(t, cfg)
			post := func(query string) (int, []byte) {
				status, _, body := postThumb(t, srv.URL, query, src)
				return status, body
			}
			signedQuery := strings.TrimPrefix(signedPath(t, key, "w=20&format=webp"), "/thumbnail")
			if status, body := post(signedQuery); status != 200 {
				t.Errorf("signed: %d %.200s", status, body)
			}
			for query, code := range map[string]apierr.Code{
				strings.Replace(signedQuery, "w=20", "w=21", 1):                           apierr.BadSignature,
				strings.TrimPrefix(signedPath(t, key, "w=20&exp="+past), "/thumbnail"):    apierr.SignatureExpired,
				"?w=20&sig=" + strings.Repeat("A", 43):                                    apierr.BadSignature,
				"?w=20&exp=" + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10):    apierr.SignatureMissing,
				strings.TrimPrefix(signedPath(t, key, "w=20"), "/thumbnail") + "&widht=3": apierr.BadParameter,
			} {
				status, body := post(query)
				if status != code.Status() {
					t.Errorf("%s: %d %.200s, want %s", query, status, body, code)
					continue
				}
				assertError(t, body, code)
			}
			if unsigned {
				if status, body := post("?w=20"); status != 200 {
					t.Errorf("unsigned, allowed: %d %s", status, body)
				}
				return
			}
			status, body := post("?w=4096&format=avif")
			if status != 403 {
				t.Fatalf("unsigned: %d (%d bytes)", status, len(body))
			}
			assertError(t, body, apierr.SignatureMissing)
			// Refused before the body is read: the connection is closed
			// rather than drained.
			req, _ := http.NewRequest("POST", srv.URL+"/thumbnail?w=20", bytes.NewReader(src))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if !resp.Close {
				t.Error("the connection of a refused upload is kept")
			}
		})
	}
}

// An unsigned request is refused before it takes a place: with every
// place taken it still gets its 403, where a signed one gets the 503.
func TestSignatureCheckedBeforeAdmission(t *testing.T) {
	key := hexKey(t, testKeyHex)
	base, _, _, d := signedServer(t, key)
	for !d.thumbs.Gate.Full() {
		ticket, err := d.thumbs.Gate.Admit(0)
		if err != nil {
			t.Fatal(err)
		}
		defer ticket.Release()
	}
	getError(t, base+"/thumbnail?src=a.jpg", 403, apierr.SignatureMissing)
	getError(t, base+signedPath(t, key, "src=a.jpg"), 503, apierr.QueueFull)
}

// Rotation: keys NEW,OLD accept URLs signed with either.
func TestSigningKeyRotation(t *testing.T) {
	oldKey, newKey := hexKey(t, testKeyHex), hexKey(t, otherKeyHex)
	base, _, _, _ := signedServer(t, newKey, oldKey)
	for _, k := range [][]byte{oldKey, newKey} {
		if status, _, body := do(t, "GET", base+signedPath(t, k, "src=a.jpg&w=20"), nil); status != 200 {
			t.Errorf("key %x...: %d %s", k[:2], status, body)
		}
	}
}

func TestSignatureParametersRefusedWhenSigningIsOff(t *testing.T) {
	base, _, _, _ := signedServer(t)
	for _, q := range []string{"src=a.jpg&sig=abc", "src=a.jpg&exp=1"} {
		getError(t, base+"/thumbnail?"+q, 400, apierr.BadParameter)
	}
}

func runSign(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), append([]string{"thumbd", "sign"}, args...), envOf(env), &out, io.Discard)
	return strings.TrimSpace(out.String()), err
}

// `thumbd sign` prints URLs the service accepts.
func TestSignCommandRoundTrips(t *testing.T) {
	key := hexKey(t, testKeyHex)
	base, originURL, _, _ := signedServer(t, hexKey(t, otherKeyHex), key)
	env := map[string]string{"THUMBD_SIGNING_KEYS": testKeyHex + "," + otherKeyHex}
	for _, args := range [][]string{
		{"/thumbnail?src=a.jpg&w=20"},
		{"/thumbnail?w=20&url=" + url.QueryEscape(originURL) + "&format=jpeg&q=70"},
		{"-exp", "1h", "/thumbnail?src=a.jpg&fit=inside&w=30&h=30"},
		{"-upload", "/thumbnail?w=20&format=webp"},
		{"-upload", "-exp", "1h", "/thumbnail?w=30&h=30"},
		{"/info?src=a.jpg"},
		{"-upload", "/info?thumbhash=false"},
	} {
		path, err := runSign(t, env, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		method, body := "GET", io.Reader(nil)
		if args[0] == "-upload" {
			method, body = "POST", bytes.NewReader(encodeJPEG(t, scene(40, 30), 90))
		}
		if status, _, body := do(t, method, base+path, body); status != 200 {
			t.Errorf("%v gave %s: %d %s", args, path, status, body)
		}
	}
	path, _ := runSign(t, env, "-exp", "1h", "/thumbnail?src=a.jpg")
	m := regexp.MustCompile(`exp=(\d+)`).FindStringSubmatch(path)
	if exp, _ := strconv.ParseInt(m[1], 10, 64); m == nil || exp < time.Now().Add(59*time.Minute).Unix() || exp > time.Now().Add(61*time.Minute).Unix() {
		t.Errorf("-exp 1h: %s", path)
	}
	for name, args := range map[string][]string{
		"no path":         {},
		"two paths":       {"/thumbnail?src=a", "/thumbnail?src=b"},
		"another route":   {"/hash?data=x"},
		"a whole URL":     {"http://localhost:8080/thumbnail?src=a.jpg"},
		"already signed":  {"/thumbnail?src=a.jpg&sig=abc"},
		"a typo":          {"/thumbnail?src=a.jpg&widht=20"},
		"a bad value":     {"/thumbnail?src=a.jpg&w=0"},
		"no source":       {"/thumbnail?w=10"},
		"upload a source": {"-upload", "/thumbnail?src=a.jpg&w=10"},
		"upload a typo":   {"-upload", "/thumbnail?widht=10"},
		"info option":     {"/info?src=a.jpg&w=10"},
		"info no source":  {"/info?thumbhash=true"},
		"upload info src": {"-upload", "/info?src=a.jpg"},
		"exp twice":       {"-exp", "1h", "/thumbnail?src=a.jpg&exp=1"},
		"exp negative":    {"-exp", "-1h", "/thumbnail?src=a.jpg"},
		"exp not a time":  {"/thumbnail?src=a.jpg&exp=soon"},
		"exp passed":      {"/thumbnail?src=a.jpg&exp=1"},
		"an unknown flag": {"-key", "x", "/thumbnail?src=a.jpg"},
	} {
		if out, err := runSign(t, env, args...); err == nil {
			t.Errorf("%s: signed %q", name, out)
		}
	}
	if _, err := runSign(t, nil, "/thumbnail?src=a.jpg"); err == nil || !strings.Contains(err.Error(), "THUMBD_SIGNING_KEYS") {
		t.Errorf("no keys: %v", err)
	}
	if _, err := runSign(t, map[string]string{"THUMBD_SIGNING_KEYS": "0011"}, "/thumbnail?src=a.jpg"); err == nil {
		t.Error("a short key signed")
	}
}

// docs/signing.md's Node.js snippet signs exactly as thumbd does.
func TestDocsSigningSnippetMatches(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (scripts/test.sh installs it)")
	}
	doc, err := os.ReadFile("../docs/signing.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- sign.mjs -->\n```js\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/signing.md has no <!-- sign.mjs --> snippet")
	}
	script := filepath.Join(t.TempDir(), "sign.mjs")
	if err := os.WriteFile(script, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"THUMBD_SIGNING_KEYS": testKeyHex}
	for _, path := range []string{
		"/thumbnail?url=https%3A%2F%2Fimages.example.com%2Fphotos%2Fcat.jpg&w=200&h=200&exp=1893456000",
		"/thumbnail?w=64&src=%C3%9Cn%C3%AFcode+~*!'()%2B%26%3D%25.jpg",
		"/thumbnail?src=a%20b/c.jpg&format=webp&q=75&fit=inside&w=30&gravity=entropy",
		"/thumbnail?src=caf\u00e9.jpg&w=20",
	} {
		want, err := runSign(t, env, path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out, err := exec.Command(node, script, testKeyHex, path).CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("%s:\nnode   %s (%v)\nthumbd %s", path, got, err, want)
		}
	}
	// docs/signing.md's worked example is what thumbd prints.
	want, _ := runSign(t, env, "/thumbnail?url=https%3A%2F%2Fimages.example.com%2Fphotos%2Fcat.jpg&w=200&h=200&exp=1893456000")
	if !bytes.Contains(doc, []byte("# "+want+"\n")) {
		t.Errorf("docs/signing.md's example should read\n# %s", want)
	}
}

// BenchmarkCachedGET is a conditional GET /thumbnail?src= answered 304 (a
// CDN revalidating), the cheapest full request a signature is checked on,
// unsigned and signed: the whole handler chain (request ID and log,
// metrics, router, parse, signature, file read and hash, ETag), in
// process. Each iteration makes one request of each, in alternating
// order, so that both see the same machine; it reports the time of each
// and the signed one's overhead.
func BenchmarkCachedGET(b *testing.B) {
	src, err := os.ReadFile("internal/thumb/testdata/sources/small.jpg")
	if err != nil {
		b.Fatal(err)
	}
	key, err := hex.DecodeString(testKeyHex)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "photo.jpg"), src, 0o644); err != nil {
		b.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	q := map[string]string{"src": "photo.jpg", "w": "320", "h": "240", "format": "webp", "q": "75"}
	type variant struct {
		h      http.Handler
		target string
		etag   string
		took   time.Duration
	}
	var variants [2]*variant
	for i, keys := range [][][]byte{nil, {key}} {
		cfg, err := loadConfig(nil, envOf(nil), io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		cfg.SourceDir, cfg.SigningKeys = dir, keys
		life := lifecycle.New()
		life.EngineStarted()
		v := &variant{h: newServer(newDeps(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), engines.InProcess{Engine: testEngine}, life, root, nil)),
			target: "/thumbnail?src=photo.jpg&w=320&h=240&format=webp&q=75"}
		if keys != nil {
			v.target = signing.SignedPath(key, "/thumbnail", q)
		}
		w := httptest.NewRecorder()
		v.h.ServeHTTP(w, httptest.NewRequest("GET", v.target, nil))
		if w.Code != 200 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
		v.etag = w.Header().Get("ETag")
		variants[i] = v
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for j := range variants {
			v := variants[(n+j)%2]
			req := httptest.NewRequest("GET", v.target, nil)
			req.Header.Set("If-None-Match", v.etag)
			w := httptest.NewRecorder()
			start := time.Now()
			v.h.ServeHTTP(w, req)
			v.took += time.Since(start)
			if w.Code != 304 {
				b.Fatalf("%s: %d", v.target, w.Code)
			}
		}
		n++
	}
	unsigned, signed := variants[0].took, variants[1].took
	b.ReportMetric(float64(unsigned.Nanoseconds())/float64(n), "unsigned-ns/req")
	b.ReportMetric(float64(signed.Nanoseconds())/float64(n), "signed-ns/req")
	b.ReportMetric(100*(float64(signed)/float64(unsigned)-1), "overhead-%")
}

// Whether signed URLs are on is said at start, in a log line and a gauge:
// an operator sees at once a deployment that serves unsigned URLs.
func TestSigningStateIsLoggedAndExported(t *testing.T) {
	for _, tc := range []struct {
		env   []string
		log   string
		gauge string
	}{
		{nil, `"msg":"signed URLs: off"`, "thumbd_signing_keys 0"},
		{[]string{"THUMBD_SIGNING_KEYS=" + testKeyHex + "," + otherKeyHex}, `"msg":"signed URLs: on, 2 keys"`, "thumbd_signing_keys 2"},
	} {
		c := startChild(t, tc.env...)
		_, _, metrics := do(t, "GET", c.addr+"/metrics", nil)
		if !bytes.Contains(metrics, []byte("\n"+tc.gauge+"\n")) {
			t.Errorf("%v: metrics lack %q", tc.env, tc.gauge)
		}
		if !strings.Contains(c.logs.String(), tc.log) {
			t.Errorf("%v: no %s in the logs:\n%s", tc.env, tc.log, c.logs)
		}
	}
}

// `thumbd sign` offers an expiry: a URL signed without one (neither -exp
// nor exp=) is printed with a warning on stderr that says it never
// expires and how to give one; with one, nothing is said.
func TestSignWarnsWithoutExpiry(t *testing.T) {
	env := envOf(map[string]string{"THUMBD_SIGNING_KEYS": testKeyHex})
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{[]string{"/thumbnail?src=a.jpg&w=20"}, true},
		{[]string{"-upload", "/thumbnail?w=20"}, true},
		{[]string{"-exp", "24h", "/thumbnail?src=a.jpg&w=20"}, false},
		{[]string{"/thumbnail?src=a.jpg&w=20&exp=" + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}, false},
	} {
		var out, stderr bytes.Buffer
		if err := run(context.Background(), append([]string{"thumbd", "sign"}, tc.args...), env, &out, &stderr); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		warned := strings.Contains(stderr.String(), "never expires") && strings.Contains(stderr.String(), "-exp")
		if warned != tc.warn || !strings.Contains(out.String(), "sig=") || strings.Contains(out.String(), "never") {
			t.Errorf("%v: stdout %q, stderr %q", tc.args, out.String(), stderr.String())
		}
	}
	// format=auto is signed with a note: Accept, outside the signature,
	// lets the URL's holder choose AVIF.
	var out, stderr bytes.Buffer
	if err := run(context.Background(), []string{"thumbd", "sign", "-exp", "1h", "/thumbnail?src=a.jpg&format=auto"}, env, &out, &stderr); err != nil ||
		!strings.Contains(stderr.String(), "AVIF") || strings.Contains(stderr.String(), "never expires") {
		t.Errorf("format=auto: %v, stderr %q", err, stderr.String())
	}
}
