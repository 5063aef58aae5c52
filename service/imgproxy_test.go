package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/exifthumb"
	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/thumb"
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
		// imgproxy's crop is never outside: its offsets are held inside the
		// image (calcPosition), as in imgproxy, not a 400.
		{"/_/c:400:300:nowe:3000:3000/rs:fit:100:100/plain/local:///photo.jpg", 200, "", "image/jpeg", 100, 75},
		{"/_/rs:fit:100:100/plain/local:///../photo.jpg", 400, apierr.BadSourceName, "", 0, 0},
		{"/_/rs:fit:100:100/plain/local:///nope.jpg", 404, apierr.SourceNotFound, "", 0, 0},
		{"/_/widht:100/plain/local:///photo.jpg", 400, apierr.BadParameter, "", 0, 0},
		{"/_/rs:fit:100:100/mb:3000/plain/local:///photo.jpg", 200, "", "image/jpeg", 100, 75},
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
	// The same thumbnail asked in thumbd's grammar (copyright=keep:
	// imgproxy's keep_copyright default) is the same job: one
	// cache entry, one ETag.
	jobs := engineJobs(t, d)
	own := imgproxyGet(t, base+"/thumbnail?src=photo.jpg&w=100&h=100&fit=inside&enlarge=false&format=png&copyright=keep")
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
	if a := imgproxyGet(t, signed+imgproxySigned(key, salt, "/w:500/bl:5/pd:10/plain/local:///photo.jpg")); a.status != 200 {
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

// imgproxy's options that need the source's size, and max_bytes, answer
// alike in both engine modes: their job crosses to a cell in its options.
func TestImgproxySizedOptionsInCells(t *testing.T) {
	files := map[string][]byte{"photo.jpg": encodeJPEG(t, scene(800, 600), 90), "logo.png": alphaPNG(t, 120, 90)}
	const presets = "orig=raw:1,skj=skp:jpg,skpng=skp:png" // unsigned, raw and skp are a preset's
	inproc, _ := dirServer(t, files, func(c *config) { c.Imgproxy.On, c.Imgproxy.Presets = true, presets })
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := cellsConfig(t)
	cfg.SourceDir, cfg.Imgproxy.On, cfg.Imgproxy.Presets = dir, true, presets
	cells := newCellsServer(t, cfg, "")
	for _, opts := range []string{"rs:auto:300:200", "c:300:200:no:10:20/rs:fit:150:150", "rs:fill:200:200/g:soea:25:5",
		"rs:fit:100:0/mw:200", "rs:fit:300:100/exar:1:ea", "rs:fit:300:300/ex:1:so:0:10", "rs:fit:200:200/mb:1500/f:webp",
		"pr:orig", "pr:skj/rs:fit:100:100", "pr:skpng/rs:fit:100:100"} {
		path := "/_/" + opts + "/plain/local:///photo.jpg"
		a, b := imgproxyGet(t, inproc+path), imgproxyGet(t, cells.URL+path)
		if a.status != 200 || b.status != 200 || !bytes.Equal(a.body, b.body) {
			t.Errorf("%s: in process %d (%d bytes), cells %d (%d bytes) %s", opts, a.status, len(a.body), b.status, len(b.body), b.message)
		}
		if strings.Contains(opts, "mb:") && len(a.body) > 1500 {
			t.Errorf("%s: %d bytes", opts, len(a.body))
		}
	}
}

// raw and skip_processing answer the source as it is, once looked at and
// within the source limits; never with a watermark; unsigned, only from a
// preset (the source's bytes carry its metadata).
func TestImgproxyRawAndSkipProcessing(t *testing.T) {
	key, salt := bytes.Repeat([]byte{3}, 32), bytes.Repeat([]byte{4}, 16)
	photo, gifSrc := encodeJPEG(t, scene(800, 600), 90), animatedGIF(t, 60, 40, 3)
	files := map[string][]byte{"photo.jpg": photo, "anim.gif": gifSrc, "logo.png": alphaPNG(t, 120, 90)}
	signed := func(c *config) {
		c.Imgproxy.On, c.MaxFrames, c.Imgproxy.Keys, c.Imgproxy.Salts = true, 4, [][]byte{key}, [][]byte{salt}
	}
	base, _ := dirServer(t, files, signed)
	for _, c := range []struct {
		path  string
		same  []byte // the answer is these bytes; nil: processed
		media string
		code  apierr.Code
	}{
		{"/raw:1/plain/local:///photo.jpg", photo, "image/jpeg", ""},
		{"/rs:fit:100:100/raw:1/plain/local:///photo.jpg@png", photo, "image/jpeg", ""}, // as imgproxy: raw ignores the rest
		{"/skp:jpg:gif/rs:fit:100:100/plain/local:///photo.jpg", photo, "image/jpeg", ""},
		{"/skp:jpg:gif/rs:fit:100:100/plain/local:///anim.gif", gifSrc, "image/gif", ""},
		{"/skp:jpg/rs:fit:100:100/plain/local:///logo.png", nil, "image/png", ""},
		{"/skp:jpg/rs:fit:100:100/plain/local:///photo.jpg@png", nil, "image/png", ""}, // another format asked: processed
		{"/skp:svg/rs:fit:100:100/plain/local:///photo.jpg", nil, "image/jpeg", ""},
		{"/raw:0/rs:fit:100:100/plain/local:///photo.jpg", nil, "image/jpeg", ""},
		{"/skp:bmpx/plain/local:///photo.jpg", nil, "", apierr.BadParameter},
		{"/raw:1/wm:0.5/plain/local:///photo.jpg", nil, "", apierr.BadParameter}, // no watermark configured: wm's own 400
	} {
		a := imgproxyGet(t, base+imgproxySigned(key, salt, c.path))
		switch {
		case c.code != "":
			if a.status != c.code.Status() || a.code != c.code {
				t.Errorf("%s: %d %s, want %s", c.path, a.status, a.code, c.code)
			}
		case a.status != 200 || a.mediaType != c.media:
			t.Errorf("%s: %d %s %s", c.path, a.status, a.mediaType, a.message)
		case bytes.Equal(a.body, c.same) != (c.same != nil):
			t.Errorf("%s: %d bytes, as is: %v", c.path, len(a.body), c.same != nil)
		}
	}
	// The source limits hold: a GIF of more frames than allowed.
	many, _ := dirServer(t, map[string][]byte{"anim.gif": animatedGIF(t, 20, 20, 5)}, signed)
	if a := imgproxyGet(t, many+imgproxySigned(key, salt, "/raw:1/plain/local:///anim.gif")); a.status != 422 || a.code != apierr.TooManyFrames {
		t.Errorf("raw past the frame limit: %d %s", a.status, a.code)
	}
	// Unsigned, a client's raw or skp is refused naming it, a preset's
	// taken (the bounded mode alike).
	for _, edit := range []func(*config){nil, func(c *config) { c.Allowed = params.Allowed{Sides: []int{64}} }} {
		unsigned, _ := dirServer(t, files, func(c *config) {
			c.Imgproxy.On, c.Imgproxy.Presets = true, "orig=raw:1"
			if edit != nil {
				edit(c)
			}
		})
		for opt, name := range map[string]string{"raw:1": `"raw"`, "skp:jpg": `"skp"`} {
			if a := imgproxyGet(t, unsigned+"/_/w:64/"+opt+"/plain/local:///photo.jpg"); a.status != 400 || !strings.Contains(a.message, name) || !strings.Contains(a.message, "unsigned") {
				t.Errorf("%s unsigned: %d %s", opt, a.status, a.message)
			}
		}
		if a := imgproxyGet(t, unsigned+"/_/w:64/pr:orig/plain/local:///photo.jpg"); a.status != 200 || !bytes.Equal(a.body, photo) {
			t.Errorf("raw from a preset, unsigned: %d %s", a.status, a.message)
		}
	}
	// Under a required watermark the source as it is would not carry it:
	// refused, naming the option, even from a preset.
	marked, _ := dirServer(t, files, func(c *config) {
		signed(c)
		c.Watermark, c.WatermarkRequired, c.Imgproxy.Presets = markFile(t, 8), true, "orig=raw:1"
		if err := c.loadWatermark(); err != nil {
			t.Fatal(err)
		}
	})
	for _, p := range []string{"/raw:1/plain/local:///photo.jpg", "/skp:jpg/plain/local:///photo.jpg", "/pr:orig/plain/local:///photo.jpg"} {
		if a := imgproxyGet(t, marked+imgproxySigned(key, salt, p)); a.status != 400 || !strings.Contains(a.message, "THUMBD_WATERMARK_REQUIRED") {
			t.Errorf("%s under a required watermark: %d %s", p, a.status, a.message)
		}
	}
}

// imgproxySigned is path (from its options on) with its imgproxy
// signature in front.
func imgproxySigned(key, salt []byte, path string) string {
	h := hmac.New(sha256.New, key)
	h.Write(salt)
	h.Write([]byte(path))
	return "/" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)) + path
}

