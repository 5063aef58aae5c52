package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	_ "image/gif"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/lifecycle"

	_ "golang.org/x/image/webp"

	"github.com/thumbd/thumbd/internal/hostile"
	"github.com/thumbd/thumbd/internal/imagediff"
)

func postThumb(t *testing.T, url, query string, src []byte) (int, http.Header, []byte) {
	t.Helper()
	return do(t, "POST", url+"/thumbnail"+query, bytes.NewReader(src))
}

func TestThumbnailFitsAndSizes(t *testing.T) {
	srv, _ := newTestServer(t, testConfig(t))
	src := encodeJPEG(t, scene(400, 300), 90)
	tests := []struct {
		query        string
		wantW, wantH int
	}{
		{"", 256, 256},
		{"?w=100&h=50", 100, 50},
		{"?w=100&h=50&fit=cover&gravity=attention", 100, 50},
		{"?w=100&h=50&fit=cover&gravity=entropy", 100, 50},
		{"?w=100&h=50&fit=contain", 100, 50},
		{"?w=100&h=50&fit=fill", 100, 50},
		{"?w=100&h=50&fit=inside", 67, 50},
		{"?w=100&h=100&fit=inside", 100, 75},
		{"?w=100", 100, 75},
		{"?h=150", 200, 150},
		{"?w=800&h=600&fit=inside", 800, 600}, // enlarges: thumbnails follow the asked box
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			status, h, body := postThumb(t, srv.URL, tc.query, src)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if h.Get("Content-Type") != "image/png" || h.Get("Content-Length") != fmt.Sprint(len(body)) {
				t.Errorf("headers %v", h)
			}
			if et := h.Get("ETag"); !strings.HasPrefix(et, `"`) || strings.HasPrefix(et, "W/") || h.Get("Cache-Control") == "" {
				t.Errorf("ETag %q Cache-Control %q", et, h.Get("Cache-Control"))
			}
			img, format := decoded(t, body)
			if format != "png" || img.Bounds().Dx() != tc.wantW || img.Bounds().Dy() != tc.wantH {
				t.Fatalf("got %s %v, want png %dx%d", format, img.Bounds().Size(), tc.wantW, tc.wantH)
			}
		})
	}
}

func TestThumbnailFormatsAndQuality(t *testing.T) {
	srv, _ := newTestServer(t, testConfig(t))
	src := encodeJPEG(t, scene(400, 300), 90)
	for _, f := range []struct{ query, ctype, format string }{
		{"?format=png", "image/png", "png"},
		{"?format=jpeg", "image/jpeg", "jpeg"},
		{"?format=webp", "image/webp", "webp"},
		{"?format=avif", "image/avif", "avif"},
	} {
		status, h, body := postThumb(t, srv.URL, f.query, src)
		if status != 200 || h.Get("Content-Type") != f.ctype {
			t.Fatalf("%s: status %d type %q", f.query, status, h.Get("Content-Type"))
		}
		if _, format := decoded(t, body); format != f.format {
			t.Fatalf("%s: decoded as %s", f.query, format)
		}
	}
	sizeAt := func(query string) int {
		status, _, body := postThumb(t, srv.URL, query, src)
		if status != 200 {
			t.Fatalf("%s: %d", query, status)
		}
		return len(body)
	}
	if lo, hi := sizeAt("?format=jpeg&q=10"), sizeAt("?format=jpeg&q=95"); lo >= hi {
		t.Errorf("jpeg q=10 gave %d bytes, q=95 %d", lo, hi)
	}
	if lo, hi := sizeAt("?format=webp&q=10"), sizeAt("?format=webp&q=95"); lo >= hi {
		t.Errorf("webp q=10 gave %d bytes, q=95 %d", lo, hi)
	}
	// AVIF is read too: thumbd's own AVIF is sniffed as a source (422
	// while libvips' HEIF loader stays blocked in the engine).
	_, _, avif := postThumb(t, srv.URL, "?format=avif", src)
	if status, _, body := postThumb(t, srv.URL, "", avif); status != 200 && status != 422 {
		t.Errorf("an AVIF source: %d %s", status, body)
	}
	if lo, hi := sizeAt("?format=avif&q=10"), sizeAt("?format=avif&q=95"); lo >= hi {
		t.Errorf("avif q=10 gave %d bytes, q=95 %d", lo, hi)
	}
	if a, b := sizeAt("?format=png&q=10"), sizeAt("?format=png&q=95"); a != b {
		t.Errorf("png must ignore q: %d vs %d bytes", a, b)
	}
}

