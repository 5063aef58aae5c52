package thumb

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/color/palette"
	"image/draw"
	"image/gif"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
)

// clip is a GIF like the ones people post: frames of w x h with smooth
// colour and fine detail, dithered to the web palette. With fullMotion
// every pixel changes from frame to frame (a clip cut from a video);
// without, a subject moves across a still background (a sticker, a demo).
func clip(tb testing.TB, w, h, frames int, fullMotion bool) []byte {
	tb.Helper()
	anim := &gif.GIF{}
	rgba := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < frames; i++ {
		phase := 0.0
		if fullMotion {
			phase = float64(i) / float64(frames) * 2 * math.Pi
		}
		left, top := w/4+i*w/(2*frames), h/3 // the subject
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				fx, fy := float64(x)/float64(w), float64(y)/float64(h)
				r := 128 + 100*math.Sin(6*fx+phase)
				g := 128 + 100*math.Cos(5*fy-phase)
				b := 128 + 60*math.Sin(20*(fx+fy)+3*phase) + float64((x*7+y*13)%17)
				if !fullMotion && x >= left && x < left+w/4 && y >= top && y < top+h/3 {
					r, g, b = 255-r, 200, float64((x+y+4*i)%255)
				}
				rgba.SetRGBA(x, y, color.RGBA{uint8(r), uint8(g), uint8(min(max(b, 0), 255)), 255})
			}
		}
		p := image.NewPaletted(rgba.Bounds(), palette.WebSafe)
		draw.FloydSteinberg.Draw(p, p.Bounds(), rgba, image.Point{})
		anim.Image = append(anim.Image, p)
		anim.Delay = append(anim.Delay, 4)
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, anim); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkAnimated is a 50-frame 320x240 GIF to a 256x256 cover WebP,
// the first frame only, then every frame (issue 14's goal: at most 5x), for
// a subject moving on a still background and for full motion.
//
//	go test -run '^$' -bench Animated -benchtime 20x ./service/internal/thumb
func BenchmarkAnimated(b *testing.B) {
	for _, motion := range []string{"subject", "full"} {
		src := clip(b, 320, 240, 50, motion == "full")
		for _, animated := range []bool{false, true} {
			o := Options{Width: 256, Height: 256, Fit: FitCover, Gravity: GravityCentre, Format: imagefmt.WebP, Quality: 80, Animated: animated}
			name := motion + "/first-frame"
			if animated {
				name = motion + "/all-50-frames"
			}
			b.Run(name, func(b *testing.B) {
				var img Image
				for b.Loop() {
					var err error
					if img, err = testEngine.Thumbnail(context.Background(), src, o); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(img.Bytes)), "out-bytes")
				b.ReportMetric(float64(img.Frames), "frames")
			})
		}
	}
}

// TestLargestAnimationPeakRSS makes the largest animation the default
// limits allow (256 frames whose pixels add up to THUMBD_MAX_PIXELS, each
// covered to 256x256: THUMBD_MAX_ANIMATION_PIXELS exactly) in a fresh
// process (this test binary re-run), so that the peak RSS it prints is the
// thumbnail's and not the making of the source. It only runs when asked:
//
//	THUMBD_PEAK_RSS=1 go test -count=1 -run LargestAnimationPeakRSS -v ./service/internal/thumb
func TestLargestAnimationPeakRSS(t *testing.T) {
	if path := os.Getenv("THUMBD_PEAK_RSS_SOURCE"); path != "" {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		e := New(Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 16_777_216})
		before := vmHWM(t)
		img, err := e.Thumbnail(context.Background(), src, Options{Width: 256, Height: 256, Fit: FitCover, Format: imagefmt.WebP, Quality: 80, Animated: true})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("peak-rss: output %d frames, %d bytes; peak RSS %d MiB before the thumbnail, %d MiB after\n",
			img.Frames, len(img.Bytes), before>>10, vmHWM(t)>>10)
		return
	}
	if os.Getenv("THUMBD_PEAK_RSS") == "" {
		t.Skip("set THUMBD_PEAK_RSS=1 to measure")
	}
	side := int(math.Sqrt(40_000_000 / 256)) // 395: 256 x 395 x 395 <= 40 M
	path := filepath.Join(t.TempDir(), "largest.gif")
	if err := os.WriteFile(path, clip(t, side, side, 256, true), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLargestAnimationPeakRSS$")
	cmd.Env = append(os.Environ(), "THUMBD_PEAK_RSS_SOURCE="+path)
	out, err := cmd.CombinedOutput()
	info, _ := os.Stat(path)
	t.Logf("source: 256 frames of %dx%d, %d bytes\n%s", side, side, info.Size(), out)
	if err != nil || !strings.Contains(string(out), "peak-rss:") {
		t.Fatalf("child: %v", err)
	}
}

// vmHWM is the process's peak resident set in KiB.
func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	t.Fatal("no VmHWM")
	return 0
}
