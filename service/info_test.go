package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"github.com/thumbd/thumbd/service/internal/pipeline"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/internal/hostile"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/cellpool"
	"github.com/thumbd/thumbd/service/internal/signing"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

func postInfo(t *testing.T, base, query string, src []byte) (int, http.Header, []byte) {
	t.Helper()
	return do(t, "POST", base+"/info"+query, bytes.NewReader(src))
}

func readInfo(t *testing.T, body []byte) thumbjob.Info {
	t.Helper()
	var i thumbjob.Info
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&i); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return i
}

func TestInfoDescribesTheSource(t *testing.T) {
	dir := t.TempDir()
	rotated := rotatedJPEG(t, encodeJPEG(t, scene(300, 200), 90))
	if err := os.WriteFile(filepath.Join(dir, "r.jpg"), rotated, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.SourceDir = dir
	srv, _ := newTestServer(t, cfg)

	status, h, body := do(t, "GET", srv.URL+"/info?src=r.jpg", nil)
	if status != 200 || h.Get("Content-Type") != "application/json" || h.Get("ETag") == "" || h.Get("Cache-Control") != pipeline.CacheControl {
		t.Fatalf("GET: %d %v %s", status, h, body)
	}
	info := readInfo(t, body)
	// rotatedJPEG stores the scene on its side with orientation 6: the
	// displayed image is the scene's 300x200.
	if info.Format != "jpeg" || info.Width != 300 || info.Height != 200 || info.StoredWidth != 200 || info.StoredHeight != 300 ||
		info.Orientation != 6 || info.Frames != 1 || info.Alpha || info.Space != "srgb" || info.Bytes != int64(len(rotated)) {
		t.Errorf("GET: %+v", info)
	}
	hash, err := base64.StdEncoding.DecodeString(info.ThumbHash)
	if err != nil || len(hash) < 5 || hash[4]&0x80 == 0 || hash[2]&0x80 != 0 {
		t.Errorf("ThumbHash %q (%v): want an opaque landscape one", info.ThumbHash, err)
	}
	// The same source uploaded gives the same description.
	if status, _, post := postInfo(t, srv.URL, "", rotated); status != 200 || !bytes.Equal(post, body) {
		t.Errorf("POST: %d %s, GET gave %s", status, post, body)
	}
	// thumbhash=false: the header alone, no ThumbHash, another ETag.
	status, h2, body := do(t, "GET", srv.URL+"/info?src=r.jpg&thumbhash=false", nil)
	if status != 200 || readInfo(t, body).ThumbHash != "" || strings.Contains(string(body), "thumbhash") || h2.Get("ETag") == h.Get("ETag") {
		t.Errorf("thumbhash=false: %d %s (ETag %s, with the hash %s)", status, body, h2.Get("ETag"), h.Get("ETag"))
	}
	if status, _, body := do(t, "GET", srv.URL+"/info?src=r.jpg", nil, "If-None-Match", h.Get("ETag")); status != 304 || len(body) != 0 {
		t.Errorf("If-None-Match: %d %s", status, body)
	}

	for name, c := range map[string]struct {
		src   []byte
		check func(thumbjob.Info) bool
	}{
		"alpha png": {alphaPNG(t, 120, 90), func(i thumbjob.Info) bool {
			h, _ := base64.StdEncoding.DecodeString(i.ThumbHash)
			return i.Format == "png" && i.Alpha && len(h) > 5 && h[2]&0x80 != 0
		}},
		"animated gif": {animatedGIF(t, 60, 40, 3), func(i thumbjob.Info) bool {
			return i.Format == "gif" && i.Frames == 3 && len(i.DelaysMS) == 3 && i.Loop != nil && i.Width == 60
		}},
		"grey png":   {greyPNG(t, 40, 30), func(i thumbjob.Info) bool { return i.Space == "b-w" && !i.Alpha }},
		"16-bit png": {png16(t, 40, 30), func(i thumbjob.Info) bool { return i.Space == "rgb16" }},
		"cmyk jpeg":  {cmykJPEG(t, encodeJPEG(t, scene(40, 30), 90)), func(i thumbjob.Info) bool { return i.Space == "cmyk" }},
	} {
		status, _, body := postInfo(t, srv.URL, "", c.src)
		if status != 200 || !c.check(readInfo(t, body)) {
			t.Errorf("%s: %d %s", name, status, body)
		}
	}
}

func TestInfoErrors(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxBodyBytes = 1 << 20
	srv, _ := newTestServer(t, cfg)
	good := encodeJPEG(t, scene(400, 300), 90)
	for _, tc := range []struct {
		name, query string
		src         []byte
		status      int
		code        apierr.Code
	}{
		{"unknown parameter", "?w=100", good, 400, apierr.BadParameter},
		{"repeated", "?thumbhash=true&thumbhash=true", good, 400, apierr.BadParameter},
		{"not a boolean", "?thumbhash=1", good, 400, apierr.BadParameter},
		{"a GET's source", "?src=a.jpg", good, 400, apierr.BadParameter},
		{"text", "", []byte("hello, this is not an image"), 415, apierr.UnsupportedFormat},
		{"header cut", "", good[:20], 422, apierr.UnprocessableImage},
		{"pixels cut, hash asked", "", good[:len(good)/2], 422, apierr.UnprocessableImage},
		{"png bomb", "?thumbhash=false", hostile.PNGBomb(100000, 100000), 422, apierr.TooManyPixels},
		{"too many frames", "", animatedGIF(t, 4, 4, 300), 422, apierr.TooManyFrames},
		{"body too large", "", bytes.Repeat([]byte{0xFF}, 1<<20+1), 413, apierr.BodyTooLarge},
	} {
		status, _, body := postInfo(t, srv.URL, tc.query, tc.src)
		if status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, status, tc.status, body)
			continue
		}
		assertError(t, body, tc.code)
	}
	// The header of a truncated JPEG reads: without the ThumbHash it is
	// described.
	if status, _, body := postInfo(t, srv.URL, "?thumbhash=false", good[:len(good)/2]); status != 200 {
		t.Errorf("header of a truncated JPEG: %d %s", status, body)
	}
	getError(t, srv.URL+"/info", 400, apierr.BadParameter)
	getError(t, srv.URL+"/info?src=a.jpg&url=http://x/", 400, apierr.BadParameter)
	getError(t, srv.URL+"/info?src=a.jpg", 404, apierr.SourcesDisabled)
	getError(t, srv.URL+"/info?url="+url.QueryEscape("http://example.com/a.jpg"), 404, apierr.OriginsDisabled)

	cfg.Uploads = false
	off, _ := newTestServer(t, cfg)
	status, h, body := postInfo(t, off.URL, "", good)
	if status != 405 || h.Get("Allow") != "GET" {
		t.Errorf("uploads off: %d %v", status, h)
	}
	assertError(t, body, apierr.UploadsDisabled)
}

