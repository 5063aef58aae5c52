package thumb

import (
	"fmt"
	"strconv"
)

// Fit says how the source is mapped onto the asked box.
type Fit string

const (
	FitCover   Fit = "cover"   // fill the box, crop the overflow
	FitContain Fit = "contain" // fit inside, pad to the box
	FitFill    Fit = "fill"    // stretch to the box
	FitInside  Fit = "inside"  // fit inside, no padding
)

// Gravity picks the part of the source that cover keeps.
type Gravity string

const (
	GravityCentre    Gravity = "centre"
	GravityAttention Gravity = "attention"
	GravityEntropy   Gravity = "entropy"
)

// Format is an output format.
type Format string

const (
	FormatPNG  Format = "png"
	FormatJPEG Format = "jpeg"
	FormatWebP Format = "webp"
)

// ContentType is the media type of the format.
func (f Format) ContentType() string {
	switch f {
	case FormatJPEG:
		return "image/jpeg"
	case FormatWebP:
		return "image/webp"
	default:
		return "image/png"
	}
}

// Defaults of the HTTP contract.
const (
	DefaultSide    = 256
	DefaultQuality = 80
)

// Options describe one thumbnail. Width or Height may be 0, meaning "follow
// the source's aspect ratio"; the engine resolves it once it knows the
// source's size. Both 0 is never passed: the parser turns it into the
// default box.
type Options struct {
	Width, Height int
	Fit           Fit
	Gravity       Gravity
	Format        Format
	Quality       int // 1..100, used by jpeg and webp
}

// Normalised is a canonical text of the options, for ETags: two requests
// that must give the same bytes give the same text.
func (o Options) Normalised() string {
	q := o.Quality
	if o.Format == FormatPNG {
		q = 0 // png ignores q
	}
	g := o.Gravity
	if o.Fit != FitCover {
		g = "" // only cover uses gravity
	}
	return fmt.Sprintf("w=%d,h=%d,fit=%s,gravity=%s,format=%s,q=%d", o.Width, o.Height, o.Fit, g, o.Format, q)
}

// ParamError is a bad request parameter; its message is a sentence for the
// client.
type ParamError struct {
	Param, Msg string
}

func (e *ParamError) Error() string { return fmt.Sprintf("parameter %q %s", e.Param, e.Msg) }

// Params is how the parser reads a query: the first value of a key and
// whether the key is present at all. url.Values satisfies it through a
// small adapter in the service.
type Params interface {
	Lookup(key string) (string, bool)
}

// ParseOptions reads and validates the contract's thumbnail parameters.
// maxSide bounds w and h.
func ParseOptions(p Params, maxSide int) (Options, error) {
	o := Options{Fit: FitCover, Gravity: GravityCentre, Format: FormatPNG, Quality: DefaultQuality}
	var err error
	if o.Width, err = side(p, "w", maxSide); err != nil {
		return Options{}, err
	}
	if o.Height, err = side(p, "h", maxSide); err != nil {
		return Options{}, err
	}
	if o.Width == 0 && o.Height == 0 {
		o.Width, o.Height = min(DefaultSide, maxSide), min(DefaultSide, maxSide)
	}
	if v, ok := p.Lookup("fit"); ok {
		switch f := Fit(v); f {
		case FitCover, FitContain, FitFill, FitInside:
			o.Fit = f
		default:
			return Options{}, &ParamError{"fit", "must be one of cover, contain, fill, inside"}
		}
	}
	if v, ok := p.Lookup("gravity"); ok {
		switch g := Gravity(v); g {
		case GravityCentre, GravityAttention, GravityEntropy:
			o.Gravity = g
		default:
			return Options{}, &ParamError{"gravity", "must be one of centre, attention, entropy"}
		}
	}
	if v, ok := p.Lookup("format"); ok {
		switch f := Format(v); f {
		case FormatPNG, FormatJPEG, FormatWebP:
			o.Format = f
		default:
			return Options{}, &ParamError{"format", "must be one of png, jpeg, webp"}
		}
	}
	if v, ok := p.Lookup("q"); ok {
		q, err := strconv.Atoi(v)
		if err != nil || q < 1 || q > 100 {
			return Options{}, &ParamError{"q", "must be an integer from 1 to 100"}
		}
		o.Quality = q
	}
	return o, nil
}

func side(p Params, key string, maxSide int) (int, error) {
	v, ok := p.Lookup(key)
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxSide {
		return 0, &ParamError{key, fmt.Sprintf("must be an integer from 1 to %d", maxSide)}
	}
	return n, nil
}
