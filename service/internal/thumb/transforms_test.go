package thumb

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/internal/imagediff"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/plan"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// The transforms' shot are checked against what each must do to a
// picture whose every part is known: quadrants of four colours, so that
// a rotation, a flip, a crop or a gravity is read off the corners.

var (
	cRed   = color.NRGBA{255, 0, 0, 255}
	cGreen = color.NRGBA{0, 255, 0, 255}
	cBlue  = color.NRGBA{0, 0, 255, 255}
	cWhite = color.NRGBA{255, 255, 255, 255}
	cClear = color.NRGBA{}
)

// quadrants is a w x h PNG: cRed top left, cGreen top right, cBlue bottom
// left, cWhite bottom right.
func quadrants(t testing.TB, w, h int) []byte {
	t.Helper()
	return pngOf(t, w, h, func(x, y int) color.NRGBA {
		switch {
		case x < w/2 && y < h/2:
			return cRed
		case y < h/2:
			return cGreen
		case x < w/2:
			return cBlue
		}
		return cWhite
	})
}

func pngOf(t testing.TB, w, h int, at func(x, y int) color.NRGBA) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, at(x, y))
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// shot is an encoded thumbnail, decoded.
type shot struct{ image.Image }

// at reads pixel x, y as non-premultiplied RGBA.
func (p shot) at(x, y int) color.NRGBA {
	return color.NRGBAModel.Convert(p.At(x, y)).(color.NRGBA)
}

func near(a, b color.NRGBA, tol int) bool {
	d := func(x, y uint8) bool { return int(x)-int(y) <= tol && int(y)-int(x) <= tol }
	return d(a.R, b.R) && d(a.G, b.G) && d(a.B, b.B) && d(a.A, b.A)
}

func shoot(t *testing.T, src []byte, o thumbjob.Options) shot {
	t.Helper()
	if o.Fit == "" {
		o.Fit = thumbjob.FitInside
	}
	if o.Gravity == "" {
		o.Gravity = thumbjob.GravityCentre
	}
	if o.Format == "" {
		o.Format = imagefmt.PNG
	}
	img, err := testEngine.Thumbnail(context.Background(), src, o)
	if err != nil {
		t.Fatalf("%+v: %v", o.Transforms, err)
	}
	dec, _, err := image.Decode(bytes.NewReader(img.Bytes))
	if err != nil {
		t.Fatal(err)
	}
	if b := dec.Bounds(); b.Dx() != img.Width || b.Dy() != img.Height {
		t.Fatalf("image is %v, reported %dx%d", b, img.Width, img.Height)
	}
	return shot{dec}
}

type spot struct {
	x, y int
	want color.NRGBA
}

func check(t *testing.T, name string, p shot, w, h int, probes ...spot) {
	t.Helper()
	if b := p.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("%s: %dx%d, want %dx%d", name, b.Dx(), b.Dy(), w, h)
		return
	}
	for _, pr := range probes {
		if got := p.at(pr.x, pr.y); !near(got, pr.want, 8) {
			t.Errorf("%s: pixel %d,%d is %v, want %v", name, pr.x, pr.y, got, pr.want)
		}
	}
}

func TestRotateAndFlip(t *testing.T) {
	src := quadrants(t, 80, 40)
	// The corners of an 80x40 image (40x80 on its side) after each turn,
	// clockwise from the top left.
	corners := func(w, h int, tl, tr, br, bl color.NRGBA) []spot {
		return []spot{{2, 2, tl}, {w - 3, 2, tr}, {w - 3, h - 3, br}, {2, h - 3, bl}}
	}
	for _, c := range []struct {
		name   string
		rotate int
		flip   thumbjob.Flip
		w, h   int
		probes []spot
	}{
		{"none", 0, "", 80, 40, corners(80, 40, cRed, cGreen, cWhite, cBlue)},
		{"rotate=90", 90, "", 40, 80, corners(40, 80, cBlue, cRed, cGreen, cWhite)},
		{"rotate=180", 180, "", 80, 40, corners(80, 40, cWhite, cBlue, cRed, cGreen)},
		{"rotate=270", 270, "", 40, 80, corners(40, 80, cGreen, cWhite, cBlue, cRed)},
		{"flip=h", 0, "h", 80, 40, corners(80, 40, cGreen, cRed, cBlue, cWhite)},
		{"flip=v", 0, "v", 80, 40, corners(80, 40, cBlue, cWhite, cGreen, cRed)},
		{"flip=hv", 0, "hv", 80, 40, corners(80, 40, cWhite, cBlue, cRed, cGreen)},
		// rotate first, then flip: on its side blue, red / white, green,
		// mirrored across.
		{"rotate=90&flip=h", 90, "h", 40, 80, corners(40, 80, cRed, cBlue, cWhite, cGreen)},
	} {
		// w=80 h=80 inside: the box is the turned image's, so a side of
		// 80 holds either turn at its own size.
		p := shoot(t, src, thumbjob.Options{Width: 80, Height: 80, Transforms: thumbjob.Transforms{Rotate: c.rotate, Flip: c.flip}})
		check(t, c.name, p, c.w, c.h, c.probes...)
	}
}

