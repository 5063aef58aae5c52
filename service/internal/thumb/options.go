package thumb

import (
	"fmt"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
)

// Fit says how the source is mapped onto the asked box.
type Fit string

const (
	FitCover   Fit = "cover"   // fill the box, crop the overflow
	FitContain Fit = "contain" // fit inside, pad to the box
	FitFill    Fit = "fill"    // stretch to the box
	FitInside  Fit = "inside"  // fit inside, no padding
)

// Fits lists every fit, in the order the API documents them.
func Fits() []Fit { return []Fit{FitCover, FitContain, FitFill, FitInside} }

// Gravity picks the part of the source that cover keeps.
type Gravity string

const (
	GravityCentre    Gravity = "centre"
	GravityAttention Gravity = "attention"
	GravityEntropy   Gravity = "entropy"
)

// Gravities lists every gravity, in the order the API documents them.
func Gravities() []Gravity { return []Gravity{GravityCentre, GravityAttention, GravityEntropy} }

// Options describe one thumbnail. Width or Height may be 0, meaning "follow
// the source's aspect ratio"; the engine resolves it once it knows the
// source's size. Both 0 is never passed: the caller chooses a box.
type Options struct {
	Width, Height int
	Fit           Fit
	Gravity       Gravity
	Format        imagefmt.Format // an output format of the table
	// AlphaFormat, when set, replaces Format for a thumbnail that has
	// transparency (format=auto: JPEG for opaque results, PNG for others).
	AlphaFormat imagefmt.Format
	// Quality is 1..100 for formats whose encoder takes one; 0 means the
	// format's default (format=auto without q).
	Quality int
	// Animated keeps every frame of an animated source, resized, when the
	// output format can hold them; else the first frame is used.
	Animated bool
}

// Normalised is a canonical text of the options, for ETags: two requests
// that must give the same bytes give the same text.
func (o Options) Normalised() string {
	q := o.Quality
	spec, _ := imagefmt.Lookup(o.Format)
	alpha, _ := imagefmt.Lookup(o.AlphaFormat)
	if spec.Quality == 0 && alpha.Quality == 0 {
		q = 0 // the encoders ignore it
	}
	g := o.Gravity
	if o.Fit != FitCover {
		g = "" // only cover uses gravity
	}
	formats := string(o.Format)
	if o.AlphaFormat != "" && o.AlphaFormat != o.Format {
		formats += "/" + string(o.AlphaFormat)
	}
	animated := o.Animated && (spec.Animated || alpha.Animated)
	return fmt.Sprintf("w=%d,h=%d,fit=%s,gravity=%s,format=%s,q=%d,animated=%t", o.Width, o.Height, o.Fit, g, formats, q, animated)
}

// output is the format a thumbnail is written in, given whether it has
// transparency.
func (o Options) output(alpha bool) imagefmt.Spec {
	f := o.Format
	if alpha && o.AlphaFormat != "" {
		f = o.AlphaFormat
	}
	spec, _ := imagefmt.Lookup(f)
	return spec
}
