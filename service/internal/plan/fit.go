package plan

import (
	"image"
	"math"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// scales is the fit's scale rule, written once: the scale a fit gives
// each side of an image into a box, from the box's side over the
// image's: cover takes the larger for both, contain and inside the
// smaller, fill each its own.
func scales(fit thumbjob.Fit, box, img image.Point) (kx, ky float64) {
	sx, sy := float64(box.X)/float64(img.X), float64(box.Y)/float64(img.Y)
	switch fit {
	case thumbjob.FitCover:
		return max(sx, sy), max(sx, sy)
	case thumbjob.FitContain, thumbjob.FitInside:
		return min(sx, sy), min(sx, sy)
	}
	return sx, sy
}

// resolve fills a missing side of the box from an image's aspect ratio,
// bounded by maxSide (0: none) and at least 1; neither side given is the
// default box (thumbjob.DefaultSide, bounded).
func resolve(box, img image.Point, maxSide int) image.Point {
	bound := func(v float64) int {
		if maxSide > 0 {
			v = min(v, float64(maxSide))
		}
		return int(max(math.Round(v), 1))
	}
	switch {
	case box.X == 0 && box.Y == 0:
		side := thumbjob.DefaultSide
		if maxSide > 0 {
			side = min(side, maxSide)
		}
		return image.Pt(side, side)
	case box.X == 0:
		box.X = bound(float64(box.Y) * float64(img.X) / float64(img.Y))
	case box.Y == 0:
		box.Y = bound(float64(box.X) * float64(img.Y) / float64(img.X))
	}
	return box
}

// noEnlarge is the box of enlarge=false on an image: shrunk by the factor
// the fit would have scaled the image up by (the larger of its two for a
// fill), so that the image keeps its size (on one side at least) and the
// box its aspect ratio.
func noEnlarge(box, img image.Point, fit thumbjob.Fit) image.Point {
	kx, ky := scales(fit, box, img)
	k := max(kx, ky)
	if k <= 1 {
		return box
	}
	return image.Pt(max(int(math.Round(float64(box.X)/k)), 1), max(int(math.Round(float64(box.Y)/k)), 1))
}

// cover is the image scaled to cover the box: never smaller than it.
func cover(img, box image.Point) image.Point {
	k, _ := scales(thumbjob.FitCover, box, img)
	return image.Pt(max(int(math.Ceil(float64(img.X)*k)), box.X), max(int(math.Ceil(float64(img.Y)*k)), box.Y))
}

// fitted is the image scaled to fit inside the box: the side that limits
// it is the box's, the other the image's divided by the same shrink and
// rounded (at least 1), as libvips' thumbnail operation computes it on
// an image it did not shrink on load.
func fitted(img, box image.Point) image.Point {
	hshrink, vshrink := float64(img.X)/float64(box.X), float64(img.Y)/float64(box.Y)
	if hshrink >= vshrink {
		return image.Pt(box.X, max(roundHalfUp(float64(img.Y)/hshrink), 1))
	}
	return image.Pt(max(roundHalfUp(float64(img.X)/vshrink), 1), box.Y)
}

// roundHalfUp is libvips' VIPS_ROUND_UINT for a positive value.
func roundHalfUp(v float64) int { return int(math.Floor(v + 0.5)) }

// need is what the resize makes of an image into the box with fit: the
// size a shrink on load must still cover, so that the resize never
// enlarges.
func need(img, box image.Point, fit thumbjob.Fit) image.Point {
	kx, ky := scales(fit, box, img)
	return image.Pt(max(int(math.Round(float64(img.X)*kx)), 1), max(int(math.Round(float64(img.Y)*ky)), 1))
}

// shrinkOnLoad is the JPEG shrink on load, written once: the largest
// libjpeg can decode at (1/8, 1/4, 1/2 scale, much less work than a whole
// decode) whose image of region still holds need; else 1. libjpeg rounds
// a shrunk side up; rounding down here keeps a margin, and keeps sources
// thinner than the shrink (a 20000x1 strip, which libvips refuses to
// load at 1/8) on the normal path.
func shrinkOnLoad(region, need image.Point) int {
	for _, s := range []int{8, 4, 2} {
		if region.X/s >= need.X && region.Y/s >= need.Y {
			return s
		}
	}
	return 1
}

// cutAt is where a window of size n starts along a side of size total so
// that the fraction f of the side is as near the window's centre as the
// side allows.
func cutAt(f float64, total, n int) int {
	return min(max(int(math.Round(f*float64(total)-float64(n)/2)), 0), total-n)
}

// crops is the gravity libvips' crop takes: attention and entropy, else
// the centre.
func crops(g thumbjob.Gravity) thumbjob.Gravity {
	if g == thumbjob.GravityAttention || g == thumbjob.GravityEntropy {
		return g
	}
	return thumbjob.GravityCentre
}

// unturned is the gravity the resize is asked for before rotate and flip,
// which run after it on the small image: a point gravity (compass, focal)
// carried back through the flip and the rotation into the upright
// source's frame, where a point other than the centre is a focal point.
func unturned(o thumbjob.Options) (g thumbjob.Gravity, x, y float64) {
	x, y, point := o.Point()
	if !point || o.Gravity == thumbjob.GravityCentre {
		return o.Gravity, o.FocalX, o.FocalY
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
	return thumbjob.GravityFocal, x, y
}

// HEIFThumbnailAspectTolerance is how far, relatively, a HEIF's embedded
// thumbnail's aspect ratio may be from its primary image's for thumbd to
// let libvips decode it instead. libvips' own check (0.1 apart, absolute)
// only catches a broken 512x512 thumbnail of a 3:2 photo: it lets a 4:3
// photo's 320x256 thumbnail through, and the thumbnail made from it is
// 256x205, not 256x192. Within 1 %, the result is the primary's size to
// the pixel, as the tests check; an honest encoder's rounding of a 320-
// pixel side errs by 0.3 % at most.
const HEIFThumbnailAspectTolerance = 0.01

// HEIFThumbnailUse says whether libvips' thumbnail operation, asked for a
// w x h thumbnail with fit, decodes a HEIF's first embedded thumbnail (tw
// x th as decoded, its own irot applied) rather than its primary image
// (dw x dh as displayed): libvips (resample/thumbnail.c,
// vips_thumbnail_open, 8.14 to 8.16) opens the thumbnail when it is
// narrower than the image, its aspect ratio within 0.1 of the image's
// (heifload.c, vips_foreign_load_heif_set_thumbnail) and the common
// shrink from it to the box is above 1 (it need not be enlarged, and is
// not the box's exact size): the inverse of the fit's larger scale. thumbd
// is stricter (use): the aspect ratios within
// HEIFThumbnailAspectTolerance.
func HEIFThumbnailUse(dw, dh, tw, th, w, h int, fit thumbjob.Fit) (libvips, use bool) {
	if dw <= 0 || dh <= 0 || tw <= 0 || th <= 0 || w <= 0 || h <= 0 || tw >= dw {
		return false, false
	}
	img, thumb := float64(dw)/float64(dh), float64(tw)/float64(th)
	if math.Abs(img-thumb) > 0.1 {
		return false, false
	}
	kx, ky := scales(fit, image.Pt(w, h), image.Pt(tw, th))
	libvips = 1/max(kx, ky) > 1
	return libvips, libvips && math.Abs(thumb-img) <= HEIFThumbnailAspectTolerance*img
}

// FitEncodes bounds the encodes of an answer asked to fit in a number of
// bytes (imgproxy's max_bytes): from quality 100, FitQuality's steps reach
// FitFloor within it.
const FitEncodes = 10

// FitFloor is the quality below which no further encode is tried.
const FitFloor = 10

// FitQuality is the next quality to try when an answer encoded at q is
// size bytes against a target of target (imgproxy's saveImageToFitBytes):
// a quarter of q when it is over 3 times too long, half over 1.5 times,
// else three quarters; always lower, and at least 1.
func FitQuality(q, size, target int) int {
	k := 0.75
	switch d := float64(size) / float64(target); {
	case d > 3:
		k = 0.25
	case d > 1.5:
		k = 0.5
	}
	return max(1, min(q-1, int(math.Round(float64(q)*k))))
}
