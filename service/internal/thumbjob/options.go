package thumbjob

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
)

// Fit says how the source is mapped onto the asked box.
type Fit string

const (
	FitCover   Fit = "cover"   // fill the box, crop the overflow
	FitContain Fit = "contain" // fit inside, pad to the box
	FitFill    Fit = "fill"    // stretch to the box
	FitInside  Fit = "inside"  // fit inside, no padding
	// FitAuto is imgproxy's resizing type auto: cover when the source
	// (its crop) and the box lie the same way (both landscape or both
	// portrait), else inside. The plan decides, knowing the source.
	FitAuto Fit = "auto"
)

// Fits lists every fit, in the order the API documents them.
func Fits() []Fit { return []Fit{FitCover, FitContain, FitFill, FitInside} }

// Gravity picks the part of the source that cover keeps.
type Gravity string

const (
	GravityCentre    Gravity = "centre"
	GravityAttention Gravity = "attention"
	GravityEntropy   Gravity = "entropy"
	// GravityFocal centres the crop on Options.FocalX, FocalY as far as
	// the crop allows.
	GravityFocal Gravity = "focal"
	// The compass gravities keep that edge or corner of the source (and
	// place the thumbnail there on extend's canvas).
	GravityNorth     Gravity = "n"
	GravityNorthEast Gravity = "ne"
	GravityEast      Gravity = "e"
	GravitySouthEast Gravity = "se"
	GravitySouth     Gravity = "s"
	GravitySouthWest Gravity = "sw"
	GravityWest      Gravity = "w"
	GravityNorthWest Gravity = "nw"
)

// Gravities lists every gravity, in the order the API documents them.
func Gravities() []Gravity {
	return []Gravity{GravityCentre, GravityAttention, GravityEntropy, GravityFocal,
		GravityNorth, GravityNorthEast, GravityEast, GravitySouthEast,
		GravitySouth, GravitySouthWest, GravityWest, GravityNorthWest}
}

// Point is where a fixed gravity sits, as fractions (0..1) of the width
// and height: the centre, a compass point, or the focal point (fx, fy).
// ok is false for the smart gravities (attention, entropy).
func (o Options) Point() (x, y float64, ok bool) {
	switch o.Gravity {
	case GravityFocal:
		return o.FocalX, o.FocalY, true
	case GravityAttention, GravityEntropy:
		return 0, 0, false
	}
	x, y = 0.5, 0.5 // centre
	switch o.Gravity {
	case GravityNorth, GravityNorthEast, GravityNorthWest:
		y = 0
	case GravitySouth, GravitySouthEast, GravitySouthWest:
		y = 1
	}
	switch o.Gravity {
	case GravityWest, GravityNorthWest, GravitySouthWest:
		x = 0
	case GravityEast, GravityNorthEast, GravitySouthEast:
		x = 1
	}
	return x, y, true
}

// DefaultSide is the box's side when neither width nor height is given.
const DefaultSide = 256