// imgproxy's metadata options: with strip_metadata:1 and
// keep_copyright:0 an answer carries none of the source's metadata; by
// default (keep_copyright:1, imgproxy's) and with strip_metadata:0, only
// an EXIF block with the source's Copyright and Artist, in every output
// format, in both engine modes: not its camera's make, its GPS position,
// its XMP or IPTC. keep_copyright's bad value is a 400 naming it.
func TestImgproxyMetadata(t *testing.T) {
	const notice, artist, camera = "(c) a thumbd test's photographer", "A. Photographer", "ACME Camera Works"
	src := jpegWithCopyright(t, notice, artist, camera)
	if !bytes.Contains(src, []byte(gpsDatum)) {
		t.Fatal("the source has no GPS datum")
	}
	// libvips 8.16 (the images') makes the EXIF block for every saver;
	// 8.14's PNG saver (Debian's, the dynamic build's) writes only a
	// source's block, which keep_copyright does not keep.
	var major, minor int
	fmt.Sscanf(thumb.Version(), "%d.%d", &major, &minor)
	pngKeepsEXIF := major > 8 || major == 8 && minor >= 16
	for _, engine := range []string{"inprocess", "cells"} {
		base, _ := dirServer(t, map[string][]byte{"photo.jpg": src}, func(c *config) {
			c.Imgproxy.On, c.Imgproxy.Presets, c.Engine = true, "orig=raw:1", engine
		})
		for _, f := range []string{"jpg", "png", "webp", "avif"} {
			a := imgproxyGet(t, base+"/_/rs:fit:64:64/sm:1/kcr:0/plain/local:///photo.jpg@"+f)
			// libvips 8.14's WebP saver (Debian's) writes an EXIF block of its
			// own (orientation 1, resolution, size): none of the source's.
			exif := f != "webp" && bytes.Contains(a.body, []byte("Exif\x00\x00"))
			if a.status != 200 || bytes.Contains(a.body, []byte(notice)) || bytes.Contains(a.body, []byte(artist)) || exif || bytes.Contains(a.body, []byte("ns.adobe.com")) || bytes.Contains(a.body, []byte("8BIM")) {
				t.Errorf("%s %s stripped: %d, %d bytes, the notice kept: %v", engine, f, a.status, len(a.body), bytes.Contains(a.body, []byte(notice)))
			}
			for _, opts := range []string{"", "kcr:1/", "sm:0/", "sm:0/kcr:0/"} {
				a := imgproxyGet(t, base+"/_/rs:fit:64:64/"+opts+"plain/local:///photo.jpg@"+f)
				if a.status != 200 {
					t.Errorf("%s %s %q: %d %s", engine, f, opts, a.status, a.message)
					continue
				}
				copyright, by := rightsIn(a.body)
				switch {
				case f == "png" && !pngKeepsEXIF:
					if copyright != "" || by != "" {
						t.Errorf("libvips %s's PNG saver wrote %q, %q: the docs say it writes no EXIF", thumb.Version(), copyright, by)
					}
				case copyright != notice || by != artist:
					t.Errorf("%s %s %q: the EXIF's copyright %q and artist %q, want %q and %q", engine, f, opts, copyright, by, notice, artist)
				}
				for what, b := range map[string]string{"the camera's make": camera, "the GPS IFD": gpsDatum, "XMP": "ns.adobe.com", "IPTC": "8BIM"} {
					if bytes.Contains(a.body, []byte(b)) {
						t.Errorf("%s %s %q: %s is kept", engine, f, opts, what)
					}
				}
			}
		}
		if a := imgproxyGet(t, base+"/_/rs:fit:64:64/kcr:maybe/plain/local:///photo.jpg"); a.status != 400 || !strings.Contains(a.message, `"kcr"`) {
			t.Errorf("kcr:maybe: %d %s", a.status, a.message)
		}
		// The source as it is keeps its own (raw).
		if a := imgproxyGet(t, base+"/_/pr:orig/plain/local:///photo.jpg"); !bytes.Contains(a.body, []byte(notice)) || !bytes.Contains(a.body, []byte(camera)) {
			t.Error("raw: the source's metadata is not there")
		}
	}
}

