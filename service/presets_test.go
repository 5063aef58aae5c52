package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/params"
)

// presetServer serves a.jpg from a source directory with two presets.
func presetServer(t *testing.T, only bool) (string, []byte) {
	t.Helper()
	src := encodeJPEG(t, scene(200, 150), 90)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.jpg"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	presets, err := params.ParsePresets("small:w=64&h=48&format=jpeg; wide:w=120&h=40&fit=contain; corner:w=40&h=40&gravity=focal&fx=0.9&fy=0.1")
	if err != nil {
		t.Fatal(err)
	}
	cfg.SourceDir, cfg.Presets, cfg.PresetsOnly = dir, presets, only
	srv, _ := newTestServer(t, cfg)
	return srv.URL, src
}

func TestPresetsOverHTTP(t *testing.T) {
	base, src := presetServer(t, false)
	status, h, body := do(t, "GET", base+"/thumbnail?src=a.jpg&preset=small", nil)
	if status != 200 || h.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("%d %v %s", status, h, body)
	}
	if img, _ := decoded(t, body); img.Bounds().Dx() != 64 || img.Bounds().Dy() != 48 {
		t.Fatalf("size %v", img.Bounds())
	}
	// A preset is its options: the same ETag as writing them out.
	_, explicit, _ := do(t, "GET", base+"/thumbnail?src=a.jpg&w=64&h=48&format=jpeg", nil)
	if h.Get("ETag") != explicit.Get("ETag") {
		t.Errorf("ETag %s, written out %s", h.Get("ETag"), explicit.Get("ETag"))
	}
	// Options given with a preset override its own; POST takes presets.
	status, h, body = postThumb(t, base, "?preset=wide&format=webp", src)
	if status != 200 || h.Get("Content-Type") != "image/webp" {
		t.Fatalf("%d %v %s", status, h, body)
	}
	if img, _ := decoded(t, body); img.Bounds().Dx() != 120 || img.Bounds().Dy() != 40 {
		t.Fatalf("size %v", img.Bounds())
	}
	getError(t, base+"/thumbnail?src=a.jpg&preset=huge", 400, apierr.BadParameter)
	// A preset carries a focal point: the same bytes as writing it out.
	_, focal, fb := do(t, "GET", base+"/thumbnail?src=a.jpg&preset=corner", nil)
	_, written, wb := do(t, "GET", base+"/thumbnail?src=a.jpg&w=40&h=40&gravity=focal&fx=0.9&fy=0.1", nil)
	_, centre, _ := do(t, "GET", base+"/thumbnail?src=a.jpg&w=40&h=40", nil)
	if focal.Get("ETag") != written.Get("ETag") || !bytes.Equal(fb, wb) || focal.Get("ETag") == centre.Get("ETag") {
		t.Errorf("focal preset: ETag %s, written out %s, centre %s", focal.Get("ETag"), written.Get("ETag"), centre.Get("ETag"))
	}
}

func TestPresetsOnly(t *testing.T) {
	base, src := presetServer(t, true)
	if status, _, body := do(t, "GET", base+"/thumbnail?src=a.jpg&preset=wide", nil); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	if status, _, body := postThumb(t, base, "?preset=small", src); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	for _, q := range []string{"src=a.jpg", "src=a.jpg&w=64", "src=a.jpg&preset=small&format=png", "src=a.jpg&preset=small&q=90", "src=a.jpg&preset=nope"} {
		getError(t, base+"/thumbnail?"+q, 400, apierr.BadParameter)
	}
	if status, _, body := postThumb(t, base, "?w=10", src); status != 400 {
		t.Errorf("POST with an option: %d %s", status, body)
	}
}

func TestPresetSettings(t *testing.T) {
	for env, want := range map[string]string{
		"THUMBD_PRESETS=small:widht=10":                           "widht",
		"THUMBD_PRESETS=big:w=5000":                               `preset "big"`,
		"THUMBD_PRESETS=Small:w=10":                               `"Small"`,
		"THUMBD_PRESETS_ONLY=true":                                "presets only",
		"THUMBD_PRESETS=a:w=1;a:w=2":                              "twice",
		"THUMBD_PRESETS=a:w=1&fit=stretch":                        `preset "a"`,
		"THUMBD_PRESETS=a:w=1&format=png&animated=true":           `preset "a"`,
		"THUMBD_PRESETS=a:w=1; b:w=2; c:q=0":                      `preset "c"`,
		"THUMBD_PRESETS=a:w=1\x00":                                "a",
		"THUMBD_PRESETS=:w=1":                                     `""`,
		"THUMBD_UPLOADS=no":                                       "THUMBD_UPLOADS",
		"THUMBD_PRESETS=small:w=2000&h=2000&fit=inside;tiny:w=16": "",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, err := loadConfig(nil, envOf(map[string]string{k: v}), io.Discard)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want an error with %q", env, err, want)
		}
	}
}

// THUMBD_UPLOADS=false closes both POST routes, before reading a byte of
// the body; GET is served as before.
func TestUploadsOff(t *testing.T) {
	base, src := presetServer(t, false)
	cfg := testConfig(t)
	cfg.Uploads = false
	srv, _ := newTestServer(t, cfg)
	for _, path := range []string{"/thumbnail?w=10", "/hash"} {
		status, h, body := do(t, "POST", srv.URL+path, bytes.NewReader(src))
		if status != 405 || h.Get("Allow") != "GET" {
			t.Fatalf("POST %s: %d Allow %q %s", path, status, h.Get("Allow"), body)
		}
		assertError(t, body, apierr.UploadsDisabled)
	}
	if status, _, _ := do(t, "GET", srv.URL+"/hash?data=x", nil); status != 200 {
		t.Errorf("GET /hash: %d", status)
	}
	// The answer comes without the body being sent, and the connection is
	// closed rather than drained.
	for _, path := range []string{"/thumbnail", "/hash"} {
		c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", path, 10<<20)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: no answer without the body: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 || !resp.Close {
			t.Errorf("%s: %d, close %v", path, resp.StatusCode, resp.Close)
		}
	}
	_, _, metrics := do(t, "GET", srv.URL+"/metrics", nil)
	if !bytes.Contains(metrics, []byte(`thumbd_thumbnail_rejections_total{reason="uploads_disabled"} 2`)) {
		t.Error("refused POST /thumbnail not counted")
	}
	// With uploads on (the default), the same server kind takes POSTs.
	if status, _, body := postThumb(t, base, "?w=10", src); status != 200 {
		t.Errorf("uploads on: %d %s", status, body)
	}
}
