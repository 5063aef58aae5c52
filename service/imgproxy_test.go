package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/params"
)

// The imgproxy endpoint through the real router: its URLs become GET
// /thumbnail's jobs, answered with imgproxy's headers.

func imgproxyServer(t *testing.T, edit func(*config)) (string, deps) {
	t.Helper()
	files := map[string][]byte{"photo.jpg": encodeJPEG(t, scene(800, 600), 90), "logo.png": alphaPNG(t, 120, 90)}
	return dirServer(t, files, func(c *config) {
		c.Imgproxy.On = true
		if edit != nil {
			edit(c)
		}
	})
}

// imgproxyAnswer is one GET's status, headers, error code and size.
type imgproxyAnswer struct {
	status     int
	header     http.Header
	code       apierr.Code
	message    string
	w, h       int
	mediaType  string
	body       []byte
	imgDecoded bool
}

func imgproxyGet(t *testing.T, u string, header ...string) imgproxyAnswer {
	t.Helper()
	s, h, b := do(t, "GET", u, nil, header...)
	a := imgproxyAnswer{status: s, header: h, mediaType: h.Get("Content-Type"), body: b}
	if s >= 400 {
		var e struct{ Error, Code string }
		_ = json.Unmarshal(b, &e)
		a.code, a.message = apierr.Code(e.Code), e.Error
		return a
	}
	if c, _, err := image.DecodeConfig(bytes.NewReader(b)); err == nil {
		a.w, a.h, a.imgDecoded = c.Width, c.Height, true
	}
	return a
}

func TestImgproxyUnsigned(t *testing.T) {
	base, _ := imgproxyServer(t, nil)
	b64 := base64.RawURLEncoding.EncodeToString([]byte("local:///photo.jpg"))
	for _, c := range []struct {
		path      string
		status    int
		code      apierr.Code
		mediaType string
		w, h      int
	}{
		// imgproxy's defaults: the source's format and size, fit, no enlarging.
		{"/_/plain/local:///photo.jpg", 200, "", "image/jpeg", 800, 600},
		{"/insecure/rs:fit:100:100/plain/local:///photo.jpg", 200, "", "image/jpeg", 100, 75},
		{"/unsafe/width:640/quality:75/plain/local:///photo.jpg", 200, "", "image/jpeg", 640, 480},
		{"/_/rs:fit:2000:2000/plain/local:///photo.jpg", 200, "", "image/jpeg", 800, 600},
		{"/_/rs:fit:2000:2000:1/plain/local:///photo.jpg", 200, "", "image/jpeg", 2000, 1500},
		{"/_/rs:fill:50:50/plain/local:///photo.jpg@png", 200, "", "image/png", 50, 50},
		{"/_/s:60:0/plain/local:///logo.png", 200, "", "image/png", 60, 45},
		{"/_/rs:fill:40:40/" + b64[:7] + "/" + b64[7:] + ".webp", 200, "", "image/webp", 40, 40},
		{"/_/rs:fill:40:40/rot:90/fl:1:0/bl:1/pd:5/bg:255:0:0/f:jpg/plain/local:///logo.png", 200, "", "image/jpeg", 50, 50},
		{"/_/rs:fit:100:100/c:0.5:0.5/plain/local:///photo.jpg", 200, "", "image/jpeg", 100, 75}, // as imgproxy: the crop's own aspect, whatever the shrink on load
		{"/_/rs:fit:100:100/plain/local:///../photo.jpg", 400, apierr.BadSourceName, "", 0, 0},
		{"/_/rs:fit:100:100/plain/local:///nope.jpg", 404, apierr.SourceNotFound, "", 0, 0},
		{"/_/widht:100/plain/local:///photo.jpg", 400, apierr.BadParameter, "", 0, 0},
		{"/_/mb:1000/plain/local:///photo.jpg", 400, apierr.BadParameter, "", 0, 0},
		{"/_/w:9000/plain/local:///photo.jpg", 400, apierr.BadParameter, "", 0, 0},
		{"/_/exp:1000/plain/local:///photo.jpg", 403, apierr.SignatureExpired, "", 0, 0},
		{"/_/plain/gs://bucket/photo.jpg", 400, apierr.URLSchemeNotAllowed, "", 0, 0},
		{"/_/plain/s3://bucket/photo.jpg", 404, apierr.SourceNotFound, "", 0, 0},
		{"/_/plain/https://example.com/a.jpg", 404, apierr.OriginsDisabled, "", 0, 0},
		{"/nothing", 404, apierr.NotFound, "", 0, 0},
	} {
		a := imgproxyGet(t, base+c.path)
		if a.status != c.status || a.code != c.code {
			t.Errorf("%s: %d %s %s, want %d %s", c.path, a.status, a.code, a.message, c.status, c.code)
			continue
		}
		if c.status == 200 && (a.mediaType != c.mediaType || a.imgDecoded && (a.w != c.w || a.h != c.h)) {
			t.Errorf("%s: %s %dx%d, want %s %dx%d", c.path, a.mediaType, a.w, a.h, c.mediaType, c.w, c.h)
		}
		if c.code == apierr.BadParameter && !strings.Contains(a.message, "imgproxy") {
			t.Errorf("%s: %q does not say it is the imgproxy URL", c.path, a.message)
		}
	}
	// thumbd's own routes keep their paths beside the catch-all.
	if a := imgproxyGet(t, base+"/thumbnail?src=photo.jpg&w=10"); a.status != 200 {
		t.Errorf("/thumbnail beside imgproxy: %d %s", a.status, a.message)
	}
	if a := imgproxyGet(t, base+"/health"); a.status != 200 {
		t.Errorf("/health beside imgproxy: %d", a.status)
	}
}

