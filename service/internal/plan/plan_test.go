package plan

import (
	"errors"
	"image"
	"slices"
	"testing"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

var limits = Limits{MaxSide: 4096, MaxPixels: 40_000_000, MaxAnimationPixels: 1 << 24, Mark: image.Pt(64, 32)}

func jpeg(w, h, orientation int) Source {
	return Source{Format: imagefmt.JPEG, Width: w, Height: h, Orientation: orientation, Frames: 1}
}

// Only a crop of an upright JPEG without a trim is read sequentially
// (Plan.Sequential; the engine's TestSequentialCrop shows what each case
// would break). A plain resize keeps its random-access shrunk load, which
// measured faster than a sequential one (bench/results/2026-12-06-sequential).
func TestSequential(t *testing.T) {
	crop := thumbjob.Transforms{Crop: &thumbjob.Region{W: 960, H: 640}}
	png := Source{Format: imagefmt.PNG, Width: 1920, Height: 1280, Frames: 1}
	for _, c := range []struct {
		name string
		src  Source
		tr   thumbjob.Transforms
		want bool
	}{
		{"a crop", jpeg(1920, 1280, 1), crop, true},
		{"a crop, no orientation read", jpeg(1920, 1280, 0), crop, true},
		{"a crop on its side", jpeg(1920, 1280, 6), crop, false},
		{"a crop and a trim", jpeg(1920, 1280, 1), thumbjob.Transforms{Crop: crop.Crop, Trim: &thumbjob.Trim{Threshold: 10}}, false},
		{"a plain resize", jpeg(1920, 1280, 1), thumbjob.Transforms{}, false},
		{"a PNG's crop", png, crop, false},
	} {
		o := thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.WebP, Transforms: c.tr}
		p, err := Make(c.src, o, limits)
		if err != nil || p.Sequential != c.want {
			t.Errorf("%s: sequential %v, %v; want %v", c.name, p.Sequential, err, c.want)
		}
	}
}

// The JPEG shrink on load: the largest that still covers what the fit
// needs of the source as displayed (the engine's TestJPEGShrink's table).
func TestShrinkOnLoad(t *testing.T) {
	for _, c := range []struct {
		name string
		o    thumbjob.Options
		src  Source
		want int
	}{
		{"1920x1280 cover 256", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover}, jpeg(1920, 1280, 1), 4},
		{"4032x3024 cover 256", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover}, jpeg(4032, 3024, 1), 8},
		{"400x300 cover 256", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover}, jpeg(400, 300, 1), 1},
		{"exact quarter", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover}, jpeg(1024, 1024, 1), 4},
		{"a margin for rounding", thumbjob.Options{Width: 250, Height: 250, Fit: thumbjob.FitFill}, jpeg(1993, 1993, 1), 4},
		{"thinner than the shrink", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitInside}, jpeg(20000, 1, 1), 1},
		{"inside follows the smaller scale", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitInside}, jpeg(4096, 1024, 1), 8},
		{"contain as inside", thumbjob.Options{Width: 100, Height: 400, Fit: thumbjob.FitContain}, jpeg(1600, 1600, 1), 8},
		{"fill needs each side", thumbjob.Options{Width: 400, Height: 50, Fit: thumbjob.FitFill}, jpeg(1600, 1600, 1), 4},
		{"on its side: the need turns too", thumbjob.Options{Width: 400, Height: 50, Fit: thumbjob.FitFill}, jpeg(1600, 1600, 6), 4},
		{"on its side, not square", thumbjob.Options{Width: 300, Height: 400, Fit: thumbjob.FitFill}, jpeg(2400, 600, 6), 2},
		{"enlargement", thumbjob.Options{Width: 800, Height: 800, Fit: thumbjob.FitCover}, jpeg(400, 300, 1), 1},
		// A crop shrinks as far as its region allows; a trim reads the
		// whole image at the shrink it allows.
		{"a 2048 region to 256", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Transforms: thumbjob.Transforms{Crop: &thumbjob.Region{W: 2048, H: 2048}}}, jpeg(4032, 3024, 1), 8},
		{"a 256 region to 256", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Transforms: thumbjob.Transforms{Crop: &thumbjob.Region{W: 256, H: 256}}}, jpeg(4032, 3024, 1), 1},
		{"a trim", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Transforms: thumbjob.Transforms{Trim: &thumbjob.Trim{Threshold: 10}}}, jpeg(4032, 3024, 1), 8},
	} {
		c.o.Gravity, c.o.Format = thumbjob.GravityCentre, imagefmt.PNG
		p, err := Make(c.src, c.o, limits)
		if err != nil || p.Shrink != c.want {
			t.Errorf("%s: shrink %d, %v; want %d", c.name, p.Shrink, err, c.want)
		}
		if got := p.Load == LoadShrunk || p.Load == LoadUpright && p.Shrink > 1; got != (c.want > 1) {
			t.Errorf("%s: load %v with shrink %d", c.name, p.Load, p.Shrink)
		}
	}
	// THUMBD_JPEG_SHRINK=quality: libvips' own choice, which leaves 2x for
	// its reduce; a crop decodes whole.
	q := limits
	q.JPEGShrink = thumbjob.JPEGShrinkQuality
	o := thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Format: imagefmt.PNG}
	if p, _ := Make(jpeg(4032, 3024, 1), o, q); p.Load != LoadThumbnail || p.Shrink != 4 {
		t.Errorf("quality: load %v, shrink %d; want libvips' thumbnail at 4 at least", p.Load, p.Shrink)
	}
	o.Crop = &thumbjob.Region{W: 2048, H: 2048}
	if p, _ := Make(jpeg(4032, 3024, 1), o, q); p.Load != LoadUpright || p.Shrink != 1 {
		t.Errorf("quality, a crop: load %v, shrink %d; want a whole decode", p.Load, p.Shrink)
	}
}