func TestCompassGravity(t *testing.T) {
	src := quadrants(t, 80, 40)
	for _, c := range []struct {
		name    string
		gravity thumbjob.Gravity
		rotate  int
		flip    thumbjob.Flip
		left    color.NRGBA // the 20x20 thumbnail's top left and bottom right
		right   color.NRGBA
	}{
		// 80x40 covered to 20x20 is 40x20 cut: the left or right half.
		{"w", thumbjob.GravityWest, 0, "", cRed, cBlue},
		{"e", thumbjob.GravityEast, 0, "", cGreen, cWhite},
		{"nw", thumbjob.GravityNorthWest, 0, "", cRed, cBlue},
		{"se", thumbjob.GravitySouthEast, 0, "", cGreen, cWhite},
		// On its side (blue, red / white, green: 40x80 covered to 20x40),
		// n keeps the top half and s the bottom one.
		{"n rotate=90", thumbjob.GravityNorth, 90, "", cBlue, cRed},
		{"s rotate=90", thumbjob.GravitySouth, 90, "", cWhite, cGreen},
		// Turned the other way (green, white / red, blue).
		{"s rotate=270", thumbjob.GravitySouth, 270, "", cRed, cBlue},
		// Mirrored across (cGreen, cRed / cWhite, cBlue): e keeps the right.
		{"e flip=h", thumbjob.GravityEast, 0, "h", cRed, cBlue},
		{"e flip=hv", thumbjob.GravityEast, 0, "hv", cBlue, cRed},
	} {
		p := shoot(t, src, thumbjob.Options{Width: 20, Height: 20, Fit: thumbjob.FitCover, Gravity: c.gravity, Transforms: thumbjob.Transforms{Rotate: c.rotate, Flip: c.flip}})
		check(t, c.name, p, 20, 20, spot{3, 3, c.left}, spot{16, 16, c.right})
	}
}

func TestEnlargeFalseWithEveryFit(t *testing.T) {
	src := quadrants(t, 80, 40)
	for _, c := range []struct {
		fit          thumbjob.Fit
		boxW, boxH   int
		wantW, wantH int
	}{
		// A box larger than the source: it shrinks by the factor the fit
		// would have enlarged by, keeping its aspect ratio.
		{thumbjob.FitCover, 200, 200, 40, 40},   // x5 to cover: the box / 5
		{thumbjob.FitFill, 200, 200, 40, 40},    // x2.5 and x5: the box / 5
		{thumbjob.FitContain, 200, 200, 80, 80}, // x2.5 to fit: the box / 2.5
		{thumbjob.FitInside, 200, 200, 80, 40},  // the source as it is
		{thumbjob.FitCover, 160, 20, 80, 10},    // x2 to cover across
		{thumbjob.FitContain, 100, 40, 100, 40}, // x1 fits it: padded as asked
		// A box the source covers: nothing changes.
		{thumbjob.FitCover, 20, 20, 20, 20},
		{thumbjob.FitFill, 20, 20, 20, 20},
		{thumbjob.FitContain, 20, 20, 20, 20},
		{thumbjob.FitInside, 20, 20, 20, 10},
	} {
		p := shoot(t, src, thumbjob.Options{Width: c.boxW, Height: c.boxH, Fit: c.fit, Transforms: thumbjob.Transforms{NoEnlarge: true}})
		if b := p.Bounds(); b.Dx() != c.wantW || b.Dy() != c.wantH {
			t.Errorf("%s %dx%d: %dx%d, want %dx%d", c.fit, c.boxW, c.boxH, b.Dx(), b.Dy(), c.wantW, c.wantH)
		}
		// Enlarging (the default) fills the box.
		p = shoot(t, src, thumbjob.Options{Width: c.boxW, Height: c.boxH, Fit: c.fit})
		if b := p.Bounds(); c.fit != thumbjob.FitInside && (b.Dx() != c.boxW || b.Dy() != c.boxH) {
			t.Errorf("%s %dx%d enlarged: %dx%d", c.fit, c.boxW, c.boxH, b.Dx(), b.Dy())
		}
	}
}

func TestBackgroundPadAndExtend(t *testing.T) {
	src := quadrants(t, 80, 40)
	yellow := &thumbjob.Colour{R: 255, G: 255, A: 255}
	// contain 100x100: the source at 100x50, bands of 25 above and below.
	p := shoot(t, src, thumbjob.Options{Width: 100, Height: 100, Fit: thumbjob.FitContain, Transforms: thumbjob.Transforms{Background: yellow}})
	check(t, "contain bg", p, 100, 100, spot{50, 5, color.NRGBA{255, 255, 0, 255}}, spot{10, 30, cRed}, spot{50, 95, color.NRGBA{255, 255, 0, 255}})
	p = shoot(t, src, thumbjob.Options{Width: 100, Height: 100, Fit: thumbjob.FitContain})
	check(t, "contain png default", p, 100, 100, spot{50, 5, cClear}, spot{10, 30, cRed})
	// pad=2,3,4,5 (top, right, bottom, left) around a 20x10 thumbnail.
	p = shoot(t, src, thumbjob.Options{Width: 20, Height: 10, Transforms: thumbjob.Transforms{Pad: thumbjob.Sides{Top: 2, Right: 3, Bottom: 4, Left: 5}, Background: yellow}})
	check(t, "pad", p, 28, 16, spot{0, 0, color.NRGBA{255, 255, 0, 255}}, spot{4, 8, color.NRGBA{255, 255, 0, 255}},
		spot{6, 3, cRed}, spot{23, 10, cWhite}, spot{25, 10, color.NRGBA{255, 255, 0, 255}}, spot{10, 13, color.NRGBA{255, 255, 0, 255}})
	// extend: enlarge=false keeps 80x40, placed at the gravity on the
	// 200x100 canvas of the box.
	for _, c := range []struct {
		g          thumbjob.Gravity
		left, top  int
		background color.NRGBA
	}{
		{thumbjob.GravityNorthWest, 0, 0, cClear},
		{thumbjob.GravitySouthEast, 120, 60, cClear},
		{thumbjob.GravityCentre, 60, 30, cClear},
		{thumbjob.GravityEast, 120, 30, cClear},
	} {
		p = shoot(t, src, thumbjob.Options{Width: 200, Height: 100, Fit: thumbjob.FitInside, Gravity: c.g, Transforms: thumbjob.Transforms{NoEnlarge: true, Extend: true}})
		check(t, "extend "+string(c.g), p, 200, 100, spot{c.left + 2, c.top + 2, cRed}, spot{c.left + 77, c.top + 37, cWhite},
			spot{(c.left + 100) % 200, (c.top + 50) % 100, c.background})
	}
	// JPEG flattens transparency onto bg.
	hole := pngOf(t, 20, 20, func(x, y int) color.NRGBA { return cClear })
	p = shoot(t, hole, thumbjob.Options{Width: 20, Height: 20, Format: imagefmt.JPEG, Quality: 90, Transforms: thumbjob.Transforms{Background: &thumbjob.Colour{B: 255, A: 255}}})
	check(t, "jpeg flattened onto bg", p, 20, 20, spot{10, 10, cBlue})
}