func TestImgproxyHeadersAndCorridor(t *testing.T) {
	base, d := imgproxyServer(t, func(c *config) { c.CacheSize = 16 << 20 })
	a := imgproxyGet(t, base+"/_/rs:fit:100:100/fn:cat/att:1/exp:4102444800/f:png/plain/local:///photo.jpg")
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.message)
	}
	if got := a.header.Get("Content-Disposition"); got != `attachment; filename=cat.png` {
		t.Errorf("Content-Disposition %q", got)
	}
	if got := a.header.Get("Expires"); got != "Fri, 01 Jan 2100 00:00:00 GMT" {
		t.Errorf("Expires %q", got)
	}
	// The default name is the source's, with the answer's format.
	if got := imgproxyGet(t, base+"/_/w:10/plain/local:///photo.jpg").header.Get("Content-Disposition"); got != `inline; filename=photo.jpg` {
		t.Errorf("default Content-Disposition %q", got)
	}
	if got := imgproxyGet(t, base+"/_/w:10/plain/local:///logo.png").header.Get("Content-Disposition"); got != `inline; filename=logo.png` {
		t.Errorf("a PNG source's Content-Disposition %q", got)
	}
	if e := imgproxyGet(t, base+"/_/w:10/exp:4102444800/plain/local:///none.jpg"); e.status != 404 || e.header.Get("Content-Disposition") != "" || e.header.Get("Expires") != "" {
		t.Errorf("an error: %d, Content-Disposition %q, Expires %q", e.status, e.header.Get("Content-Disposition"), e.header.Get("Expires"))
	}
	if r := imgproxyGet(t, base+"/_/rs:fit:100:100/plain/local:///photo.jpg@png", "If-None-Match", a.header.Get("ETag")); r.status != 304 {
		t.Errorf("If-None-Match: %d", r.status)
	}
	// The same thumbnail asked in thumbd's grammar is the same job: one
	// cache entry, one ETag.
	jobs := engineJobs(t, d)
	own := imgproxyGet(t, base+"/thumbnail?src=photo.jpg&w=100&h=100&fit=inside&enlarge=false&format=png")
	if own.status != 200 || own.header.Get("ETag") != a.header.Get("ETag") || !bytes.Equal(own.body, a.body) {
		t.Errorf("GET /thumbnail: %d ETag %s, imgproxy's %s", own.status, own.header.Get("ETag"), a.header.Get("ETag"))
	}
	if engineJobs(t, d) != jobs {
		t.Error("the /thumbnail twin of an imgproxy URL ran a job of its own")
	}
	// The answers in the source's format key on their quality.
	q50 := imgproxyGet(t, base+"/_/w:100/q:50/plain/local:///photo.jpg")
	q90 := imgproxyGet(t, base+"/_/w:100/q:90/plain/local:///photo.jpg")
	if q50.status != 200 || q90.status != 200 || q50.header.Get("ETag") == q90.header.Get("ETag") || len(q50.body) >= len(q90.body) {
		t.Errorf("q:50 %d bytes, q:90 %d bytes: the quality is not applied", len(q50.body), len(q90.body))
	}
	_, _, m := do(t, "GET", base+"/metrics", nil)
	if !bytes.Contains(m, []byte(`route="imgproxy"`)) {
		t.Error("/metrics has no route=\"imgproxy\"")
	}
}