// A missing side follows the aspect ratio of the source as displayed (and
// rotated), rounded, at least 1 and at most the max side.
func TestBoxFollowsDisplayedAspect(t *testing.T) {
	for _, c := range []struct {
		name string
		src  Source
		o    thumbjob.Options
		want image.Point
	}{
		{"w=100 on 400x300", jpeg(400, 300, 1), thumbjob.Options{Width: 100}, image.Pt(100, 75)},
		{"w=150 on 400x300 turned by EXIF", jpeg(400, 300, 6), thumbjob.Options{Width: 150}, image.Pt(150, 200)},
		{"w=150 on 400x300 rotated", jpeg(400, 300, 1), thumbjob.Options{Width: 150, Transforms: thumbjob.Transforms{Rotate: 90}}, image.Pt(150, 200)},
		{"at least 1", jpeg(10000, 1, 1), thumbjob.Options{Width: 10}, image.Pt(10, 1)},
		{"at most the max side", jpeg(10000, 1, 1), thumbjob.Options{Height: 4000, Fit: thumbjob.FitInside}, image.Pt(4096, 4000)},
		{"neither: the default", jpeg(400, 300, 1), thumbjob.Options{}, image.Pt(thumbjob.DefaultSide, thumbjob.DefaultSide)},
		{"the crop's aspect", jpeg(400, 300, 1), thumbjob.Options{Width: 100, Transforms: thumbjob.Transforms{Crop: &thumbjob.Region{W: 100, H: 200}}}, image.Pt(100, 200)},
		{"enlarge=false shrinks the box", jpeg(400, 300, 1), thumbjob.Options{Width: 800, Height: 800, Transforms: thumbjob.Transforms{NoEnlarge: true}}, image.Pt(300, 300)},
	} {
		c.o.Format = imagefmt.PNG
		if c.o.Fit == "" {
			c.o.Fit = thumbjob.FitCover
		}
		if p, err := Make(c.src, c.o, limits); err != nil || p.Box != c.want {
			t.Errorf("%s: box %v, %v; want %v", c.name, p.Box, err, c.want)
		}
	}
}

