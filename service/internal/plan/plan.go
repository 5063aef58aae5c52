// Package plan decides, once, the geometry of a thumbnail job: from the
// source's size (as its decoder reads it, with its EXIF orientation), the
// job's options and the engine's limits, every size and position the job
// will have, and the ordered list of the steps that make it. The engine
// (thumb) runs the steps and reads every size from the plan; the memory
// estimate (memcost) prices each step from the same plan. It is pure Go,
// as imgproxy's processing.CalcParams is computed apart from its vips
// calls: nothing here touches a pixel.
package plan

import (
	"fmt"
	"image"
	"math"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Source is what a plan reads of the source.
type Source struct {
	Format imagefmt.Format
	// Width x Height is the first frame as its decoder gives it, before
	// EXIF orientation (libvips applies a HEIF's irot itself).
	Width, Height int
	// Orientation is the EXIF orientation (1 to 8; 0 is read as 1): 5 to
	// 8 turn the image on its side.
	Orientation int
	Frames      int // frames or pages as the decoder counts them
	// Look is the header the pipeline's look read: a HEIF's embedded
	// thumbnail. Zero when it could not be read.
	Look thumbjob.Header
}

// Displayed is the source's size after EXIF orientation.
func (s Source) Displayed() image.Point {
	if s.Orientation >= 5 && s.Orientation <= 8 {
		return image.Pt(s.Height, s.Width)
	}
	return image.Pt(s.Width, s.Height)
}

// Limits are the engine's bounds a plan holds a job to.
type Limits struct {
	MaxSide int // bounds a side derived from the source's aspect ratio
	// MaxPixels bounds every frame decoded and a cover's scaled image;
	// MaxAnimationPixels an animation's frames x output pixels (0: none).
	MaxPixels, MaxAnimationPixels int64
	JPEGShrink                    thumbjob.JPEGShrink
	// Mark is the loaded watermark's size (zero: none loaded).
	Mark image.Point
}

// Load is how the decode step reads the source.
type Load int

const (
	// LoadThumbnail decodes and resizes in one libvips thumbnail
	// operation (its own shrink on load).
	LoadThumbnail Load = iota
	// LoadShrunk decodes a JPEG at Plan.Shrink; the resize step follows.
	LoadShrunk
	// LoadHEIFThumbnail decodes a HEIF's embedded thumbnail; the resize
	// step follows.
	LoadHEIFThumbnail
	// LoadUpright decodes the whole source (a JPEG at Plan.Shrink) and
	// turns it upright, for the crop and the trim.
	LoadUpright
)

// HEIF is which of a HEIF's images a job hands libvips.
type HEIF int

const (
	HEIFAsIs      HEIF = iota // not a HEIF, or one without a thumbnail (as the look read it)
	HEIFThumbnail             // the embedded thumbnail (LoadHEIFThumbnail)
	HEIFWithout               // the file without its thumbnails (WithoutHEIFThumbnails): the primary
)

// Resize is what the resize asks of libvips' thumbnail operation.
type Resize struct {
	Width, Height int // the box before rotate and flip (on its side for 90 and 270)
	// Force sizes the image to Width x Height exactly (fill, and a fit
	// inside at the size the plan chose); otherwise it covers the box and
	// libvips crops at Crop.
	Force bool
	Crop  thumbjob.Gravity // centre, attention or entropy; "" with Force
	// Cut is the box cut from the Width x Height image (a cover at a
	// point, or an animation's); empty: none.
	Cut image.Rectangle
}

// Plan is a thumbnail job's geometry and its steps.
type Plan struct {
	Steps  []Step
	Frames int
	Load   Load
	// Shrink is the JPEG shrink on load: what the decode asks for
	// (LoadShrunk, LoadUpright), or at least what libvips' thumbnail
	// operation picks (LoadThumbnail: half the fast shrink with
	// THUMBD_JPEG_SHRINK=quality, which leaves 2x for its reduce); 1 none.
	Shrink int
	// Sequential is a LoadUpright decode that reads the source's rows
	// once, top to bottom, as imgproxy loads: a JPEG cropped without a
	// trim (which reads the image twice) and upright as stored (turning
	// it reads out of order). The rows below the crop are never decoded,
	// nor the whole image held in memory. Else the decode is random access.
	Sequential bool
	HEIF       HEIF
	Source     image.Point // as displayed
	// Region is the part of the displayed source the resize reads: the
	// crop's, then the trim's; the whole source without them.
	Region image.Rectangle
	// Box is the box: as asked, a missing side from the region's aspect
	// ratio (after rotate), shrunk for enlarge=false. Canvas is extend's
	// canvas: the box before enlarge=false.
	Box, Canvas image.Point
	Resize      Resize
	// Scaled is the image the resize makes (a cover's, the one its box is
	// cut from: the source scaled to cover it); Resized what is left after
	// the cut, before rotate and flip; Turned after them.
	Scaled, Resized, Turned image.Point
	// Contain is contain's box around the turned image, Extend extend's
	// canvas around what contain left, Aspect extend_aspect_ratio's around
	// that (each zero when it adds nothing).
	Contain, Extend, Aspect Embed
	// Picture is where the picture is on the final canvas (contain's,
	// extend's and pad's borders are not the picture).
	Picture image.Rectangle
	Out     image.Point // the answer's size (of one frame)
	// Mark is the watermark's rectangle on the final canvas (the picture
	// for a tiled one); empty without a watermark.
	Mark image.Rectangle

	src  Source
	opts thumbjob.Options
	lim  Limits
	fit  thumbjob.Fit // the fit the box is made with (FitAuto decided)
}

// Make plans a thumbnail of src with o into l. o.Format is the format
// written (the caller resolves auto, the source's and the alpha choice).
// Its errors are the engine's: a crop outside the image, more pixels
// than allowed.
func Make(src Source, o thumbjob.Options, l Limits) (Plan, error) {
	p := Plan{src: src, opts: o, lim: l, Shrink: 1, Source: src.Displayed()}
	p.Frames = frames(src, o)
	if px := int64(p.Frames) * int64(src.Width) * int64(src.Height); p.Frames > 1 && l.MaxPixels > 0 && px > l.MaxPixels {
		// Every frame is decoded: the pixel limit holds for all of them.
		return p, fmt.Errorf("%w: the source's %d frames of %dx%d are %d pixels to decode, more than the %d allowed", thumbjob.ErrTooManyPixels, p.Frames, src.Width, src.Height, px, l.MaxPixels)
	}
	p.Region = image.Rectangle{Max: p.Source}
	if c := o.Crop; c != nil && c.Anchor != nil {
		p.Region = anchored(p.Source, *c, o)
	} else if c != nil {
		x, y, w, h, ok := c.In(p.Source.X, p.Source.Y)
		if !ok {
			return p, fmt.Errorf("%w (%dx%d as displayed, after EXIF orientation): %g,%g,%g,%g", thumbjob.ErrCropOutside, p.Source.X, p.Source.Y, c.X, c.Y, c.W, c.H)
		}
		p.Region = image.Rect(x, y, x+w, y+h)
	}
	if o.Crop != nil || o.Trim != nil {
		p.Load = LoadUpright
	}
	return p, p.size()
}

// Trimmed is the plan once the trim has cut the region to r (in the
// displayed source's pixels), as imgproxy recalculates its parameters
// after its trim: every size from the region on.
func (p Plan) Trimmed(r image.Rectangle) (Plan, error) {
	p.Region = r
	return p, p.size()
}

// Again is the plan of a second, finer decode after a trim found r on a
// JPEG shrunk on load: r grown by the shrink (the first decode's error)
// as the region, at the shrink that region needs. ok is false when that
// shrink is no finer: the first decode serves.
func (p Plan) Again(r image.Rectangle) (Plan, bool) {
	if t := p.opts.Trim; p.Load != LoadUpright || p.Shrink == 1 || t != nil && (t.EqualHor || t.EqualVer) {
		return p, false // an equal trim is judged on the first decode's whole region
	}
	q := p
	q.Region = r.Inset(-p.Shrink).Intersect(image.Rectangle{Max: p.Source})
	if err := q.size(); err != nil || q.Shrink >= p.Shrink {
		return p, false
	}
	return q, true
}

// size computes everything that follows from the region.
func (p *Plan) size() error {
	o, l := p.opts, p.lim
	region := p.Region.Size()
	turned := region // the region as the box sees it, after rotate
	if o.Reorients() {
		turned = image.Pt(region.Y, region.X)
	}
	p.Canvas = resolve(image.Pt(o.Width, o.Height), turned, l.MaxSide)
	p.fit = o.Fit
	if o.Fit == thumbjob.FitAuto {
		// cover when the region and the box lie the same way
		p.fit = thumbjob.FitInside
		if (turned.X >= turned.Y) == (p.Canvas.X >= p.Canvas.Y) {
			p.fit = thumbjob.FitCover
		}
	}
	p.Box = p.Canvas
	if o.NoEnlarge {
		p.Box = noEnlarge(p.Canvas, turned, p.fit)
	}
	if px := int64(p.Frames) * int64(p.Box.X) * int64(p.Box.Y); p.Frames > 1 && l.MaxAnimationPixels > 0 && px > l.MaxAnimationPixels {
		return fmt.Errorf("%w: %d frames of %dx%d are %d pixels, more than the %d allowed for an animation", thumbjob.ErrAnimationTooLarge, p.Frames, p.Box.X, p.Box.Y, px, l.MaxAnimationPixels)
	}
	asked, fit := p.request(region)
	if px := p.ScaledPixels(); l.MaxPixels > 0 && px > float64(l.MaxPixels) && (p.fit == thumbjob.FitCover || !p.Resize.Cut.Empty()) {
		// libvips scales the whole source before cropping: a 1x40000 JPEG
		// covered to 256x256 is a 256x10240000 image (minutes, gigabytes).
		return fmt.Errorf("%w: covering %dx%d with this %dx%d source needs it scaled to %.0f pixels, more than the %d allowed", thumbjob.ErrTooManyPixels, p.Box.X, p.Box.Y, turned.X, turned.Y, px, l.MaxPixels)
	}
	if p.Load == LoadUpright {
		// The shrink the region allows for the box, before any cut.
		asked, fit = p.Box, p.fit
		if o.Reorients() {
			asked = image.Pt(asked.Y, asked.X)
		}
	}
	p.load(region, asked, fit)
	p.Resized = p.Resize.Cut.Size()
	if p.Resize.Cut.Empty() {
		p.Resized = image.Pt(p.Resize.Width, p.Resize.Height)
	}
	p.Turned = p.Resized
	if o.Reorients() {
		p.Turned = image.Pt(p.Resized.Y, p.Resized.X)
	}
	p.finish()
	p.Steps = p.steps()
	return nil
}

// ScaledPixels is the scaled image's pixels: for a cover, the source
// scaled to cover the box.
func (p Plan) ScaledPixels() float64 { return float64(p.Scaled.X) * float64(p.Scaled.Y) }

// request is the resize as asked before the plan chooses how libvips does
// it: the box before rotate and flip, and its fit; a cover at a point,
// or an animation's, is asked as a fill of the image the box is cut from,
// and Resize.Cut set.
func (p *Plan) request(region image.Point) (image.Point, thumbjob.Fit) {
	o := p.opts
	box := p.Box
	if o.Reorients() {
		box = image.Pt(box.Y, box.X)
	}
	if size, ok := p.least(region); ok {
		// imgproxy's min-width and min-height: scaled beyond the box, then
		// cut to its sides that were asked, at the gravity as placed in
		// the turned image.
		cut := image.Pt(size.X, size.Y)
		if o.Width > 0 {
			cut.X = min(cut.X, p.Box.X)
		}
		if o.Height > 0 {
			cut.Y = min(cut.Y, p.Box.Y)
		}
		p.cutAt(size, cut)
		return p.Scaled, thumbjob.FitFill
	}
	g, fx, fy := unturned(o)
	p.Resize = Resize{Width: box.X, Height: box.Y}
	switch p.fit {
	case thumbjob.FitCover:
		if o.Offset != nil || o.Fit == thumbjob.FitAuto {
			// imgproxy's offsets (and its auto): placed in the turned
			// image, as its crop to the box does after rotate and flip.
			p.cutAt(cover(turnedSize(region, o), p.Box), p.Box)
			return p.Scaled, thumbjob.FitFill
		}
		if p.Frames == 1 && g != thumbjob.GravityFocal {
			p.Resize.Crop = crops(g)
			p.Scaled = cover(region, box)
			return box, p.fit
		}
		// Cut from the image scaled to cover the box: libvips before 8.15
		// crops an animation as one tall image, and its thumbnail
		// operation has no focal point. Smart crops would pick another
		// window each frame: an animation keeps one, centred.
		c := cover(region, box)
		at := image.Pt((c.X-box.X)/2, (c.Y-box.Y)/2)
		if g == thumbjob.GravityFocal {
			at = image.Pt(cutAt(fx, c.X, box.X), cutAt(fy, c.Y, box.Y))
		}
		p.Resize = Resize{Width: c.X, Height: c.Y, Force: true, Cut: image.Rectangle{at, at.Add(box)}}
		p.Scaled = c
		return c, thumbjob.FitFill
	case thumbjob.FitFill:
		p.Resize.Force = true
	default:
		// contain and inside: the plan chooses the fitted size, and libvips
		// is asked for it exactly (as for a fill), so that the answer's
		// size is the plan's whatever the decoder's rounding.
		f := fitted(region, box)
		p.Resize = Resize{Width: f.X, Height: f.Y, Force: true}
	}
	p.Scaled = image.Pt(p.Resize.Width, p.Resize.Height)
	return box, p.fit
}

// turnedSize is a size before rotate as the box sees it after.
func turnedSize(size image.Point, o thumbjob.Options) image.Point {
	if o.Reorients() {
		return image.Pt(size.Y, size.X)
	}
	return size
}

// cutAt has the resize make an image of size (turned, as the box sees
// it) exactly, and cut the piece of size cut from it at the gravity
// (imgproxy's placement, offsets included) as it lies once turned.
func (p *Plan) cutAt(size, cut image.Point) {
	o := p.opts
	at := position(size, cut, anchorOf(o), 1)
	flipX, flipY := o.Flip == thumbjob.FlipHorizontal || o.Flip == thumbjob.FlipBoth, o.Flip == thumbjob.FlipVertical || o.Flip == thumbjob.FlipBoth
	r := unturn(image.Rectangle{at, at.Add(cut)}, size, o.Rotate, flipX, flipY)
	scaled := turnedSize(size, o) // back before rotate
	p.Resize = Resize{Width: scaled.X, Height: scaled.Y, Force: true, Cut: r}
	if r == (image.Rectangle{Max: scaled}) {
		p.Resize.Cut = image.Rectangle{}
	}
	p.Scaled = scaled
}

// least is the size (as the box sees it) of the region scaled by the
// fit, raised to MinWidth and MinHeight as imgproxy's min-width and
// min-height raise it; ok is false when they raise nothing.
func (p *Plan) least(region image.Point) (image.Point, bool) {
	o := p.opts
	if o.MinWidth <= 0 && o.MinHeight <= 0 {
		return image.Point{}, false
	}
	turned := turnedSize(region, o)
	kx, ky := scales(p.fit, p.Box, turned)
	raised := false
	if k := float64(o.MinWidth) / float64(turned.X); o.MinWidth > 0 && k > kx {
		ky, kx, raised = ky*k/kx, k, true
	}
	if k := float64(o.MinHeight) / float64(turned.Y); o.MinHeight > 0 && k > ky {
		kx, ky, raised = kx*k/ky, k, true
	}
	return image.Pt(max(roundHalfUp(float64(turned.X)*kx), 1), max(roundHalfUp(float64(turned.Y)*ky), 1)), raised
}

// load chooses how the source is decoded for a resize asked as box and
// fit: upright for the crop and the trim, a JPEG at the largest shrink
// on load that still covers what the fit needs, a HEIF's embedded
// thumbnail, or libvips' own thumbnail operation.
func (p *Plan) load(region, box image.Point, fit thumbjob.Fit) {
	f := p.src.Format
	fast := p.lim.JPEGShrink != thumbjob.JPEGShrinkQuality
	switch {
	case p.Load == LoadUpright:
		p.Shrink = 1
		if f == imagefmt.JPEG && fast {
			p.Shrink = shrinkOnLoad(region, need(region, box, fit))
		}
		p.Sequential = f == imagefmt.JPEG && p.opts.Trim == nil && p.src.Orientation <= 1
		return
	case f == imagefmt.JPEG:
		p.Load, p.Shrink = LoadThumbnail, shrinkOnLoad(p.Source, need(p.Source, box, fit))
		if !fast {
			p.Shrink = max(p.Shrink/2, 1)
		} else if p.Shrink > 1 {
			// libvips' thumbnail operation would stop one step earlier;
			// loading at the shrink and resizing the result keeps the rest
			// of the pipeline (orientation, crop, colour) the same.
			p.Load = LoadShrunk
		}
		return
	}
	p.Load, p.HEIF = LoadThumbnail, HEIFAsIs
	if f != imagefmt.HEIC && f != imagefmt.AVIF {
		return
	}
	// A header the look could not read (Width 0) declares no thumbnail
	// thumbd trusts: its thumbnails are removed too.
	t := p.src.Look
	read := t.Width > 0
	switch _, use := HEIFThumbnailUse(p.src.Width, p.src.Height, t.ThumbWidth, t.ThumbHeight, box.X, box.Y, fit); {
	case read && t.ThumbWidth == 0:
	case read && use:
		p.Load, p.HEIF = LoadHEIFThumbnail, HEIFThumbnail
	default:
		p.HEIF = HEIFWithout
	}
}

// Embed is an image placed on a canvas: where, and the canvas's size
// (zero: no canvas).
type Embed struct{ At, Size image.Point }

// finish places the turned image on its canvases: contain's box, extend's
// canvas (the box asked) at the gravity, the padding; then the watermark
// on the picture.
func (p *Plan) finish() {
	o := p.opts
	size := p.Turned
	picture := image.Rectangle{Max: size}
	p.Contain, p.Extend = Embed{}, Embed{}
	if p.fit == thumbjob.FitContain && size != p.Box {
		p.Contain = Embed{At: image.Pt((p.Box.X-size.X)/2, (p.Box.Y-size.Y)/2), Size: p.Box}
		picture, size = picture.Add(p.Contain.At), p.Box
	}
	if o.Extend && (size.X < p.Canvas.X || size.Y < p.Canvas.Y) {
		x, y, point := o.Point()
		if !point {
			x, y = 0.5, 0.5 // attention and entropy place it centred
		}
		canvas := image.Pt(max(size.X, p.Canvas.X), max(size.Y, p.Canvas.Y))
		at := image.Pt(int(math.Round(x*float64(canvas.X-size.X))), int(math.Round(y*float64(canvas.Y-size.Y))))
		if o.Offset != nil {
			at = position(canvas, size, anchorOf(o), 1) // imgproxy's placement
		}
		p.Extend = Embed{At: at, Size: canvas}
		picture, size = picture.Add(at), canvas
	}
	p.Aspect = Embed{}
	if a := o.ExtendAspect; a != nil && o.Width > 0 && o.Height > 0 {
		// imgproxy's extend_aspect_ratio: the image (before extend) grown
		// on one side to the box's aspect ratio.
		canvas, w, h := p.Turned, float64(p.Box.X), float64(p.Box.Y)
		switch dw, dh := w/float64(canvas.X), h/float64(canvas.Y); {
		case dh > dw:
			canvas.Y = roundHalfUp(float64(canvas.X) * h / w)
		case dw > dh:
			canvas.X = roundHalfUp(float64(canvas.Y) * w / h)
		}
		if canvas.X > size.X || canvas.Y > size.Y {
			canvas = image.Pt(max(canvas.X, size.X), max(canvas.Y, size.Y))
			at := position(canvas, size, anchor{g: a.Gravity, x: a.Offset.X, y: a.Offset.Y}, 1)
			p.Aspect = Embed{At: at, Size: canvas}
			picture, size = picture.Add(at), canvas
		}
	}
	if pad := o.Pad; pad != (thumbjob.Sides{}) {
		picture = picture.Add(image.Pt(pad.Left, pad.Top))
		size = size.Add(image.Pt(pad.Left+pad.Right, pad.Top+pad.Bottom))
	}
	p.Picture, p.Out = picture, size
	p.Mark = image.Rectangle{}
	if w := o.Watermark; w != nil && p.lim.Mark.X > 0 {
		if w.Position == thumbjob.PositionReplicate {
			p.Mark = picture
		} else {
			m := p.lim.Mark
			if w.Scale > 0 {
				k := p.MarkScale()
				m = image.Pt(max(roundHalfUp(float64(m.X)*k), 1), max(roundHalfUp(float64(m.Y)*k), 1))
			}
			at := p.MarkAt(m)
			p.Mark = image.Rectangle{at, at.Add(m)}
		}
	}
}

// MarkScale is the factor the watermark is resized by: its width a
// fraction (wm's scale) of the picture's; 1 for its own size.
func (p Plan) MarkScale() float64 {
	w := p.opts.Watermark
	if w == nil || w.Scale <= 0 || p.lim.Mark.X <= 0 {
		return 1
	}
	return w.Scale * float64(p.Picture.Dx()) / float64(p.lim.Mark.X)
}

// MarkAt is where a watermark of size mark goes on the final canvas: at
// its position on the picture, its offsets from the edges it names
// (across for ea and we, down for no and so), centred otherwise (X and Y
// then move it).
func (p Plan) MarkAt(mark image.Point) image.Point {
	w := p.opts.Watermark
	pw, ph := p.Picture.Dx(), p.Picture.Dy()
	left, top := (pw-mark.X)/2+w.X, (ph-mark.Y)/2+w.Y
	switch w.Position {
	case thumbjob.PositionWest, thumbjob.PositionNorthWest, thumbjob.PositionSouthWest:
		left = w.X
	case thumbjob.PositionEast, thumbjob.PositionNorthEast, thumbjob.PositionSouthEast:
		left = pw - mark.X - w.X
	}
	switch w.Position {
	case thumbjob.PositionNorth, thumbjob.PositionNorthWest, thumbjob.PositionNorthEast:
		top = w.Y
	case thumbjob.PositionSouth, thumbjob.PositionSouthWest, thumbjob.PositionSouthEast:
		top = ph - mark.Y - w.Y
	}
	return p.Picture.Min.Add(image.Pt(left, top))
}

// CropIn is the region in the pixels of the decoded, upright image of
// size decoded (the displayed source shrunk on load: libjpeg rounds a
// shrunk side up): the pixels the region touches.
func (p Plan) CropIn(decoded image.Point) image.Rectangle {
	rx, ry := p.ratio(decoded)
	r := p.Region
	x0, y0 := int(float64(r.Min.X)*rx), int(float64(r.Min.Y)*ry)
	x1, y1 := min(int(math.Ceil(float64(r.Max.X)*rx)), decoded.X), min(int(math.Ceil(float64(r.Max.Y)*ry)), decoded.Y)
	return image.Rect(x0, y0, x0+max(x1-x0, 1), y0+max(y1-y0, 1))
}

// Found is the region a trim found: box, in the pixels of the cropped
// decode (the source decoded at decoded, then cut to CropIn), in the
// displayed source's pixels, within the region.
func (p Plan) Found(decoded image.Point, box image.Rectangle) image.Rectangle {
	rx, ry := p.ratio(decoded)
	at := image.Pt(int(float64(box.Min.X)/rx), int(float64(box.Min.Y)/ry)).Add(p.Region.Min)
	size := image.Pt(max(int(math.Round(float64(box.Dx())/rx)), 1), max(int(math.Round(float64(box.Dy())/ry)), 1))
	return image.Rectangle{at, at.Add(size)}.Intersect(p.Region)
}

// ratio is the decoded image's pixels a displayed source pixel.
func (p Plan) ratio(decoded image.Point) (rx, ry float64) {
	return float64(decoded.X) / float64(p.Source.X), float64(decoded.Y) / float64(p.Source.Y)
}

// frames is how many frames a job makes: every frame of a GIF or WebP
// when an animation is asked for and the format written holds one (and no
// watermark is put on it); else the first.
func frames(s Source, o thumbjob.Options) int {
	if s.Look.Video != nil {
		n := PreviewFrames(o)
		if times := o.Frame.PreviewTimes(s.Look.Video.Duration); n > 1 && len(times) > 0 {
			n = len(times) // the engine's frames (videoframe.Choose), fewer with every=S on a short video
		}
		return n
	}
	spec, _ := imagefmt.Lookup(o.Format)
	if o.Animated && spec.Animated && s.Frames > 1 && AnimatedInput(s.Format) && o.Watermark == nil {
		return s.Frames
	}
	return 1
}

// PreviewFrames is how many frames of a video a job decodes and writes:
// a preview's count (frames=N) when the format written animates and no
// watermark is put on it (an animation's rule, as for a GIF), else the
// one frame. The engine decodes as many (thumb) and memcost prices them.
func PreviewFrames(o thumbjob.Options) int {
	spec, _ := imagefmt.Lookup(o.Format)
	if o.Frame.Count > 1 && spec.Animated && o.Watermark == nil {
		return o.Frame.Count
	}
	return 1
}

// VideoFrame is the frame (or a preview's frames) a job decodes of a
// video source: o.Frame, a preview only when PreviewFrames keeps it (a
// video's own format is never written: o's source format is JPEG). The
// engine decodes it, and a ranged source reads what it needs
// (videoframe.Spans).
func VideoFrame(o thumbjob.Options) thumbjob.Frame {
	f := o.Frame
	f.Count = PreviewFrames(o.FromSource(imagefmt.Video))
	if f.Count <= 1 {
		f.Every = 0
	}
	return f
}

// AnimatedInput: the formats whose frames thumbd reads when an animation
// is asked for. A multi-page TIFF, a HEIF collection, an AVIF or JPEG XL
// sequence give their first page or frame, whatever their count.
func AnimatedInput(f imagefmt.Format) bool { return f == imagefmt.GIF || f == imagefmt.WebP }

// Step is one step of a job, in the order a plan lists them; the engine
// runs each as a function, and memcost prices each.
type Step string

// The steps, in their order (docs/thumbnails.md, "Transforms"). rotate
// and flip commute with the resize: they run on the small image, the
// resize asked with the box and gravity turned back.
const (
	StepDecode    Step = "decode"    // the source decoded (Load): alone, or resized with it
	StepCrop      Step = "crop"      // cut to the crop's region
	StepTrim      Step = "trim"      // the border of one colour cut away
	StepResize    Step = "resize"    // resized into the box (Resize), when the decode did not
	StepCut       Step = "cut"       // the box cut from the image covering it (Resize.Cut)
	StepColour    Step = "colour"    // into 8-bit sRGB (nclx, ICC)
	StepRotate    Step = "rotate"    // rotate=, then flip=
	StepContain   Step = "contain"   // contain's padding to the box
	StepFilters   Step = "filters"   // blur, sharpen, pixelate; then 8 bits a sample
	StepExtend    Step = "extend"    // the canvas of the box asked, at the gravity
	StepAspect    Step = "aspect"    // a canvas of the box's aspect ratio (extend_aspect_ratio)
	StepPad       Step = "pad"       // pad=
	StepWatermark Step = "watermark" // the mark on the picture
	StepFlatten   Step = "flatten"   // alpha onto the background, for a format without it
	StepEncode    Step = "encode"
)

// steps lists the plan's steps in order; a step with nothing to do is
// left out.
func (p *Plan) steps() []Step {
	o := p.opts
	s := make([]Step, 0, 12)
	s = append(s, StepDecode)
	if o.Crop != nil {
		s = append(s, StepCrop)
	}
	if o.Trim != nil {
		s = append(s, StepTrim)
	}
	if p.Load != LoadThumbnail {
		s = append(s, StepResize)
	}
	if !p.Resize.Cut.Empty() {
		s = append(s, StepCut)
	}
	s = append(s, StepColour)
	if o.Rotate != 0 || o.Flip != thumbjob.FlipNone {
		s = append(s, StepRotate)
	}
	if p.Contain.Size != (image.Point{}) {
		s = append(s, StepContain)
	}
	s = append(s, StepFilters)
	if p.Extend.Size != (image.Point{}) {
		s = append(s, StepExtend)
	}
	if p.Aspect.Size != (image.Point{}) {
		s = append(s, StepAspect)
	}
	if o.Pad != (thumbjob.Sides{}) {
		s = append(s, StepPad)
	}
	if o.Watermark != nil {
		s = append(s, StepWatermark)
	}
	if spec, _ := imagefmt.Lookup(o.Format); !spec.Alpha {
		s = append(s, StepFlatten)
	}
	return append(s, StepEncode)
}

// Has reports whether the plan has step s.
func (p Plan) Has(s Step) bool {
	for _, t := range p.Steps {
		if t == s {
			return true
		}
	}
	return false
}

// Options are the options the plan was made for.
func (p Plan) Options() thumbjob.Options { return p.opts }
