package imgproxy

import (
	"fmt"
	"math"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// asked is the options in thumbd's values (params.Asked): what thumbd
// cannot do with imgproxy's meaning is a 400 naming the imgproxy option,
// and the bounds are checked where the job is made (params.Rules.Make),
// each sentence naming the option as this URL wrote it. Client hints
// are off: imgproxy's URL says it all.
func (s *state) asked(c Config) (params.Asked, error) {
	a := params.Asked{Name: s.name}
	o := thumbjob.Options{Gravity: thumbjob.GravityCentre}
	w, h := s.width, s.height
	if s.zoomW != 1 || s.zoomH != 1 {
		if w == 0 && h == 0 {
			return a, badOption("zoom", "needs a width or height here: thumbd does not scale the source's own size")
		}
		w, h = int(math.Round(float64(w)*s.zoomW)), int(math.Round(float64(h)*s.zoomH))
	}
	fit := thumbjob.FitInside // fit and auto
	switch s.rt {
	case "fill", "fill-down":
		fit = thumbjob.FitCover
	case "force":
		fit = thumbjob.FitFill
	}
	if s.rt == "auto" && w > 0 && h > 0 {
		fit = thumbjob.FitAuto // the plan picks fill or fit from the source's orientation
	}
	enlarge := s.enlarge && s.rt != "fill-down" // fill-down never enlarges
	noSize := w == 0 && h == 0
	if noSize {
		// imgproxy keeps the source's size: thumbd's largest box that does
		// not enlarge gives it, within thumbd's max side.
		if s.enlarge && s.dpr != 1 {
			return a, badOption("dpr", "with enlarge and no size is not done by thumbd (it does not scale the source's own size)")
		}
		w, h, fit, enlarge = c.MaxSide, c.MaxSide, thumbjob.FitInside, false
	}
	o.Width, o.Height, o.Fit, o.NoEnlarge = w, h, fit, !enlarge
	o.MinWidth, o.MinHeight = s.minWidth, s.minHeight
	if s.extendAspect && !noSize {
		o.ExtendAspect = s.extendAspectGravity.anchor()
	}
	a.DPR = s.dpr
	if err := s.gravityOptions(&o, noSize); err != nil {
		return a, err
	}
	if err := s.cropRegion(&o); err != nil {
		return a, err
	}
	s.transforms(&o)
	o.Format, o.Quality, o.MaxBytes = s.format, s.quality, s.maxBytes
	o.KeepCopyright = s.keepCopyright || !s.stripMetadata // imgproxy's defaults: both true
	// Without a second, thumbd's default poster frame (made of keyframes
	// already): vtk alone changes nothing, as keyframe alone does not.
	if o.Frame = s.frame; !o.Frame.Given {
		o.Frame = thumbjob.Frame{}
	}
	o.AsIs = thumbjob.AsIsOf(s.skip)
	if s.format == "" {
		if len(s.formatQuality) > 0 {
			return a, badOption("format_quality", "needs a format in the URL here: thumbd learns the source's format only once it reads it")
		}
		// imgproxy's default: the source's format (or, with its WebP and
		// AVIF detection, thumbd's format=auto). Not with skip_processing:
		// a format negotiated before the source is read would never be the
		// skipped source's, so skp would apply to no browser.
		o.Format = imagefmt.Source
		if c.AutoFormat && len(s.skip) == 0 {
			o.Format = imagefmt.Auto
		}
	} else if o.Quality == 0 {
		o.Quality = s.formatQuality[s.format]
	}
	if s.raw {
		// imgproxy's raw streams the source whatever the format asked:
		// thumbd answers it as is in any image format it reads (a video
		// is a poster frame, never streamed).
		o.AsIs, o.Format, o.Quality = thumbjob.AsIsOf(imagefmt.Images()), imagefmt.Source, 0
	}
	a.Options = o
	return a, nil
}

// gravityOptions sets thumbd's one gravity, with its offsets:
// imgproxy's for a fill, or the extend's for a fit (a fit does not crop);
// a fill that extends at another gravity than it crops is refused.
// Without a size there is nothing to extend to (imgproxy's extend does
// nothing then).
func (s *state) gravityOptions(o *thumbjob.Options, noSize bool) error {
	g := s.gravity
	if s.extend && o.Fit != thumbjob.FitFill && !noSize {
		eg := gravity{kind: "ce"}
		if s.extendGravity != nil {
			eg = *s.extendGravity
		}
		if o.Fit == thumbjob.FitInside {
			g = eg
		} else if eg != g {
			return badOption("extend", "has gravity %s and the fill crops at %s: thumbd places both at one gravity", eg.kind, g.kind)
		}
		o.Extend = true
	}
	o.Gravity = compass[g.kind]
	switch {
	case g.kind == "fp":
		o.FocalX, o.FocalY = g.x, g.y
	case g.offset:
		o.Offset = &thumbjob.Offset{X: g.x, Y: g.y}
	}
	return nil
}

// anchor is g as a crop or an extension is placed by it (nil g: the
// centre).
func (g *gravity) anchor() *thumbjob.Anchor {
	if g == nil {
		return &thumbjob.Anchor{Gravity: thumbjob.GravityCentre}
	}
	return &thumbjob.Anchor{Gravity: compass[g.kind], Offset: thumbjob.Offset{X: g.x, Y: g.y}}
}

// cropRegion is crop W:H at its gravity (the crop's, else the one
// gravity): imgproxy's crop, sized as the box sees the image and placed
// by the gravity with its offsets (thumbjob.Anchor).
func (s *state) cropRegion(o *thumbjob.Options) error {
	if !s.crop || s.cropW == 0 && s.cropH == 0 {
		return nil
	}
	g := s.gravity
	if s.cropGravity != nil {
		g = *s.cropGravity
	}
	if g.kind == "sm" {
		return badOption("crop", "has gravity sm, and thumbd's crop takes a fixed gravity")
	}
	o.Crop = &thumbjob.Region{W: s.cropW, H: s.cropH, Anchor: g.anchor()}
	return nil
}

// transforms sets trim, padding, background, rotate, flip, the filters
// and the watermark.
func (s *state) transforms(o *thumbjob.Options) {
	o.Trim, o.Background, o.Rotate = s.trim, s.bg, s.rotate
	o.Pad = thumbjob.Sides{Top: s.pad[0], Right: s.pad[1], Bottom: s.pad[2], Left: s.pad[3]}
	switch {
	case s.flipH && s.flipV:
		o.Flip = thumbjob.FlipBoth
	case s.flipH:
		o.Flip = thumbjob.FlipHorizontal
	case s.flipV:
		o.Flip = thumbjob.FlipVertical
	}
	o.Blur, o.Sharpen, o.Pixelate, o.Watermark = s.blur, s.sharpen, s.pixelate, s.wm
}

// name names a thumbd option as this URL wrote it: the imgproxy option
// that last set it, else imgproxy's own name for it.
func (s *state) name(option string) string {
	n := imgproxyNames[option]
	if i := field(option); i >= 0 && s.by[i].name != "" {
		n = s.by[i].name
	}
	return fmt.Sprintf("imgproxy option %q", n)
}

// client reports whether the URL's own options last set option.
func (s *state) client(option string) bool {
	i := field(option)
	return i >= 0 && s.by[i].client
}

// imgproxyNames are imgproxy's names of thumbd's options.
var imgproxyNames = map[string]string{"w": "width", "h": "height", "q": "quality", "dpr": "dpr", "fit": "resizing_type",
	"min": "min-width", "extend_ar": "extend_aspect_ratio", "offset": "gravity", "max_bytes": "max_bytes", "as_is": "skip_processing",
	"enlarge": "enlarge", "extend": "extend", "gravity": "gravity", "fx": "gravity", "fy": "gravity", "crop": "crop",
	"trim": "trim", "pad": "padding", "bg": "background", "rotate": "rotate", "flip": "flip", "blur": "blur",
	"sharpen": "sharpen", "pixelate": "pixelate", "wm": "watermark", "format": "format", "animated": "format"}