// Options describe one thumbnail. Width or Height may be 0, meaning "follow
// the source's aspect ratio"; the engine resolves it once it knows the
// source's size. Both 0 is never passed: the caller chooses a box.
type Options struct {
	Width, Height int
	Fit           Fit
	Gravity       Gravity
	// FocalX and FocalY are GravityFocal's point, as fractions (0..1) of
	// the source's width and height after EXIF orientation.
	FocalX, FocalY float64
	// Offset moves a compass gravity, as imgproxy's gravity offsets do
	// (g:no:10:20): the cover's cut and extend's placement then follow
	// imgproxy's rule (nil: thumbd's).
	Offset *Offset         `json:",omitempty"`
	Format imagefmt.Format // an output format of the table
	// AlphaFormat, when set, replaces Format for a thumbnail that has
	// transparency (format=auto: JPEG for opaque results, PNG for others).
	AlphaFormat imagefmt.Format
	// Quality is 1..100 for formats whose encoder takes one; 0 means the
	// format's default (format=auto without q).
	Quality int
	// Animated keeps every frame of an animated source, resized, when the
	// output format can hold them; else the first frame is used.
	Animated bool
	// MaxBytes (imgproxy's max_bytes): the quality is lowered until the
	// answer is at most this long, in at most plan.FitEncodes encodes; 0:
	// none. Formats without a quality ignore it.
	MaxBytes int `json:",omitempty"`
	// AsIs (imgproxy's raw and skip_processing): a source in one of these
	// formats, when Format is the source's or that one, is answered as it
	// is, once looked at and held to the source limits; the engine never
	// sees it. Only formats thumbd reads, never with a watermark (params).
	// A list written by AsIsOf (a string keeps Options comparable).
	AsIs string `json:",omitempty"`
	// KeepCopyright (imgproxy's keep_copyright, its default): the
	// source's EXIF Copyright and Artist, when it has either, are written
	// in the answer's EXIF, the only metadata it then carries.
	KeepCopyright bool `json:",omitempty"`
	// Frame picks a video source's frame (t, keyframe; imgproxy's
	// video_thumbnail_second and video_thumbnail_keyframes); the zero
	// value is the default poster frame. An image ignores it.
	Frame Frame `json:",omitzero"`
	Transforms
}

// MaxFrameSeconds bounds Frame.At in seconds (about 11.5 days).
const MaxFrameSeconds = 1_000_000

// Frame is the frame of a video a thumbnail is made of.
type Frame struct {
	// At is seconds from the start, or a percentage of the duration when
	// Percent; Given says it was asked (else the default poster frame: the
	// first of the first keyframes with detail). A time at or past the end
	// is the last frame.
	At      float64 `json:",omitempty"`
	Percent bool    `json:",omitempty"`
	Given   bool    `json:",omitempty"`
	// Keyframe takes the keyframe at or before the time: one frame
	// decoded, where the exact frame may need a whole group of pictures.
	Keyframe bool `json:",omitempty"`
	// Count (frames=N) above 1 asks for a preview: N frames spread over
	// the video, at the middles of N equal parts of its duration, as an
	// animation of PreviewDelay each (params makes the job animated).
	// Never with Given.
	Count int `json:",omitempty"`
	// Every (every=S) above 0 spreads a preview's frames S seconds apart
	// instead: one at the middle of each S seconds of the video (the
	// last stretch cut at its end), the first Count of them. Only with
	// Count above 1.
	Every float64 `json:",omitempty"`
}

// PreviewTimes is when a preview's frames are shown, in seconds from the
// first frame of a video lasting duration: the middles of the stretches
// of Every seconds (the last cut at the end), or of Count equal parts
// without Every; at most Count. Nil without a preview or a duration. The
// engine decodes these (videoframe.Choose) and the plan prices as many.
func (f Frame) PreviewTimes(duration float64) []float64 {
	if f.Count <= 1 || !(duration > 0) {
		return nil
	}
	step := f.Every
	if step <= 0 {
		step = duration / float64(f.Count)
	}
	// The stretches that begin before the end; a float's rounding of an
	// exact multiple (10 s every 2.5) makes no stretch of its own.
	n := min(f.Count, int(math.Ceil(duration/step-1e-9)))
	times := make([]float64, 0, max(n, 1))
	for i := range max(n, 1) {
		begin := float64(i) * step
		times = append(times, (begin+min(begin+step, duration))/2)
	}
	return times
}

// MaxPreviewFrames bounds Frame.Count: each frame is a decode (with
// keyframe=true one packet, else up to a group of pictures), priced and
// held until the animation is made.
const MaxPreviewFrames = 25

// PreviewDelay is how long a preview shows each frame, in milliseconds:
// two frames a second, slow enough to take in each scene of a preview
// whose frames are seconds or minutes apart.
const PreviewDelay = 500

