package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/toolbin"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// peerPSNR is the least PSNR (dB, over R, G and B) between thumbd's answer
// and imgproxy's to the same URL: the same geometry resampled by the same
// libvips differs by rounding (imgproxy resizes in one vips_resize, thumbd
// through libvips' thumbnail). The lowest, 29.9 dB on this scene's hard
// edges, is a crop placed by pixel offsets on a JPEG shrunk on load:
// imgproxy places it in the shrunk image (its offsets halved and rounded
// to even), thumbd in the source's pixels, a pixel apart.
const peerPSNR = 29

// TestImgproxyAgrees: imgproxy's options that need the source's size
// (rt:auto with both sides, crop in pixels at a gravity, gravity offsets,
// min-width and min-height, extend_aspect_ratio, trim's equal_hor and
// equal_ver) give, through thumbd's imgproxy endpoint, the size imgproxy
// 4.0.12 gives and, within peerPSNR, its pixels, both on the same
// libvips. A test run by hand (toolbin.ByHand: CI cannot fetch imgproxy's
// source, so there it skips): THUMBD_IMGPROXY_BIN names imgproxy built against the recipe's
// libvips (bench/README.md, "bench peer"), and this test binary must be
// built against it too:
//
//	P=$(scripts/build-libvips.sh | tail -1)
//	PKG_CONFIG_PATH=$P/lib/pkgconfig CGO_LDFLAGS=-Wl,-rpath,$P/lib THUMBD_IMGPROXY_BIN=/tmp/imgproxy \
//	  go test -run TestImgproxyAgrees -v ./service
func TestImgproxyAgrees(t *testing.T) {
	bin := toolbin.ByHand(t, "THUMBD_IMGPROXY_BIN", "its source is not on the Go module proxy here: bench/README.md's imgproxy build", "imgproxy 4.0.12")
	t.Logf("thumbd on libvips %s", thumb.Version())
	dir := t.TempDir()
	framed := scene(300, 200)
	bordered := image.NewNRGBA(image.Rect(0, 0, 420, 300))
	for i := range bordered.Pix {
		bordered.Pix[i] = 255
	}
	for y := range 200 {
		for x := range 300 {
			bordered.Set(x+30, y+60, framed.At(x, y)) // borders: 30 left, 90 right, 60 top, 40 bottom
		}
	}
	for name, b := range map[string][]byte{
		"photo.jpg":  encodeJPEG(t, scene(800, 600), 92),
		"tall.jpg":   encodeJPEG(t, scene(600, 800), 92),
		"border.png": encodePNG(t, bordered),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	peer := startImgproxy(t, bin, dir)
	own := startChild(t, "THUMBD_IMGPROXY=true", "THUMBD_SOURCE="+dir, "THUMBD_MERGE=false")
	var table strings.Builder
	fmt.Fprintln(&table, "| URL options | source | imgproxy | thumbd | PSNR (dB) |\n|---|---|---|---|---|")
	for _, c := range []struct{ opts, src string }{
		{"rs:auto:300:200", "photo.jpg"},
		{"rs:auto:300:200", "tall.jpg"},
		{"rs:auto:200:300", "photo.jpg"},
		{"c:300:200/rs:fit:150:150", "photo.jpg"},
		{"c:300:200:soea/rs:fit:150:150", "photo.jpg"},
		{"c:300:200:no:10:20/rs:fit:150:150", "photo.jpg"},
		{"c:300:200:fp:0.8:0.3/rs:fit:150:150", "photo.jpg"},
		{"c:0.5:0.25:we:0.1:0/rs:fit:200:200", "photo.jpg"},
		{"rot:90/c:300:200:ea:15:0/rs:fit:150:150", "photo.jpg"},
		{"rs:fill:200:200/g:no:10:20", "photo.jpg"},
		{"rs:fill:200:200/g:soea:25:5", "photo.jpg"},
		{"rs:fill:200:100/g:ce:0.1:-0.1", "tall.jpg"},
		{"rs:fit:300:300/ex:1:so:0:10", "photo.jpg"},
		{"rs:fit:100:0/mw:200", "photo.jpg"},
		{"rs:fit:150:150/mh:200", "photo.jpg"},
		{"rs:fill:100:100/mw:300", "photo.jpg"},
		{"rs:fit:300:100/exar:1", "photo.jpg"},
		{"rs:fit:300:100/exar:1:ea", "photo.jpg"},
		{"t:10:ffffff", "border.png"},
		{"t:10:ffffff:1:0", "border.png"},
		{"t:10:ffffff:1:1", "border.png"},
		{"t:10:ffffff:0:1/rs:fit:200:200", "border.png"},
	} {
		path := "/insecure/" + c.opts + "/plain/local:///" + c.src + "@png"
		want, err := fetchPNG(peer + path)
		if err != nil {
			t.Errorf("%s: imgproxy: %v", path, err)
			continue
		}
		got, err := fetchPNG(own.addr + path)
		if err != nil {
			t.Errorf("%s: thumbd: %v", path, err)
			continue
		}
		wb, gb := want.Bounds().Size(), got.Bounds().Size()
		psnr := math.NaN()
		if wb == gb {
			psnr = rgbPSNR(want, got)
		}
		fmt.Fprintf(&table, "| `%s` | %s | %dx%d | %dx%d | %.1f |\n", c.opts, c.src, wb.X, wb.Y, gb.X, gb.Y, psnr)
		switch {
		case wb != gb:
			t.Errorf("%s: imgproxy %v, thumbd %v", path, wb, gb)
		case psnr < peerPSNR:
			t.Errorf("%s: PSNR %.1f dB, want at least %d", path, psnr, peerPSNR)
		}
	}
	// max_bytes: the quality lowered until the answer fits, by imgproxy's
	// steps (plan.FitQuality): the same size, both within the bound (or
	// both at the last quality tried), lengths within a tenth.
	fmt.Fprintln(&table, "\n| URL options | format | imgproxy bytes | thumbd bytes |\n|---|---|---|---|")
	for _, c := range []struct {
		opts, format string
		max          int
	}{
		{"rs:fit:400:400/mb:12000", "jpg", 12000},
		{"rs:fit:400:400/mb:6000", "jpg", 6000},
		{"rs:fit:400:400/mb:9000", "webp", 9000},
		{"rs:fit:400:400/q:90/mb:20000", "jpg", 20000},
	} {
		path := "/insecure/" + c.opts + "/plain/local:///photo.jpg@" + c.format
		want, err := fetchBytes(peer + path)
		if err != nil {
			t.Errorf("%s: imgproxy: %v", path, err)
			continue
		}
		got, err := fetchBytes(own.addr + path)
		if err != nil {
			t.Errorf("%s: thumbd: %v", path, err)
			continue
		}
		fmt.Fprintf(&table, "| `%s` | %s | %d | %d |\n", c.opts, c.format, len(want), len(got))
		wc, _, werr := image.DecodeConfig(bytes.NewReader(want))
		gc, _, gerr := image.DecodeConfig(bytes.NewReader(got))
		switch {
		case werr != nil || gerr != nil:
			t.Errorf("%s: imgproxy's answer %v, thumbd's %v", path, werr, gerr)
		case wc.Width != gc.Width || wc.Height != gc.Height:
			t.Errorf("%s: imgproxy %dx%d, thumbd %dx%d", path, wc.Width, wc.Height, gc.Width, gc.Height)
		case (len(want) <= c.max) != (len(got) <= c.max):
			t.Errorf("%s: imgproxy %d bytes, thumbd %d, the bound %d", path, len(want), len(got), c.max)
		case math.Abs(float64(len(got)-len(want))) > float64(len(want))/10:
			t.Errorf("%s: imgproxy %d bytes, thumbd %d: more than a tenth apart", path, len(want), len(got))
		}
	}
	t.Log("\n" + table.String())
}

// fetchBytes is url's answer, which must be a 200.
func fetchBytes(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("%d %s", resp.StatusCode, b)
	}
	return b, err
}

