package memcost

import (
	"math"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/plan"
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
	// Transforms are the job's transforms beyond the resize.
	Transforms thumbjob.Transforms
}

// JobOf is the part of a job that thumbnail options give; the engine's
// settings (QualityShrink, MaxSide, MaxPixels) are the caller's to add.
func JobOf(o thumbjob.Options) Job {
	return Job{Width: o.Width, Height: o.Height, Fit: string(o.Fit), Output: o.Format, Animated: o.Animated, Transforms: o.Transforms}
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
}

// codecBytes is what a format's decoder holds per decoded pixel beyond
// the decoded image itself, for the whole image (none of these decode
// in strips): libheif keeps the codec's pictures (the decoder's own
// buffers and the YUV planes it hands over, up to 3 samples a pixel at
// 4:4:4) while it converts them to RGB, 5 bytes a sample in all over a
// measured 12 MP HEIC's 4.2; libjxl decodes a frame
// in float (3 x 4 bytes); a BMP or ICO is decoded in Go and copied once
// into the uncompressed TIFF libvips reads (the image's bytes twice).
func codecBytes(h Header) float64 {
	switch h.Format {
	case imagefmt.HEIC, imagefmt.AVIF:
		return 5 * float64(max(h.BytesPerSample, 1))
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
	resized := float64(w) * float64(ht)
	// pad grows what is encoded; extend's canvas is the box.
	p := j.Transforms.Pad
	out := float64(w+p.Left+p.Right) * float64(ht+p.Top+p.Bottom)
	if j.Fit == "cover" {
		resized = coverOf(h, j.Transforms, w, ht)
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
	if h.Format == imagefmt.TIFF {
		cost += float64(h.ChunkBytes) // libtiff reads a compressed strip or tile whole
	}
	if h.Progressive {
		cost += coefficientBytes * min(float64(h.Width)*float64(h.Height), maxPx) * float64(h.Bands)
	}
	cost += transformBytes(h, j.Transforms, decoded, float64(w+p.Left+p.Right), out)
	return int64(math.Ceil(cost))
}

// Work is a job's CPU relative to the plain thumbnail of the same source
// into the same box (1), for the deadline door: a Gaussian (blur, sharpen)
// costs with its mask (2 ceil(3 sigma) + 1) times the output's pixels,
// against the plain job's decoded pixels; a trim adds its search (a copy
// shrunk 8 times, and strips of the image: thumb's findTrim). The filter's
// weight is calibrated on blur=100 on a 4096x4096 answer: 9.5 CPU-seconds
// against 1.8 plain (issue 45), 5.3 times.
func Work(h Header, j Job) float64 {
	w, ht := box(h, j)
	p := j.Transforms.Pad
	out := float64(w+p.Left+p.Right) * float64(ht+p.Top+p.Bottom)
	decoded := max(decodedPixels(h, j, w, ht), 1)
	work := 1.0
	for _, sigma := range []float64{j.Transforms.Blur, j.Transforms.Sharpen} {
		if sigma > 0 {
			work += filterWork * out * (2*math.Ceil(3*sigma) + 1) / decoded
		}
	}
	if j.Transforms.Trim != nil {
		work += trimWork
	}
	return work
}

const (
	// filterWork is a Gaussian's CPU a pixel and a mask sample, over a
	// plain job's a decoded pixel: (9.5-1.8)/1.8 over 4096² pixels and a
	// mask of 601 samples is 0.0071.
	filterWork = 0.0072
	// trimWork is what a trim adds: 0.31 measured on a 12 MP photo (one
	// libvips thread, 256 px WebP), with a margin.
	trimWork = 0.5
)

// The transforms' own costs, over the resize's (each a margin over the
// peaks measured by TestEstimateCoversMeasuredPeaks' transform rows).
const (
	// copyBytes is one copy of the output in 4 bands of 8 bits: what
	// rotate, flip, pad, extend and pixelate each may hold of the small
	// image.
	copyBytes = 4.0
	// filterBytes is what blur and sharpen hold per pixel of their window
	// (4 bands of 32-bit samples, as libvips convolves them).
	filterBytes = 16.0
	// filterRows: the rows of a tile libvips computes at a time, beside the
	// mask's.
	filterRows = 128
)

// transformBytes is what the transforms add to a job: the crop and the
// trim decode the whole source (no shrink on load: decodedPixels counts
// it whole) and trim reads it once more in sRGB; the filters hold a
// window of the output as tall as their mask, which grows with sigma
// (3 sigmas each side), and a float copy of the output; the others a copy
// of the output each.
func transformBytes(h Header, t thumbjob.Transforms, decoded, outW, out float64) float64 {
	cost := 0.0
	if t.Trim != nil {
		cost += decoded * float64(max(h.Bands, 3)+1)
	}
	copies := 0
	for _, on := range []bool{t.Rotate != 0, t.Flip != "", t.Pad != (thumbjob.Sides{}), t.Extend, t.Pixelate > 1, t.Watermark != nil} {
		if on {
			copies++
		}
	}
	cost += float64(copies) * copyBytes * out
	for _, sigma := range []float64{t.Blur, t.Sharpen} {
		if sigma > 0 {
			mask := 2*math.Ceil(3*sigma) + 1
			cost += filterBytes * (outW + mask) * (mask + filterRows) * 2 // input and output windows
			cost += filterBytes * out
		}
	}
	return cost
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
	if c := j.Transforms.Crop; c != nil {
		// The engine follows the region's aspect ratio: the more
		// elongated of its two orientations' regions.
		long, short = 1, 1
		for _, d := range [][2]int{{h.Width, h.Height}, {h.Height, h.Width}} {
			if _, _, cw, ch, ok := c.In(d[0], d[1]); ok && float64(max(cw, ch))/float64(min(cw, ch)) > long/short {
				long, short = float64(max(cw, ch)), float64(min(cw, ch))
			}
		}
	}
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

// coverOf is the scaled image a cover crop is cut from: of the source,
// or of the crop's region (clipped to the source, as the engine clips
// it), in either orientation as EXIF is not read here. A trim's result
// is not known before the pixels are: the source's size stands for it,
// and the engine refuses a trimmed cover that would scale beyond it.
func coverOf(h Header, t thumbjob.Transforms, w, ht int) float64 {
	c := t.Crop
	if c == nil {
		return coverPixels(h, w, ht)
	}
	best := 0.0
	for _, d := range [][2]int{{h.Width, h.Height}, {h.Height, h.Width}} {
		_, _, cw, ch, ok := c.In(d[0], d[1])
		if ok {
			best = max(best, coverPixels(Header{Width: cw, Height: ch}, w, ht))
		}
	}
	return best
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

// cropShrink is the JPEG shrink on load of a crop (the engine's rule:
// the region, shrunk, still covers what the fit needs of it into the
// w x ht box), in the less favourable orientation; the whole source is
// decoded at it.
func cropShrink(h Header, j Job, w, ht int) int {
	shrink := 8
	for _, d := range [][2]int{{h.Width, h.Height}, {h.Height, h.Width}} {
		_, _, cw, ch, ok := j.Transforms.Crop.In(d[0], d[1])
		if !ok {
			continue
		}
		bw, bh := float64(w), float64(ht) // the box, in the region's frame
		if j.Transforms.Reorients() {
			bw, bh = bh, bw
		}
		kx, ky := bw/float64(cw), bh/float64(ch)
		switch j.Fit {
		case "cover":
			kx = max(kx, ky)
			ky = kx
		case "contain", "inside":
			kx = min(kx, ky)
			ky = kx
		}
		needW, needH := max(int(math.Round(float64(cw)*kx)), 1), max(int(math.Round(float64(ch)*ky)), 1)
		s := 1
		for _, f := range []int{8, 4, 2} {
			if cw/f >= needW && ch/f >= needH {
				s = f
				break
			}
		}
		shrink = min(shrink, s)
	}
	return shrink
}

// heifThumbnailUsed says whether the engine decodes h's embedded
// thumbnail rather than its primary image (plan.HEIFThumbnailUse)
// into the w x ht box, in both of its orientations (a rotation turns the
// box the engine asks libvips for). A crop or a trim decodes the primary
// whole. A cover is judged, as a fill, on the scaled image it is cut from
// (the box coverAndCut asks for, never smaller than the one libvips'
// crop shrinks to). A thumbnail that is a grid or another derived item is
// not priced as one: its decode holds more than its pixels.
func heifThumbnailUsed(h Header, j Job, w, ht int) bool {
	if h.Format != imagefmt.HEIC && h.Format != imagefmt.AVIF || !h.ThumbCoded || j.Transforms.Crop != nil || j.Transforms.Trim != nil {
		return false
	}
	dw, dh := h.Width, h.Height
	if h.Rotation == 90 || h.Rotation == 270 {
		dw, dh = dh, dw
	}
	for _, b := range [][2]int{{w, ht}, {ht, w}} {
		bw, bh, fit := b[0], b[1], thumbjob.Fit(j.Fit)
		if fit == thumbjob.FitCover {
			scale := max(float64(bw)/float64(dw), float64(bh)/float64(dh))
			bw, bh, fit = max(int(math.Ceil(float64(dw)*scale)), bw), max(int(math.Ceil(float64(dh)*scale)), bh), thumbjob.FitFill
		}
		if _, use := plan.HEIFThumbnailUse(dw, dh, h.ThumbWidth, h.ThumbHeight, bw, bh, fit); !use {
			return false
		}
	}
	return true
}

// decodedPixels is one frame's pixels as decoded (or, for a TIFF, as
// held at once): JPEG shrinks on load by 2, 4 or 8 while the result still
// covers what the fit needs (the engine's rule, in the less favourable
// orientation, as EXIF is not read here); a TIFF streams through libvips'
// caches (tiffWindow) unless a crop or trim loads it whole; the other
// formats decode whole, a HEIF grid every tile of it whole (the tiles may
// overhang the image), unless the engine decodes a HEIF's embedded
// thumbnail instead (heifThumbnailUsed).
func decodedPixels(h Header, j Job, w, ht int) float64 {
	switch t := j.Transforms; {
	case h.Format == imagefmt.TIFF && t.Trim == nil && t.Crop == nil:
		return tiffWindow(h, w, ht)
	case heifThumbnailUsed(h, j, w, ht):
		// The engine loads it whole (random access): libheif's picture
		// and libvips' copy of it, twice the pixels.
		return 2 * float64(h.ThumbWidth) * float64(h.ThumbHeight)
	case h.Format != imagefmt.JPEG:
		return max(float64(h.Width)*float64(h.Height), float64(h.Tiles)*float64(h.TileWidth)*float64(h.TileHeight))
	case t.Trim != nil || t.Crop != nil && j.QualityShrink:
		return float64(h.Width) * float64(h.Height)
	case t.Crop != nil:
		s := float64(cropShrink(h, j, w, ht))
		return math.Ceil(float64(h.Width)/s) * math.Ceil(float64(h.Height)/s)
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