// normalised is the frame's text in Options.Normalised: "" for the
// default, so that an image's key is the same with it or without.
func (f Frame) normalised() string {
	if f == (Frame{}) {
		return ""
	}
	s := "|frame="
	switch {
	case f.Given && f.Percent:
		s += fmt.Sprintf("%g%%", f.At)
	case f.Given:
		s += fmt.Sprintf("%gs", f.At)
	case f.Count > 1:
		s += "preview"
	default:
		s += "default"
	}
	if f.Keyframe {
		s += ",keyframe"
	}
	if f.Count > 1 {
		s += fmt.Sprintf(",frames=%d", f.Count)
	}
	if f.Every > 0 {
		s += fmt.Sprintf(",every=%gs", f.Every)
	}
	return s
}

// AnsweredAsIs reports whether a source in format in is answered as it
// is (AsIs).
func (o Options) AnsweredAsIs(in imagefmt.Format) bool {
	return in != "" && slices.Contains(o.AsIsFormats(), in) && (o.Format == imagefmt.Source || o.Format == in)
}

// AsIsOf is formats as Options.AsIs holds them.
func AsIsOf(formats []imagefmt.Format) string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = string(f)
	}
	return strings.Join(names, ",")
}

// AsIsFormats are the formats AsIs lists.
func (o Options) AsIsFormats() []imagefmt.Format {
	if o.AsIs == "" {
		return nil
	}
	var fs []imagefmt.Format
	for name := range strings.SplitSeq(o.AsIs, ",") {
		fs = append(fs, imagefmt.Format(name))
	}
	return fs
}

// Offset is a gravity's offsets: each, when at least 1 in size, pixels
// (times dpr); below, a fraction of the side.
type Offset struct{ X, Y float64 }

// Normalised is a canonical text of the options, for ETags: two requests
// that must give the same bytes give the same text.
func (o Options) Normalised() string {
	q := o.Quality
	spec, _ := imagefmt.Lookup(o.Format)
	alpha, _ := imagefmt.Lookup(o.AlphaFormat)
	if spec.Quality == 0 && alpha.Quality == 0 && o.Format != imagefmt.Source {
		q = 0 // the encoders ignore it
	}
	g := string(o.Gravity)
	switch {
	case o.Fit != FitCover && o.Fit != FitAuto && o.MinWidth == 0 && o.MinHeight == 0:
		g = "" // only cover (and a crop to the box) uses gravity
	case o.Gravity == GravityFocal:
		g += fmt.Sprintf(":%g:%g", o.FocalX, o.FocalY)
	}
	formats := string(o.Format)
	if o.AlphaFormat != "" && o.AlphaFormat != o.Format {
		formats += "/" + string(o.AlphaFormat)
	}
	animated := o.Animated && (spec.Animated || alpha.Animated)
	if o.Extend && o.Fit != FitCover {
		g = string(o.Gravity) // extend places the thumbnail at the gravity
		if o.Gravity == GravityFocal {
			g += fmt.Sprintf(":%g:%g", o.FocalX, o.FocalY)
		}
	}
	if o.Offset != nil {
		g += fmt.Sprintf("%+g%+g", o.Offset.X, o.Offset.Y)
	}
	if o.MaxBytes > 0 && (spec.Quality != 0 || alpha.Quality != 0 || o.Format == imagefmt.Source) {
		formats += fmt.Sprintf("<=%dB", o.MaxBytes)
	}
	if o.AsIs != "" {
		formats += "|asis:" + o.AsIs
	}
	if o.KeepCopyright {
		formats += "|copyright"
	}
	formats += o.Frame.normalised()
	// The transforms add to the text only when set, so that a plain
	// resize keeps the key (and ETag) it had before they existed.
	return fmt.Sprintf("w=%d,h=%d,fit=%s,gravity=%s,format=%s,q=%d,animated=%t", o.Width, o.Height, o.Fit, g, formats, q, animated) + o.Transforms.normalised()
}

// FromSource resolves Format imagefmt.Source with the sniffed input
// format in: the same format when thumbd writes it, else JPEG. Other
// options are returned as they are.
func (o Options) FromSource(in imagefmt.Format) Options {
	if o.Format != imagefmt.Source {
		return o
	}
	o.Format = imagefmt.JPEG
	if spec, ok := imagefmt.Lookup(in); ok && spec.Output {
		o.Format = in
	}
	return o
}

