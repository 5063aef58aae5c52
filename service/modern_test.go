package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/internal/hostile"
	"github.com/thumbd/thumbd/service/internal/apierr"
)

// format=auto answers with the best format Accept allows, varies on
// Accept, and its ETag follows the chosen format.
func TestFormatAuto(t *testing.T) {
	srv, _ := newTestServer(t, testConfig(t))
	opaque := encodeJPEG(t, scene(120, 80), 85)
	alpha := alphaPNG(t, 120, 80)
	tests := []struct {
		name, accept string
		src          []byte
		want         string // Content-Type
	}{
		{"curl", "*/*", opaque, "image/jpeg"},
		{"no accept", "", opaque, "image/jpeg"},
		{"chrome", "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", opaque, "image/avif"},
		{"chrome, alpha", "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", alpha, "image/avif"},
		{"older browser", "image/webp,image/apng,image/*,*/*;q=0.8", opaque, "image/webp"},
		{"webp refused", "image/webp;q=0,*/*", opaque, "image/jpeg"},
		{"alpha, old browser", "image/png,image/jpeg,*/*;q=0.5", alpha, "image/png"},
		{"alpha, webp", "image/webp,*/*", alpha, "image/webp"},
		{"jpeg only", "image/jpeg", alpha, "image/jpeg"},
	}
	tags := map[string]string{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := do(t, "POST", srv.URL+"/thumbnail?format=auto&w=40&h=30", bytes.NewReader(tc.src), "Accept", tc.accept)
			if status != 200 || h.Get("Content-Type") != tc.want || h.Get("Vary") != "Accept" {
				t.Fatalf("status %d type %q vary %q: %s", status, h.Get("Content-Type"), h.Get("Vary"), body)
			}
			if _, format := decoded(t, body); "image/"+format != tc.want {
				t.Fatalf("bytes are %s", format)
			}
			tags[fmt.Sprint(len(tc.src), tc.want)] = h.Get("ETag")
		})
	}
	if tags[fmt.Sprint(len(opaque), "image/jpeg")] == tags[fmt.Sprint(len(opaque), "image/webp")] {
		t.Error("one ETag for a JPEG and a WebP of the same source")
	}
	// A fixed format does not vary on Accept.
	if _, h, _ := do(t, "POST", srv.URL+"/thumbnail?format=webp", bytes.NewReader(opaque), "Accept", "image/webp"); h.Get("Vary") != "" {
		t.Errorf("format=webp: Vary %q", h.Get("Vary"))
	}
}

// A 304 for format=auto depends on the format the Accept header picks.
func TestFormatAutoConditional(t *testing.T) {
	cfg := testConfig(t)
	cfg.SourceDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(cfg.SourceDir, "a.jpg"), encodeJPEG(t, scene(120, 80), 85), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, _ := newTestServer(t, cfg)
	url := srv.URL + "/thumbnail?src=a.jpg&format=auto&w=32"
	_, h, _ := do(t, "GET", url, nil, "Accept", "image/webp")
	tag := h.Get("ETag")
	if status, h, _ := do(t, "GET", url, nil, "Accept", "image/webp", "If-None-Match", tag); status != 304 || h.Get("Vary") != "Accept" {
		t.Errorf("same Accept: %d, Vary %q", status, h.Get("Vary"))
	}
	if status, h, _ := do(t, "GET", url, nil, "Accept", "image/jpeg", "If-None-Match", tag); status != 200 || h.Get("Content-Type") != "image/jpeg" {
		t.Errorf("other Accept, other format: %d %s", status, h.Get("Content-Type"))
	}
}

func TestDevicePixelRatio(t *testing.T) {
	srv, _ := newTestServer(t, testConfig(t))
	src := encodeJPEG(t, scene(400, 300), 85)
	for q, want := range map[string][2]int{"?w=100&h=50&dpr=2": {200, 100}, "?w=100&dpr=1.5": {150, 113}, "?dpr=3": {768, 768}, "?w=3000&dpr=2&fit=inside": {4096, 3072}} {
		status, _, body := postThumb(t, srv.URL, q, src)
		if status != 200 {
			t.Fatalf("%s: %d %s", q, status, body)
		}
		if img, _ := decoded(t, body); img.Bounds().Dx() != want[0] || img.Bounds().Dy() != want[1] {
			t.Errorf("%s: %v, want %v", q, img.Bounds().Size(), want)
		}
	}
	status, _, body := postThumb(t, srv.URL, "?dpr=5", src)
	if status != 400 {
		t.Fatalf("dpr=5: %d", status)
	}
	assertError(t, body, apierr.BadParameter)
}

func TestAnimatedThumbnail(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxAnimationPixels = 5 * 32 * 32
	srv, _ := newTestServer(t, cfg)
	src := hostile.AnimatedGIF(60, 40, 5) // every frame differs: none is merged
	frames := func(body []byte) int {
		p := vips.NewImportParams()
		p.NumPages.Set(-1)
		img, err := vips.LoadImageFromBuffer(body, p)
		if err != nil {
			t.Fatal(err)
		}
		defer img.Close()
		return img.Height() / img.PageHeight()
	}
	for query, want := range map[string]int{
		"?w=32&h=32&format=webp&animated=true": 5, "?w=32&h=32&format=webp": 1, "?w=32&h=32&format=auto&animated=true": 5,
	} {
		status, h, body := do(t, "POST", srv.URL+"/thumbnail"+query, bytes.NewReader(src), "Accept", "image/webp")
		if status != 200 || h.Get("Content-Type") != "image/webp" {
			t.Fatalf("%s: %d %s %s", query, status, h.Get("Content-Type"), body)
		}
		if n := frames(body); n != want {
			t.Errorf("%s: %d frames, want %d", query, n, want)
		}
	}
	// An old browser with format=auto gets the first frame, as PNG/JPEG.
	status, h, body := do(t, "POST", srv.URL+"/thumbnail?w=32&h=32&format=auto&animated=true", bytes.NewReader(src), "Accept", "*/*")
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "image/") || h.Get("Content-Type") == "image/webp" || frames(body) != 1 {
		t.Errorf("auto for */*: %d %s", status, h.Get("Content-Type"))
	}
	for query, code := range map[string]apierr.Code{
		"?w=33&h=32&format=webp&animated=true": apierr.AnimationTooLarge,
		"?format=png&animated=true":            apierr.BadParameter,
		"?format=avif&animated=true":           apierr.BadParameter,
		"?format=webp&animated=yes":            apierr.BadParameter,
	} {
		status, _, body := postThumb(t, srv.URL, query, src)
		if want := code.Status(); status != want {
			t.Fatalf("%s: %d, want %d (%s)", query, status, want, body)
		}
		assertError(t, body, code)
	}
}