// Every fit, gravity, transform and orientation, over a table of source
// sizes: the answer's size follows from the box as each fit says, the
// picture sits inside it, the steps come in their order, and a shrink
// on load still covers what the resize makes.
func TestPlanTable(t *testing.T) {
	sizes := []image.Point{{400, 300}, {300, 400}, {4032, 3024}, {1, 1000}, {1000, 1}, {3000, 3000}, {7, 5}, {1993, 1993}, {999, 333}}
	boxes := []image.Point{{256, 256}, {256, 0}, {0, 256}, {100, 400}, {4096, 17}, {1, 1}}
	transforms := []thumbjob.Transforms{
		{},
		{Rotate: 90, Flip: thumbjob.FlipHorizontal},
		{Rotate: 270, Flip: thumbjob.FlipBoth},
		{Rotate: 180},
		{NoEnlarge: true, Extend: true},
		{Extend: true, Pad: thumbjob.Sides{Top: 1, Right: 2, Bottom: 3, Left: 4}},
		{Crop: &thumbjob.Region{X: 0.25, Y: 0.25, W: 0.5, H: 0.5, Fractions: true}},
		{Crop: &thumbjob.Region{X: 0, Y: 0, W: 3, H: 2}, Rotate: 90},
		{Trim: &thumbjob.Trim{Threshold: 10}},
		{Watermark: &thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionSouthEast, X: 3, Y: 4, Scale: 0.5}},
		{Watermark: &thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionReplicate}, Pad: thumbjob.Sides{Left: 8}},
	}
	n := 0
	for _, size := range sizes {
		for orientation := 1; orientation <= 8; orientation++ {
			for _, box := range boxes {
				for _, fit := range thumbjob.Fits() {
					for _, g := range thumbjob.Gravities() {
						for _, tr := range transforms {
							o := thumbjob.Options{Width: box.X, Height: box.Y, Fit: fit, Gravity: g, FocalX: 0.2, FocalY: 0.9, Format: imagefmt.JPEG, Transforms: tr}
							p, err := Make(jpeg(size.X, size.Y, orientation), o, limits)
							if err != nil {
								if !errors.Is(err, thumbjob.ErrTooManyPixels) || fit != thumbjob.FitCover {
									t.Fatalf("%v %d %+v: %v", size, orientation, o, err)
								}
								continue
							}
							n++
							checkPlan(t, p)
						}
					}
				}
			}
		}
	}
	t.Logf("%d plans", n)
}

func checkPlan(t *testing.T, p Plan) {
	t.Helper()
	o := p.Options()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%v orientation %d, %+v: "+format, append([]any{image.Pt(p.src.Width, p.src.Height), p.src.Orientation, o}, args...)...)
	}
	box := p.Box
	switch o.Fit {
	case thumbjob.FitCover, thumbjob.FitFill:
		if p.Turned != box {
			fail("turned %v, want the box %v", p.Turned, box)
		}
	default:
		if p.Turned.X > box.X || p.Turned.Y > box.Y || p.Turned.X != box.X && p.Turned.Y != box.Y {
			fail("fitted %v in the box %v", p.Turned, box)
		}
	}
	if o.Fit == thumbjob.FitCover && (p.Scaled.X < p.Resized.X || p.Scaled.Y < p.Resized.Y) {
		fail("a cover scaled to %v, smaller than its box %v", p.Scaled, p.Resized)
	}
	if !p.Resize.Cut.Empty() && !p.Resize.Cut.In(image.Rect(0, 0, p.Resize.Width, p.Resize.Height)) {
		fail("cut %v outside %dx%d", p.Resize.Cut, p.Resize.Width, p.Resize.Height)
	}
	// The canvas: contain's box, then extend's, then the pad.
	want := p.Turned
	if o.Fit == thumbjob.FitContain {
		want = box
	}
	if o.Extend {
		want = image.Pt(max(want.X, p.Canvas.X), max(want.Y, p.Canvas.Y))
	}
	want = want.Add(image.Pt(o.Pad.Left+o.Pad.Right, o.Pad.Top+o.Pad.Bottom))
	if p.Out != want || p.Picture.Size() != p.Turned || !p.Picture.In(image.Rectangle{Max: p.Out}) {
		fail("out %v picture %v, want %v holding %v", p.Out, p.Picture, want, p.Turned)
	}
	if w := o.Watermark; w != nil && w.Position == thumbjob.PositionReplicate && p.Mark != p.Picture {
		fail("tiles over %v, the picture is %v", p.Mark, p.Picture)
	}
	// The steps come in their order, each once.
	order := []Step{StepDecode, StepCrop, StepTrim, StepResize, StepCut, StepColour, StepRotate, StepContain, StepFilters, StepExtend, StepAspect, StepPad, StepWatermark, StepFlatten, StepEncode}
	last := -1
	for _, s := range p.Steps {
		i := slices.Index(order, s)
		if i <= last {
			fail("steps %v out of order", p.Steps)
		}
		last = i
	}
	if p.Has(StepCrop) != (o.Crop != nil) || p.Has(StepTrim) != (o.Trim != nil) || p.Has(StepRotate) != (o.Rotate != 0 || o.Flip != "") ||
		p.Has(StepPad) != (o.Pad != thumbjob.Sides{}) || p.Has(StepResize) != (p.Load != LoadThumbnail) || p.Has(StepCut) == p.Resize.Cut.Empty() {
		fail("steps %v", p.Steps)
	}
	// A shrink on load holds what the resize makes of the region.
	if p.Shrink > 1 {
		region := p.Region.Size()
		if p.Load != LoadUpright {
			region = p.Source
		}
		if region.X/p.Shrink < min(p.Scaled.X, region.X) && region.Y/p.Shrink < min(p.Scaled.Y, region.Y) {
			fail("shrink %d of %v for a resize to %v", p.Shrink, region, p.Scaled)
		}
	}
}