// Config bounds what the engine accepts and how libvips runs.
type Config struct {
	MaxPixels int64 // source width x height (first frame), checked from the header
	MaxFrames int   // frames/pages of an animated source
	// MaxAnimationPixels bounds an animated thumbnail: frames x output
	// width x height.
	MaxAnimationPixels int64
	MaxSide            int // bound for a side derived from the source's aspect ratio
	Threads            int // libvips worker threads; 0 lets libvips use every CPU it sees
	// JPEGShrink is how far a JPEG source is scaled down while it is
	// decoded; "" means JPEGShrinkFast.
	JPEGShrink JPEGShrink
	// AVIFEffort is the AV1 encoder's effort, 0 (fastest) to 9 (smallest
	// files); libvips hands aom cpu-used 9 - effort.
	AVIFEffort int
	// Inputs are the source formats accepted (THUMBD_INPUTS); empty: every
	// input format the engine's libvips reads. Any other is a 415.
	Inputs []imagefmt.Format
	// Watermark is the encoded image (THUMBD_WATERMARK) that wm= and
	// THUMBD_WATERMARK_REQUIRED put on thumbnails, checked against the
	// limits at start; nil: none. A cell gets it in its settings, once.
	Watermark []byte `json:",omitempty"`
	Logger    *slog.Logger
}

// JPEGShrink picks the JPEG shrink-on-load: libjpeg can decode at 1/2, 1/4
// or 1/8 scale (DCT scaling) for much less work than a full decode, and
// the rest of the way is a Lanczos reduce. docs/engine.md has the
// measurements behind the default.
type JPEGShrink string

const (
	// JPEGShrinkFast decodes at the largest scale that still covers the
	// box, as sharp and imgproxy do by default: faster on photos of 2 MP
	// and more, the same to the eye on photos, but aliasing (moiré) can
	// show on fine regular patterns.
	JPEGShrinkFast JPEGShrink = "fast"
	// JPEGShrinkQuality is libvips' own choice (its thumbnail operation):
	// it leaves at least 2x for the final reduce, so fine patterns stay
	// clean.
	JPEGShrinkQuality JPEGShrink = "quality"
)

// Image is an encoded thumbnail.
type Image struct {
	Bytes         []byte
	Format        imagefmt.Format
	Width, Height int // of one frame
	Frames        int
	Trace         Trace
}

// Trace is what a job measured of itself, for the request's trace: what
// explains its time, and when each stage ran. A cell sends it in its
// result (a cell cannot export spans: its sandbox has no network), and the
// supervisor records it as child spans.
type Trace struct {
	SourceFormat imagefmt.Format `json:"src_format,omitempty"`
	SourceWidth  int             `json:"src_w,omitempty"`
	SourceHeight int             `json:"src_h,omitempty"`
	// Shrink is the JPEG shrink-on-load factor (2, 4, 8); 1 is none, or
	// libvips' own choice inside its thumbnail operation.
	Shrink int     `json:"shrink,omitempty"`
	Stages []Stage `json:"stages,omitempty"`
	// Job is the engine call inside a cell, and Exchange the supervisor's
	// round trip to it (job sent to result read): cells mode only; the
	// difference is the hand-off cost.
	Job, Exchange Stage `json:"-"`
}

// Stage names, in the order a job runs them. libvips evaluates lazily:
// "resize" only joins its operations to the pipeline, and the pixels of a
// thumbnail made in one libvips operation are mostly computed while it is
// encoded, so "encode" holds much of the decoding's time.
const (
	StageDecode = "decode" // header checks, then the load (with shrink-on-load)
	StageResize = "resize" // the resize, colour conversion, alpha and padding
	StageEncode = "encode" // the output format's encoder
)

// Stage is one timed step.
type Stage struct {
	Name       string    `json:"name,omitempty"`
	Start, End time.Time `json:",omitzero"`
}

// Add appends a stage that began at start and ends now; it returns now.
func (t *Trace) Add(name string, start time.Time) time.Time {
	now := time.Now()
	t.Stages = append(t.Stages, Stage{Name: name, Start: start, End: now})
	return now
}
