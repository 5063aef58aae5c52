package thumb

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"slices"
	"strings"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// animation is a GIF of frames w x h, each a different colour with a
// moving stripe, delays 10, 20, 30... hundredths of a second and loop count
// loop (0: forever).
func animation(t testing.TB, w, h, frames, loop int) []byte {
	t.Helper()
	anim := &gif.GIF{LoopCount: loop}
	for i := 0; i < frames; i++ {
		pal := color.Palette{color.RGBA{uint8(40 * i), 200, uint8(255 - 30*i), 255}, color.RGBA{0, 0, 0, 255}}
		p := image.NewPaletted(image.Rect(0, 0, w, h), pal)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				if (x+i*3)%17 < 4 {
					p.SetColorIndex(x, y, 1)
				}
			}
		}
		anim.Image = append(anim.Image, p)
		anim.Delay = append(anim.Delay, 10*(i%5+1))
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, anim); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readBack loads every frame of an encoded animation with libvips.
func readBack(t testing.TB, b []byte) *vips.ImageRef {
	t.Helper()
	p := vips.NewImportParams()
	p.NumPages.Set(-1)
	img, err := vips.LoadImageFromBuffer(b, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(img.Close)
	return img
}

func TestAnimatedThumbnailKeepsFramesDelaysAndLoop(t *testing.T) {
	src := animation(t, 120, 80, 6, 3)
	for _, fit := range thumbjob.Fits() {
		o := thumbjob.Options{Width: 48, Height: 48, Fit: fit, Gravity: thumbjob.GravityCentre, Format: imagefmt.WebP, Quality: 80, Animated: true}
		img, err := testEngine.Thumbnail(context.Background(), src, o)
		if err != nil {
			t.Fatalf("%s: %v", fit, err)
		}
		back := readBack(t, img.Bytes)
		wantH := 48
		if fit == thumbjob.FitInside {
			wantH = 32
		}
		if img.Frames != 6 || back.Pages() != 6 || back.Width() != 48 || back.PageHeight() != wantH || img.Height != wantH {
			t.Fatalf("%s: %d frames (read back %d) of %dx%d", fit, img.Frames, back.Pages(), back.Width(), back.PageHeight())
		}
		delays, err := back.PageDelay()
		if err != nil || !slices.Equal(delays, []int{100, 200, 300, 400, 500, 100}) {
			t.Errorf("%s: delays %v (%v), want the source's in ms", fit, delays, err)
		}
		// libvips counts plays (Go's LoopCount 3 is 4 plays); the thumbnail
		// keeps what libvips reads from the source.
		if loop, want := back.GetInt("loop"), readBack(t, src).GetInt("loop"); loop != want || loop != 4 {
			t.Errorf("%s: loop %d, want %d (4 plays)", fit, loop, want)
		}
	}
}

func TestNotAnimatedGivesTheFirstFrame(t *testing.T) {
	src := animation(t, 120, 80, 6, 0)
	for _, o := range []thumbjob.Options{
		{Width: 48, Height: 48, Fit: thumbjob.FitCover, Format: imagefmt.WebP, Quality: 80},
		{Width: 48, Height: 48, Fit: thumbjob.FitCover, Format: imagefmt.PNG, Animated: true}, // png cannot animate
	} {
		img, err := testEngine.Thumbnail(context.Background(), src, o)
		if err != nil {
			t.Fatal(err)
		}
		if back := readBack(t, img.Bytes); img.Frames != 1 || back.Pages() != 1 || back.PageHeight() != 48 {
			t.Errorf("%+v: %d frames, %d read back", o, img.Frames, back.Pages())
		}
	}
}

func TestAnimationBudgets(t *testing.T) {
	e := New(thumbjob.Config{MaxPixels: 120 * 80 * 6, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 6 * 48 * 48})
	src := animation(t, 120, 80, 6, 0)
	o := thumbjob.Options{Width: 48, Height: 48, Fit: thumbjob.FitCover, Format: imagefmt.WebP, Quality: 80, Animated: true}
	if _, err := e.Thumbnail(context.Background(), src, o); err != nil {
		t.Fatalf("at both budgets: %v", err)
	}
	o.Width = 49
	if _, err := e.Thumbnail(context.Background(), src, o); !errors.Is(err, thumbjob.ErrAnimationTooLarge) {
		t.Errorf("6 x 49 x 48 output pixels: %v", err)
	}
	o.Animated = false // one frame is within any animation budget
	if _, err := e.Thumbnail(context.Background(), src, o); err != nil {
		t.Errorf("first frame only: %v", err)
	}
	seven := animation(t, 120, 80, 7, 0)
	o = thumbjob.Options{Width: 8, Height: 8, Fit: thumbjob.FitCover, Format: imagefmt.WebP, Quality: 80, Animated: true}
	if _, err := e.Thumbnail(context.Background(), seven, o); !errors.Is(err, thumbjob.ErrTooManyPixels) {
		t.Errorf("7 frames of 120x80 to decode: %v", err)
	}
}

// format=auto: the thumbnail's transparency picks between the two formats.
func TestAlphaFormat(t *testing.T) {
	o := thumbjob.Options{Width: 32, Height: 32, Fit: thumbjob.FitCover, Format: imagefmt.JPEG, AlphaFormat: imagefmt.PNG}
	opaque, err := testEngine.Thumbnail(context.Background(), source(t, "small.jpg"), o)
	if err != nil || opaque.Format != imagefmt.JPEG {
		t.Fatalf("opaque: %v %v", opaque.Format, err)
	}
	alpha, err := testEngine.Thumbnail(context.Background(), seed(t, "ok-webp-alpha.webp"), o)
	if err != nil || alpha.Format != imagefmt.PNG {
		t.Fatalf("alpha: %v %v", alpha.Format, err)
	}
}

func seed(t testing.TB, name string) []byte {
	t.Helper()
	_, seeds := readSeeds(t)
	b, ok := seeds[name]
	if !ok {
		t.Fatalf("no seed %s", name)
	}
	return b
}

// No output carries metadata: not the still formats, not an animation.
// libvips 8.14.0-8.14.1 (Debian bookworm's) ignores strip in its WebP
// writer (ChangeLog 8.14.2: "fix `strip` parameter in webpsave"): the
// engine removes the source's EXIF, XMP and IPTC before it writes, and
// libvips still writes an EXIF block of its own (orientation 1, the
// resolution and size), so that marker alone is not checked there; the
// images ship a later libvips, and scripts/test.sh runs this test against it.
func TestNoMetadataInAnyOutput(t *testing.T) {
	webpStripBroken := strings.HasPrefix(Version(), "8.14.0") || strings.HasPrefix(Version(), "8.14.1")
	srcs := map[string][]byte{"jpeg": seed(t, "ok-jpeg-exif-6.jpg"), "gif": animation(t, 60, 40, 4, 0)}
	for name, src := range srcs {
		for _, f := range imagefmt.Outputs() {
			o := thumbjob.Options{Width: 32, Height: 32, Fit: thumbjob.FitCover, Format: f, Quality: 80, Animated: true}
			img, err := testEngine.Thumbnail(context.Background(), src, o)
			if err != nil {
				t.Fatalf("%s to %s: %v", name, f, err)
			}
			// colrprof: an ISO BMFF colour box holding an ICC profile (AVIF).
			for _, marker := range []string{"Exif", "EXIF", "eXIf", "XMP ", "http://ns.adobe.com/xap", "ICCP", "iCCP", "colrprof"} {
				if f == imagefmt.WebP && webpStripBroken && (marker == "Exif" || marker == "EXIF") {
					continue // libvips' own block (TestImgproxyMetadata: none of the source's)
				}
				if bytes.Contains(img.Bytes, []byte(marker)) {
					t.Errorf("%s to %s (%d frames): %q in the output", name, f, img.Frames, marker)
				}
			}
		}
	}
}