// imgproxySigner signs an imgproxy path as imgproxy does (the HMAC of the
// salt and the path after the signature) and puts it under root.
func imgproxySigner(root string) func(key, salt []byte, path string) string {
	return func(key, salt []byte, path string) string {
		h := hmac.New(sha256.New, key)
		h.Write(salt)
		h.Write([]byte(path))
		return root + "/" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)) + path
	}
}

func TestImgproxySigned(t *testing.T) {
	key, salt := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16)
	old, oldSalt := []byte("old key"), []byte("old salt")
	base, _ := imgproxyServer(t, func(c *config) {
		c.Imgproxy.Keys, c.Imgproxy.Salts = [][]byte{key, old}, [][]byte{salt, oldSalt}
		c.Imgproxy.Prefix = "/img"
	})
	sign := imgproxySigner(base + "/img")
	path := "/rs:fit:100:100/plain/local:///photo.jpg"
	for _, c := range []struct {
		url    string
		status int
		code   apierr.Code
	}{
		{sign(key, salt, path), 200, ""},
		{sign(old, oldSalt, path), 200, ""},
		{sign(key, salt, "/size:64:64/"+base64.RawURLEncoding.EncodeToString([]byte("local:///photo.jpg"))), 200, ""},
		{sign(key, salt, path) + "x", 403, apierr.BadSignature},
		{strings.Replace(sign(key, salt, path), "100:100", "200:200", 1), 403, apierr.BadSignature},
		{base + "/img/unsafe" + path, 403, apierr.BadSignature},
		{base + "/img/" + path[1:], 403, apierr.BadSignature}, // no signature segment
		{sign(key, salt, "/exp:1000"+path), 403, apierr.SignatureExpired},
		{sign(key, salt, "/rs:fit:100:100/plain/local:///../photo.jpg"), 400, apierr.BadSourceName},
		{base + "/unsafe" + path, 404, apierr.NotFound}, // the prefix is the endpoint's root
	} {
		a := imgproxyGet(t, c.url)
		if a.status != c.status || a.code != c.code {
			t.Errorf("%s: %d %s %s, want %d %s", c.url, a.status, a.code, a.message, c.status, c.code)
		}
	}
}

func TestImgproxySettings(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		fail string
	}{
		{map[string]string{"THUMBD_IMGPROXY": "true", "THUMBD_IMGPROXY_KEY": "aa,bb", "THUMBD_IMGPROXY_SALT": "cc,dd", "THUMBD_IMGPROXY_PRESETS": "default=q:70,small=s:64:64"}, ""},
		{map[string]string{"THUMBD_IMGPROXY": "true", "THUMBD_IMGPROXY_KEY": "aa"}, "one salt per key"},
		{map[string]string{"THUMBD_IMGPROXY": "true", "THUMBD_IMGPROXY_KEY": "zz", "THUMBD_IMGPROXY_SALT": "aa"}, "THUMBD_IMGPROXY_KEY"},
		{map[string]string{"THUMBD_IMGPROXY": "true", "THUMBD_IMGPROXY_SIGNATURE_SIZE": "33"}, "SIGNATURE_SIZE"},
		{map[string]string{"THUMBD_IMGPROXY": "true", "THUMBD_IMGPROXY_PREFIX": "/thumbnail"}, "PREFIX"},
		{map[string]string{"THUMBD_IMGPROXY": "true", "THUMBD_IMGPROXY_PREFIX": "img"}, "PREFIX"},
		{map[string]string{"THUMBD_IMGPROXY": "true", "THUMBD_IMGPROXY_PRESETS": "a=w:x"}, "PRESETS"},
		{map[string]string{"THUMBD_IMGPROXY": "true", "THUMBD_IMGPROXY_PRESETS": "nothing"}, "PRESETS"},
	} {
		_, err := loadConfig(nil, envOf(c.env), io.Discard)
		if c.fail == "" && err != nil || c.fail != "" && (err == nil || !strings.Contains(err.Error(), c.fail)) {
			t.Errorf("%v: %v, want %q", c.env, err, c.fail)
		}
	}
}

