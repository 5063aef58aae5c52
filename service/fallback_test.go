package main

import (
	"bytes"
	"image"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
)

// THUMBD_FALLBACK_IMAGE_PATH is read and checked at start: a file that
// is missing, too large or not an image thumbd reads stops it.
func TestFallbackImageSetting(t *testing.T) {
	dir := t.TempDir()
	good, text, gif := filepath.Join(dir, "f.png"), filepath.Join(dir, "f.txt"), filepath.Join(dir, "f.gif")
	for name, b := range map[string][]byte{good: alphaPNG(t, 40, 30), text: []byte("not an image"), gif: animatedGIF(t, 20, 20, 2)} {
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"THUMBD_FALLBACK_IMAGE_PATH": filepath.Join(dir, "missing.png")}, "no such file or directory"},
		{map[string]string{"THUMBD_FALLBACK_IMAGE_PATH": text}, "not a " + imagefmt.InputNames() + " image"},
		{map[string]string{"THUMBD_FALLBACK_IMAGE_PATH": dir}, "THUMBD_FALLBACK_IMAGE_PATH"},
		{map[string]string{"THUMBD_FALLBACK_IMAGE_PATH": good, "THUMBD_MAX_BODY_BYTES": "50", "THUMBD_SOURCE_BUDGET": "50"}, "more than 50 bytes"},
		{map[string]string{"THUMBD_FALLBACK_IMAGE_PATH": good, "THUMBD_MAX_PIXELS": "1000"}, "40x30 is more than THUMBD_MAX_PIXELS (1000)"},
		{map[string]string{"THUMBD_FALLBACK_IMAGE_PATH": gif, "THUMBD_INPUTS": "jpeg,png"}, "does not accept (THUMBD_INPUTS)"},
		{map[string]string{"THUMBD_FALLBACK_IMAGE_HTTP_CODE": "302"}, "THUMBD_FALLBACK_IMAGE_HTTP_CODE 302"},
		{map[string]string{"THUMBD_FALLBACK_IMAGE_TTL": "-1s"}, "THUMBD_FALLBACK_IMAGE_TTL -1s"},
	} {
		_, err := loadConfig(nil, envOf(c.env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.env, err, c.want)
		}
	}
	cfg, err := loadConfig(nil, envOf(map[string]string{"THUMBD_FALLBACK_IMAGE_PATH": good, "THUMBD_FALLBACK_IMAGE_HTTP_CODE": "0"}), io.Discard)
	if err != nil || len(cfg.Fallback.Image) == 0 || cfg.fallback() == nil {
		t.Errorf("a good fallback image: %v", err)
	}
	if testConfig(t).fallback() != nil {
		t.Error("no fallback image by default")
	}
}

// A source that cannot be read is answered with the fallback image, made
// by the request's own options, in both grammars and both engine modes,
// with the configured status and lifetime, and kept in no cache; other
// errors stay errors.
func TestFallbackImage(t *testing.T) {
	dir := t.TempDir()
	fb := filepath.Join(dir, "fallback.png")
	if err := os.WriteFile(fb, alphaPNG(t, 120, 90), 0o644); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "text.jpg"), []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(env map[string]string) config {
		t.Helper()
		env["THUMBD_FALLBACK_IMAGE_PATH"], env["THUMBD_SOURCE"], env["THUMBD_IMGPROXY"] = fb, src, "true"
		cfg, err := loadConfig(nil, envOf(env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	inproc, d := newTestServer(t, load(map[string]string{"THUMBD_FALLBACK_IMAGE_TTL": "1m"}))
	cellsCfg := load(map[string]string{"THUMBD_FALLBACK_IMAGE_HTTP_CODE": "0"})
	cellsCfg.Concurrency, cellsCfg.CellSpares = 2, 1
	cells := newCellsServer(t, cellsCfg, "")
	for _, c := range []struct {
		base, path, cc string
		status         int
		code           apierr.Code // "": the fallback image
		w, h           int
	}{
		{inproc.URL, "/_/rs:fit:60:60/plain/local:///missing.jpg", "public, max-age=60", 200, "", 60, 45},
		{inproc.URL, "/thumbnail?src=missing.jpg&w=40&h=40&fit=cover&format=webp", "public, max-age=60", 200, "", 40, 40},
		{cells.URL, "/_/rs:fit:60:60/plain/local:///missing.jpg", "public, max-age=86400", 404, "", 60, 45},
		{inproc.URL, "/thumbnail?src=../missing.jpg&w=40", "", 400, apierr.BadSourceName, 0, 0},
		{inproc.URL, "/_/widht:1/plain/local:///missing.jpg", "", 400, apierr.BadParameter, 0, 0},
		{inproc.URL, "/thumbnail?src=text.jpg&w=40", "", 415, apierr.UnsupportedFormat, 0, 0},
		{inproc.URL, "/info?src=missing.jpg", "", 404, apierr.SourceNotFound, 0, 0},
	} {
		a := imgproxyGet(t, c.base+c.path)
		if img, _, err := image.DecodeConfig(bytes.NewReader(a.body)); err == nil {
			a.w, a.h, a.imgDecoded, a.code = img.Width, img.Height, true, "" // a fallback image under an error's status
		}
		switch {
		case a.status != c.status || a.code != c.code:
			t.Errorf("%s: %d %s %s, want %d %s", c.path, a.status, a.code, a.message, c.status, c.code)
		case c.code == "" && (!a.imgDecoded || a.w != c.w || a.h != c.h || a.header.Get("Cache-Control") != c.cc):
			t.Errorf("%s: %dx%d, Cache-Control %q; want %dx%d, %q", c.path, a.w, a.h, a.header.Get("Cache-Control"), c.w, c.h, c.cc)
		}
	}
	if n := metricSum(t, d, "thumbd_thumbnail_fallbacks_total"); n != 2 {
		t.Errorf("%g fallback answers counted, want 2", n)
	}
	// Not kept: once the source is there, it is answered.
	if err := os.WriteFile(filepath.Join(src, "missing.jpg"), encodeJPEG(t, scene(200, 100), 90), 0o644); err != nil {
		t.Fatal(err)
	}
	if a := imgproxyGet(t, inproc.URL+"/_/rs:fit:60:60/plain/local:///missing.jpg"); a.status != 200 || a.w != 60 || a.h != 30 {
		t.Errorf("the source, once there: %d %dx%d", a.status, a.w, a.h)
	}
}