// meanColour averages a rectangle of img.
func meanColour(img image.Image, r image.Rectangle) (float64, float64, float64, float64) {
	var sr, sg, sb, sa, n float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			sr, sg, sb, sa, n = sr+float64(c.R), sg+float64(c.G), sb+float64(c.B), sa+float64(c.A), n+1
		}
	}
	return sr / n, sg / n, sb / n, sa / n
}

func is8bitColour(img image.Image) bool {
	switch img.(type) {
	case *image.RGBA, *image.NRGBA, *image.Paletted, *image.YCbCr:
		return true
	}
	return false
}

func TestThumbnailSources(t *testing.T) {
	srv, _ := newTestServer(t, testConfig(t))
	base := encodeJPEG(t, scene(300, 200), 95)
	_, _, ref := postThumb(t, srv.URL, "?w=60&h=40&fit=fill", base)
	refImg, _ := decoded(t, ref)

	t.Run("exif rotation applied and stripped", func(t *testing.T) {
		src := rotatedJPEG(t, base)
		status, _, body := postThumb(t, srv.URL, "?w=60&h=60&fit=inside", src)
		if status != 200 {
			t.Fatalf("status %d %s", status, body)
		}
		img, _ := decoded(t, body)
		if img.Bounds().Dx() != 60 || img.Bounds().Dy() != 40 {
			t.Fatalf("size %v: orientation not applied", img.Bounds().Size())
		}
		assertClose(t, img, refImg, 12)
		if bytes.Contains(body, []byte("Exif")) || bytes.Contains(body, []byte("eXIf")) {
			t.Error("metadata left in the output")
		}
	})
	t.Run("cmyk comes out in the right colours", func(t *testing.T) {
		status, _, body := postThumb(t, srv.URL, "?w=60&h=40&fit=fill", cmykJPEG(t, base))
		if status != 200 {
			t.Fatalf("status %d %s", status, body)
		}
		img, _ := decoded(t, body)
		assertClose(t, img, refImg, 25)
	})
	t.Run("grey becomes 8-bit sRGB", func(t *testing.T) {
		status, _, body := postThumb(t, srv.URL, "?w=50&h=50", greyPNG(t, 200, 200))
		img, _ := decoded(t, body)
		if status != 200 || !is8bitColour(img) {
			t.Fatalf("status %d, model %T", status, img)
		}
	})
	t.Run("16-bit png becomes 8-bit", func(t *testing.T) {
		status, _, body := postThumb(t, srv.URL, "?w=50&h=50", png16(t, 200, 100))
		img, _ := decoded(t, body)
		if status != 200 || !is8bitColour(img) {
			t.Fatalf("status %d, model %T", status, img)
		}
	})
	t.Run("alpha kept in png and webp, flattened on white in jpeg", func(t *testing.T) {
		src := alphaPNG(t, 200, 100)
		for _, format := range []string{"png", "webp"} {
			_, _, body := postThumb(t, srv.URL, "?w=100&h=50&fit=fill&format="+format, src)
			img, _ := decoded(t, body)
			if _, _, _, a := meanColour(img, image.Rect(0, 0, 40, 50)); a > 5 {
				t.Errorf("%s: transparent half has alpha %.0f", format, a)
			}
			if _, _, _, a := meanColour(img, image.Rect(60, 0, 100, 50)); a < 250 {
				t.Errorf("%s: opaque half has alpha %.0f", format, a)
			}
		}
		_, _, body := postThumb(t, srv.URL, "?w=100&h=50&fit=fill&format=jpeg", src)
		img, _ := decoded(t, body)
		if r, g, b, _ := meanColour(img, image.Rect(0, 0, 40, 50)); r < 245 || g < 245 || b < 245 {
			t.Errorf("jpeg: transparent half is %.0f,%.0f,%.0f, want white", r, g, b)
		}
	})
	t.Run("contain pads transparent for png, white for jpeg", func(t *testing.T) {
		src := encodeJPEG(t, scene(400, 100), 90)
		_, _, body := postThumb(t, srv.URL, "?w=100&h=100&fit=contain", src)
		img, _ := decoded(t, body)
		if _, _, _, a := meanColour(img, image.Rect(0, 0, 100, 30)); a > 1 {
			t.Errorf("png padding alpha %.0f", a)
		}
		_, _, body = postThumb(t, srv.URL, "?w=100&h=100&fit=contain&format=jpeg", src)
		img, _ = decoded(t, body)
		if r, g, b, _ := meanColour(img, image.Rect(0, 0, 100, 30)); r < 245 || g < 245 || b < 245 {
			t.Errorf("jpeg padding %.0f,%.0f,%.0f, want white", r, g, b)
		}
	})
	t.Run("animated gif gives its first frame", func(t *testing.T) {
		status, _, body := postThumb(t, srv.URL, "?w=20&h=20", animatedGIF(t, 40, 40, 3))
		if status != 200 {
			t.Fatalf("status %d %s", status, body)
		}
		img, _ := decoded(t, body)
		if r, _, b, _ := meanColour(img, img.Bounds()); r < 200 || b > 50 {
			t.Fatalf("colour %.0f,_,%.0f: not the red first frame", r, b)
		}
		if img.Bounds().Dy() != 20 {
			t.Fatalf("height %d: frames stacked", img.Bounds().Dy())
		}
	})
	t.Run("webp source", func(t *testing.T) {
		status, _, body := postThumb(t, srv.URL, "?w=60&h=40&fit=fill", webpOf(t, base))
		if status != 200 {
			t.Fatalf("status %d %s", status, body)
		}
		img, _ := decoded(t, body)
		assertClose(t, img, refImg, 12)
	})
}