// rightsIn is the EXIF copyright and artist of an answer in any format:
// exifthumb.Rights on the first TIFF structure in body that has either
// (a JPEG's APP1, a PNG's eXIf, a WebP's EXIF chunk, a HEIF's Exif item).
func rightsIn(body []byte) (copyright, artist string) {
	for _, magic := range []string{"II*\x00", "MM\x00*"} {
		for rest := body; ; {
			i := bytes.Index(rest, []byte(magic))
			if i < 0 {
				break
			}
			if copyright, artist = exifthumb.Rights(rest[i:]); copyright != "" || artist != "" {
				return copyright, artist
			}
			rest = rest[i+1:]
		}
	}
	return "", ""
}

// gpsDatum is jpegWithCopyright's GPS map datum: a GPS field to look for.
const gpsDatum = "thumbd test datum WGS-84"

// jpegWithCopyright is a JPEG whose EXIF holds notice as its Copyright,
// artist as its Artist and camera as its Make, and a GPS IFD whose map
// datum is gpsDatum; whose XMP (dc:rights) and IPTC (Copyright Notice)
// hold notice too.
func jpegWithCopyright(t *testing.T, notice, artist, camera string) []byte {
	t.Helper()
	jpeg := encodeJPEG(t, scene(200, 150), 90)
	segment := func(marker byte, body []byte) []byte {
		n := len(body) + 2
		return append([]byte{0xFF, marker, byte(n >> 8), byte(n)}, body...)
	}
	// EXIF: a little-endian TIFF. IFD0 at 8: Make, Artist, Copyright and
	// the GPS IFD's offset; the GPS IFD after it: GPSMapDatum; the ASCII
	// values after both.
	type entry struct {
		tag   uint16
		value string
	}
	ifd0, gps := []entry{{0x010F, camera}, {0x013B, artist}, {0x8298, notice}}, []entry{{0x0012, gpsDatum}}
	gpsAt := uint32(8 + 2 + 12*(len(ifd0)+1) + 4)
	valuesAt := gpsAt + uint32(2+12*len(gps)+4)
	tiff := []byte("II*\x00\x08\x00\x00\x00")
	var values []byte
	ifd := func(entries []entry, gpsPointer bool) {
		n := len(entries)
		if gpsPointer {
			n++
		}
		tiff = binary.LittleEndian.AppendUint16(tiff, uint16(n))
		for _, e := range entries {
			v := append([]byte(e.value), 0)
			tiff = binary.LittleEndian.AppendUint16(tiff, e.tag)
			tiff = binary.LittleEndian.AppendUint16(tiff, 2) // ASCII
			tiff = binary.LittleEndian.AppendUint32(tiff, uint32(len(v)))
			tiff = binary.LittleEndian.AppendUint32(tiff, valuesAt+uint32(len(values)))
			values = append(values, v...)
		}
		if gpsPointer {
			tiff = append(tiff, 0x25, 0x88, 4, 0, 1, 0, 0, 0) // GPSInfo, LONG, 1
			tiff = binary.LittleEndian.AppendUint32(tiff, gpsAt)
		}
		tiff = append(tiff, 0, 0, 0, 0) // no next IFD
	}
	ifd(ifd0, true)
	ifd(gps, false)
	exif := append([]byte("Exif\x00\x00"), append(tiff, values...)...)
	xmp := []byte("http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">" +
		"<rdf:Description rdf:about=\"\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><dc:rights><rdf:Alt><rdf:li xml:lang=\"x-default\">" + notice +
		"</rdf:li></rdf:Alt></dc:rights></rdf:Description></rdf:RDF></x:xmpmeta>")
	iptc := append([]byte{0x1C, 0x02, 0x74, 0, byte(len(notice))}, notice...)
	ps := append([]byte("Photoshop 3.0\x008BIM\x04\x04\x00\x00"), binary.BigEndian.AppendUint32(nil, uint32(len(iptc)))...)
	ps = append(ps, iptc...)
	if len(iptc)%2 == 1 {
		ps = append(ps, 0)
	}
	out := append([]byte{}, jpeg[:2]...)
	out = append(out, segment(0xE1, exif)...)
	out = append(out, segment(0xE1, xmp)...)
	out = append(out, segment(0xED, ps)...)
	return append(out, jpeg[2:]...)
}