func TestInfoFromAnOrigin(t *testing.T) {
	src := encodeJPEG(t, scene(400, 300), 90)
	o := newOrigin(t, serveBytes(src))
	srv, _ := newTestServer(t, originConfig(t, true, "http://"+o.hostPort()))
	status, _, body := do(t, "GET", srv.URL+"/info?thumbhash=false&url="+url.QueryEscape(o.URL+"/a.jpg"), nil)
	if info := readInfo(t, body); status != 200 || info.Width != 400 || info.Bytes != int64(len(src)) {
		t.Errorf("%d %s", status, body)
	}
}

// Signed like a thumbnail, and bound to its path: a /thumbnail signature
// does not open /info.
func TestInfoIsSigned(t *testing.T) {
	key := hexKey(t, testKeyHex)
	base, _, _, _ := signedServer(t, key)
	getError(t, base+"/info?src=a.jpg", 403, apierr.SignatureMissing)
	thumbSigned := signedPath(t, key, "src=a.jpg")
	_, query, _ := strings.Cut(thumbSigned, "?")
	getError(t, base+"/info?"+query, 403, apierr.BadSignature)
	if status, _, body := do(t, "GET", base+signing.SignedPath(key, "/info", map[string]string{"src": "a.jpg"}), nil); status != 200 || readInfo(t, body).Width != 120 {
		t.Errorf("signed: %d %s", status, body)
	}
	status, _, body := postInfo(t, base, "", encodeJPEG(t, scene(10, 10), 90))
	if status != 403 {
		t.Errorf("unsigned upload: %d %s", status, body)
	}
	assertError(t, body, apierr.SignatureMissing)
}