func TestImgproxyAutoFormat(t *testing.T) {
	base, _ := imgproxyServer(t, func(c *config) { c.Imgproxy.AutoFormat = true })
	a := imgproxyGet(t, base+"/_/w:50/plain/local:///photo.jpg", "Accept", "image/avif,image/webp,*/*")
	if a.status != 200 || a.mediaType != "image/avif" || a.header.Get("Vary") != "Accept" {
		t.Errorf("Accept avif: %d %s Vary %q", a.status, a.mediaType, a.header.Get("Vary"))
	}
	// thumbd's negotiation, not imgproxy's (which keeps the source's
	// format when neither WebP nor AVIF is accepted): docs/imgproxy.md.
	if a := imgproxyGet(t, base+"/_/w:50/plain/local:///photo.jpg", "Accept", "image/png"); a.status != 200 || a.mediaType != "image/png" {
		t.Errorf("Accept png: %d %s", a.status, a.mediaType)
	}
	if a := imgproxyGet(t, base+"/_/w:50/f:png/plain/local:///photo.jpg", "Accept", "image/webp"); a.mediaType != "image/png" || a.header.Get("Vary") != "" {
		t.Errorf("a named format: %s Vary %q", a.mediaType, a.header.Get("Vary"))
	}
}

// THUMBD_PRESETS_ONLY binds imgproxy URLs too: each is a set of options.
func TestImgproxyPresetsOnly(t *testing.T) {
	base, _ := imgproxyServer(t, func(c *config) { c.PresetsOnly = true })
	if a := imgproxyGet(t, base+"/_/w:10/plain/local:///photo.jpg"); a.status != 400 || a.code != apierr.BadParameter || !strings.Contains(a.message, "imgproxy") {
		t.Errorf("presets only: %d %s %s", a.status, a.code, a.message)
	}
}

