package plan

import (
	"image"
	"math"
	"slices"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// anchor is a gravity as imgproxy places by it: a compass point, the
// centre or a focal point, and its offsets (thumbjob.Offset's rule: at
// least 1 in size, pixels; below, a fraction of the side; a focal
// point's are its fractions).
type anchor struct {
	g    thumbjob.Gravity
	x, y float64
}

// position is where a piece of size inner goes in outer at a (imgproxy's
// calcPosition): the point's rounding to even, the centre's
// (outer-inner+1)/2 rounded to even, offsets in pixels times dpr, kept
// within outer.
func position(outer, inner image.Point, a anchor, dpr float64) image.Point {
	offset := func(v float64, side int) int {
		if math.Abs(v) >= 1 {
			return int(math.RoundToEven(v * dpr))
		}
		return int(math.RoundToEven(float64(side) * v))
	}
	var at image.Point
	if a.g == thumbjob.GravityFocal {
		at = image.Pt(int(math.RoundToEven(float64(outer.X)*a.x))-inner.X/2, int(math.RoundToEven(float64(outer.Y)*a.y))-inner.Y/2)
	} else {
		ox, oy := offset(a.x, outer.X), offset(a.y, outer.Y)
		at = image.Pt(int(math.RoundToEven(float64(outer.X-inner.X+1)/2))+ox, int(math.RoundToEven(float64(outer.Y-inner.Y+1)/2))+oy)
		switch a.g {
		case thumbjob.GravityNorth, thumbjob.GravityNorthEast, thumbjob.GravityNorthWest:
			at.Y = oy
		case thumbjob.GravitySouth, thumbjob.GravitySouthEast, thumbjob.GravitySouthWest:
			at.Y = outer.Y - inner.Y - oy
		}
		switch a.g {
		case thumbjob.GravityEast, thumbjob.GravityNorthEast, thumbjob.GravitySouthEast:
			at.X = outer.X - inner.X - ox
		case thumbjob.GravityWest, thumbjob.GravityNorthWest, thumbjob.GravitySouthWest:
			at.X = ox
		}
	}
	at.X = max(0, min(at.X, outer.X-inner.X))
	at.Y = max(0, min(at.Y, outer.Y-inner.Y))
	return at
}

// turnedBack is a as it lies in the image before rotate (degrees
// clockwise) and flip, which run after it (imgproxy's
// GravityOptions.RotateAndFlip): placing by it there and then turning
// gives what placing by a in the turned image gives.
func turnedBack(a anchor, rotate int, flipX, flipY bool) anchor {
	compass := func(m map[thumbjob.Gravity]thumbjob.Gravity) {
		if g, ok := m[a.g]; ok {
			a.g = g
		}
	}
	// a flip swaps the compass points across its axis, and negates the
	// offset along it of the points on the axis (a focal point's mirrors)
	for _, f := range []struct {
		on     bool
		swap   map[thumbjob.Gravity]thumbjob.Gravity
		onAxis []thumbjob.Gravity
		v      *float64
	}{
		{flipX, map[thumbjob.Gravity]thumbjob.Gravity{thumbjob.GravityEast: thumbjob.GravityWest, thumbjob.GravityWest: thumbjob.GravityEast,
			thumbjob.GravityNorthWest: thumbjob.GravityNorthEast, thumbjob.GravityNorthEast: thumbjob.GravityNorthWest,
			thumbjob.GravitySouthWest: thumbjob.GravitySouthEast, thumbjob.GravitySouthEast: thumbjob.GravitySouthWest},
			[]thumbjob.Gravity{thumbjob.GravityCentre, thumbjob.GravityNorth, thumbjob.GravitySouth}, &a.x},
		{flipY, map[thumbjob.Gravity]thumbjob.Gravity{thumbjob.GravityNorth: thumbjob.GravitySouth, thumbjob.GravitySouth: thumbjob.GravityNorth,
			thumbjob.GravityNorthWest: thumbjob.GravitySouthWest, thumbjob.GravityNorthEast: thumbjob.GravitySouthEast,
			thumbjob.GravitySouthWest: thumbjob.GravityNorthWest, thumbjob.GravitySouthEast: thumbjob.GravityNorthEast},
			[]thumbjob.Gravity{thumbjob.GravityCentre, thumbjob.GravityEast, thumbjob.GravityWest}, &a.y},
	} {
		if !f.on {
			continue
		}
		compass(f.swap)
		switch {
		case slices.Contains(f.onAxis, a.g):
			*f.v = -*f.v
		case a.g == thumbjob.GravityFocal:
			*f.v = 1 - *f.v
		}
	}
	n, e, s, w := thumbjob.GravityNorth, thumbjob.GravityEast, thumbjob.GravitySouth, thumbjob.GravityWest
	nw, ne, sw, se := thumbjob.GravityNorthWest, thumbjob.GravityNorthEast, thumbjob.GravitySouthWest, thumbjob.GravitySouthEast
	switch rotate % 360 {
	case 90:
		compass(map[thumbjob.Gravity]thumbjob.Gravity{n: w, e: n, s: e, w: s, nw: sw, ne: nw, sw: se, se: ne})
		switch a.g {
		case thumbjob.GravityCentre, e, w:
			a.x, a.y = a.y, -a.x
		case thumbjob.GravityFocal:
			a.x, a.y = a.y, 1-a.x
		default:
			a.x, a.y = a.y, a.x
		}
	case 180:
		compass(map[thumbjob.Gravity]thumbjob.Gravity{n: s, e: w, s: n, w: e, nw: se, ne: sw, sw: ne, se: nw})
		switch a.g {
		case thumbjob.GravityCentre:
			a.x, a.y = -a.x, -a.y
		case n, s:
			a.x = -a.x
		case e, w:
			a.y = -a.y
		case thumbjob.GravityFocal:
			a.x, a.y = 1-a.x, 1-a.y
		}
	case 270:
		compass(map[thumbjob.Gravity]thumbjob.Gravity{n: e, e: s, s: w, w: n, nw: ne, ne: se, sw: nw, se: sw})
		switch a.g {
		case thumbjob.GravityCentre, n, s:
			a.x, a.y = -a.y, a.x
		case thumbjob.GravityFocal:
			a.x, a.y = 1-a.y, a.x
		default:
			a.x, a.y = a.y, a.x
		}
	}
	return a
}

// anchorOf is o's gravity as imgproxy places by it (focal: its point;
// compass: its offsets; attention and entropy, which have no place: the
// centre).
func anchorOf(o thumbjob.Options) anchor {
	switch {
	case o.Gravity == thumbjob.GravityFocal:
		return anchor{g: o.Gravity, x: o.FocalX, y: o.FocalY}
	case o.Gravity == thumbjob.GravityAttention || o.Gravity == thumbjob.GravityEntropy:
		return anchor{g: thumbjob.GravityCentre}
	case o.Offset != nil:
		return anchor{g: o.Gravity, x: o.Offset.X, y: o.Offset.Y}
	}
	return anchor{g: o.Gravity}
}

// cropSide is imgproxy's CalcCropSize: a crop's side of an image's side
// orig: 0 none (the whole side), at least 1 pixels, below a fraction
// (at least 1 pixel), never past the side.
func cropSide(orig int, crop float64) int {
	switch {
	case crop == 0:
		return orig
	case crop >= 1:
		return min(int(crop), orig)
	}
	return min(max(1, int(math.Round(float64(orig)*crop))), orig)
}

// anchored is imgproxy's crop of the displayed source: its size as the
// box sees the image (after rotate and flip), placed there by its anchor,
// as a region of the upright source (the anchor turned back through the
// flip and the rotation, the size through the rotation).
func anchored(displayed image.Point, r thumbjob.Region, o thumbjob.Options) image.Rectangle {
	size := image.Pt(cropSide(displayed.X, r.W), cropSide(displayed.Y, r.H))
	if o.Reorients() {
		size = image.Pt(cropSide(displayed.X, r.H), cropSide(displayed.Y, r.W))
	}
	a := anchor{g: r.Anchor.Gravity, x: r.Anchor.Offset.X, y: r.Anchor.Offset.Y}
	a = turnedBack(a, o.Rotate, o.Flip == thumbjob.FlipHorizontal || o.Flip == thumbjob.FlipBoth, o.Flip == thumbjob.FlipVertical || o.Flip == thumbjob.FlipBoth)
	at := position(displayed, size, a, 1)
	return image.Rectangle{at, at.Add(size)}
}

// turn maps a rectangle of an image of size (before rotate and flip) to
// where it lies once the image is turned: the inverse of unturn.
func turn(r image.Rectangle, size image.Point, rotate int, flipX, flipY bool) image.Rectangle {
	switch rotate % 360 {
	case 90: // (x, y) to (h-y, x)
		r, size = image.Rect(size.Y-r.Max.Y, r.Min.X, size.Y-r.Min.Y, r.Max.X), image.Pt(size.Y, size.X)
	case 180:
		r = image.Rect(size.X-r.Max.X, size.Y-r.Max.Y, size.X-r.Min.X, size.Y-r.Min.Y)
	case 270: // (x, y) to (y, w-x)
		r, size = image.Rect(r.Min.Y, size.X-r.Max.X, r.Max.Y, size.X-r.Min.X), image.Pt(size.Y, size.X)
	}
	if flipX {
		r = image.Rect(size.X-r.Max.X, r.Min.Y, size.X-r.Min.X, r.Max.Y)
	}
	if flipY {
		r = image.Rect(r.Min.X, size.Y-r.Max.Y, r.Max.X, size.Y-r.Min.Y)
	}
	return r
}

// unturn maps a rectangle of the turned image (of size turned) back to
// the image before rotate and flip.
func unturn(r image.Rectangle, turned image.Point, rotate int, flipX, flipY bool) image.Rectangle {
	if flipY {
		r = image.Rect(r.Min.X, turned.Y-r.Max.Y, r.Max.X, turned.Y-r.Min.Y)
	}
	if flipX {
		r = image.Rect(turned.X-r.Max.X, r.Min.Y, turned.X-r.Min.X, r.Max.Y)
	}
	switch rotate % 360 {
	case 90: // turned (x, y) came from (y, h'-x) where h' = turned.X
		return image.Rect(r.Min.Y, turned.X-r.Max.X, r.Max.Y, turned.X-r.Min.X)
	case 180:
		return image.Rect(turned.X-r.Max.X, turned.Y-r.Max.Y, turned.X-r.Min.X, turned.Y-r.Min.Y)
	case 270: // turned (x, y) came from (w'-y, x) where w' = turned.Y
		return image.Rect(turned.Y-r.Max.Y, r.Min.X, turned.Y-r.Min.Y, r.Max.X)
	}
	return r
}

// TrimEqual is a trimmed box within an image of size made to cut as much
// from either side as from the other where equal says (horizontally,
// vertically): the smaller of the two borders (imgproxy's equal_hor and
// equal_ver).
func TrimEqual(box image.Rectangle, size image.Point, hor, ver bool) image.Rectangle {
	if hor {
		m := min(box.Min.X, size.X-box.Max.X)
		box.Min.X, box.Max.X = m, size.X-m
	}
	if ver {
		m := min(box.Min.Y, size.Y-box.Max.Y)
		box.Min.Y, box.Max.Y = m, size.Y-m
	}
	return box
}