// assertClose compares two images of one size by mean absolute difference
// per channel, the tolerance golden images need across libvips builds.
func assertClose(t *testing.T, got, want image.Image, tolerance float64) {
	t.Helper()
	if got.Bounds().Size() != want.Bounds().Size() {
		t.Fatalf("size %v, want %v", got.Bounds().Size(), want.Bounds().Size())
	}
	if d := imagediff.MeanAbs(got, want); d > tolerance {
		t.Fatalf("mean difference %.2f per channel, tolerance %.0f", d, tolerance)
	}
}

func TestThumbnailErrors(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxBodyBytes = 1 << 20
	srv, _ := newTestServer(t, cfg)
	good := encodeJPEG(t, scene(400, 300), 90)
	tests := []struct {
		name, query string
		src         []byte
		status      int
		code        apierr.Code
	}{
		{"empty body", "", nil, 415, apierr.UnsupportedFormat},
		{"text", "", []byte("hello, this is not an image"), 415, apierr.UnsupportedFormat},
		{"svg", "", []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`), 415, apierr.UnsupportedFormat},
		{"truncated jpeg", "", good[:len(good)/2], 422, apierr.UnprocessableImage},
		{"jpeg header only", "", good[:20], 422, apierr.UnprocessableImage},
		{"png bomb", "", hostile.PNGBomb(100000, 100000), 422, apierr.TooManyPixels},
		{"too many frames", "?w=8&h=8", animatedGIF(t, 4, 4, 300), 422, apierr.TooManyFrames},
		{"body too large", "", bytes.Repeat([]byte{0xFF}, 1<<20+1), 413, apierr.BodyTooLarge},
	}
	for _, q := range []string{"?w=0", "?w=-5", "?w=abc", "?w=4097", "?h=99999999999999999999", "?fit=stretch",
		"?gravity=north", "?format=gif", "?format=jpeg&q=0", "?format=jpeg&q=101", "?w=%zz", "?w=5&w=5", "?src=a.jpg",
		"?gravity=focal", "?gravity=focal&fx=0.5", "?fx=0.5&fy=0.5", "?gravity=focal&fx=2&fy=0.5", "?gravity=focal&fx=0.5&fy=half"} {
		tests = append(tests, struct {
			name, query string
			src         []byte
			status      int
			code        apierr.Code
		}{"bad " + q, q, good, 400, apierr.BadParameter})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			status, _, body := postThumb(t, srv.URL, tc.query, tc.src)
			if status != tc.status {
				t.Fatalf("status %d, want %d (%s)", status, tc.status, body)
			}
			assertError(t, body, tc.code)
			// A generous bound: rejections must come from headers, not work.
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %s", d)
			}
		})
	}
	t.Run("chunked body too large", func(t *testing.T) {
		status, _, body := do(t, "POST", srv.URL+"/thumbnail", struct{ *bytes.Reader }{bytes.NewReader(make([]byte, 1<<20+1))})
		if status != 413 {
			t.Fatalf("status %d (%s)", status, body)
		}
		assertError(t, body, apierr.BodyTooLarge)
	})
	// The process keeps serving after all of that.
	if status, _, _ := postThumb(t, srv.URL, "", good); status != 200 {
		t.Fatalf("after errors: status %d", status)
	}
}

func TestThumbnailETag(t *testing.T) {
	dir := t.TempDir()
	src := encodeJPEG(t, scene(200, 100), 90)
	if err := os.WriteFile(filepath.Join(dir, "a.jpg"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.SourceDir = dir
	srv, _ := newTestServer(t, cfg)
	_, h1, b1 := postThumb(t, srv.URL, "?w=50", src)
	_, h2, b2 := postThumb(t, srv.URL, "?w=50&format=png&q=10", src) // png ignores q: same options
	_, h3, _ := postThumb(t, srv.URL, "?w=51", src)
	if h1.Get("ETag") != h2.Get("ETag") || !bytes.Equal(b1, b2) {
		t.Errorf("same normalised options, different ETags %s %s", h1.Get("ETag"), h2.Get("ETag"))
	}
	if h1.Get("ETag") == h3.Get("ETag") {
		t.Error("different options, same ETag")
	}
	// The file's thumbnail is the upload's, under an ETag of the file's
	// version (its identity), not of its bytes.
	status, hg, bg := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&w=50", nil)
	etag := hg.Get("ETag")
	if status != 200 || etag == "" || !bytes.Equal(bg, b1) {
		t.Fatalf("GET: status %d ETag %s", status, etag)
	}
	for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
		status, h, body := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&w=50", nil, "If-None-Match", inm)
		if status != 304 || len(body) != 0 || h.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: status %d, %d bytes", inm, status, len(body))
		}
	}
	if status, _, _ := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&w=50", nil, "If-None-Match", `"stale"`); status != 200 {
		t.Errorf("stale ETag: status %d", status)
	}
}

func TestThumbnailSourceNames(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "sources")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	src := encodeJPEG(t, scene(120, 80), 90)
	os.WriteFile(filepath.Join(dir, "sub", "b.jpg"), src, 0o644)
	os.WriteFile(filepath.Join(parent, "secret.jpg"), src, 0o644)
	os.Symlink(filepath.Join(parent, "secret.jpg"), filepath.Join(dir, "escape.jpg"))
	os.Symlink("sub/b.jpg", filepath.Join(dir, "inside.jpg"))
	os.WriteFile(filepath.Join(dir, "big.jpg"), make([]byte, len(src)+200), 0o644)
	cfg := testConfig(t)
	cfg.SourceDir = dir
	cfg.MaxBodyBytes = int64(len(src) + 100)
	srv, _ := newTestServer(t, cfg)
	tests := []struct {
		query  string
		status int
		code   apierr.Code
	}{
		{"?src=sub/b.jpg", 200, ""},
		{"?src=inside.jpg", 200, ""},
		{"?src=escape.jpg", 400, apierr.BadSourceName},
		{"?src=../secret.jpg", 400, apierr.BadSourceName},
		{"?src=sub/../../secret.jpg", 400, apierr.BadSourceName},
		{"?src=/etc/passwd", 400, apierr.BadSourceName},
		{"?src=", 400, apierr.BadSourceName},
		{"", 400, apierr.BadParameter}, // no source named at all: neither src nor url
		{"?src=missing.jpg", 404, apierr.SourceNotFound},
		{"?src=sub", 404, apierr.SourceNotFound},
		{"?src=big.jpg", 422, apierr.SourceTooLarge},
		{"?src=sub/b.jpg&w=0", 400, apierr.BadParameter},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			status, _, body := do(t, "GET", srv.URL+"/thumbnail"+tc.query, nil)
			if status != tc.status {
				t.Fatalf("status %d, want %d (%.200s)", status, tc.status, body)
			}
			if tc.code != "" {
				assertError(t, body, tc.code)
			}
		})
	}
}

func TestThumbnailSaturationAndDeadline(t *testing.T) {
	src := encodeJPEG(t, scene(100, 100), 90)
	t.Run("full queue answers 503 with Retry-After", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Concurrency, cfg.Queue = 1, 0
		srv, d := newTestServer(t, cfg)
		held, err := d.thumbs.Gate.Admit(0) // the only place, taken
		if err != nil {
			t.Fatal(err)
		}
		status, h, body := postThumb(t, srv.URL, "", src)
		if status != 503 || h.Get("Retry-After") == "" {
			t.Fatalf("status %d Retry-After %q", status, h.Get("Retry-After"))
		}
		assertError(t, body, apierr.QueueFull)
		// The refusal closes the connection rather than draining the upload.
		resp, err := http.Post(srv.URL+"/thumbnail", "image/jpeg", bytes.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || !resp.Close {
			t.Fatalf("status %d, connection kept open: %v", resp.StatusCode, !resp.Close)
		}
		held.Release()
		if status, _, _ := postThumb(t, srv.URL, "", src); status != 200 {
			t.Fatalf("after release: %d", status)
		}
	})
	t.Run("deadline passed in the queue answers 504", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Concurrency, cfg.Queue, cfg.Deadline = 1, 1, 100*time.Millisecond
		srv, d := newTestServer(t, cfg)
		held, _ := d.thumbs.Gate.Admit(0)
		if err := held.Run(context.Background()); err != nil { // the only slot, busy
			t.Fatal(err)
		}
		defer held.Release()
		start := time.Now()
		status, _, body := postThumb(t, srv.URL, "", src)
		if status != 504 {
			t.Fatalf("status %d (%s)", status, body)
		}
		assertError(t, body, apierr.DeadlineExceeded)
		if el := time.Since(start); el < 100*time.Millisecond || el > 5*time.Second {
			t.Fatalf("answered after %s, deadline 100ms", el)
		}
	})
	t.Run("a thumbnail arriving before libvips is up waits for it", func(t *testing.T) {
		cfg := testConfig(t)
		d := newTestDeps(t, cfg)
		d.life = lifecycle.New() // not started yet
		d.thumbs.Ready = d.life.EngineReady()
		srv := newTestServerFrom(t, d)
		done := make(chan int, 1)
		go func() { s, _, _ := postThumb(t, srv.URL, "", src); done <- s }()
		select {
		case s := <-done:
			t.Fatalf("answered %d before libvips was up", s)
		case <-time.After(100 * time.Millisecond):
		}
		d.life.EngineStarted()
		if s := <-done; s != 200 {
			t.Fatalf("status %d", s)
		}
	})
}
