package thumb

import (
	"image"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/plan"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

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
	box = plan.TrimEqual(box, image.Pt(img.Width(), img.Height()), t.EqualHor, t.EqualVer)
	return box, bg, img.ExtractArea(box.Min.X, box.Min.Y, box.Dx(), box.Dy())
}

// findTrim is libvips' find_trim of img (sRGB, no alpha) with threshold
// and bg, found without running it on every pixel (plan's trim search):
// first on a copy shrunk plan.TrimCoarse times, then on four strips of the
// full image along that box's edges. When a strip says the coarse box was
// wrong (no content in it, or content up to its outer side), find_trim
// runs on the whole image. Content thinner than the shrink with less
// contrast than plan.TrimCoarse times the threshold may be missed by the
// coarse look when it lies far from the rest: it is then trimmed away.
func findTrim(img *vips.ImageRef, threshold float64, bg vips.Color) (image.Rectangle, error) {
	whole := func() (image.Rectangle, error) {
		l, t, w, h, err := img.FindTrim(threshold, &bg)
		return image.Rect(l, t, l+max(w, 0), t+max(h, 0)), err
	}
	size := image.Pt(img.Width(), img.Height())
	if plan.TrimWhole(size) {
		return whole()
	}
	coarse, err := img.Copy()
	if err != nil {
		return image.Rectangle{}, err
	}
	defer coarse.Close()
	if err := coarse.Resize(1.0/plan.TrimCoarse, vips.KernelLinear); err != nil {
		return image.Rectangle{}, err
	}
	l, t, w, h, err := coarse.FindTrim(threshold, &bg)
	if err != nil || w <= 0 || h <= 0 {
		return whole()
	}
	strips, ok := plan.TrimStrips(image.Rect(l, t, l+w, t+h), image.Pt(coarse.Width(), coarse.Height()), size)
	if !ok {
		return whole()
	}
	var found [4]image.Rectangle
	for i, s := range strips {
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
		if plan.TrimOuter(i, found[i], s, size) {
			return whole()
		}
	}
	return plan.TrimJoin(found), nil
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

// embed places img at at on a canvas of size of the background: bg=,
// else transparent where the format keeps alpha and white where it does
// not.
func embed(img *vips.ImageRef, o thumbjob.Options, spec imagefmt.Spec, at, size image.Point) error {
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
	return img.EmbedBackgroundRGBA(at.X, at.Y, size.X, size.Y, &bg)
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