// The errors a plan finds before any pixel is decoded.
func TestPlanRefuses(t *testing.T) {
	cover := thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.WebP}
	gif := Source{Format: imagefmt.GIF, Width: 1000, Height: 1000, Orientation: 1, Frames: 100}
	animated := cover
	animated.Animated = true
	for _, c := range []struct {
		name string
		src  Source
		o    thumbjob.Options
		want error
	}{
		{"every frame decoded", gif, animated, thumbjob.ErrTooManyPixels},
		{"a thin source covered", jpeg(40000, 1, 1), cover, thumbjob.ErrTooManyPixels},
		{"an animation's output", Source{Format: imagefmt.GIF, Width: 400, Height: 400, Frames: 200}, func() thumbjob.Options {
			o := animated
			o.Width, o.Height = 300, 300
			return o
		}(), thumbjob.ErrAnimationTooLarge},
		{"a crop outside", jpeg(400, 300, 1), func() thumbjob.Options {
			o := cover
			o.Crop = &thumbjob.Region{X: 400, Y: 0, W: 10, H: 10}
			return o
		}(), thumbjob.ErrCropOutside},
	} {
		if _, err := Make(c.src, c.o, limits); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// The same GIF without animation: its first frame.
	if p, err := Make(gif, cover, limits); err != nil || p.Frames != 1 {
		t.Errorf("a still of an animation: %d frames, %v", p.Frames, err)
	}
	// The crop is judged on the source as displayed: 300x400 turned.
	o := cover
	o.Crop = &thumbjob.Region{X: 0, Y: 350, W: 10, H: 10}
	if _, err := Make(jpeg(400, 300, 6), o, limits); err != nil {
		t.Errorf("a crop inside the turned source: %v", err)
	}
}

// A cover at a focal point, a compass point or in an animation is cut
// from the image scaled to cover the box; rotate and flip carry the point
// back into the upright source.
func TestCut(t *testing.T) {
	o := thumbjob.Options{Width: 100, Height: 100, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityFocal, FocalX: 1, FocalY: 0.5, Format: imagefmt.PNG}
	p, _ := Make(jpeg(400, 200, 1), o, limits)
	if p.Resize.Width != 200 || p.Resize.Height != 100 || !p.Resize.Force || p.Resize.Cut != image.Rect(100, 0, 200, 100) {
		t.Errorf("focal right: %+v", p.Resize)
	}
	o.Gravity = thumbjob.GravityWest
	o.Flip = thumbjob.FlipHorizontal // the west of the flipped image is the source's east
	if p, _ := Make(jpeg(400, 200, 1), o, limits); p.Resize.Cut != image.Rect(100, 0, 200, 100) {
		t.Errorf("west, flipped: %+v", p.Resize)
	}
	o.Gravity, o.Flip = thumbjob.GravityAttention, ""
	if p, _ := Make(jpeg(400, 200, 1), o, limits); !p.Resize.Cut.Empty() || p.Resize.Crop != thumbjob.GravityAttention {
		t.Errorf("attention: %+v", p.Resize)
	}
	o.Animated, o.Format = true, imagefmt.WebP
	if p, _ := Make(Source{Format: imagefmt.GIF, Width: 400, Height: 200, Frames: 3}, o, limits); p.Resize.Cut != image.Rect(50, 0, 150, 100) {
		t.Errorf("attention in an animation, centred: %+v", p.Resize)
	}
}