func TestCropAndTrim(t *testing.T) {
	src := quadrants(t, 80, 40)
	for _, c := range []struct {
		name string
		crop thumbjob.Region
		w, h int
		want color.NRGBA
	}{
		{"shot", thumbjob.Region{X: 40, Y: 0, W: 40, H: 20}, 40, 20, cGreen},
		{"fractions", thumbjob.Region{X: 0.5, Y: 0.5, W: 0.5, H: 0.5, Fractions: true}, 40, 20, cWhite},
		{"clipped to the image", thumbjob.Region{X: 0, Y: 20, W: 40, H: 1000}, 40, 20, cBlue},
	} {
		crop := c.crop
		p := shoot(t, src, thumbjob.Options{Width: 80, Height: 80, Transforms: thumbjob.Transforms{NoEnlarge: true, Crop: &crop}})
		check(t, "crop "+c.name, p, c.w, c.h, spot{1, 1, c.want}, spot{c.w - 2, c.h - 2, c.want})
	}
	_, err := testEngine.Thumbnail(context.Background(), src, thumbjob.Options{Width: 10, Height: 10, Fit: thumbjob.FitCover, Format: imagefmt.PNG,
		Transforms: thumbjob.Transforms{Crop: &thumbjob.Region{X: 80, Y: 0, W: 10, H: 10}}})
	if !errors.Is(err, thumbjob.ErrCropOutside) {
		t.Errorf("crop outside: %v, want the 400 ErrCropOutside", err)
	}

	// A red 20x10 square at 10,30 in a near-white 60x60 field.
	square := pngOf(t, 60, 60, func(x, y int) color.NRGBA {
		if x >= 10 && x < 30 && y >= 30 && y < 40 {
			return cRed
		}
		return color.NRGBA{250, 250, 250, 255}
	})
	p := shoot(t, square, thumbjob.Options{Width: 100, Height: 100, Transforms: thumbjob.Transforms{NoEnlarge: true, Trim: &thumbjob.Trim{Threshold: 10}}})
	check(t, "trim", p, 20, 10, spot{0, 0, cRed}, spot{19, 9, cRed})
	// With the colour to trim named (cWhite is within 10 of the field).
	p = shoot(t, square, thumbjob.Options{Width: 100, Height: 100, Transforms: thumbjob.Transforms{NoEnlarge: true, Trim: &thumbjob.Trim{Threshold: 10, Colour: &thumbjob.Colour{R: 255, G: 255, B: 255}}}})
	check(t, "trim cWhite", p, 20, 10, spot{0, 0, cRed})
	// A threshold wider than the square's difference trims nothing away
	// but the field: all border, so the image is left whole.
	p = shoot(t, square, thumbjob.Options{Width: 100, Height: 100, Transforms: thumbjob.Transforms{NoEnlarge: true, Trim: &thumbjob.Trim{Threshold: 255}}})
	check(t, "all border", p, 60, 60)
	// Crop, then trim: the crop's top left is the field, the square's
	// right half stays.
	p = shoot(t, square, thumbjob.Options{Width: 100, Height: 100, Transforms: thumbjob.Transforms{NoEnlarge: true,
		Crop: &thumbjob.Region{X: 20, Y: 20, W: 40, H: 40}, Trim: &thumbjob.Trim{Threshold: 10}}})
	check(t, "crop then trim", p, 10, 10, spot{5, 5, cRed})
}