// An info job is admitted as a thumbnail into the ThumbHash's box: within
// a budget that a full decode would not fit, a PNG (no shrink-on-load) is
// refused with the ThumbHash and described without it.
func TestInfoAdmission(t *testing.T) {
	cfg := testConfig(t)
	cfg.MemoryBudget = 24 << 20 // memcost's fixed 16 MiB and a little
	srv, d := newTestServer(t, cfg)
	big := encodePNG(t, scene(2000, 1500)) // 12 MB as RGBA, decoded whole
	status, _, body := postInfo(t, srv.URL, "", big)
	if status != 422 {
		t.Fatalf("ThumbHash of a 2000x1500 PNG within 24 MiB: %d %s", status, body)
	}
	assertError(t, body, apierr.NeedsMoreMemory)
	if status, _, body := postInfo(t, srv.URL, "?thumbhash=false", big); status != 200 {
		t.Errorf("its header within 24 MiB: %d %s", status, body)
	}
	if _, used := d.thumbs.Gate.Memory(); used != 0 {
		t.Errorf("memory still held after the answers: %d", used)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`thumbd_info_processing_seconds_count{thumbhash="false"} 1`, `thumbd_info_processing_seconds_count{thumbhash="true"} 0`,
		`thumbd_http_requests_total{code="422",method="POST",route="/info"} 1`, `thumbd_thumbnail_rejections_total{reason="needs_more_memory"} 1`} {
		if !strings.Contains(string(mb), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// In cells mode an info job runs in a sandboxed cell (a job kind of the
// cell protocol) and answers as in process: the same JSON, or the same
// error.
func TestInfoInCellsAnswersLikeInProcess(t *testing.T) {
	limits := func(cfg config) config {
		cfg.MaxFrames = 4
		return cfg
	}
	inproc, _ := newTestServer(t, alike(limits(testConfig(t))))
	cells := newCellsServer(t, alike(limits(cellsConfig(t))), "")
	jpeg := encodeJPEG(t, scene(400, 300), 85)
	for _, c := range []struct {
		query string
		src   []byte
	}{
		{"", jpeg},
		{"?thumbhash=false", jpeg},
		{"", rotatedJPEG(t, jpeg)},
		{"", alphaPNG(t, 120, 90)},
		{"", animatedGIF(t, 60, 40, 3)},
		{"", []byte("not an image")},
		{"", jpeg[:len(jpeg)/2]},
		{"", hostile.GIFBomb(65535, 65535)},
		{"", animatedGIF(t, 20, 20, 5)},
	} {
		s1, h1, b1 := postInfo(t, inproc.URL, c.query, c.src)
		s2, h2, b2 := postInfo(t, cells.URL, c.query, c.src)
		if s1 != s2 || h1.Get("ETag") != h2.Get("ETag") || !bytes.Equal(b1, b2) {
			t.Errorf("%q (%d bytes): in process %d %s, cells %d %s", c.query, len(c.src), s1, b1, s2, b2)
		}
	}
	if s := cells.pool.Stats(); s.Exits[cellpool.ExitCrashInJob] != 0 {
		t.Errorf("cells crashed: %+v", s.Exits)
	}
}
