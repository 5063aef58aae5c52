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
	"time"

	"github.com/davidbyttow/govips/v2/vips"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// motion is how a clip's frames differ.
type motion string

const (
	// A subject moves across a still background and every frame is
	// dithered on its own, as a video-to-GIF converter leaves it: the
	// dithering's error spreads the change right of and below the subject.
	motionSubject motion = "subject"
	// The same subject on a background dithered once, identical in every
	// frame, as GIF optimisers leave a sticker or a screen recording.
	motionSticker motion = "sticker"
	// Every pixel changes from frame to frame (a clip cut from a video).
	motionFull motion = "full"
)

// clip is a GIF like the ones people post: frames of w x h with smooth
// colour and fine detail, dithered to the web palette, that differ as m says.
func clip(tb testing.TB, w, h, frames int, m motion) []byte {
	tb.Helper()
	background := func(x, y int, phase float64) color.RGBA {
		fx, fy := float64(x)/float64(w), float64(y)/float64(h)
		r := 128 + 100*math.Sin(6*fx+phase)
		g := 128 + 100*math.Cos(5*fy-phase)
		b := 128 + 60*math.Sin(20*(fx+fy)+3*phase) + float64((x*7+y*13)%17)
		return color.RGBA{uint8(r), uint8(g), uint8(min(max(b, 0), 255)), 255}
	}
	dither := func(colour func(x, y int) color.RGBA) *image.Paletted {
		rgba := image.NewRGBA(image.Rect(0, 0, w, h))
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				rgba.SetRGBA(x, y, colour(x, y))
			}
		}
		p := image.NewPaletted(rgba.Bounds(), palette.WebSafe)
		draw.FloydSteinberg.Draw(p, p.Bounds(), rgba, image.Point{})
		return p
	}
	still := dither(func(x, y int) color.RGBA { return background(x, y, 0) }) // motionSticker's
	anim := &gif.GIF{}
	for i := 0; i < frames; i++ {
		left, top := w/4+i*w/(2*frames), h/3
		inSubject := func(x, y int) bool { return x >= left && x < left+w/4 && y >= top && y < top+h/3 }
		subject := func(x, y int) color.RGBA {
			return color.RGBA{255 - background(x, y, 0).R, 200, uint8((x + y + 4*i) % 255), 255}
		}
		var p *image.Paletted
		switch m {
		case motionFull:
			phase := float64(i) / float64(frames) * 2 * math.Pi
			p = dither(func(x, y int) color.RGBA { return background(x, y, phase) })
		case motionSubject:
			p = dither(func(x, y int) color.RGBA {
				if inSubject(x, y) {
					return subject(x, y)
				}
				return background(x, y, 0)
			})
		case motionSticker:
			p = image.NewPaletted(still.Rect, still.Palette)
			copy(p.Pix, still.Pix)
			for y := top; y < top+h/3; y++ {
				for x := left; x < left+w/4; x++ {
					p.Set(x, y, subject(x, y))
				}
			}
		}
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
// each kind of motion. BenchmarkAnimationStages splits the time.
//
//	go test -run '^$' -bench '^BenchmarkAnimated$' -benchtime 20x ./service/internal/thumb
func BenchmarkAnimated(b *testing.B) {
	for _, m := range []motion{motionSubject, motionSticker, motionFull} {
		src := clip(b, 320, 240, 50, m)
		for _, animated := range []bool{false, true} {
			o := thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.WebP, Quality: 80, Animated: animated}
			name := string(m) + "/first-frame"
			if animated {
				name = string(m) + "/all-50-frames"
			}
			b.Run(name, func(b *testing.B) {
				var img thumbjob.Image
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
		e := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 16_777_216})
		before, start := vmHWM(t), time.Now()
		img, err := e.Thumbnail(context.Background(), src, thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Format: imagefmt.WebP, Quality: 80, Animated: true})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("peak-rss: output %d frames, %d bytes in %.1f s; peak RSS %d MiB before the thumbnail, %d MiB after\n",
			img.Frames, len(img.Bytes), time.Since(start).Seconds(), before>>10, vmHWM(t)>>10)
		return
	}
	if os.Getenv("THUMBD_PEAK_RSS") == "" {
		t.Skip("set THUMBD_PEAK_RSS=1 to measure")
	}
	side := int(math.Sqrt(40_000_000 / 256)) // 395: 256 x 395 x 395 <= 40 M
	path := filepath.Join(t.TempDir(), "largest.gif")
	if err := os.WriteFile(path, clip(t, side, side, 256, motionFull), 0o644); err != nil {
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

// BenchmarkAnimationStages splits an animated thumbnail's time: the
// engine's decoding and resizing of every frame alone (every pixel made
// and read, nothing encoded), then with the WebP encoder at effort 4
// (shipped, checked against the engine's own output), 2 and 0; for each kind of motion,
// upscaled (320x240 covered to 256x256) and downscaled (480x360), the first
// frame and all 50. Medians in ms (docs/engine.md, "Animation"):
//
//	go test -run '^$' -bench '^BenchmarkAnimationStages$' -benchtime 7x ./service/internal/thumb
func BenchmarkAnimationStages(b *testing.B) {
	for _, size := range [][2]int{{320, 240}, {480, 360}} {
		for _, m := range []motion{motionSubject, motionSticker, motionFull} {
			src := clip(b, size[0], size[1], 50, m)
			for _, frames := range []int{1, 50} {
				o := thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.WebP, Quality: 80, Animated: frames > 1}
				pixels := func() (*vips.ImageRef, error) {
					m, err := testEngine.pixels(src, o)
					if err != nil {
						return nil, err
					}
					img := m.img
					m.img = nil // the caller's
					return img, nil
				}
				name := fmt.Sprintf("%dx%d/%s/frames-%d/", size[0], size[1], m, frames)
				b.Run(name+"decode-resize", func(b *testing.B) {
					timeMedian(b, func() error {
						img, err := pixels()
						if err != nil {
							return err
						}
						defer img.Close()
						// A pass over every pixel, without writing the
						// frames out (ToBytes would add a 10 MB copy).
						_, err = img.Average()
						return err
					})
				})
				for _, effort := range []int{webpEffort, 2, 0} {
					b.Run(name+fmt.Sprintf("webp-effort-%d", effort), func(b *testing.B) {
						var out []byte
						timeMedian(b, func() error {
							img, err := pixels()
							if err != nil {
								return err
							}
							defer img.Close()
							out, _, err = img.ExportWebp(webpParams(o.Quality, effort))
							return err
						})
						if effort == webpEffort {
							shipped, err := testEngine.Thumbnail(context.Background(), src, o)
							if err != nil || !bytes.Equal(shipped.Bytes, out) {
								b.Fatalf("the study's effort %d is not the engine's output (%v)", effort, err)
							}
						}
						b.ReportMetric(float64(len(out)), "out-bytes")
					})
				}
			}
		}
	}
}