// contain pads the fitted image to the box at its centre; extend puts it
// on the box asked at the gravity; pad goes around; the watermark sits on
// the picture, at its position.
func TestCanvas(t *testing.T) {
	o := thumbjob.Options{Width: 200, Height: 200, Fit: thumbjob.FitContain, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG,
		Transforms: thumbjob.Transforms{Pad: thumbjob.Sides{Top: 1, Right: 2, Bottom: 3, Left: 4},
			Watermark: &thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionSouthEast, X: 5, Y: 6}}}
	p, err := Make(jpeg(400, 200, 1), o, limits)
	if err != nil || p.Turned != image.Pt(200, 100) || p.Picture != image.Rect(4, 51, 204, 151) || p.Out != image.Pt(206, 204) {
		t.Errorf("contain: turned %v picture %v out %v, %v", p.Turned, p.Picture, p.Out, err)
	}
	if p.Mark != image.Rect(204-64-5, 151-32-6, 204-5, 151-6) {
		t.Errorf("the mark at %v", p.Mark)
	}
	o.Fit, o.Extend, o.Gravity, o.Pad = thumbjob.FitInside, true, thumbjob.GravitySouthWest, thumbjob.Sides{}
	o.NoEnlarge = true
	if p, _ := Make(jpeg(100, 50, 1), o, limits); p.Turned != image.Pt(100, 50) || p.Picture != image.Rect(0, 150, 100, 200) || p.Out != image.Pt(200, 200) {
		t.Errorf("extend, enlarge=false: turned %v picture %v out %v", p.Turned, p.Picture, p.Out)
	}
	o.Watermark.Scale = 0.5 // half the picture's width
	if p, _ := Make(jpeg(100, 50, 1), o, limits); p.Mark.Dx() != 50 || p.Mark.Dy() != 25 || p.MarkScale() != 50.0/64 {
		t.Errorf("a scaled mark: %v, scale %g", p.Mark, p.MarkScale())
	}
}

// The crop and trim read the decoded image in its own pixels, and give
// the region back in the source's; a trim on a shrunk JPEG decodes again
// at the shrink the trimmed region needs.
func TestTrimRegions(t *testing.T) {
	o := thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG,
		Transforms: thumbjob.Transforms{Crop: &thumbjob.Region{X: 100, Y: 50, W: 2000, H: 2000}, Trim: &thumbjob.Trim{Threshold: 10}}}
	p, err := Make(jpeg(4032, 3024, 1), o, limits)
	if err != nil || p.Shrink != 4 || p.Load != LoadUpright {
		t.Fatalf("shrink %d load %v, %v", p.Shrink, p.Load, err)
	}
	decoded := image.Pt(1008, 756)
	if got := p.CropIn(decoded); got != image.Rect(25, 12, 525, 513) {
		t.Errorf("crop in the decode: %v", got)
	}
	found := p.Found(decoded, image.Rect(10, 10, 20, 20)) // 40x40 source pixels, from the region's corner
	if found != image.Rect(140, 90, 180, 130) {
		t.Errorf("found %v", found)
	}
	q, ok := p.Again(found)
	if !ok || q.Shrink != 1 || q.Region != found.Inset(-4) {
		t.Errorf("again: %v shrink %d region %v", ok, q.Shrink, q.Region)
	}
	r, err := q.Trimmed(image.Rect(141, 91, 179, 129))
	if err != nil || r.Box != image.Pt(256, 256) || r.Scaled != image.Pt(256, 256) {
		t.Errorf("trimmed: box %v scaled %v, %v", r.Box, r.Scaled, err)
	}
	if _, ok := r.Again(image.Rect(141, 91, 179, 129)); ok {
		t.Error("again after a whole decode")
	}
}