// startImgproxy runs bin on a free loopback port serving dir, until the
// test ends; it returns its base URL once it answers /health.
func startImgproxy(t *testing.T, bin, dir string) string {
	t.Helper()
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), fmt.Sprintf("IMGPROXY_BIND=127.0.0.1:%d", port), "IMGPROXY_LOCAL_FILESYSTEM_ROOT="+dir,
		"IMGPROXY_LOG_LEVEL=error", "IMGPROXY_WORKERS=1")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("imgproxy did not start: %s", logs.String())
	return ""
}

// fetchPNG gets url's PNG answer.
func fetchPNG(url string) (image.Image, error) {
	b, err := fetchBytes(url)
	if err != nil {
		return nil, err
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	return img, err
}

// rgbPSNR is the PSNR of b against a over their R, G and B (alpha
// composited onto white), 8 bits a sample; +Inf when equal.
func rgbPSNR(a, b image.Image) float64 {
	sum, n := 0.0, 0
	r := a.Bounds()
	white := func(c color.Color) [3]float64 {
		r, g, b, al := c.RGBA() // premultiplied, 16 bits
		k := float64(65535 - al)
		return [3]float64{(float64(r) + k) / 257, (float64(g) + k) / 257, (float64(b) + k) / 257}
	}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			p, q := white(a.At(x, y)), white(b.At(x-r.Min.X+b.Bounds().Min.X, y-r.Min.Y+b.Bounds().Min.Y))
			for i := range 3 {
				sum += (p[i] - q[i]) * (p[i] - q[i])
			}
			n += 3
		}
	}
	if sum == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(sum/float64(n)))
}
