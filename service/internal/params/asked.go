package params

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Asked is a thumbnail as a grammar reads a request into values: thumbd's
// query (Rules.Get, Rules.Upload) and imgproxy's URL (imgproxy.Config)
// each fill one, and Rules.Make makes the job from it, every bound checked
// there, once, whichever grammar asked.
type Asked struct {
	// Options are as asked: Width and Height before dpr (0 follows the
	// source's aspect ratio; both 0 are the default box), Quality 0 the
	// format's default, Pad before dpr.
	Options thumbjob.Options
	DPR     float64 // 1 to 4; 0 is 1
	// Src and URL name a GET's source (GET /thumbnail's src= and url=).
	Src, URL string
	// Name names an option (by thumbd's name for it, as boundNames and
	// w, h, q, dpr) as the grammar wrote it, for a sentence: `Parameter
	// "blur"`, `imgproxy option "bl"`.
	Name func(option string) string
	// Chooser names who chose an option: Name's subject (or a client
	// hint's header) when the request did, "" when the operator did (a
	// preset, the grammar's defaults), which the bounded mode does not
	// bind. nil: the request chose every option.
	Chooser func(option string) string

	vary         []string // the client hints the answer varies with (thumbd's query)
	hints        *Hints
	qualityGiven bool
}

// chooser is a.Chooser, or the request for every option.
func (a Asked) chooser(option string) string {
	if a.Chooser == nil {
		return a.Name(option)
	}
	return a.Chooser(option)
}

// bad is a 400 about option, named as its grammar wrote it.
func (a Asked) bad(option, format string, args ...any) error {
	return apierr.New(apierr.BadParameter, "%s %s.", a.Name(option), fmt.Sprintf(format, args...))
}

// MaxAnswerBytes bounds max_bytes: an answer no cell result may exceed.
const MaxAnswerBytes = 1 << 30

// Make is the job a grammar asked for: every bound of the options checked
// (the sides against the max side, dpr, the quality, the focal point, each
// transform's, the watermark's rules), the defaults filled in (the box,
// the format's quality), dpr applied to the box and the pad, then what an
// unsigned request may choose held to the allow-lists and the filter
// span (Signed drops both).
func (r Rules) Make(a Asked) (Thumbnail, error) {
	t := Thumbnail{Src: a.Src, URL: a.URL, Vary: a.vary, hints: a.hints, qualityGiven: a.qualityGiven}
	o, err := r.bounds(a)
	if err != nil {
		return t, err
	}
	t.Options = o
	if err = r.Allowed.check(o, a); err == nil {
		err = r.filterSpan(o, a.chooser)
	}
	return t, err
}

