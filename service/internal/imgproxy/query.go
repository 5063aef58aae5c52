package imgproxy

import (
	"math"
	"strconv"
	"strings"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// query translates the options into GET /thumbnail's query values; what
// thumbd's parameters cannot say with imgproxy's meaning is a 400 naming
// the imgproxy option. Client hints are off: imgproxy's URL says it all.
func (s *state) query(c Config) (map[string]string, error) {
	q := map[string]string{"hints": "off"}
	if s.minWidth > 0 {
		return nil, badOption("min-width", "is not done by thumbd; give it as 0 or leave it out")
	}
	if s.minHeight > 0 {
		return nil, badOption("min-height", "is not done by thumbd; give it as 0 or leave it out")
	}
	w, h := s.width, s.height
	if s.zoomW != 1 || s.zoomH != 1 {
		if w == 0 && h == 0 {
			return nil, badOption("zoom", "needs a width or height here: thumbd does not scale the source's own size")
		}
		w, h = int(math.Round(float64(w)*s.zoomW)), int(math.Round(float64(h)*s.zoomH))
	}
	fit := map[string]thumbjob.Fit{"fit": thumbjob.FitInside, "fill": thumbjob.FitCover, "fill-down": thumbjob.FitCover,
		"force": thumbjob.FitFill, "auto": thumbjob.FitInside}[s.rt]
	if s.rt == "auto" && w > 0 && h > 0 {
		return nil, badOption("resizing_type", "auto with both a width and a height is not done by thumbd (it picks fill or fit from the source's orientation, known only once it is read); give fit or fill")
	}
	enlarge := s.enlarge && s.rt != "fill-down" // fill-down never enlarges
	noSize := w == 0 && h == 0
	if noSize {
		// imgproxy keeps the source's size: thumbd's largest box that does
		// not enlarge gives it, within thumbd's max side.
		if s.enlarge && s.dpr != 1 {
			return nil, badOption("dpr", "with enlarge and no size is not done by thumbd (it does not scale the source's own size)")
		}
		w, h, fit, enlarge = c.MaxSide, c.MaxSide, thumbjob.FitInside, false
	}
	if w > 0 {
		q["w"] = strconv.Itoa(w)
	}
	if h > 0 {
		q["h"] = strconv.Itoa(h)
	}
	q["fit"] = string(fit)
	q["enlarge"] = strconv.FormatBool(enlarge)
	if s.dpr != 1 {
		if s.dpr < 1 || s.dpr > 4 {
			return nil, badOption("dpr", "is %g, and thumbd takes 1 to 4", s.dpr)
		}
		q["dpr"] = strconv.FormatFloat(s.dpr, 'f', -1, 64)
	}
	if err := s.gravityQuery(q, fit, noSize); err != nil {
		return nil, err
	}
	if err := s.cropQuery(q); err != nil {
		return nil, err
	}
	if err := s.filterQuery(q); err != nil {
		return nil, err
	}
	return q, s.formatQuery(q)
}

// gravityQuery sets thumbd's one gravity: imgproxy's for a fill, or the
// extend's for a fit (a fit does not crop); a fill that extends at
// another gravity than it crops is refused. Without a size there is
// nothing to extend to (imgproxy's extend does nothing then).
func (s *state) gravityQuery(q map[string]string, fit thumbjob.Fit, noSize bool) error {
	g := s.gravity
	if g.offset {
		return badOption("gravity", "has offsets, and thumbd's gravities take none")
	}
	if s.extend && fit != thumbjob.FitFill && !noSize {
		eg := gravity{kind: "ce"}
		if s.extendGravity != nil {
			eg = *s.extendGravity
		}
		if eg.offset {
			return badOption("extend", "has gravity offsets, and thumbd's extend takes none")
		}
		if fit == thumbjob.FitInside {
			g = eg
		} else if eg.kind != g.kind {
			return badOption("extend", "has gravity %s and the fill crops at %s: thumbd places both at one gravity", eg.kind, g.kind)
		}
		q["extend"] = "true"
	}
	q["gravity"] = string(compass[g.kind])
	if g.kind == "fp" {
		q["fx"], q["fy"] = decimalText(g.x), decimalText(g.y)
	}
	return nil
}

// cropQuery turns crop W:H at its gravity into thumbd's X,Y,W,H: in
// fractions of the source at any fixed gravity, in pixels only from the
// top-left corner (elsewhere it needs the source's size).
func (s *state) cropQuery(q map[string]string) error {
	if !s.crop || s.cropW == 0 && s.cropH == 0 {
		return nil
	}
	g := s.gravity
	if s.cropGravity != nil {
		g = *s.cropGravity
	}
	if g.offset {
		return badOption("crop", "has gravity offsets, and thumbd's crop takes none")
	}
	frac := func(v float64) (float64, bool) {
		if v == 0 {
			return 1, true
		}
		return v, v < 1
	}
	fw, wFrac := frac(s.cropW)
	fh, hFrac := frac(s.cropH)
	switch {
	case wFrac && hFrac:
		px, py, ok := (thumbjob.Options{Gravity: compass[g.kind], FocalX: g.x, FocalY: g.y}).Point()
		if !ok {
			return badOption("crop", "has gravity sm, and thumbd's crop takes a fixed gravity")
		}
		q["crop"] = strings.Join([]string{fraction((1 - fw) * px), fraction((1 - fh) * py), fraction(fw), fraction(fh)}, ",")
	case !wFrac && !hFrac && g.kind == "nowe":
		q["crop"] = "0,0," + strconv.Itoa(int(math.Round(fw))) + "," + strconv.Itoa(int(math.Round(fh)))
	default:
		return badOption("crop", "in pixels is placed by its gravity on the source's size, which thumbd knows only once it reads the source: give fractions (such as 0.5:0.5, or 0 for a whole side) or pixels at gravity nowe")
	}
	return nil
}

// filterQuery sets trim, padding, background, rotate, flip, the
// filters and the watermark, each bounded as thumbd bounds it.
func (s *state) filterQuery(q map[string]string) error {
	if s.trim != "" {
		q["trim"] = s.trim
	}
	if s.pad != [4]int{} {
		q["pad"] = strconv.Itoa(s.pad[0]) + "," + strconv.Itoa(s.pad[1]) + "," + strconv.Itoa(s.pad[2]) + "," + strconv.Itoa(s.pad[3])
	}
	if s.bg != "" {
		q["bg"] = s.bg
	}
	if s.rotate != 0 {
		q["rotate"] = strconv.Itoa(s.rotate)
	}
	if flip := map[[2]bool]string{{true, false}: "h", {false, true}: "v", {true, true}: "hv"}[[2]bool{s.flipH, s.flipV}]; flip != "" {
		q["flip"] = flip
	}
	for _, f := range []struct {
		name, param string
		v, max      float64
	}{{"blur", "blur", s.blur, thumbjob.MaxBlur}, {"sharpen", "sharpen", s.sharpen, thumbjob.MaxSharpen}} {
		if f.v == 0 {
			continue
		}
		if f.v < 0.3 || f.v > f.max {
			return badOption(f.name, "is %g, and thumbd takes a sigma from 0.3 to %g (0: none)", f.v, f.max)
		}
		q[f.param] = decimalText(f.v)
	}
	if s.pixelate > 1 {
		if s.pixelate > thumbjob.MaxPixelate {
			return badOption("pixelate", "is %d, and thumbd takes blocks of at most %d pixels", s.pixelate, thumbjob.MaxPixelate)
		}
		q["pixelate"] = strconv.Itoa(s.pixelate)
	}
	if s.wm != "" {
		q["wm"] = s.wm
	}
	return nil
}

// formatQuery sets format and q; without a format the answer is in the
// source's (Request.SourceFormat), its quality in Request.Quality.
func (s *state) formatQuery(q map[string]string) error {
	if s.format == "" {
		if len(s.formatQuality) > 0 {
			return badOption("format_quality", "needs a format in the URL here: thumbd learns the source's format only once it reads it")
		}
		return nil
	}
	q["format"] = string(s.format)
	quality := s.quality
	if quality == 0 {
		quality = s.formatQuality[s.format]
	}
	if quality > 0 {
		q["q"] = strconv.Itoa(quality)
	}
	return nil
}

// sourceQuality is q for an answer in the source's format.
func (s *state) sourceQuality() int {
	if s.format != "" {
		return 0
	}
	return s.quality
}

// decimalText writes f as params' decimals read it (no exponent).
func decimalText(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// fraction writes f with a point, which makes thumbd read a crop as
// fractions.
func fraction(f float64) string {
	t := decimalText(f)
	if !strings.Contains(t, ".") {
		t += ".0"
	}
	return t
}
