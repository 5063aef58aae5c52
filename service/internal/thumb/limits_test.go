package thumb

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/hostile"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// libvips 8.14 sizes a GIF from its frames and ignores a larger logical
// screen, so a 40-byte GIF declaring 65535x65535 used to be thumbnailed;
// what the header declares is held to the pixel limit like every format.
func TestGIFScreenHeldToPixelLimit(t *testing.T) {
	opts := thumbjob.Options{Width: 8, Height: 8, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}
	if _, err := testEngine.Thumbnail(context.Background(), hostile.GIFBomb(65535, 65535), opts); !errors.Is(err, thumbjob.ErrTooManyPixels) {
		t.Fatalf("65535x65535 screen: %v", err)
	}
	if _, err := testEngine.Thumbnail(context.Background(), hostile.GIFBomb(6000, 6000), opts); err != nil {
		t.Fatalf("6000x6000 screen (36 MP, allowed): %v", err)
	}
}

// A cover crop scales the whole source first: from a 1x20000 source (20
// kilopixels) a 256x256 cover is a 256x5120000 image, which took minutes
// and gigabytes. It is held to the pixel limit; the other fits of the same
// source stay cheap and are served.
func TestCoverOfThinSourceHeldToPixelLimit(t *testing.T) {
	for _, src := range [][]byte{hostile.PNG(hostile.Pattern(1, 20000)), hostile.JPEG(hostile.Pattern(20000, 1), 80)} {
		start := time.Now()
		if _, err := testEngine.Thumbnail(context.Background(), src, thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}); !errors.Is(err, thumbjob.ErrTooManyPixels) {
			t.Fatalf("cover: %v", err)
		}
		for _, fit := range []thumbjob.Fit{thumbjob.FitFill, thumbjob.FitContain, thumbjob.FitInside} {
			o := thumbjob.Options{Width: 256, Height: 256, Fit: fit, Format: imagefmt.PNG}
			img, err := testEngine.Thumbnail(context.Background(), src, o)
			if err != nil {
				t.Fatalf("%s: %v", fit, err)
			}
			checkThumbnail(t, img, o)
		}
		if el := time.Since(start); el > 10*time.Second {
			t.Fatalf("took %s", el)
		}
	}
}

// govips appends a Go stack trace to every libvips error; the engine's
// errors reach clients and must carry libvips' message only.
func TestErrorsCarryNoStackTrace(t *testing.T) {
	_, seeds := readSeeds(t)
	opts := thumbjob.Options{Width: 32, Height: 32, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}
	for _, name := range []string{"ok-jpeg-baseline.jpg", "ok-png-rgb.png", "ok-webp-lossy.webp", "ok-gif-static.gif"} {
		src := seeds[name]
		_, err := testEngine.Thumbnail(context.Background(), src[:len(src)*3/4], opts)
		if !errors.Is(err, thumbjob.ErrUndecodable) {
			t.Fatalf("%s truncated: %v", name, err)
		}
		if msg := err.Error(); strings.Contains(msg, "Stack") || strings.Contains(msg, "goroutine") || strings.Contains(msg, ".go:") {
			t.Fatalf("%s: error carries a stack trace: %.300s", name, msg)
		}
	}
}