// bounds checks each option against its bounds and returns the options
// with the defaults and dpr applied.
func (r Rules) bounds(a Asked) (thumbjob.Options, error) {
	o := a.Options
	for _, side := range []struct {
		name string
		v    int
	}{{"w", o.Width}, {"h", o.Height}} {
		if side.v < 0 || side.v > r.MaxSide {
			return o, a.bad(side.name, "must be an integer from 1 to %d", r.MaxSide)
		}
	}
	dpr := a.DPR
	if dpr == 0 {
		dpr = 1
	}
	if !(dpr >= 1 && dpr <= 4) {
		return o, a.bad("dpr", "must be a number from 1 to 4, such as 2 or 1.5")
	}
	if o.Quality < 0 || o.Quality > 100 {
		return o, a.bad("q", "must be an integer from 1 to 100")
	}
	if o.MaxBytes < 0 || o.MaxBytes > MaxAnswerBytes {
		return o, a.bad("max_bytes", "must be a number of bytes from 0 (none) to %d", MaxAnswerBytes)
	}
	if o.Gravity == thumbjob.GravityFocal {
		for _, f := range []struct {
			name string
			v    float64
		}{{"fx", o.FocalX}, {"fy", o.FocalY}} {
			if !(f.v >= 0 && f.v <= 1) {
				return o, a.bad(f.name, "must be a number from 0 to 1, such as 0.3")
			}
		}
	}
	if o.Frame.Count > 1 {
		// A preview is an animation, held to the animation's rules below.
		if spec, _ := imagefmt.Lookup(o.Format); o.Format != imagefmt.Auto && !spec.Animated {
			name := "frames"
			if o.Frame.Every > 0 {
				name = "every"
			}
			return o, a.bad(name, "needs an output format that animates: %s or auto", strings.Join(animatedFormats(), ", "))
		}
		o.Animated = true
	}
	spec, _ := imagefmt.Lookup(o.Format)
	if o.Animated && o.Format != imagefmt.Auto && o.Format != imagefmt.Source && !spec.Animated {
		return o, a.bad("animated", "needs an output format that animates: %s or auto", strings.Join(animatedFormats(), ", "))
	}
	if o.Animated {
		// These work on one image: an animation's frames are one tall
		// strip to libvips, which they would treat as one picture.
		for _, name := range frameTransforms {
			if held(name, o) != held(name, thumbjob.Options{}) {
				return o, a.bad(name, "is not taken with animated=true: it applies to one frame")
			}
		}
	}
	mark, err := r.watermark(a)
	if err != nil {
		return o, err
	}
	if mark != nil && o.AsIs != "" {
		// The source as it is would not carry the mark: refused, not
		// processed, so that no answer differs silently from the URL.
		why := "the watermark asked"
		if r.Watermark.Required != nil {
			why = "the operator's watermark, which every answer carries here (THUMBD_WATERMARK_REQUIRED)"
		}
		return o, a.bad("as_is", "is not taken here: the source as it is would not carry %s", why)
	}
	if by := a.chooser("as_is"); o.AsIs != "" && by != "" && !r.signed {
		// The source's bytes carry its metadata (a camera's GPS position
		// among it), which every other answer strips.
		return o, apierr.New(apierr.BadParameter, "%s is not taken unsigned: the source as it is carries its own metadata; give it in a preset, or sign the URL.", by)
	}
	for _, f := range o.AsIsFormats() {
		if !slices.Contains(imagefmt.Images(), f) {
			return o, a.bad("as_is", "names %q, and thumbd answers as is only the image formats it reads", f)
		}
	}
	if err := a.transformBounds(o, dpr, r.MaxSide); err != nil {
		return o, err
	}
	o.Watermark = mark
	if o.Width == 0 && o.Height == 0 {
		o.Width, o.Height = min(thumbjob.DefaultSide, r.MaxSide), min(thumbjob.DefaultSide, r.MaxSide)
	}
	times := func(side int) int { // dpr multiplies the box, bounded by the max side
		if side == 0 {
			return 0
		}
		return min(int(math.Round(float64(side)*dpr)), r.MaxSide)
	}
	o.Width, o.Height = times(o.Width), times(o.Height)
	o.MinWidth, o.MinHeight = times(o.MinWidth), times(o.MinHeight)
	if f := o.Offset; f != nil { // offsets in pixels are the box's: times dpr
		o.Offset = &thumbjob.Offset{X: pixels(f.X, dpr), Y: pixels(f.Y, dpr)}
	}
	p := o.Pad
	o.Pad = thumbjob.Sides{Top: scaled(p.Top, dpr), Right: scaled(p.Right, dpr), Bottom: scaled(p.Bottom, dpr), Left: scaled(p.Left, dpr)}
	// q is checked whatever the format, so that a bad value is never
	// silently ignored; formats without a quality ignore a good one.
	// format=auto (and the source's format) without q leave it to the
	// chosen format's default.
	switch {
	case o.Format == imagefmt.Auto || o.Format == imagefmt.Source:
	case spec.Quality == 0:
		o.Quality = 0
	case o.Quality == 0:
		o.Quality = spec.Quality
	}
	if o.Pixelate == 1 {
		o.Pixelate = 0 // blocks of one pixel change nothing
	}
	return o, nil
}

// scaled is a side of pad times dpr.
func scaled(side int, dpr float64) int { return int(math.Round(float64(side) * dpr)) }

// pixels is an offset times dpr when it is in pixels (at least 1 in
// size; below, a fraction of the side).
func pixels(v, dpr float64) float64 {
	if math.Abs(v) >= 1 {
		return v * dpr
	}
	return v
}

