package thumbjob

import (
	"fmt"
	"math"
	"strings"
)

// Transforms are what a thumbnail does beyond the resize, each in its
// place of one fixed order (docs/thumbnails.md, "Transforms"): crop,
// trim, rotate and flip, resize, blur, sharpen and pixelate, extend and
// pad, watermark. The zero value does nothing beyond today's resize.
type Transforms struct {
	// NoEnlarge (enlarge=false): a source smaller than the box is not
	// scaled up; the box shrinks by the factor the fit would have
	// enlarged by (ADR 0006: enlarging stays the default).
	NoEnlarge bool `json:"no_enlarge,omitempty"`
	// Rotate turns the image clockwise by 90, 180 or 270 degrees, after
	// EXIF orientation and before the resize (so the box is the rotated
	// image's).
	Rotate int  `json:"rotate,omitempty"`
	Flip   Flip `json:"flip,omitempty"`
	// Background is the colour of contain's padding, pad, extend and the
	// flattening of alpha onto an opaque format; nil: today's (white, or
	// transparent where the format keeps alpha).
	Background *Colour `json:"bg,omitempty"`
	// Pad adds pixels around the resized image (after dpr), in the
	// background colour.
	Pad Sides `json:"pad,omitzero"`
	// Extend places the resized image on a canvas of the box's size, at
	// the gravity (with enlarge=false or fit=inside the image may be
	// smaller than the box).
	Extend bool `json:"extend,omitempty"`
	// Crop is a region of the source as displayed, taken first.
	Crop *Region `json:"crop,omitempty"`
	// Trim cuts the border of one colour away, after the crop.
	Trim *Trim `json:"trim,omitempty"`
	// Blur and Sharpen are Gaussian sigmas (0: none), and Pixelate a block
	// size in pixels (0: none), applied to the resized image.
	Blur     float64 `json:"blur,omitempty"`
	Sharpen  float64 `json:"sharpen,omitempty"`
	Pixelate int     `json:"pixelate,omitempty"`
	// Watermark puts the configured watermark on the thumbnail, last.
	Watermark *Watermark `json:"wm,omitempty"`
	// MinWidth and MinHeight (imgproxy's min-width and min-height): the
	// resize's scale is raised until the image is at least this wide and
	// tall (after dpr), then cut to the box where it is given.
	MinWidth  int `json:"min_w,omitempty"`
	MinHeight int `json:"min_h,omitempty"`
	// ExtendAspect (imgproxy's extend_aspect_ratio): the image on a canvas
	// of the box's aspect ratio (both sides given), placed by the anchor;
	// nil: none.
	ExtendAspect *Anchor `json:"extend_ar,omitempty"`
}

// The transforms' bounds: params refuses values outside them, and the
// memory estimate is checked at them.
const (
	MaxBlur    = 100.0
	MaxSharpen = 10.0
	// MinSigma is the smallest Gaussian sigma taken (0 is none): below it
	// libvips' mask is one sample, which changes nothing.
	MinSigma    = 0.3
	MaxPixelate = 256
	MaxPad      = 1024 // each side, after dpr
	// MaxMarkOffset bounds the watermark's offsets (and a tiled one's
	// gaps), in pixels: the largest box's side.
	MaxMarkOffset = 4096
)

// Flip mirrors the image: h across (left becomes right), v down, hv both.
type Flip string

const (
	FlipNone       Flip = ""
	FlipHorizontal Flip = "h"
	FlipVertical   Flip = "v"
	FlipBoth       Flip = "hv"
)

// Colour is an sRGB colour with alpha, 0..255 each.
type Colour struct {
	R, G, B, A uint8
}

func (c Colour) String() string { return fmt.Sprintf("%02x%02x%02x%02x", c.R, c.G, c.B, c.A) }

// Sides are pixels on each side of an image.
type Sides struct {
	Top, Right, Bottom, Left int
}

// Region is a rectangle of the source as displayed: in pixels, or in
// fractions (0..1) of its width and height. With Anchor it is imgproxy's
// crop instead: W and H its size as the box sees the image (after rotate
// and flip), each in pixels when at least 1, else a fraction of the side
// (0: the whole side), placed by the anchor (X and Y unused).
type Region struct {
	X, Y, W, H float64
	Fractions  bool    `json:"fractions,omitempty"`
	Anchor     *Anchor `json:"anchor,omitempty"`
}

// Anchor places a region of a given size as imgproxy's crop does: at the
// gravity (a compass point, the centre or a focal point at Offset), moved
// by Offset.
type Anchor struct {
	Gravity Gravity `json:"gravity"`
	Offset  Offset  `json:"offset"`
}

// In is the region in pixels of a w x h image: the pixels it touches
// (at least one a side), clipped to the image; ok is false when it starts
// outside.
func (r Region) In(w, h int) (x, y, cw, ch int, ok bool) {
	fx, fy, fw, fh := r.X, r.Y, r.W, r.H
	if r.Fractions {
		fx, fy, fw, fh = fx*float64(w), fy*float64(h), fw*float64(w), fh*float64(h)
	}
	// The tolerance keeps float error (0.7 x 10 = 7.000000000000001)
	// from adding a pixel.
	const eps = 1e-9
	x0, y0 := int(math.Floor(fx+eps)), int(math.Floor(fy+eps))
	if x0 >= w || y0 >= h {
		return 0, 0, 0, 0, false
	}
	x1 := min(max(int(math.Ceil(fx+fw-eps)), x0+1), w)
	y1 := min(max(int(math.Ceil(fy+fh-eps)), y0+1), h)
	return x0, y0, x1 - x0, y1 - y0, true
}