func TestBlurSharpenPixelate(t *testing.T) {
	grey := func(v uint8) color.NRGBA { return color.NRGBA{v, v, v, 255} }
	// A vertical step: columns 0-19 at lo, 20-39 at hi.
	step := func(lo, hi uint8) []byte {
		return pngOf(t, 40, 40, func(x, y int) color.NRGBA {
			if x < 20 {
				return grey(lo)
			}
			return grey(hi)
		})
	}
	row := func(p shot, y int) []int {
		var out []int
		for x := range p.Bounds().Dx() {
			out = append(out, int(p.at(x, y).R))
		}
		return out
	}
	// blur=2: far from the step the field stays; next to it the Gaussian
	// (at 0.5 pixels, a quarter sigma: Phi(-0.25) = 0.40 of the jump).
	r := row(shoot(t, step(0, 255), thumbjob.Options{Width: 40, Height: 40, Transforms: thumbjob.Transforms{Blur: 2}}), 20)
	if r[5] > 3 || r[34] < 252 || r[19] < 90 || r[19] > 115 || r[20] < 140 || r[20] > 165 {
		t.Errorf("blur=2 across a 0/255 step: %v", r)
	}
	plain := row(shoot(t, step(0, 255), thumbjob.Options{Width: 40, Height: 40}), 20)
	if plain[19] != 0 || plain[20] != 255 {
		t.Errorf("no blur: %v", plain)
	}
	// sharpen: the step overshoots on both sides.
	r = row(shoot(t, step(100, 150), thumbjob.Options{Width: 40, Height: 40, Transforms: thumbjob.Transforms{Sharpen: 1}}), 20)
	if lo, hi := minOf(r), maxOf(r); lo >= 97 || hi <= 153 || r[5] < 97 || r[5] > 103 {
		t.Errorf("sharpen=1 across a 100/150 step: %v", r)
	}
	// pixelate=10 on a 45x45 ramp: blocks of one value, the last one cut.
	ramp := pngOf(t, 45, 45, func(x, y int) color.NRGBA { return color.NRGBA{uint8(x * 5), uint8(y * 5), 0, 255} })
	p := shoot(t, ramp, thumbjob.Options{Width: 45, Height: 45, Transforms: thumbjob.Transforms{Pixelate: 10}})
	check(t, "pixelate", p, 45, 45)
	for _, b := range [][4]int{{0, 0, 9, 9}, {10, 0, 19, 9}, {40, 40, 44, 44}, {20, 30, 29, 39}} {
		if a, z := p.at(b[0], b[1]), p.at(b[2], b[3]); a != z {
			t.Errorf("pixelate block at %d,%d: %v to %v", b[0], b[1], a, z)
		}
	}
	if p.at(9, 0) == p.at(10, 0) || p.at(0, 9) == p.at(0, 10) {
		t.Error("pixelate: neighbouring blocks alike")
	}
}

func minOf(xs []int) int {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxOf(xs []int) int {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func TestWatermark(t *testing.T) {
	field := pngOf(t, 40, 40, func(x, y int) color.NRGBA { return cWhite })
	mark := pngOf(t, 4, 4, func(x, y int) color.NRGBA { return cRed })
	cfg := testEngine.cfg
	cfg.Watermark = mark
	e := New(cfg) // libvips is started (TestMain): only the watermark loads
	if err := e.LoadWatermark(); err != nil {
		t.Fatal(err)
	}
	shootWM := func(wm thumbjob.Watermark) shot {
		t.Helper()
		img, err := e.Thumbnail(context.Background(), field, thumbjob.Options{Width: 40, Height: 40, Fit: thumbjob.FitInside, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG, Transforms: thumbjob.Transforms{Watermark: &wm}})
		if err != nil {
			t.Fatal(err)
		}
		dec, _, err := image.Decode(bytes.NewReader(img.Bytes))
		if err != nil {
			t.Fatal(err)
		}
		return shot{dec}
	}
	pink := color.NRGBA{255, 127, 127, 255}
	for _, c := range []struct {
		name string
		wm   thumbjob.Watermark
		at   []spot
	}{
		{"nowe 2,3", thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionNorthWest, X: 2, Y: 3}, []spot{{2, 3, cRed}, {5, 6, cRed}, {1, 3, cWhite}, {6, 3, cWhite}, {20, 20, cWhite}}},
		{"soea", thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionSouthEast}, []spot{{39, 39, cRed}, {36, 36, cRed}, {35, 39, cWhite}}},
		{"ce", thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionCentre}, []spot{{18, 18, cRed}, {21, 21, cRed}, {17, 18, cWhite}}},
		{"no, half opaque", thumbjob.Watermark{Opacity: 0.5, Position: thumbjob.PositionNorth}, []spot{{19, 0, pink}, {19, 5, cWhite}}},
		{"scaled to half the width", thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionCentre, Scale: 0.5}, []spot{{11, 11, cRed}, {28, 28, cRed}, {8, 8, cWhite}}},
		// Tiles of 4 with gaps of 4: red at 0-3, 8-11, ...
		{"re", thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionReplicate, X: 4, Y: 4}, []spot{{0, 0, cRed}, {5, 0, cWhite}, {8, 8, cRed}, {32, 32, cRed}, {36, 36, cWhite}, {12, 13, cWhite}}},
	} {
		p := shootWM(c.wm)
		check(t, "watermark "+c.name, p, 40, 40, c.at...)
	}
	// JPEG: composited, then flattened.
	img, err := e.Thumbnail(context.Background(), field, thumbjob.Options{Width: 40, Height: 40, Fit: thumbjob.FitInside, Format: imagefmt.JPEG, Quality: 95, Transforms: thumbjob.Transforms{Watermark: &thumbjob.Watermark{Opacity: 1, Scale: 0.5}}})
	if err != nil {
		t.Fatal(err)
	}
	dec, _, _ := image.Decode(bytes.NewReader(img.Bytes))
	check(t, "watermark jpeg", shot{dec}, 40, 40, spot{20, 20, cRed}, spot{2, 2, cWhite})

	// At its bounds on the smallest thumbnails: an answer every time.
	for _, side := range []int{1, 3} {
		tiny := pngOf(t, side, side, func(x, y int) color.NRGBA { return cWhite })
		for _, pos := range thumbjob.Positions() {
			for _, wm := range []thumbjob.Watermark{{Opacity: 1, Position: pos, X: 4096, Y: 4096, Scale: 1}, {Opacity: 0.01, Position: pos}} {
				if _, err := e.Thumbnail(context.Background(), tiny, thumbjob.Options{Width: side, Height: side, Fit: thumbjob.FitCover, Format: imagefmt.WebP, Quality: 80, Transforms: thumbjob.Transforms{Watermark: &wm}}); err != nil {
					t.Errorf("%dx%d %+v: %v", side, side, wm, err)
				}
			}
		}
	}

	// The shared engine has none: a job asking for one is an error, not a
	// thumbnail without it.
	if _, err := testEngine.Thumbnail(context.Background(), field, thumbjob.Options{Width: 10, Height: 10, Fit: thumbjob.FitCover, Format: imagefmt.PNG, Transforms: thumbjob.Transforms{Watermark: &thumbjob.Watermark{Opacity: 1}}}); !errors.Is(err, errNoWatermark) {
		t.Errorf("no watermark loaded: %v", err)
	}
	// A watermark over the pixel limit, or no image, does not load.
	small := testEngine.cfg
	small.MaxPixels = 15
	small.Watermark = mark
	if err := New(small).LoadWatermark(); !errors.Is(err, thumbjob.ErrTooManyPixels) {
		t.Errorf("16-pixel watermark with a 15-pixel limit: %v", err)
	}
	small.Watermark = []byte("not an image")
	if err := New(small).LoadWatermark(); !errors.Is(err, thumbjob.ErrUnsupportedFormat) {
		t.Errorf("not an image: %v", err)
	}
}