// transformBounds checks each transform against its bounds; the pad's
// after dpr.
func (a Asked) transformBounds(o thumbjob.Options, dpr float64, maxSide int) error {
	t := o.Transforms
	offset := func(name string, g thumbjob.Gravity, f thumbjob.Offset) error {
		for _, v := range []float64{f.X, f.Y} {
			if g == thumbjob.GravityFocal && !(v >= 0 && v <= 1) || !(math.Abs(v) <= float64(maxSide)) {
				return a.bad(name, "has an offset beyond the image: at most %d pixels, or a fraction of its side", maxSide)
			}
		}
		return nil
	}
	if f := o.Offset; f != nil {
		if err := offset("offset", o.Gravity, *f); err != nil {
			return err
		}
	}
	if e := t.ExtendAspect; e != nil {
		if err := offset("extend_ar", e.Gravity, e.Offset); err != nil {
			return err
		}
	}
	if !slices.Contains([]int{0, 90, 180, 270}, t.Rotate) {
		return a.bad("rotate", "must be 0, 90, 180 or 270 (degrees clockwise, after EXIF orientation)")
	}
	for _, side := range []int{t.Pad.Top, t.Pad.Right, t.Pad.Bottom, t.Pad.Left} {
		if side < 0 || scaled(side, dpr) > thumbjob.MaxPad {
			return a.bad("pad", "must be one whole number of pixels, or four (top, right, bottom, left) separated by commas, each at most %d after dpr", thumbjob.MaxPad)
		}
	}
	if c := t.Crop; c != nil && c.Anchor != nil {
		if !(c.W >= 0 && c.H >= 0 && c.W <= math.MaxInt32 && c.H <= math.MaxInt32) {
			return a.bad("crop", "must be a size in pixels, or fractions below 1 of the image's sides")
		}
		if err := offset("crop", c.Anchor.Gravity, c.Anchor.Offset); err != nil {
			return err
		}
	} else if c != nil {
		const want = "must be X,Y,W,H: whole pixels, or fractions 0..1 written with a point (such as 0.25,0,0.5,1), W and H above 0"
		for _, f := range []float64{c.X, c.Y, c.W, c.H} {
			if !(f >= 0) || c.Fractions && f > 1 || !c.Fractions && f > math.MaxInt32 {
				return a.bad("crop", want)
			}
		}
		if c.W <= 0 || c.H <= 0 {
			return a.bad("crop", want)
		}
		if c.Fractions && (c.X >= 1 || c.Y >= 1) {
			return a.bad("crop", "is outside the image: X and Y as fractions must be below 1")
		}
	}
	if t.Trim != nil && !(t.Trim.Threshold >= 0 && t.Trim.Threshold <= 255) {
		return a.bad("trim", "must be THRESHOLD[,RRGGBB]: a number 0 to 255 (how far from the border's colour a pixel may be), then optionally the colour to trim (default: the top-left pixel's)")
	}
	for _, f := range []struct {
		name    string
		v, high float64
	}{{"blur", t.Blur, thumbjob.MaxBlur}, {"sharpen", t.Sharpen, thumbjob.MaxSharpen}} {
		if f.v != 0 && !(f.v >= thumbjob.MinSigma && f.v <= f.high) {
			return a.bad(f.name, "must be a sigma from %g to %g, or 0 for none", thumbjob.MinSigma, f.high)
		}
	}
	for _, side := range []int{t.MinWidth, t.MinHeight} {
		if side < 0 || side > maxSide {
			return a.bad("min", "must be an integer from 0 to %d", maxSide)
		}
	}
	if t.Pixelate < 0 || t.Pixelate > thumbjob.MaxPixelate {
		return a.bad("pixelate", "must be an integer from 0 to %d", thumbjob.MaxPixelate)
	}
	if w := t.Watermark; w != nil {
		if err := checkWatermark(w); err != nil {
			return a.bad("wm", "%s", err)
		}
	}
	return nil
}

// Same reports whether two requests ask the same of option (thumbd's name
// for it): what makes the same job. An unknown option is never the same.
func Same(option string, a, b Asked) bool {
	of, ok := asked[option]
	return ok && of(a) == of(b)
}

// asked is, for each of thumbd's option names, what a request asks of it,
// as a comparable value: its fields, an optional one by value (deref).
var asked = map[string]func(Asked) any{
	"w":         func(a Asked) any { return a.Options.Width },
	"h":         func(a Asked) any { return a.Options.Height },
	"q":         func(a Asked) any { return a.Options.Quality },
	"dpr":       func(a Asked) any { return max(a.DPR, 1) },
	"enlarge":   func(a Asked) any { return a.Options.NoEnlarge },
	"rotate":    func(a Asked) any { return a.Options.Rotate },
	"flip":      func(a Asked) any { return a.Options.Flip },
	"bg":        func(a Asked) any { return deref(a.Options.Background) },
	"pad":       func(a Asked) any { return a.Options.Pad },
	"extend":    func(a Asked) any { return a.Options.Extend },
	"crop":      func(a Asked) any { return deref(a.Options.Crop) },
	"trim":      trimAsked,
	"blur":      func(a Asked) any { return a.Options.Blur },
	"sharpen":   func(a Asked) any { return a.Options.Sharpen },
	"pixelate":  func(a Asked) any { return a.Options.Pixelate },
	"wm":        func(a Asked) any { return deref(a.Options.Watermark) },
	"min":       func(a Asked) any { return [2]int{a.Options.MinWidth, a.Options.MinHeight} },
	"extend_ar": func(a Asked) any { return deref(a.Options.ExtendAspect) },
	"offset":    func(a Asked) any { return deref(a.Options.Offset) },
	"max_bytes": func(a Asked) any { return a.Options.MaxBytes },
	"as_is":     func(a Asked) any { return a.Options.AsIs },
	"fx":        func(a Asked) any { return a.Options.FocalX },
	"fy":        func(a Asked) any { return a.Options.FocalY },
}

// trimAsked is a trim's threshold and colour (nil: no trim); its equal
// sides are imgproxy's, compared with the rest of its options.
func trimAsked(a Asked) any {
	t := a.Options.Trim
	if t == nil {
		return nil
	}
	return struct {
		threshold float64
		colour    any
	}{t.Threshold, deref(t.Colour)}
}

// deref is *p, or nil when p is: a comparable value for an optional one.
func deref[T comparable](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