func TestTrimStrips(t *testing.T) {
	size := image.Pt(2400, 1600)
	if TrimWhole(size) || !TrimWhole(image.Pt(255, 4000)) {
		t.Error("TrimWhole")
	}
	strips, ok := TrimStrips(image.Rect(10, 10, 290, 190), image.Pt(300, 200), size)
	if !ok || strips[0] != image.Rect(62, 62, 2338, 98) || strips[3] != image.Rect(2302, 62, 2338, 1538) {
		t.Errorf("strips %v, %v", strips, ok)
	}
	if _, ok := TrimStrips(image.Rect(0, 0, 1, 1), image.Pt(300, 200), size); !ok {
		t.Error("a corner box: strips along the edges")
	}
	if TrimOuter(0, image.Rect(62, 62, 100, 98), strips[0], size) != true || TrimOuter(1, image.Rect(62, 1520, 100, 1530), strips[1], size) {
		t.Error("TrimOuter")
	}
	if got := TrimJoin([4]image.Rectangle{image.Rect(0, 5, 9, 9), image.Rect(0, 0, 9, 9), image.Rect(1, 0, 9, 9), image.Rect(0, 0, 7, 9)}); got != image.Rect(1, 5, 7, 9) {
		t.Errorf("TrimJoin %v", got)
	}
}

func TestHEIFThumbnailUse(t *testing.T) {
	for _, c := range []struct {
		name                 string
		dw, dh, tw, th, w, h int
		fit                  thumbjob.Fit
		libvips, use         bool
	}{
		{"inside: shrinks", 4032, 3024, 320, 240, 256, 256, thumbjob.FitInside, true, true},
		{"inside: exactly the box", 4032, 3024, 320, 240, 320, 320, thumbjob.FitInside, false, false},
		{"inside: the larger shrink", 4032, 3024, 320, 240, 300, 1000, thumbjob.FitInside, true, true},
		{"contain as inside", 4032, 3024, 320, 240, 256, 256, thumbjob.FitContain, true, true},
		{"cover: 240 rows short of 256", 4032, 3024, 320, 240, 256, 256, thumbjob.FitCover, false, false},
		{"cover: both sides over", 4032, 3024, 320, 240, 200, 200, thumbjob.FitCover, true, true},
		{"fill: both sides over", 4032, 3024, 320, 240, 300, 200, thumbjob.FitFill, true, true},
		{"fill: one side short", 4032, 3024, 320, 240, 300, 250, thumbjob.FitFill, false, false},
		{"portrait", 3024, 4032, 240, 320, 256, 256, thumbjob.FitInside, true, true},
		{"no thumbnail", 4032, 3024, 0, 0, 256, 256, thumbjob.FitInside, false, false},
		{"not narrower than the image", 640, 480, 640, 480, 256, 256, thumbjob.FitInside, false, false},
		{"libvips' tolerance, not thumbd's", 640, 480, 320, 256, 256, 256, thumbjob.FitInside, true, false},
		{"rounded honestly", 4032, 2268, 320, 180, 256, 256, thumbjob.FitInside, true, true},
		{"beyond libvips' tolerance", 640, 480, 320, 320, 256, 256, thumbjob.FitInside, false, false},
		{"no box", 640, 480, 320, 240, 0, 256, thumbjob.FitInside, false, false},
	} {
		libvips, use := HEIFThumbnailUse(c.dw, c.dh, c.tw, c.th, c.w, c.h, c.fit)
		if libvips != c.libvips || use != c.use {
			t.Errorf("%s: libvips %v, use %v; want %v, %v", c.name, libvips, use, c.libvips, c.use)
		}
	}
	// In a plan: the thumbnail, the primary without its thumbnails, or the
	// file as it is when the look found none.
	heic := Source{Format: imagefmt.HEIC, Width: 4032, Height: 3024, Orientation: 1, Frames: 1,
		Look: thumbjob.Header{Width: 4032, Height: 3024, ThumbWidth: 512, ThumbHeight: 384}}
	o := thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitInside, Format: imagefmt.PNG}
	for _, c := range []struct {
		name string
		look thumbjob.Header
		w    int
		want HEIF
		load Load
	}{
		{"the thumbnail", heic.Look, 256, HEIFThumbnail, LoadHEIFThumbnail},
		{"too small for the box", heic.Look, 1024, HEIFWithout, LoadThumbnail},
		{"none declared", thumbjob.Header{Width: 4032, Height: 3024}, 256, HEIFAsIs, LoadThumbnail},
		{"a header not read", thumbjob.Header{}, 256, HEIFWithout, LoadThumbnail},
	} {
		s := heic
		s.Look = c.look
		o.Width, o.Height = c.w, c.w
		if p, _ := Make(s, o, limits); p.HEIF != c.want || p.Load != c.load {
			t.Errorf("%s: %v, %v; want %v, %v", c.name, p.HEIF, p.Load, c.want, c.load)
		}
	}
}

