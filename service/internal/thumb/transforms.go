package thumb

import (
	"fmt"
	"image"
	"math"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// from is where a resize reads: the source's bytes (resized as they are
// decoded, shrinking on load where the format allows) or, when a crop or
// a trim ran first, the image they left (base, upright), which may have
// been shrunk on load: w x h is its size in the source's pixels.
type from struct {
	src    []byte
	h      header
	base   *vips.ImageRef
	bw, bh int // base's size in source pixels (base may be smaller)
	shrink int // base's JPEG shrink on load; 1 none
}

// displayed is the size of what the resize reads, as displayed, in the
// source's pixels.
func (f from) displayed() (w, h int) {
	if f.base != nil {
		return f.bw, f.bh
	}
	return f.h.displayed()
}

// prepare decodes the source upright and applies the crop, then the
// trim: the transforms that need the source before the resize. A JPEG
// shrinks on load as far as the region (the crop's, or the whole image)
// still covers what the fit needs of it. With a trim, the region is only
// known once trimmed: the trim runs on that decode, and when what it
// leaves needs more pixels than the shrink gives, the JPEG is decoded
// again at the shrink the trimmed region needs, cropped to it (with a
// margin of the first decode's error) and trimmed there, against the
// colour the first trim used.
func (e *Engine) prepare(src []byte, o thumbjob.Options, h header) (from, error) {
	shrink := 1
	if h.format == imagefmt.JPEG && e.cfg.JPEGShrink != thumbjob.JPEGShrinkQuality {
		whole := o
		if whole.Crop == nil {
			dw, dh := h.displayed()
			whole.Crop = &thumbjob.Region{W: float64(dw), H: float64(dh)}
		}
		shrink = e.cropShrink(whole, h)
	}
	f, region, bg, err := e.prepareAt(src, o, h, shrink)
	if err != nil || o.Trim == nil || shrink == 1 {
		return f, err
	}
	// The trimmed region, grown by the shrink (its error), as a crop.
	dw, dh := h.displayed()
	region = region.Inset(-shrink).Intersect(image.Rect(0, 0, dw, dh))
	again := o
	again.Crop = &thumbjob.Region{X: float64(region.Min.X), Y: float64(region.Min.Y), W: float64(region.Dx()), H: float64(region.Dy())}
	if less := e.cropShrink(again, h); less < shrink {
		f.base.Close()
		again.Trim = &thumbjob.Trim{Threshold: o.Trim.Threshold, Colour: &thumbjob.Colour{R: bg.R, G: bg.G, B: bg.B, A: 255}}
		f, _, _, err = e.prepareAt(src, again, h, less)
	}
	return f, err
}

// prepareAt is prepare at a JPEG shrink on load (1: none): the image it
// leaves, that image's region of the source as displayed, and the colour
// its trim cut away (when it trimmed).
func (e *Engine) prepareAt(src []byte, o thumbjob.Options, h header, shrink int) (from, image.Rectangle, vips.Color, error) {
	f := from{src: src, h: h, shrink: shrink}
	params := vips.NewImportParams()
	if shrink > 1 {
		params.JpegShrinkFactor.Set(shrink)
	}
	img, err := vips.LoadImageFromBuffer(src, params)
	if err != nil {
		return f, image.Rectangle{}, vips.Color{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
	}
	f.base = img
	region, bg, err := prepareOn(img, o, h)
	if err != nil {
		img.Close()
		return f, region, bg, err
	}
	f.bw, f.bh = region.Dx(), region.Dy()
	return f, region, bg, nil
}

// prepareOn turns img upright, crops it to o's region (in the pixels of
// the source as h displays it: img may be smaller, shrunk on load) and
// trims it; it returns the result's region of the source, in its pixels,
// and the colour the trim cut away.
func prepareOn(img *vips.ImageRef, o thumbjob.Options, h header) (image.Rectangle, vips.Color, error) {
	var bg vips.Color
	if err := img.AutoRotate(); err != nil {
		return image.Rectangle{}, bg, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
	}
	w, ht := h.displayed()
	region := image.Rect(0, 0, w, ht)
	// img's pixels a source pixel (libjpeg rounds a shrunk side up).
	rx, ry := float64(img.Width())/float64(w), float64(img.Height())/float64(ht)
	if c := o.Crop; c != nil {
		x, y, cw, ch, ok := c.In(w, ht)
		if !ok {
			return region, bg, fmt.Errorf("%w: crop=%g,%g,%g,%g is outside the %dx%d image (as displayed, after EXIF orientation)", thumbjob.ErrUndecodable, c.X, c.Y, c.W, c.H, w, ht)
		}
		x0, y0 := int(float64(x)*rx), int(float64(y)*ry)
		x1, y1 := min(int(math.Ceil(float64(x+cw)*rx)), img.Width()), min(int(math.Ceil(float64(y+ch)*ry)), img.Height())
		if err := img.ExtractArea(x0, y0, max(x1-x0, 1), max(y1-y0, 1)); err != nil {
			return region, bg, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
		}
		region = image.Rect(x, y, x+cw, y+ch)
	}
	if o.Trim != nil {
		box, colour, err := trim(img, *o.Trim)
		if err != nil {
			return region, bg, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
		}
		bg = colour
		if !box.Empty() {
			// the box in the source's pixels, from the region's corner
			at := image.Pt(int(float64(box.Min.X)/rx), int(float64(box.Min.Y)/ry)).Add(region.Min)
			region = image.Rectangle{at, at.Add(image.Pt(max(int(math.Round(float64(box.Dx())/rx)), 1), max(int(math.Round(float64(box.Dy())/ry)), 1)))}.Intersect(region)
		}
	}
	return region, bg, nil
}

// cropShrink is the JPEG shrink on load (8, 4, 2, else 1) whose decoded
// region still covers what the fit needs of the crop's region, so that
// the resize never enlarges: jpegShrink's rule, for the region.
func (e *Engine) cropShrink(o thumbjob.Options, h header) int {
	dw, dh := h.displayed()
	_, _, cw, ch, ok := o.Crop.In(dw, dh)
	if !ok {
		return 1
	}
	bw, bh := cw, ch // the region as the box sees it, after rotate
	if o.Reorients() {
		bw, bh = ch, cw
	}
	box := e.resolve(o, bw, bh)
	if o.NoEnlarge {
		box.Width, box.Height = noEnlarge(box, bw, bh)
	}
	kx, ky := fitScale(o.Fit, float64(box.Width)/float64(bw), float64(box.Height)/float64(bh))
	if o.Reorients() {
		kx, ky = ky, kx
	}
	needW, needH := max(int(math.Round(float64(cw)*kx)), 1), max(int(math.Round(float64(ch)*ky)), 1)
	for _, s := range []int{8, 4, 2} {
		// Rounding down keeps a margin, as in jpegShrink; the whole
		// source must keep a pixel a side at the shrink.
		if cw/s >= needW && ch/s >= needH && h.width/s >= 1 && h.height/s >= 1 {
			return s
		}
	}
	return 1
}

// trim cuts away the border within t.Threshold of its colour (t's, or the
// top-left pixel's), as libvips' find_trim finds it on the image in sRGB
// (alpha flattened onto the colour). An image that is all border is left
// whole. It returns the box it cut to (empty: none) and the colour.
func trim(img *vips.ImageRef, t thumbjob.Trim) (image.Rectangle, vips.Color, error) {
	var bg vips.Color
	if img.Width() < 3 || img.Height() < 3 {
		return image.Rectangle{}, bg, nil // find_trim's 3x3 median needs more; all border anyway
	}
	srgb, err := img.Copy()
	if err != nil {
		return image.Rectangle{}, bg, err
	}
	defer srgb.Close()
	if srgb.Interpretation() != vips.InterpretationSRGB || srgb.BandFormat() != vips.BandFormatUchar {
		if err := srgb.ToColorSpace(vips.InterpretationSRGB); err != nil {
			return image.Rectangle{}, bg, err
		}
	}
	if c := t.Colour; c != nil {
		bg = vips.Color{R: c.R, G: c.G, B: c.B}
	} else {
		p, err := srgb.GetPoint(0, 0)
		if err != nil {
			return image.Rectangle{}, bg, err
		}
		bg = vips.Color{R: uint8(p[0]), G: uint8(p[1]), B: uint8(p[2])}
	}
	if srgb.HasAlpha() {
		if err := srgb.Flatten(&bg); err != nil {
			return image.Rectangle{}, bg, err
		}
	}
	box, err := findTrim(srgb, t.Threshold, bg)
	if err != nil {
		return image.Rectangle{}, bg, err
	}
	if box.Empty() || box == image.Rect(0, 0, img.Width(), img.Height()) {
		return image.Rectangle{}, bg, nil
	}
	return box, bg, img.ExtractArea(box.Min.X, box.Min.Y, box.Dx(), box.Dy())
}

// trimCoarse is the shrink of the copy on which findTrim first looks for
// the trimmed box; images under trimCoarse*trimSmall a side are searched
// whole.
const (
	trimCoarse = 8
	trimSmall  = 32
)

// findTrim is libvips' find_trim of img (sRGB, no alpha) with threshold
// and bg, found without running it on every pixel: find_trim (a 3x3
// median, then a difference and a threshold in float, then the
// projections) cost 54 times a plain resize on a 12 MP photo. It runs
// first on a copy shrunk trimCoarse times, whose box is within a few of
// its pixels of the full image's; then on four strips of the full image
// along that box's edges, wide enough to hold the true edge with its
// median's rows on both sides, which gives each edge as find_trim on the
// whole image does. When a strip says the coarse box was wrong (no
// content in it, or content up to its outer side), find_trim runs on the
// whole image. Content thinner than the shrink with less contrast than
// trimCoarse times the threshold may be missed by the coarse look when it
// lies far from the rest: it is then trimmed away.
func findTrim(img *vips.ImageRef, threshold float64, bg vips.Color) (image.Rectangle, error) {
	whole := func() (image.Rectangle, error) {
		l, t, w, h, err := img.FindTrim(threshold, &bg)
		return image.Rect(l, t, l+max(w, 0), t+max(h, 0)), err
	}
	W, H := img.Width(), img.Height()
	if min(W, H) < trimCoarse*trimSmall {
		return whole()
	}
	coarse, err := img.Copy()
	if err != nil {
		return image.Rectangle{}, err
	}
	defer coarse.Close()
	if err := coarse.Resize(1.0/trimCoarse, vips.KernelLinear); err != nil {
		return image.Rectangle{}, err
	}
	l, t, w, h, err := coarse.FindTrim(threshold, &bg)
	if err != nil || w <= 0 || h <= 0 {
		return whole()
	}
	sx, sy := float64(W)/float64(coarse.Width()), float64(H)/float64(coarse.Height())
	near := image.Rect(int(float64(l)*sx), int(float64(t)*sy), int(math.Ceil(float64(l+w)*sx)), int(math.Ceil(float64(t+h)*sy)))
	const margin = 2*trimCoarse + 2 // the coarse box's error, and the median's row
	all := image.Rect(0, 0, W, H)
	grown := near.Inset(-margin).Intersect(all)
	strips := [4]image.Rectangle{
		image.Rect(grown.Min.X, grown.Min.Y, grown.Max.X, near.Min.Y+margin), // top
		image.Rect(grown.Min.X, near.Max.Y-margin, grown.Max.X, grown.Max.Y), // bottom
		image.Rect(grown.Min.X, grown.Min.Y, near.Min.X+margin, grown.Max.Y), // left
		image.Rect(near.Max.X-margin, grown.Min.Y, grown.Max.X, grown.Max.Y), // right
	}
	var found [4]image.Rectangle
	for i, s := range strips {
		s = s.Intersect(all)
		if s.Dx() < 3 || s.Dy() < 3 {
			return whole()
		}
		strip, err := img.Copy()
		if err != nil {
			return image.Rectangle{}, err
		}
		err = strip.ExtractArea(s.Min.X, s.Min.Y, s.Dx(), s.Dy())
		var sl, st, sw, sh int
		if err == nil {
			sl, st, sw, sh, err = strip.FindTrim(threshold, &bg)
		}
		strip.Close()
		if err != nil {
			return image.Rectangle{}, err
		}
		if sw <= 0 || sh <= 0 {
			return whole()
		}
		found[i] = image.Rect(sl, st, sl+sw, st+sh).Add(s.Min)
		// Content up to a strip's outer side may go on past it.
		outer := [4]bool{found[i].Min.Y == s.Min.Y && s.Min.Y > 0, found[i].Max.Y == s.Max.Y && s.Max.Y < H,
			found[i].Min.X == s.Min.X && s.Min.X > 0, found[i].Max.X == s.Max.X && s.Max.X < W}
		if outer[i] {
			return whole()
		}
	}
	return image.Rect(found[2].Min.X, found[0].Min.Y, found[3].Max.X, found[1].Max.Y), nil
}

// trimPriced is the most a trimmed image's cover may scale to: the
// cover of the untrimmed source in its less favourable orientation, as
// the memory estimate priced it (memcost's coverPixels), or the source's
// own pixels when they are more.
func trimPriced(o thumbjob.Options, h header) float64 {
	best := float64(h.width) * float64(h.height)
	for _, d := range [][2]int{{h.width, h.height}, {h.height, h.width}} {
		best = max(best, coverPixelsOf(o, d[0], d[1]))
	}
	return best
}

// noEnlarge is the box of enlarge=false on a dw x dh image: shrunk by the
// factor the fit would have scaled the image up by, so that the image
// keeps its size (on one side at least) and the box its aspect ratio.
func noEnlarge(o thumbjob.Options, dw, dh int) (w, h int) {
	sx, sy := float64(o.Width)/float64(dw), float64(o.Height)/float64(dh)
	k := max(sx, sy) // cover and fill: no side scaled up
	if o.Fit == thumbjob.FitContain || o.Fit == thumbjob.FitInside {
		k = min(sx, sy) // the image fits inside at its own size
	}
	if k <= 1 {
		return o.Width, o.Height
	}
	return max(int(math.Round(float64(o.Width)/k)), 1), max(int(math.Round(float64(o.Height)/k)), 1)
}

// unturned is what the resize is asked before rotate and flip, which
// run after it on the small image: the box on its side for 90 and 270,
// and a point gravity (compass, focal) carried back through the flip and
// the rotation into the upright source's frame (a point gravity other
// than the centre becomes the focal point there).
func unturned(o thumbjob.Options) thumbjob.Options {
	x, y, point := o.Point()
	if o.Reorients() {
		o.Width, o.Height = o.Height, o.Width
	}
	if !point || o.Gravity == thumbjob.GravityCentre {
		return o
	}
	if o.Flip == thumbjob.FlipHorizontal || o.Flip == thumbjob.FlipBoth {
		x = 1 - x
	}
	if o.Flip == thumbjob.FlipVertical || o.Flip == thumbjob.FlipBoth {
		y = 1 - y
	}
	switch o.Rotate { // a turn of 90 clockwise sends (x, y) to (1-y, x)
	case 90:
		x, y = y, 1-x
	case 180:
		x, y = 1-x, 1-y
	case 270:
		x, y = 1-y, x
	}
	o.Gravity, o.FocalX, o.FocalY = thumbjob.GravityFocal, x, y
	return o
}

// turn rotates, then flips, the resized image.
func turn(img *vips.ImageRef, o thumbjob.Options) error {
	angles := map[int]vips.Angle{90: vips.Angle90, 180: vips.Angle180, 270: vips.Angle270}
	if a, ok := angles[o.Rotate]; ok {
		if err := img.Rotate(a); err != nil {
			return err
		}
	}
	if o.Flip == thumbjob.FlipHorizontal || o.Flip == thumbjob.FlipBoth {
		if err := img.Flip(vips.DirectionHorizontal); err != nil {
			return err
		}
	}
	if o.Flip == thumbjob.FlipVertical || o.Flip == thumbjob.FlipBoth {
		return img.Flip(vips.DirectionVertical)
	}
	return nil
}

// embed places img at left, top on a w x h canvas of the background:
// bg=, else transparent where the format keeps alpha and white where it
// does not.
func embed(img *vips.ImageRef, o thumbjob.Options, spec imagefmt.Spec, left, top, w, h int) error {
	bg := vips.ColorRGBA{R: 255, G: 255, B: 255, A: 255}
	if spec.Alpha {
		bg = vips.ColorRGBA{}
	}
	if c := o.Background; c != nil {
		bg = vips.ColorRGBA{R: c.R, G: c.G, B: c.B, A: c.A}
	}
	if bg.A < 255 && !img.HasAlpha() {
		if err := img.AddAlpha(); err != nil {
			return err
		}
	}
	return img.EmbedBackgroundRGBA(left, top, w, h, &bg)
}

// filter blurs, sharpens and pixelates the resized image.
func filter(img *vips.ImageRef, t thumbjob.Transforms) error {
	if t.Blur > 0 {
		if err := img.GaussianBlur(t.Blur); err != nil {
			return err
		}
	}
	if t.Sharpen > 0 {
		// libvips' defaults for the rest (flat/jaggy threshold 2, jaggy
		// slope 3), as imgproxy's sharpen.
		if err := img.Sharpen(t.Sharpen, 2, 3); err != nil {
			return err
		}
	}
	if n := t.Pixelate; n > 1 {
		w, h := img.Width(), img.Height()
		// Down to one pixel a block, then each pixel repeated n times; the
		// last row and column of blocks may be cut.
		bw, bh := (w+n-1)/n, (h+n-1)/n
		if err := img.ResizeWithVScale(float64(bw)/float64(w), float64(bh)/float64(h), vips.KernelLinear); err != nil {
			return err
		}
		if err := img.Zoom(n, n); err != nil {
			return err
		}
		if err := img.ExtractArea(0, 0, min(w, img.Width()), min(h, img.Height())); err != nil {
			return err
		}
	}
	if img.BandFormat() != vips.BandFormatUchar {
		return img.Cast(vips.BandFormatUchar)
	}
	return nil
}

// frame extends the image to the canvas at the gravity (extend=true),
// then pads it; at is where the image it was given now starts.
func frame(img *vips.ImageRef, o thumbjob.Options, spec imagefmt.Spec, canvasW, canvasH int) (at image.Point, err error) {
	if w, h := img.Width(), img.Height(); o.Extend && (w < canvasW || h < canvasH) {
		x, y, ok := o.Point()
		if !ok {
			x, y = 0.5, 0.5 // attention and entropy place it centred
		}
		cw, ch := max(w, canvasW), max(h, canvasH)
		left, top := int(math.Round(x*float64(cw-w))), int(math.Round(y*float64(ch-h)))
		if err := embed(img, o, spec, left, top, cw, ch); err != nil {
			return at, err
		}
		at = image.Pt(left, top)
	}
	if p := o.Pad; p != (thumbjob.Sides{}) {
		if err := embed(img, o, spec, p.Left, p.Top, img.Width()+p.Left+p.Right, img.Height()+p.Top+p.Bottom); err != nil {
			return at, err
		}
		at = at.Add(image.Pt(p.Left, p.Top))
	}
	return at, nil
}
