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
// cropped (and not trimmed) shrinks on load as far as the region still
// covers what the fit needs of it; otherwise the source is decoded whole.
func (e *Engine) prepare(src []byte, o thumbjob.Options, h header) (from, error) {
	f := from{src: src, h: h, shrink: 1}
	params := vips.NewImportParams()
	if h.format == imagefmt.JPEG && o.Crop != nil && o.Trim == nil && e.cfg.JPEGShrink != thumbjob.JPEGShrinkQuality {
		if f.shrink = e.cropShrink(o, h); f.shrink > 1 {
			params.JpegShrinkFactor.Set(f.shrink)
		}
	}
	img, err := vips.LoadImageFromBuffer(src, params)
	if err != nil {
		return f, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
	}
	f.base = img
	if f.bw, f.bh, err = prepareOn(img, o, h); err != nil {
		img.Close()
		return f, err
	}
	return f, nil
}

// prepareOn turns img upright, crops it to o's region (in the pixels of
// the source as h displays it: img may be smaller, shrunk on load) and
// trims it; it returns the result's size in source pixels.
func prepareOn(img *vips.ImageRef, o thumbjob.Options, h header) (w, ht int, err error) {
	if err := img.AutoRotate(); err != nil {
		return 0, 0, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
	}
	w, ht = h.displayed()
	if c := o.Crop; c != nil {
		x, y, cw, ch, ok := c.In(w, ht)
		if !ok {
			return 0, 0, fmt.Errorf("%w: crop=%g,%g,%g,%g is outside the %dx%d image (as displayed, after EXIF orientation)", thumbjob.ErrUndecodable, c.X, c.Y, c.W, c.H, w, ht)
		}
		// The region in img's pixels: libjpeg rounds a shrunk side up.
		rx, ry := float64(img.Width())/float64(w), float64(img.Height())/float64(ht)
		x0, y0 := int(float64(x)*rx), int(float64(y)*ry)
		x1, y1 := min(int(math.Ceil(float64(x+cw)*rx)), img.Width()), min(int(math.Ceil(float64(y+ch)*ry)), img.Height())
		if err := img.ExtractArea(x0, y0, max(x1-x0, 1), max(y1-y0, 1)); err != nil {
			return 0, 0, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
		}
		w, ht = cw, ch
	}
	if o.Trim != nil { // never shrunk on load: img's pixels are the source's
		if err := trim(img, *o.Trim); err != nil {
			return 0, 0, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
		}
		w, ht = img.Width(), img.Height()
	}
	return w, ht, nil
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
// whole.
func trim(img *vips.ImageRef, t thumbjob.Trim) error {
	if img.Width() < 3 || img.Height() < 3 {
		return nil // find_trim's 3x3 median needs more; all border anyway
	}
	srgb, err := img.Copy()
	if err != nil {
		return err
	}
	defer srgb.Close()
	if srgb.Interpretation() != vips.InterpretationSRGB || srgb.BandFormat() != vips.BandFormatUchar {
		if err := srgb.ToColorSpace(vips.InterpretationSRGB); err != nil {
			return err
		}
	}
	var bg vips.Color
	if c := t.Colour; c != nil {
		bg = vips.Color{R: c.R, G: c.G, B: c.B}
	} else {
		p, err := srgb.GetPoint(0, 0)
		if err != nil {
			return err
		}
		bg = vips.Color{R: uint8(p[0]), G: uint8(p[1]), B: uint8(p[2])}
	}
	if srgb.HasAlpha() {
		if err := srgb.Flatten(&bg); err != nil {
			return err
		}
	}
	left, top, w, h, err := srgb.FindTrim(t.Threshold, &bg)
	if err != nil {
		return err
	}
	if w <= 0 || h <= 0 || w == img.Width() && h == img.Height() {
		return nil
	}
	return img.ExtractArea(left, top, w, h)
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