// imgproxy's options that need the source's size, as imgproxy 4.0.12's
// processing computes them (calc_position.go, prepare.go, crop.go).
func TestImgproxyGeometry(t *testing.T) {
	o := func(w, h int, fit thumbjob.Fit) thumbjob.Options {
		return thumbjob.Options{Width: w, Height: h, Fit: fit, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}
	}
	// rt:auto: fill when the source and the box lie the same way, else fit.
	if p, _ := Make(jpeg(400, 300, 1), o(200, 100, thumbjob.FitAuto), limits); p.Turned != image.Pt(200, 100) {
		t.Errorf("auto, both landscape: %v, want filled", p.Turned)
	}
	if p, _ := Make(jpeg(400, 300, 1), o(100, 200, thumbjob.FitAuto), limits); p.Turned != image.Pt(100, 75) {
		t.Errorf("auto, a portrait box: %v, want fitted", p.Turned)
	}
	// Crop at a gravity, its size as the box sees the image.
	crop := func(w, h float64, g thumbjob.Gravity, x, y float64) *thumbjob.Region {
		return &thumbjob.Region{W: w, H: h, Anchor: &thumbjob.Anchor{Gravity: g, Offset: thumbjob.Offset{X: x, Y: y}}}
	}
	for _, c := range []struct {
		name   string
		region *thumbjob.Region
		rotate int
		want   image.Rectangle
	}{
		{"centre: (d+1)/2 rounded to even", crop(100, 50, thumbjob.GravityCentre, 0, 0), 0, image.Rect(150, 126, 250, 176)},
		{"se with offsets", crop(100, 50, thumbjob.GravitySouthEast, 3, 4), 0, image.Rect(297, 246, 397, 296)},
		{"ne, offsets as fractions", crop(100, 50, thumbjob.GravityNorthEast, 0.1, 0.1), 0, image.Rect(260, 30, 360, 80)},
		{"a focal point", crop(0.5, 0.5, thumbjob.GravityFocal, 1, 0), 0, image.Rect(200, 0, 400, 150)},
		{"kept inside", crop(100, 50, thumbjob.GravityWest, 500, 0), 0, image.Rect(300, 126, 400, 176)},
		{"rotated: sizes and gravity turned back", crop(100, 50, thumbjob.GravityNorth, 0, 0), 90, image.Rect(0, 100, 50, 200)},
	} {
		oo := o(64, 64, thumbjob.FitInside)
		oo.Crop, oo.Rotate = c.region, c.rotate
		if p, err := Make(jpeg(400, 300, 1), oo, limits); err != nil || p.Region != c.want {
			t.Errorf("%s: %v, %v; want %v", c.name, p.Region, err, c.want)
		}
	}
	// Gravity offsets: the cover's cut as placed once turned.
	cover := o(100, 100, thumbjob.FitCover)
	cover.Gravity, cover.Offset = thumbjob.GravityEast, &thumbjob.Offset{X: 10}
	if p, _ := Make(jpeg(400, 200, 1), cover, limits); p.Resize.Cut != image.Rect(90, 0, 190, 100) || p.Resized != image.Pt(100, 100) {
		t.Errorf("east, 10 in: cut %v", p.Resize.Cut)
	}
	cover.Rotate = 180 // the east of the turned image is the source's west
	if p, _ := Make(jpeg(400, 200, 1), cover, limits); p.Resize.Cut != image.Rect(10, 0, 110, 100) {
		t.Errorf("east, 10 in, turned: cut %v", p.Resize.Cut)
	}
	// min-width: scaled up to it, cut to the sides asked.
	least := o(100, 0, thumbjob.FitInside)
	least.MinWidth = 200
	if p, _ := Make(jpeg(400, 300, 1), least, limits); p.Scaled != image.Pt(200, 150) || p.Out != image.Pt(100, 150) {
		t.Errorf("w 100, min-width 200: scaled %v out %v, want 200x150 cut to 100x150", p.Scaled, p.Out)
	}
	// extend_aspect_ratio: grown to the box's aspect, at its anchor.
	exar := o(200, 200, thumbjob.FitInside)
	exar.ExtendAspect = &thumbjob.Anchor{Gravity: thumbjob.GravitySouth}
	if p, _ := Make(jpeg(400, 300, 1), exar, limits); p.Out != image.Pt(200, 200) || p.Aspect.At != image.Pt(0, 50) || !p.Has(StepAspect) {
		t.Errorf("exar: out %v at %v", p.Out, p.Aspect.At)
	}
	// trim's equal_hor and equal_ver: the smaller border on both sides.
	if got := TrimEqual(image.Rect(10, 5, 80, 90), image.Pt(100, 100), true, true); got != image.Rect(10, 5, 90, 95) {
		t.Errorf("TrimEqual: %v", got)
	}
	// turn and unturn are each other's inverse.
	r, size := image.Rect(3, 5, 20, 9), image.Pt(40, 30)
	for _, rot := range []int{0, 90, 180, 270} {
		for _, flip := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			turned := size
			if rot%180 == 90 {
				turned = image.Pt(size.Y, size.X)
			}
			if back := unturn(turn(r, size, rot, flip[0], flip[1]), turned, rot, flip[0], flip[1]); back != r {
				t.Errorf("rotate %d flip %v: %v back as %v", rot, flip, r, back)
			}
		}
	}
}