// The imgproxy grammar is bounded as thumbd's own (its query goes through
// the same params rules): unsigned, bl: and pd: off the lists are
// refused, its presets' values and its own defaults are the operator's,
// and a signed URL takes anything.
func TestImgproxyBounded(t *testing.T) {
	key, salt := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16)
	bounded := func(c *config) {
		c.Allowed = params.Allowed{Sides: []int{64, 320, 640}, Qualities: []int{75}}
		c.Imgproxy.Presets = "soft=bl:2,q70=q:70,framed=pd:10"
	}
	base, _ := imgproxyServer(t, bounded)
	for _, c := range []struct {
		path string
		want string // the parameter the 400 names; "": a 200
	}{
		{"/_/w:640/plain/local:///photo.jpg", ""},
		{"/_/rs:fill:320:320/plain/local:///photo.jpg@jpg", ""},
		{"/_/w:640/bl:5/plain/local:///photo.jpg", `imgproxy option "bl"`},
		{"/_/w:640/pd:10/plain/local:///photo.jpg", `imgproxy option "pd"`},
		{"/_/w:640/pr:soft/plain/local:///photo.jpg", ""},
		{"/_/w:620/pr:framed/plain/local:///photo.jpg@png", ""}, // 620 + 2 x 10
		{"/_/w:640/pr:framed/plain/local:///photo.jpg", "width 660"},
		{"/_/w:640/pr:q70/plain/local:///photo.jpg", ""}, // the preset's quality, in the source's format
		{"/_/w:640/q:70/plain/local:///photo.jpg", `imgproxy option "q"`},
		{"/_/w:500/plain/local:///photo.jpg", `imgproxy option "w"`},
	} {
		a := imgproxyGet(t, base+c.path)
		switch {
		case c.want == "" && a.status != 200:
			t.Errorf("%s: %d %s", c.path, a.status, a.message)
		case c.want != "" && (a.status != 400 || a.code != apierr.BadParameter || !strings.Contains(a.message, c.want)):
			t.Errorf("%s: %d %s %s, want a 400 naming %s", c.path, a.status, a.code, a.message, c.want)
		}
	}
	if a := imgproxyGet(t, base+"/_/w:620/pr:framed/plain/local:///photo.jpg@png"); a.w != 640 {
		t.Errorf("pd: from a preset: %dx%d, want 640 wide", a.w, a.h)
	}
	signed, _ := imgproxyServer(t, func(c *config) {
		bounded(c)
		c.Imgproxy.Keys, c.Imgproxy.Salts = [][]byte{key}, [][]byte{salt}
	})
	path := "/w:500/bl:5/pd:10/plain/local:///photo.jpg"
	h := hmac.New(sha256.New, key)
	h.Write(salt)
	h.Write([]byte(path))
	if a := imgproxyGet(t, signed+"/"+base64.RawURLEncoding.EncodeToString(h.Sum(nil))+path); a.status != 200 {
		t.Errorf("signed: %d %s", a.status, a.message)
	}
}