// TestWatermarkOnThePicture: the watermark is placed and scaled on the
// picture, not on the canvas that contain, pad and extend grow around it,
// where a crop of the border would take it away.
func TestWatermarkOnThePicture(t *testing.T) {
	wide := pngOf(t, 40, 20, func(x, y int) color.NRGBA { return cWhite })
	tall := pngOf(t, 20, 40, func(x, y int) color.NRGBA { return cWhite })
	mark := pngOf(t, 4, 4, func(x, y int) color.NRGBA { return cRed })
	cfg := testEngine.cfg
	cfg.Watermark = mark
	e := New(cfg)
	if err := e.LoadWatermark(); err != nil {
		t.Fatal(err)
	}
	soea := thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionSouthEast}
	for _, c := range []struct {
		name string
		src  []byte
		o    thumbjob.Options
		w, h int
		at   []spot
	}{
		// the picture at 0,10 to 40,30 of a 40x40 canvas
		{"contain", wide, thumbjob.Options{Width: 40, Height: 40, Fit: thumbjob.FitContain}, 40, 40,
			[]spot{{37, 27, cRed}, {38, 38, cClear}, {37, 31, cClear}}},
		// the picture at 8,8 to 48,28 of 56x36
		{"pad", wide, thumbjob.Options{Width: 40, Height: 20, Fit: thumbjob.FitInside, Transforms: thumbjob.Transforms{Pad: thumbjob.Sides{Top: 8, Right: 8, Bottom: 8, Left: 8}}}, 56, 36,
			[]spot{{45, 25, cRed}, {53, 33, cClear}, {49, 25, cClear}}},
		// the picture centred at 10,10 to 50,30 of 60x40
		{"extend", wide, thumbjob.Options{Width: 60, Height: 40, Fit: thumbjob.FitInside, Gravity: thumbjob.GravityCentre, Transforms: thumbjob.Transforms{NoEnlarge: true, Extend: true}}, 60, 40,
			[]spot{{47, 27, cRed}, {57, 37, cClear}}},
		// scaled to half the picture's width (10), not the canvas' (20)
		{"contain, scaled", tall, thumbjob.Options{Width: 40, Height: 40, Fit: thumbjob.FitContain, Transforms: thumbjob.Transforms{Watermark: &thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionSouthEast, Scale: 0.5}}}, 40, 40,
			[]spot{{29, 39, cRed}, {21, 39, cRed}, {19, 39, cWhite}, {9, 39, cClear}, {31, 39, cClear}}},
		// tiles over the picture only
		{"contain, tiled", wide, thumbjob.Options{Width: 40, Height: 40, Fit: thumbjob.FitContain, Transforms: thumbjob.Transforms{Watermark: &thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionReplicate, X: 4, Y: 4}}}, 40, 40,
			[]spot{{0, 10, cRed}, {1, 1, cClear}, {0, 38, cClear}}},
	} {
		o := c.o
		o.Format = imagefmt.PNG
		if o.Gravity == "" {
			o.Gravity = thumbjob.GravityCentre
		}
		if o.Watermark == nil {
			wm := soea
			o.Watermark = &wm
		}
		img, err := e.Thumbnail(context.Background(), c.src, o)
		if err != nil {
			t.Fatal(err)
		}
		dec, _, err := image.Decode(bytes.NewReader(img.Bytes))
		if err != nil {
			t.Fatal(err)
		}
		check(t, c.name, shot{dec}, c.w, c.h, c.at...)
	}
}