// A source answered as it is stays on the source budget until its answer
// is written: a client that reads it slowly holds its bytes, counted.
func TestImgproxyRawHeldOnTheBudget(t *testing.T) {
	// Noise: about 12 MB, well past what the two sockets' buffers hold
	// (the sender's up to net.ipv4.tcp_wmem's 4 MiB, the receiver's
	// initial 128 KiB). A 4.25 MB answer once fitted in them on this
	// machine and was written whole, released, while the client read
	// nothing.
	img := scene(2500, 2500)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] ^= byte(rng.IntN(256))
	}
	big := encodeJPEG(t, img, 100)
	base, d := dirServer(t, map[string][]byte{"big.jpg": big}, func(c *config) { c.Imgproxy.On, c.Imgproxy.Presets = true, "orig=raw:1" })
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /_/pr:orig/plain/local:///big.jpg HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// Held from the read on, and still while the client reads nothing.
	waitFor(t, "the source read", func() bool { return d.thumbs.Limits.Budget.Used() > 0 })
	time.Sleep(300 * time.Millisecond)
	if held := d.thumbs.Limits.Budget.Used() >= int64(len(big)); !held {
		t.Errorf("%d source bytes held while a %d-byte answer is written, want all of it", d.thumbs.Limits.Budget.Used(), len(big))
	}
	body, err := io.ReadAll(conn)
	if err != nil || !bytes.Contains(body, big[:4096]) {
		t.Fatalf("the answer: %d bytes, %v", len(body), err)
	}
	waitFor(t, "the budget back", func() bool { return d.thumbs.Limits.Budget.Used() == 0 })
}