// Trim is trim=: the border whose colour is within Threshold (0..255, a
// distance in sRGB) of Colour, or of the top-left pixel's when nil.
// EqualHor and EqualVer (imgproxy's equal_hor, equal_ver) cut as much from
// the left as from the right, and from the top as from the bottom: the
// smaller of the two borders.
type Trim struct {
	Threshold float64 `json:"threshold"`
	Colour    *Colour `json:"colour,omitempty"`
	EqualHor  bool    `json:"equal_hor,omitempty"`
	EqualVer  bool    `json:"equal_ver,omitempty"`
}

// Position is where a watermark goes: imgproxy's names.
type Position string

const (
	PositionCentre    Position = "ce"
	PositionNorth     Position = "no"
	PositionSouth     Position = "so"
	PositionEast      Position = "ea"
	PositionWest      Position = "we"
	PositionNorthEast Position = "noea"
	PositionNorthWest Position = "nowe"
	PositionSouthEast Position = "soea"
	PositionSouthWest Position = "sowe"
	PositionReplicate Position = "re" // tiled over the whole thumbnail
)

// Positions lists every watermark position, the default first.
func Positions() []Position {
	return []Position{PositionCentre, PositionNorth, PositionSouth, PositionEast, PositionWest,
		PositionNorthEast, PositionNorthWest, PositionSouthEast, PositionSouthWest, PositionReplicate}
}

// Watermark is wm=: the configured watermark's opacity (0..1], where it
// goes, its offset in pixels from that edge (or the gap between tiles for
// re), and its scale: 0 keeps its size, else its width as a fraction of
// the thumbnail's.
type Watermark struct {
	Opacity  float64  `json:"opacity"`
	Position Position `json:"position"`
	X        int      `json:"x,omitempty"`
	Y        int      `json:"y,omitempty"`
	Scale    float64  `json:"scale,omitempty"`
	// Mark names the watermark's image (a digest of its file), so that
	// results made with another one have other keys and ETags.
	Mark string `json:"mark,omitempty"`
}

// Reorients reports whether the image turns on its side before the
// resize (rotate=90 or 270): the box is then the rotated image's.
func (t Transforms) Reorients() bool { return t.Rotate == 90 || t.Rotate == 270 }

// normalised is the canonical text of the transforms that are set, each
// ",name=value"; "" for none.
func (t Transforms) normalised() string {
	var b strings.Builder
	add := func(name, format string, args ...any) {
		fmt.Fprintf(&b, ","+name+"="+format, args...)
	}
	if t.NoEnlarge {
		add("enlarge", "false")
	}
	if c := t.Crop; c != nil && c.Anchor == nil {
		add("crop", "%g:%g:%g:%g:%t", c.X, c.Y, c.W, c.H, c.Fractions)
	} else if c != nil {
		add("crop", "%g:%g@%s%+g%+g", c.W, c.H, c.Anchor.Gravity, c.Anchor.Offset.X, c.Anchor.Offset.Y)
	}
	if t.Trim != nil {
		c := "tl"
		if t.Trim.Colour != nil {
			c = t.Trim.Colour.String()
		}
		add("trim", "%g:%s", t.Trim.Threshold, c)
		if t.Trim.EqualHor || t.Trim.EqualVer {
			add("trim_equal", "%t:%t", t.Trim.EqualHor, t.Trim.EqualVer)
		}
	}
	if t.MinWidth != 0 || t.MinHeight != 0 {
		add("min", "%d:%d", t.MinWidth, t.MinHeight)
	}
	if a := t.ExtendAspect; a != nil {
		add("extend_ar", "%s%+g%+g", a.Gravity, a.Offset.X, a.Offset.Y)
	}
	if t.Rotate != 0 {
		add("rotate", "%d", t.Rotate)
	}
	if t.Flip != FlipNone {
		add("flip", "%s", t.Flip)
	}
	if t.Blur != 0 {
		add("blur", "%g", t.Blur)
	}
	if t.Sharpen != 0 {
		add("sharpen", "%g", t.Sharpen)
	}
	if t.Pixelate > 1 {
		add("pixelate", "%d", t.Pixelate)
	}
	if t.Extend {
		add("extend", "true")
	}
	if t.Pad != (Sides{}) {
		add("pad", "%d:%d:%d:%d", t.Pad.Top, t.Pad.Right, t.Pad.Bottom, t.Pad.Left)
	}
	if t.Background != nil {
		add("bg", "%s", t.Background)
	}
	if t.Watermark != nil {
		w := t.Watermark
		add("wm", "%g:%s:%d:%d:%g:%s", w.Opacity, w.Position, w.X, w.Y, w.Scale, w.Mark)
	}
	return b.String()
}

// Outside reports whether the header tells that the region is outside
// the image whatever its EXIF orientation (the header does not read it):
// the parse stage's 400. A region the header leaves open is the engine's
// to judge; an anchored one is always inside.
func (r Region) Outside(h Header) bool {
	if h.Width <= 0 || h.Height <= 0 || r.Anchor != nil {
		return false
	}
	_, _, _, _, upright := r.In(h.Width, h.Height)
	_, _, _, _, turned := r.In(h.Height, h.Width)
	return !upright && !turned
}