// jpegQuadrants is quadrants as a baseline JPEG (Go's encoder, quality 95).
func jpegQuadrants(t *testing.T, w, h int) []byte {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(quadrants(t, w, h)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A JPEG crop shrinks on load as far as the region still covers the box,
// and the region is the same part of the image at any shrink.
func TestCropShrinksOnLoad(t *testing.T) {
	src := jpegQuadrants(t, 800, 400)
	for _, c := range []struct {
		o      thumbjob.Options
		shrink int
		w, h   int
		at     []spot
	}{
		// 400x200 of green to 50x25: an eighth.
		{thumbjob.Options{Width: 50, Transforms: thumbjob.Transforms{Crop: &thumbjob.Region{X: 400, W: 400, H: 200}}}, 8, 50, 25, []spot{{1, 1, cGreen}, {48, 23, cGreen}}},
		// Across the middle: red | green over blue | white; 200 rows filled
		// to 100: a half.
		{thumbjob.Options{Width: 100, Height: 100, Fit: thumbjob.FitFill, Transforms: thumbjob.Transforms{Crop: &thumbjob.Region{X: 0.25, Y: 0.25, W: 0.5, H: 0.5, Fractions: true}}}, 2, 100, 100, []spot{{10, 10, cRed}, {90, 10, cGreen}, {10, 90, cBlue}, {90, 90, cWhite}}},
		// Turned, the box's width is the region's height: 200 to 100.
		{thumbjob.Options{Width: 100, Transforms: thumbjob.Transforms{Rotate: 90, Crop: &thumbjob.Region{X: 0, Y: 0, W: 400, H: 200}}}, 2, 100, 200, []spot{{50, 100, cRed}}},
		// A box as large as the region: no shrink.
		{thumbjob.Options{Width: 400, Transforms: thumbjob.Transforms{Crop: &thumbjob.Region{X: 400, Y: 200, W: 400, H: 200}}}, 1, 400, 200, []spot{{200, 100, cWhite}}},
		// A trim runs on the shrunk decode: all border here (one green),
		// so nothing is cut and the shrink stays.
		{thumbjob.Options{Width: 50, Transforms: thumbjob.Transforms{Crop: &thumbjob.Region{X: 400, W: 400, H: 200}, Trim: &thumbjob.Trim{Threshold: 5}}}, 8, 50, 25, []spot{{10, 10, cGreen}}},
	} {
		c.o.Fit = cmp.Or(c.o.Fit, thumbjob.FitInside)
		c.o.Gravity, c.o.Format = thumbjob.GravityCentre, imagefmt.PNG
		got, err := testEngine.Thumbnail(context.Background(), src, c.o)
		if err != nil {
			t.Fatal(err)
		}
		if got.Trace.Shrink != c.shrink {
			t.Errorf("%+v: shrink %d, want %d", c.o.Crop, got.Trace.Shrink, c.shrink)
		}
		dec, _, err := image.Decode(bytes.NewReader(got.Bytes))
		if err != nil {
			t.Fatal(err)
		}
		check(t, fmt.Sprintf("crop %+v", *c.o.Crop), shot{dec}, c.w, c.h, c.at...)
	}
}

// A JPEG cropped upright without a trim is read sequentially (plan.Plan's
// Sequential), down to the crop's last row only; the others read every row.
// The witness is a file damaged in its last rows that still ends with its
// end-of-image marker: its top crops, and everything that must read the
// damage answers 422. Each case fails if the plan or the engine loses one
// of its conditions: sequential always, never, without the marker, with a
// trim (which reads the image twice) or on a JPEG stored on its side
// (turning it reads out of order).
func TestSequentialCrop(t *testing.T) {
	whole := jpegQuadrants(t, 800, 400)
	// Solid quadrants cost the same bytes a row: a tenth of the file from
	// its end is the bottom rows' data, far below the top quarter.
	cut := whole[:len(whole)*9/10]
	damaged := append(slices.Clone(cut), 0xFF, 0xD9)
	top := &thumbjob.Region{W: 800, H: 100}
	for _, c := range []struct {
		name string
		src  []byte
		o    thumbjob.Transforms
		ok   bool
	}{
		{"the top of a file damaged below it", damaged, thumbjob.Transforms{Crop: top}, true},
		{"its bottom", damaged, thumbjob.Transforms{Crop: &thumbjob.Region{Y: 300, W: 800, H: 100}}, false},
		{"the top, without the end marker", cut, thumbjob.Transforms{Crop: top}, false},
		{"the top, trimmed", damaged, thumbjob.Transforms{Crop: top, Trim: &thumbjob.Trim{Threshold: 5}}, false},
		{"the top, uncropped", damaged, thumbjob.Transforms{}, false},
		{"a whole file, trimmed", whole, thumbjob.Transforms{Crop: top, Trim: &thumbjob.Trim{Threshold: 5}}, true},
	} {
		o := thumbjob.Options{Width: 200, Fit: thumbjob.FitInside, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG, Transforms: c.o}
		got, err := testEngine.Thumbnail(context.Background(), c.src, o)
		if !c.ok {
			if !errors.Is(err, thumbjob.ErrUndecodable) {
				t.Errorf("%s: %v, want %v", c.name, err, thumbjob.ErrUndecodable)
			}
			continue
		}
		if err != nil || c.o.Trim != nil {
			// The trim cuts the red away (its corner's colour): what matters
			// is that the image could be read twice.
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		dec, _, err := image.Decode(bytes.NewReader(got.Bytes))
		if err != nil {
			t.Fatal(err)
		}
		check(t, c.name, shot{dec}, 200, 25, spot{20, 12, cRed}, spot{180, 12, cGreen})
	}
	// Stored on its side (orientation 6, 1200x2400 shown as 2400x1200),
	// cropped at full size (no shrink on load): turned upright whole, with
	// random access. Read sequentially, the turn asks for rows out of order.
	side := onItsSide(t, quadrants(t, 2400, 1200))
	got, err := testEngine.Thumbnail(context.Background(), side, thumbjob.Options{Width: 2400, Fit: thumbjob.FitInside, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG, Transforms: thumbjob.Transforms{Crop: &thumbjob.Region{W: 2400, H: 300}}})
	if err != nil {
		t.Fatalf("a crop of a JPEG on its side: %v", err)
	}
	dec, _, err := image.Decode(bytes.NewReader(got.Bytes))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "a crop of a JPEG on its side", shot{dec}, 2400, 300, spot{100, 150, cRed}, spot{2300, 150, cGreen})
}

// A trim that leaves a sliver cannot be covered into a square beyond
// what the untrimmed source's cover was priced at.
func TestTrimmedSliverCover(t *testing.T) {
	sliver := pngOf(t, 400, 400, func(x, y int) color.NRGBA {
		if y >= 200 && y < 204 { // find_trim's median filter takes out a thinner line
			return cRed
		}
		return cWhite
	})
	_, err := testEngine.Thumbnail(context.Background(), sliver, thumbjob.Options{Width: 400, Height: 400, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG, Transforms: thumbjob.Transforms{Trim: &thumbjob.Trim{Threshold: 10}}})
	if !errors.Is(err, thumbjob.ErrTooManyPixels) {
		t.Errorf("a 400x4 sliver covered to 400x400: %v", err)
	}
	// Inside, the sliver is as small as it is.
	p := shoot(t, sliver, thumbjob.Options{Width: 400, Height: 400, Transforms: thumbjob.Transforms{Trim: &thumbjob.Trim{Threshold: 10}}})
	check(t, "trimmed sliver inside", p, 400, 4, spot{200, 1, cRed})
}

// Every transform at its bounds on the smallest images: an answer, never
// a libvips error.
func TestTransformsAtBoundsOnTinyImages(t *testing.T) {
	for _, src := range []struct {
		name string
		w, h int
	}{{"1x1", 1, 1}, {"1x40", 1, 40}, {"40x1", 40, 1}} {
		img := pngOf(t, src.w, src.h, func(x, y int) color.NRGBA { return cRed })
		for _, tr := range []thumbjob.Transforms{
			{Blur: thumbjob.MaxBlur}, {Sharpen: thumbjob.MaxSharpen}, {Pixelate: thumbjob.MaxPixelate},
			{Pad: thumbjob.Sides{Top: thumbjob.MaxPad, Right: thumbjob.MaxPad, Bottom: thumbjob.MaxPad, Left: thumbjob.MaxPad}},
			{Rotate: 270, Flip: thumbjob.FlipBoth}, {Trim: &thumbjob.Trim{}}, {Trim: &thumbjob.Trim{Threshold: 255}},
			{Crop: &thumbjob.Region{X: 0, Y: 0, W: 1, H: 1}}, {Crop: &thumbjob.Region{X: 0.99, Y: 0.99, W: 0.01, H: 0.01, Fractions: true}},
			{NoEnlarge: true, Extend: true}, {NoEnlarge: true},
		} {
			for _, fit := range thumbjob.Fits() {
				o := thumbjob.Options{Width: 64, Height: 64, Fit: fit, Gravity: thumbjob.GravitySouthEast, Format: imagefmt.JPEG, Quality: 80, Transforms: tr}
				if _, err := testEngine.Thumbnail(context.Background(), img, o); err != nil && !errors.Is(err, thumbjob.ErrTooManyPixels) {
					t.Errorf("%s %s %+v: %v", src.name, fit, tr, err)
				}
			}
		}
	}
}

// The transforms against an independent reference: the same operation
// run by Debian's vips command (libvips-tools, as decodeAll's AVIF
// decoding needs) on the same PNG, compared pixel by pixel. The
// thumbnails keep the source's size, so the resize does nothing.
func TestTransformsMatchTheVipsCommand(t *testing.T) {
	vipsCmd, err := exec.LookPath("vips")
	if err != nil {
		t.Fatalf("the vips command (scripts/deps.sh dev installs libvips-tools): %v", err)
	}
	dir := t.TempDir()
	srcPath := filepath.Join(dir, "src.png")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(vipsCmd, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("vips %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("copy", filepath.Join("testdata", "sources", "small.jpg"), srcPath) // 400x300
	src, err := os.ReadFile(srcPath)
	if err != nil {
		t.Fatal(err)
	}
	tl := strings.Fields(run("getpoint", srcPath, "0", "0"))
	bounds := strings.Fields(run("find_trim", srcPath, "--threshold", "80", "--background", strings.Join(tl, " ")))
	if strings.Join(bounds, " ") == "0 0 400 300" || len(bounds) != 4 {
		t.Fatalf("find_trim at 80 finds %v: pick a threshold that trims", bounds)
	}
	for _, c := range []struct {
		name string
		tr   thumbjob.Transforms
		vips []string // the reference's command, writing OUT
	}{
		{"rotate=90", thumbjob.Transforms{Rotate: 90}, []string{"rot", srcPath, "OUT", "d90"}},
		{"rotate=270", thumbjob.Transforms{Rotate: 270}, []string{"rot", srcPath, "OUT", "d270"}},
		{"flip=h", thumbjob.Transforms{Flip: thumbjob.FlipHorizontal}, []string{"flip", srcPath, "OUT", "horizontal"}},
		{"flip=v", thumbjob.Transforms{Flip: thumbjob.FlipVertical}, []string{"flip", srcPath, "OUT", "vertical"}},
		{"blur=2", thumbjob.Transforms{Blur: 2}, []string{"gaussblur", srcPath, "OUT", "2"}},
		{"blur=20", thumbjob.Transforms{Blur: 20}, []string{"gaussblur", srcPath, "OUT", "20"}},
		{"sharpen=1.5", thumbjob.Transforms{Sharpen: 1.5}, []string{"sharpen", srcPath, "OUT", "--sigma", "1.5"}},
		{"crop=50,40,200,100", thumbjob.Transforms{NoEnlarge: true, Crop: &thumbjob.Region{X: 50, Y: 40, W: 200, H: 100}}, []string{"extract_area", srcPath, "OUT", "50", "40", "200", "100"}},
		{"trim=80", thumbjob.Transforms{NoEnlarge: true, Trim: &thumbjob.Trim{Threshold: 80}}, append([]string{"extract_area", srcPath, "OUT"}, bounds...)},
		{"pad=5,6,7,8&bg=ff0000", thumbjob.Transforms{Pad: thumbjob.Sides{Top: 5, Right: 6, Bottom: 7, Left: 8}, Background: &thumbjob.Colour{R: 255, A: 255}},
			[]string{"embed", srcPath, "OUT", "8", "5", "414", "312", "--extend", "background", "--background", "255 0 0"}},
	} {
		out := filepath.Join(dir, strings.NewReplacer("=", "-", ",", "-", "&", "-").Replace(c.name)+".png")
		args := slices.Clone(c.vips)
		args[slices.Index(args, "OUT")] = out
		run(args...)
		ref, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := image.Decode(bytes.NewReader(ref))
		if err != nil {
			t.Fatal(err)
		}
		got := shoot(t, src, thumbjob.Options{Width: 400, Height: 400, Transforms: c.tr})
		if got.Bounds().Size() != want.Bounds().Size() {
			t.Errorf("%s: %v, the vips command's %v", c.name, got.Bounds().Size(), want.Bounds().Size())
			continue
		}
		if d := imagediff.MeanAbs(got, want); d > 1 {
			t.Errorf("%s: mean difference %.2f from the vips command's", c.name, d)
		}
	}
}

// TestFindTrimAgreesWithFindTrim: the coarse-then-strips search finds the
// box libvips' find_trim finds on the whole image, on pictures with their
// content anywhere (touching an edge or not), with JPEG's noise, a
// gradient background and thin lines next to the content.
func TestFindTrimAgreesWithFindTrim(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 7))
	for i := range 40 {
		w, h := 260+rng.IntN(900), 260+rng.IntN(700)
		x0, y0 := rng.IntN(w/2), rng.IntN(h/2)
		x1, y1 := x0+1+rng.IntN(w-x0), y0+1+rng.IntN(h-y0)
		bg := color.NRGBA{uint8(200 + rng.IntN(56)), uint8(200 + rng.IntN(56)), uint8(200 + rng.IntN(56)), 255}
		line := rng.IntN(3) == 0 // a one-pixel line beside the content
		src := pngOf(t, w, h, func(x, y int) color.NRGBA {
			switch {
			case x >= x0 && x < x1 && y >= y0 && y < y1:
				return color.NRGBA{uint8(x * 7), uint8(y * 3), uint8(x ^ y), 255}
			case line && x == max(x0-5, 0) && y >= y0 && y < y1:
				return color.NRGBA{0, 0, 0, 255}
			}
			return bg
		})
		if i%2 == 1 {
			img, _, err := image.Decode(bytes.NewReader(src))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			jpeg.Encode(&buf, img, &jpeg.Options{Quality: 70})
			src = buf.Bytes()
		}
		img, err := vips.NewImageFromBuffer(src)
		if err != nil {
			t.Fatal(err)
		}
		p, err := img.GetPoint(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		c := vips.Color{R: uint8(p[0]), G: uint8(p[1]), B: uint8(p[2])}
		for _, threshold := range []float64{10, 40} {
			l, tp, bw, bh, err := img.FindTrim(threshold, &c)
			if err != nil {
				t.Fatal(err)
			}
			want := image.Rect(l, tp, l+bw, tp+bh)
			got, err := findTrim(img, threshold, c)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%d: %dx%d, content %v, line %v, threshold %g: %v, find_trim %v", i, w, h, image.Rect(x0, y0, x1, y1), line, threshold, got, want)
			}
		}
		img.Close()
	}
}

// max_bytes: an answer too long is made again at a lower quality, within
// plan.FitEncodes encodes, until it fits; a format without a quality
// ignores it.
func TestMaxBytes(t *testing.T) {
	src := source(t, "large.jpg")
	o := thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.WebP, Quality: 90}
	whole, err := testEngine.Thumbnail(context.Background(), src, o)
	if err != nil {
		t.Fatal(err)
	}
	o.MaxBytes = len(whole.Bytes) / 2
	fit, err := testEngine.Thumbnail(context.Background(), src, o)
	if err != nil || len(fit.Bytes) > o.MaxBytes || fit.Width != 256 || fit.Height != 256 {
		t.Fatalf("fit to %d bytes: %d bytes %dx%d, %v", o.MaxBytes, len(fit.Bytes), fit.Width, fit.Height, err)
	}
	encodes := 0
	for _, s := range fit.Trace.Stages {
		if s.Name == thumbjob.StageEncode {
			encodes++
		}
	}
	if encodes < 2 || encodes > plan.FitEncodes {
		t.Errorf("%d encodes", encodes)
	}
	t.Logf("WebP 256x256 q90 of %d bytes fit to %d: %d bytes in %d encodes", len(whole.Bytes), o.MaxBytes, len(fit.Bytes), encodes)
	o.MaxBytes = 1 // beyond reach: the floor's answer, not an error
	if tiny, err := testEngine.Thumbnail(context.Background(), src, o); err != nil || len(tiny.Bytes) >= len(fit.Bytes) {
		t.Errorf("fit to 1 byte: %d bytes, %v", len(tiny.Bytes), err)
	}
	o.Format, o.MaxBytes = imagefmt.PNG, 10
	if png, err := testEngine.Thumbnail(context.Background(), src, o); err != nil || len(png.Trace.Stages) != 3 {
		t.Errorf("PNG with max_bytes: %d stages, %v", len(png.Trace.Stages), err)
	}
}