// max_bytes' quality steps, as imgproxy's, reach the floor within
// FitEncodes encodes from any quality.
func TestFitQuality(t *testing.T) {
	if FitQuality(80, 1000, 100) != 20 || FitQuality(80, 200, 100) != 40 || FitQuality(80, 120, 100) != 60 || FitQuality(2, 120, 100) != 1 {
		t.Error("FitQuality's steps")
	}
	for q0 := 1; q0 <= 100; q0++ {
		n, q := 1, q0
		for q > FitFloor {
			q, n = FitQuality(q, 101, 100), n+1
		}
		if n > FitEncodes {
			t.Errorf("from %d: %d encodes", q0, n)
		}
	}
}

// A video's preview is priced by the frames the engine decodes: frames=N,
// or with every=S the stretches of S seconds its duration holds (at most
// N); a still output is one frame.
func TestPreviewFramesPriced(t *testing.T) {
	clip := Source{Format: imagefmt.JPEG, Width: 320, Height: 240, Orientation: 1, Frames: 1,
		Look: thumbjob.Header{Video: &thumbjob.Video{Duration: 3}}}
	for _, c := range []struct {
		frame  thumbjob.Frame
		format imagefmt.Format
		want   int
	}{
		{thumbjob.Frame{Count: 8}, imagefmt.WebP, 8},
		{thumbjob.Frame{Count: 25, Every: 1}, imagefmt.WebP, 3},
		{thumbjob.Frame{Count: 2, Every: 1}, imagefmt.WebP, 2},
		{thumbjob.Frame{Count: 25, Every: 10}, imagefmt.WebP, 1},
		{thumbjob.Frame{Count: 25, Every: 1}, imagefmt.JPEG, 1},
		{thumbjob.Frame{}, imagefmt.WebP, 1},
	} {
		o := thumbjob.Options{Width: 100, Fit: thumbjob.FitInside, Format: c.format, Animated: true, Frame: c.frame}
		p, err := Make(clip, o, limits)
		if err != nil || p.Frames != c.want {
			t.Errorf("%+v to %s: %d frames (%v), want %d", c.frame, c.format, p.Frames, err, c.want)
		}
		if f := VideoFrame(o); c.want == 1 && c.frame.Count > 1 && c.format == imagefmt.JPEG && (f.Count != 1 || f.Every != 0) {
			t.Errorf("%+v to a still: the engine is asked %+v, want the default poster frame", c.frame, f)
		}
	}
}
