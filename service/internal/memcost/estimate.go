package memcost

import (
	"math"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Job is what sizing needs of a thumbnail's options.
type Job struct {
	Width, Height int    // the box; 0 follows the source's aspect ratio
	Fit           string // "cover", "contain", "fill", "inside"
	Output        imagefmt.Format
	Animated      bool // every frame asked for (and the output can hold them)
	// QualityShrink: JPEG shrink-on-load leaves libvips 2x for its own
	// reduce (THUMBD_JPEG_SHRINK=quality), so twice the pixels per side.
	QualityShrink bool
	MaxSide       int   // the engine's bound on a side it resolves
	MaxPixels     int64 // the engine refuses more; sizing never counts more
}

// JobOf is the part of a job that thumbnail options give; the engine's
// settings (QualityShrink, MaxSide, MaxPixels) are the caller's to add.
func JobOf(o thumbjob.Options) Job {
	return Job{Width: o.Width, Height: o.Height, Fit: string(o.Fit), Output: o.Format, Animated: o.Animated}
}

// The model's constants, calibrated against peaks measured one job at a
// time in a fresh process (docs/hardening.md, "Memory"): a job's peak over
// the idle process is a fixed part (codec state, libvips' buffers and
// thread) plus what its decoded pixels, its resized image and its encoder
// hold, each with a margin over the largest ratio measured.
const (
	fixedCost = 16 << 20
	// decodeFactor multiplies the decoded source's bytes.
	decodeFactor = 1.0
	// resizedFactor multiplies the resized image's bytes (4 bands: the
	// pipeline's widest) for the resize and the copy handed to the encoder.
	resizedFactor = 2.0
	// alphaResizedBytes is the resized image's bytes per pixel for a
	// source with alpha: libvips premultiplies and resizes it in float
	// (4 bands of 4 bytes), then casts it back (4 more).
	alphaResizedBytes = 20.0
	// coefficientBytes: a progressive JPEG's decoder holds 2 bytes per
	// sample of the whole image (libjpeg's coefficient buffer); 2.5 keeps
	// a margin over the peaks measured.
	coefficientBytes = 2.5
)

// encoderBytes is what an encoder holds per output pixel beyond the image
// it is given (AVIF's encoder keeps several planes and its analysis).
var encoderBytes = map[imagefmt.Format]float64{
	imagefmt.PNG: 1, imagefmt.JPEG: 1, imagefmt.WebP: 2, imagefmt.AVIF: 8,
	// libjxl's encoder works on the whole frame in float (XYB, 3 x 4
	// bytes) plus its per-block decisions.
	imagefmt.JXL: 24,
}

// codecBytes is what a format's decoder holds per decoded pixel beyond
// the decoded image itself, for the whole image (none of these decode
// in strips): libheif keeps the codec's YUV planes (up to 3 samples a
// pixel, at 4:4:4) while it converts them to RGB; libjxl decodes a frame
// in float (3 x 4 bytes); a BMP or ICO is decoded in Go and copied once
// into the uncompressed TIFF libvips reads (the image's bytes twice).
func codecBytes(h Header) float64 {
	switch h.Format {
	case imagefmt.HEIC, imagefmt.AVIF:
		return 3 * float64(max(h.BytesPerSample, 1))
	case imagefmt.JXL:
		return 12
	case imagefmt.BMP, imagefmt.ICO:
		return 2 * float64(h.Bands)
	}
	return 0
}

// Estimate is the job's peak, in bytes, over the idle process.
func Estimate(h Header, j Job) int64 {
	frames := 1
	if spec, _ := imagefmt.Lookup(j.Output); j.Animated && spec.Animated && h.Frames > 1 {
		frames = h.Frames
	}
	w, ht := box(h, j)
	out := float64(w) * float64(ht)
	resized := out
	if j.Fit == "cover" {
		resized = coverPixels(h, w, ht)
	}
	maxPx := float64(j.MaxPixels)
	if maxPx <= 0 {
		maxPx = math.Inf(1)
	}
	// libvips streams an animation's frames through the resize to the
	// encoder: one frame is decoded and resized at a time, and only the
	// encoder's output grows with the frames.
	decoded := min(decodedPixels(h, j, w, ht), maxPx)
	resized = min(resized, maxPx)
	cost := fixedCost +
		decodeFactor*decoded*float64(h.Bands*max(h.BytesPerSample, 1)) +
		codecBytes(h)*decoded +
		resizedBytes(h)*resized +
		encoderBytes[j.Output]*out*float64(frames)
	if h.Progressive {
		cost += coefficientBytes * min(float64(h.Width)*float64(h.Height), maxPx) * float64(h.Bands)
	}
	return int64(math.Ceil(cost))
}

func resizedBytes(h Header) float64 {
	if h.Alpha {
		return alphaResizedBytes
	}
	return resizedFactor * 4
}

// box resolves a missing side from the source's aspect ratio, as the
// engine does (taking the larger of the two orientations, since EXIF
// orientation is not read here).
func box(h Header, j Job) (w, ht int) {
	w, ht = j.Width, j.Height
	long, short := float64(max(h.Width, h.Height)), float64(max(min(h.Width, h.Height), 1))
	bound := func(v float64) int {
		if j.MaxSide > 0 {
			v = min(v, float64(j.MaxSide))
		}
		return int(max(math.Round(v), 1))
	}
	switch {
	case w == 0 && ht == 0:
		w, ht = 256, 256
	case w == 0:
		w = bound(float64(ht) * long / short)
	case ht == 0:
		ht = bound(float64(w) * long / short)
	}
	return w, ht
}

// coverPixels is the scaled source a cover crop is cut from, in either
// orientation.
func coverPixels(h Header, w, ht int) float64 {
	sw, sh := float64(max(h.Width, 1)), float64(max(h.Height, 1))
	best := 0.0
	for _, d := range [][2]float64{{sw, sh}, {sh, sw}} {
		scale := max(float64(w)/d[0], float64(ht)/d[1])
		best = max(best, math.Ceil(d[0]*scale)*math.Ceil(d[1]*scale))
	}
	return best
}

// decodedPixels is one frame's pixels as decoded: JPEG shrinks on load by
// 2, 4 or 8 while the result still covers what the fit needs (the engine's
// rule, in the less favourable orientation, as EXIF is not read here); the
// other formats decode whole, a HEIF grid every tile of it whole (the
// tiles may overhang the image).
func decodedPixels(h Header, j Job, w, ht int) float64 {
	if h.Format != imagefmt.JPEG {
		return max(float64(h.Width)*float64(h.Height), float64(h.Tiles)*float64(h.TileWidth)*float64(h.TileHeight))
	}
	shrink := 8
	for _, rotated := range []bool{false, true} {
		dw, dh := float64(h.Width), float64(h.Height)
		if rotated {
			dw, dh = dh, dw
		}
		sx, sy := float64(w)/dw, float64(ht)/dh
		switch j.Fit {
		case "cover":
			sx = max(sx, sy)
			sy = sx
		case "contain", "inside":
			sx = min(sx, sy)
			sy = sx
		}
		needW, needH := max(int(math.Round(dw*sx)), 1), max(int(math.Round(dh*sy)), 1)
		if rotated {
			needW, needH = needH, needW
		}
		s := 1
		for _, f := range []int{8, 4, 2} {
			if h.Width/f >= needW && h.Height/f >= needH {
				s = f
				break
			}
		}
		shrink = min(shrink, s)
	}
	if j.QualityShrink {
		shrink = max(shrink/2, 1)
	}
	return math.Ceil(float64(h.Width)/float64(shrink)) * math.Ceil(float64(h.Height)/float64(shrink))
}
