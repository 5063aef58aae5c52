package thumb

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"math"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// marked is a w x h grey PNG with a red square of side s centred at
// (cx, cy).
func marked(t *testing.T, w, h, cx, cy, s int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBA{120, 120, 120, 255}
			if x >= cx-s/2 && x < cx+s/2 && y >= cy-s/2 && y < cy+s/2 {
				c = color.NRGBA{230, 20, 20, 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// redCentroid is the centre of the thumbnail's red pixels, and how many
// there are.
func redCentroid(t *testing.T, b []byte) (x, y float64, n int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	r := img.Bounds()
	for py := r.Min.Y; py < r.Max.Y; py++ {
		for px := r.Min.X; px < r.Max.X; px++ {
			cr, cg, _, _ := img.At(px, py).RGBA()
			if cr>>8 > 180 && cg>>8 < 80 {
				x, y, n = x+float64(px)+0.5, y+float64(py)+0.5, n+1
			}
		}
	}
	if n > 0 {
		x, y = x/float64(n), y/float64(n)
	}
	return x, y, n
}

// A focal crop keeps the marked region, centred as far as the crop
// allows: in the middle when there is room, against the edge when not.
func TestFocalCrop(t *testing.T) {
	focal := func(fx, fy float64) thumbjob.Options {
		return thumbjob.Options{Width: 100, Height: 100, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityFocal, FocalX: fx, FocalY: fy, Format: imagefmt.PNG}
	}
	for _, c := range []struct {
		name           string
		src            []byte
		o              thumbjob.Options
		wantX, wantY   float64
		minRed, maxRed int
	}{
		// 600x200 covers 100x100 at 1/2: a 300x100 image, cut 100 wide.
		{"room to centre", marked(t, 600, 200, 360, 100, 40), focal(0.6, 0.5), 50, 50, 300, 500},
		{"clamped left", marked(t, 600, 200, 30, 100, 40), focal(0.05, 0.5), 15, 50, 300, 500},
		{"clamped right", marked(t, 600, 200, 580, 100, 40), focal(0.97, 0.5), 90, 50, 300, 500},
		// 200x600: the cut runs down the side.
		{"vertical", marked(t, 200, 600, 100, 420, 40), focal(0.5, 0.7), 50, 50, 300, 500},
		// The centre crop misses a region the focal one keeps.
		{"centre misses it", marked(t, 600, 200, 560, 100, 40), thumbjob.Options{Width: 100, Height: 100, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}, 0, 0, 0, 0},
	} {
		img, err := testEngine.Thumbnail(context.Background(), c.src, c.o)
		if err != nil || img.Width != 100 || img.Height != 100 {
			t.Fatalf("%s: %dx%d %v", c.name, img.Width, img.Height, err)
		}
		x, y, n := redCentroid(t, img.Bytes)
		if n < c.minRed || n > c.maxRed || n > 0 && (math.Abs(x-c.wantX) > 1.5 || math.Abs(y-c.wantY) > 1.5) {
			t.Errorf("%s: %d red pixels centred at (%.1f, %.1f), want %d-%d at (%.0f, %.0f)", c.name, n, x, y, c.minRed, c.maxRed, c.wantX, c.wantY)
		}
	}
}

// The point is a fraction of the source as displayed: EXIF orientation
// turns it with the image. A JPEG goes through shrink-on-load too.
func TestFocalCropFollowsOrientation(t *testing.T) {
	// The image as a JPEG stored on its side with orientation 6 (turned
	// back to 600x200 for display).
	rotated := onItsSide(t, marked(t, 600, 200, 480, 100, 40))
	o := thumbjob.Options{Width: 50, Height: 50, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityFocal, FocalX: 0.8, FocalY: 0.5, Format: imagefmt.PNG}
	out, err := testEngine.Thumbnail(context.Background(), rotated, o)
	if err != nil {
		t.Fatal(err)
	}
	if x, y, n := redCentroid(t, out.Bytes); n < 50 || math.Abs(x-25) > 1.5 || math.Abs(y-25) > 1.5 {
		t.Errorf("%d red pixels centred at (%.1f, %.1f), want (25, 25)", n, x, y)
	}
}

// An animation keeps one window, on the point, for every frame: its first
// frame is nearer the still focal crop of the same source than the still
// centre crop (WebP, lossy with 4:2:0 chroma, blurs the stripes' edges).
func TestFocalCropOfAnAnimation(t *testing.T) {
	src := animation(t, 120, 40, 4, 0)
	o := thumbjob.Options{Width: 30, Height: 30, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityFocal, FocalX: 0.9, FocalY: 0.5, Format: imagefmt.PNG}
	focal, err := testEngine.Thumbnail(context.Background(), src, o)
	if err != nil {
		t.Fatal(err)
	}
	centreOpts := o
	centreOpts.Gravity = thumbjob.GravityCentre
	centre, err := testEngine.Thumbnail(context.Background(), src, centreOpts)
	if err != nil {
		t.Fatal(err)
	}
	o.Format, o.Quality, o.Animated = imagefmt.WebP, 100, true
	anim, err := testEngine.Thumbnail(context.Background(), src, o)
	if err != nil || anim.Frames != 4 || anim.Width != 30 || anim.Height != 30 {
		t.Fatalf("%d frames of %dx%d: %v", anim.Frames, anim.Width, anim.Height, err)
	}
	first := pixels(t, anim.Bytes) // page 0
	toFocal, toCentre := meanDiff(t, first, pixels(t, focal.Bytes)), meanDiff(t, first, pixels(t, centre.Bytes))
	t.Logf("first frame against the focal crop %.1f, against the centre crop %.1f", toFocal, toCentre)
	if toFocal*2 > toCentre {
		t.Errorf("the animation's first frame differs from the still focal crop by %.1f levels, from the centre crop by %.1f", toFocal, toCentre)
	}
}

// pixels are an image's first frame, as 8-bit sRGB without alpha.
func pixels(t *testing.T, b []byte) []byte {
	t.Helper()
	img, err := vips.LoadImageFromBuffer(b, vips.NewImportParams())
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	if img.HasAlpha() {
		if err := img.Flatten(&vips.Color{}); err != nil {
			t.Fatal(err)
		}
	}
	px, err := img.ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return px
}

func meanDiff(t *testing.T, a, b []byte) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d and %d bytes of pixels", len(a), len(b))
	}
	var d float64
	for i := range a {
		d += math.Abs(float64(a[i]) - float64(b[i]))
	}
	return d / float64(len(a))
}