// TestImgproxyVideoThumbnailSecond: imgproxy Pro's vts and vtk through
// the real router are thumbd's t and keyframe, the same job and bytes as
// /thumbnail's (every URL with vts once panicked: 500).
func TestImgproxyVideoThumbnailSecond(t *testing.T) {
	base, _ := dirServer(t, map[string][]byte{"clip.mp4": inputSources(t)["mp4"]}, func(c *config) { c.Imgproxy.On = true })
	for _, c := range []struct{ imgproxy, own string }{
		{"/_/w:64/vts:0.5/f:png/plain/local:///clip.mp4", "t=0.5"},
		{"/_/w:64/video_thumbnail_second:0.7/vtk:1/f:png/plain/local:///clip.mp4", "t=0.7&keyframe=true"},
		{"/_/w:64/f:png/plain/local:///clip.mp4", ""},
	} {
		a := imgproxyGet(t, base+c.imgproxy)
		own := imgproxyGet(t, base+"/thumbnail?src=clip.mp4&w=64&fit=inside&enlarge=false&format=png&copyright=keep&"+c.own)
		if a.status != 200 || !a.imgDecoded || own.status != 200 || a.header.Get("ETag") != own.header.Get("ETag") || !bytes.Equal(a.body, own.body) {
			t.Errorf("%s: %d %s (ETag %s), /thumbnail's %s: %d %s (ETag %s)", c.imgproxy, a.status, a.message, a.header.Get("ETag"), c.own, own.status, own.message, own.header.Get("ETag"))
		}
	}
	if a := imgproxyGet(t, base+"/_/w:64/vts:abc/plain/local:///clip.mp4"); a.status != 400 || a.code != apierr.BadParameter || !strings.Contains(a.message, "vts") {
		t.Errorf("vts:abc: %d %s %s, want a 400 naming vts", a.status, a.code, a.message)
	}
}
