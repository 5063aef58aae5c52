package memcost

import (
	"math"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/plan"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Job is what sizing needs of a thumbnail's options.
type Job struct {
	Width, Height int // the box; 0 follows the source's aspect ratio
	Fit           thumbjob.Fit
	Output        imagefmt.Format
	Animated      bool // every frame asked for (and the output can hold them)
	// QualityShrink: JPEG shrink-on-load leaves libvips 2x for its own
	// reduce (THUMBD_JPEG_SHRINK=quality), so twice the pixels per side.
	QualityShrink bool
	MaxSide       int   // the engine's bound on a side it resolves
	MaxPixels     int64 // the engine refuses more; sizing never counts more
	// MaxBytes: the answer is made again at a lower quality until it is
	// this long (thumbjob.Options.MaxBytes).
	MaxBytes int
	// Transforms are the job's transforms beyond the resize.
	Transforms thumbjob.Transforms
	// Frame is a video's frame; its Count, a preview's frames.
	Frame thumbjob.Frame
}

// JobOf is the part of a job that thumbnail options give; the engine's
// settings (QualityShrink, MaxSide, MaxPixels) are the caller's to add.
func JobOf(o thumbjob.Options) Job {
	return Job{Width: o.Width, Height: o.Height, Fit: o.Fit, Output: o.Format, Animated: o.Animated, MaxBytes: o.MaxBytes, Transforms: o.Transforms, Frame: o.Frame}
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
	if h.Video != nil {
		return videoCodecBytes(h)
	}
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

// Estimate is the job's peak, in bytes, over the idle process: each of
// its plan's steps priced (peaks), in the less favourable orientation.
func Estimate(h Header, j Job) int64 {
	k := peaks(h, j)
	cost := fixedCost +
		decodeFactor*k.decoded*float64(h.Bands*max(h.BytesPerSample, 1)) +
		codecBytes(h)*k.decoded +
		resizedBytes(h)*k.scaled +
		encoderBytes[j.Output]*k.out*k.frames
	if h.Format == imagefmt.TIFF {
		cost += float64(h.ChunkBytes) // libtiff reads a compressed strip or tile whole
	}
	if h.Video != nil {
		cost += videoPacketBytes(h) + videoPreviewBytes(h, k.frames)
	}
	if h.Progressive {
		cost += coefficientBytes * min(float64(h.Width)*float64(h.Height), k.maxPixels) * float64(h.Bands)
	}
	cost += transformBytes(h, j.Transforms, k)
	return int64(math.Ceil(cost))
}

// Work is a job's CPU relative to the plain thumbnail of the same source
// into the same box (1), for the deadline door: a Gaussian (blur, sharpen)
// costs with its mask (2 ceil(3 sigma) + 1) times the output's pixels,
// against the plain job's decoded pixels; a trim adds its search (a copy
// shrunk 8 times, and strips of the image: plan's trim search). The
// filter's weight is calibrated on blur=100 on a 4096x4096 answer: 9.5
// CPU-seconds against 1.8 plain (issue 45), 5.3 times.
func Work(h Header, j Job) float64 {
	k := peaks(h, j)
	decoded := max(k.decoded, 1)
	work := 1.0
	for _, sigma := range []float64{j.Transforms.Blur, j.Transforms.Sharpen} {
		if sigma > 0 {
			work += filterWork * k.out * (2*math.Ceil(3*sigma) + 1) / decoded
		}
	}
	if k.trim {
		work += trimWork
	}
	if spec, _ := imagefmt.Lookup(j.Output); j.MaxBytes > 0 && spec.Quality != 0 {
		work += fitWork
	}
	return work
}

// Scaled is the largest image a cover scales the source to that the
// estimate priced (the engine holds a trimmed cover to it).
func Scaled(h Header, j Job) float64 {
	best := 0.0
	for _, p := range plans(h, j) {
		best = max(best, p.ScaledPixels())
	}
	return best
}

const (
	// filterWork is a Gaussian's CPU a pixel and a mask sample, over a
	// plain job's a decoded pixel: (9.5-1.8)/1.8 over 4096² pixels and a
	// mask of 601 samples is 0.0071.
	filterWork = 0.0072
	// trimWork is what a trim adds: 0.31 measured on a 12 MP photo (one
	// libvips thread, 256 px WebP), with a margin.
	trimWork = 0.5
	// fitWork is what max_bytes adds: the job once more, at a lower
	// quality (each attempt runs its steps again). One retry is priced, the
	// usual case; more, up to plan.FitEncodes, run within the deadline.
	fitWork = 1.0
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

// transformBytes is what the transforms' steps add to a job: the trim
// reads the decoded source once more in sRGB (the crop and the trim
// decode it upright: decodedPixels counts it); the filters hold a window
// of the output as tall as their mask, which grows with sigma (3 sigmas
// each side), and a float copy of the output; the others a copy of the
// output each.
func transformBytes(h Header, t thumbjob.Transforms, k stepPeaks) float64 {
	cost := 0.0
	if k.trim {
		cost += k.decoded * float64(max(h.Bands, 3)+1)
	}
	cost += float64(k.copies) * copyBytes * k.out
	for _, sigma := range []float64{t.Blur, t.Sharpen} {
		if sigma > 0 {
			mask := 2*math.Ceil(3*sigma) + 1
			cost += filterBytes * (k.outWidth + mask) * (mask + filterRows) * 2 // input and output windows
			cost += filterBytes * k.out
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

// stepPeaks are what a job's steps hold, read from its plans: each the
// larger of the orientations'.
type stepPeaks struct {
	decoded   float64 // one frame as decoded (or, for a TIFF, as held at once)
	scaled    float64 // the resized image (a cover's, before its cut)
	out       float64 // the answer's pixels, a frame
	outWidth  float64
	frames    float64
	copies    int // the steps that hold a copy of the output
	trim      bool
	maxPixels float64 // the engine decodes no more (MaxPixels; +Inf: none)
}

// peaks prices each step of the job's plans.
func peaks(h Header, j Job) stepPeaks {
	k := stepPeaks{frames: 1, maxPixels: math.Inf(1)}
	if j.MaxPixels > 0 {
		k.maxPixels = float64(j.MaxPixels)
	}
	t := j.Transforms
	for _, p := range plans(h, j) {
		box := float64(p.Box.X) * float64(p.Box.Y)
		// libvips streams an animation's frames through the resize to the
		// encoder: one frame is decoded and resized at a time, and only the
		// encoder's output grows with the frames. A fit inside holds at
		// most the box.
		k.decoded = max(k.decoded, min(decodedPixels(h, p), k.maxPixels))
		k.scaled = max(k.scaled, min(max(p.ScaledPixels(), box), k.maxPixels))
		k.out = max(k.out, float64(p.Out.X)*float64(p.Out.Y))
		k.outWidth = max(k.outWidth, float64(p.Out.X))
		k.frames = max(k.frames, float64(p.Frames))
		copies := 0
		for _, on := range []bool{t.Rotate != 0, t.Flip != thumbjob.FlipNone, p.Has(plan.StepPad), p.Has(plan.StepExtend), p.Has(plan.StepAspect), t.Pixelate > 1, p.Has(plan.StepWatermark)} {
			if on {
				copies++
			}
		}
		k.copies = max(k.copies, copies)
		k.trim = k.trim || p.Has(plan.StepTrim)
	}
	return k
}

// plans are the engine's plans of the job (plan.Make, as thumb makes
// them) in the orientations the look cannot tell apart: it reads no
// EXIF, so the source is planned upright (1) and on its side (6), into
// one box, whose side that follows the aspect ratio is the larger of the
// two orientations'. A HEIF has one: libvips applies its irot, which the
// look reads, and removes any EXIF orientation. An orientation in which the crop is outside the
// source has no plan (the engine refuses it); with none, the job is
// priced as the fixed part alone (the pipeline refuses it first).
func plans(h Header, j Job) []plan.Plan {
	o := thumbjob.Options{Width: j.Width, Height: j.Height, Fit: j.Fit, Gravity: thumbjob.GravityCentre, Format: j.Output, Animated: j.Animated, Transforms: j.Transforms, Frame: j.Frame}
	l := plan.Limits{MaxSide: j.MaxSide, JPEGShrink: thumbjob.JPEGShrinkFast}
	if j.QualityShrink {
		l.JPEGShrink = thumbjob.JPEGShrinkQuality
	}
	orientations := []int{1, 6}
	if h.Format == imagefmt.HEIC || h.Format == imagefmt.AVIF {
		orientations = orientations[:1] // libvips applies irot (read here) and drops EXIF's
	}
	made := func(o thumbjob.Options) []plan.Plan {
		ps := make([]plan.Plan, 0, 2)
		for _, orientation := range orientations {
			if p, err := plan.Make(source(h, orientation), o, l); err == nil {
				ps = append(ps, p)
			}
		}
		return ps
	}
	ps := made(o)
	if o.Width != 0 && o.Height != 0 || len(ps) == 0 {
		return ps
	}
	for _, p := range ps {
		o.Width, o.Height = max(o.Width, p.Canvas.X), max(o.Height, p.Canvas.Y)
	}
	return made(o)
}

// source is the look's header as the plan reads a decoder's: libheif
// applies a HEIF's irot, so libvips' sides are the turned ones.
func source(h Header, orientation int) plan.Source {
	w, ht := h.Width, h.Height
	if h.Rotation == 90 || h.Rotation == 270 {
		w, ht = ht, w
	}
	return plan.Source{Format: h.Format, Width: w, Height: ht, Orientation: orientation, Frames: h.Frames, Look: h}
}

// decodedPixels is one frame's pixels as the plan decodes it (or, for a
// TIFF, as held at once): a JPEG at its shrink on load (a trim may decode
// it again, whole); a TIFF streamed through libvips' caches (tiffWindow)
// unless the crop or trim loads it upright; a HEIF's embedded thumbnail
// when the engine decodes it and it is one coded image (a grid or another
// derived item holds more than its pixels), loaded whole (random access):
// libheif's picture and libvips' copy of it, twice its pixels; the other
// formats whole, a HEIF grid every tile of it (the tiles may overhang the
// image).
func decodedPixels(h Header, p plan.Plan) float64 {
	switch {
	case h.Format == imagefmt.TIFF && p.Load != plan.LoadUpright:
		return tiffWindow(h, p.Box.X, p.Box.Y)
	case p.HEIF == plan.HEIFThumbnail && h.ThumbCoded:
		return 2 * float64(h.ThumbWidth) * float64(h.ThumbHeight)
	case h.Format != imagefmt.JPEG:
		return max(float64(h.Width)*float64(h.Height), float64(h.Tiles)*float64(h.TileWidth)*float64(h.TileHeight))
	case p.Has(plan.StepTrim):
		return float64(h.Width) * float64(h.Height)
	}
	s := float64(p.Shrink)
	return math.Ceil(float64(h.Width)/s) * math.Ceil(float64(h.Height)/s)
}