// With THUMBD_SIGNING_KEYS set, an imgproxy endpoint without a key would
// serve every size and option unsigned beside the signed /thumbnail: a
// start-up error, unless THUMBD_IMGPROXY_UNSIGNED=true says so.
func TestImgproxyUnsignedUnderSigningStopsStartUp(t *testing.T) {
	signed := map[string]string{"THUMBD_SIGNING_KEYS": testKeyHex, "THUMBD_IMGPROXY": "true"}
	// A run that gets past its configuration stops at its missing source
	// directory, before it listens or starts libvips: that is this test
	// failing, not serving.
	args := []string{"thumbd", "-source-dir", filepath.Join(t.TempDir(), "missing")}
	err := run(context.Background(), args, envOf(signed), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "THUMBD_IMGPROXY_KEY") || !strings.Contains(err.Error(), "THUMBD_IMGPROXY_UNSIGNED=true") {
		t.Fatalf("signing keys and an unsigned imgproxy endpoint: %v", err)
	}
	if err := run(context.Background(), append(args, "-imgproxy-unsigned=false"), envOf(signed), io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "THUMBD_IMGPROXY_UNSIGNED=true") {
		t.Fatalf("-imgproxy-unsigned=false: %v", err)
	}
	with := func(kv ...string) map[string]string {
		env := maps.Clone(signed)
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	for name, env := range map[string]map[string]string{
		"said so":             with("THUMBD_IMGPROXY_UNSIGNED", "true"),
		"imgproxy signed":     with("THUMBD_IMGPROXY_KEY", "aa", "THUMBD_IMGPROXY_SALT", "bb"),
		"plural keys":         with("THUMBD_IMGPROXY_KEYS", "aa", "THUMBD_IMGPROXY_SALTS", "bb"),
		"imgproxy off":        with("THUMBD_IMGPROXY", "false"),
		"thumbd's URLs open":  {"THUMBD_IMGPROXY": "true"},
		"off, nothing said":   {"THUMBD_SIGNING_KEYS": testKeyHex},
		"said so, not needed": {"THUMBD_IMGPROXY": "true", "THUMBD_IMGPROXY_UNSIGNED": "true"},
	} {
		if _, err := loadConfig(nil, envOf(env), io.Discard); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The two warnings start-up logs about the imgproxy endpoint, each from a
// real process's log: THUMBD_IMGPROXY_UNSIGNED=true in effect, and a
// signature size under 8 bytes.
func TestImgproxyWarnsAtStartUp(t *testing.T) {
	for name, c := range map[string]struct {
		env  []string
		want string
	}{
		"unsigned on purpose": {[]string{"THUMBD_SIGNING_KEYS=" + testKeyHex, "THUMBD_IMGPROXY=true", "THUMBD_IMGPROXY_UNSIGNED=true"},
			`"level":"WARN","msg":"THUMBD_IMGPROXY_UNSIGNED is on: imgproxy's URLs are served without a signature`},
		"1-byte signature": {[]string{"THUMBD_IMGPROXY=true", "THUMBD_IMGPROXY_KEY=aa", "THUMBD_IMGPROXY_SALT=bb", "THUMBD_IMGPROXY_SIGNATURE_SIZE=1"},
			`"level":"WARN","msg":"THUMBD_IMGPROXY_SIGNATURE_SIZE=1: a signature this short is found by trying at most 2^8 values per URL`},
	} {
		t.Run(name, func(t *testing.T) {
			child := startChild(t, c.env...)
			child.cmd.Process.Signal(syscall.SIGTERM)
			child.wait(t)
			if !strings.Contains(child.logs.String(), c.want) {
				t.Fatalf("no warning %s:\n%s", c.want, child.logs)
			}
		})
	}
	// Where nothing is open, no warning: imgproxyendpoint's
	// TestNoWarningWhereNothingIsOpen.
}

// THUMBD_IMGPROXY_KEYS and _SALTS are read as the singular names are:
// pairs by position, so a URL signed with the second pair verifies. Both
// spellings of one set is a start-up error.
func TestImgproxyPluralKeysAndSalts(t *testing.T) {
	key1, salt1 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16)
	key2, salt2 := bytes.Repeat([]byte{3}, 32), bytes.Repeat([]byte{4}, 16)
	loaded, err := loadConfig([]string{"-imgproxy-salts", hex.EncodeToString(salt1) + "," + hex.EncodeToString(salt2)}, envOf(map[string]string{
		"THUMBD_IMGPROXY": "true", "THUMBD_IMGPROXY_KEYS": hex.EncodeToString(key1) + ", " + hex.EncodeToString(key2),
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := imgproxyServer(t, func(c *config) { c.Imgproxy = loaded.Imgproxy })
	sign := imgproxySigner(base)
	path := "/rs:fit:100:100/plain/local:///photo.jpg"
	for _, c := range []struct {
		url    string
		status int
	}{
		{sign(key2, salt2, path), 200},
		{sign(key1, salt1, path), 200},
		{sign(key2, salt1, path), 403},
		{base + "/_" + path, 403},
	} {
		if a := imgproxyGet(t, c.url); a.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.url, a.status, a.message, c.status)
		}
	}
	for _, env := range []map[string]string{
		{"THUMBD_IMGPROXY_KEY": "aa", "THUMBD_IMGPROXY_KEYS": "aa", "THUMBD_IMGPROXY_SALT": "bb"},
		{"THUMBD_IMGPROXY_KEY": "aa", "THUMBD_IMGPROXY_SALT": "bb", "THUMBD_IMGPROXY_SALTS": "cc"},
	} {
		if _, err := loadConfig(nil, envOf(env), io.Discard); err == nil || !strings.Contains(err.Error(), "are both set") {
			t.Errorf("%v: %v", env, err)
		}
	}
	// Mixed spellings pair as well; an empty plural (an empty Secret) is
	// no key, never a quiet "unsigned".
	if c, err := loadConfig(nil, envOf(map[string]string{"THUMBD_IMGPROXY_KEY": "aa", "THUMBD_IMGPROXY_SALTS": "bb"}), io.Discard); err != nil || len(c.Imgproxy.Salts) != 1 {
		t.Errorf("KEY with SALTS: %v", err)
	}
	if _, err := loadConfig(nil, envOf(map[string]string{"THUMBD_IMGPROXY_KEYS": "", "THUMBD_IMGPROXY_SALTS": ""}), io.Discard); err == nil || !strings.Contains(err.Error(), "THUMBD_IMGPROXY_KEYS") {
		t.Errorf("empty plurals: %v", err)
	}
}
