package params

import (
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// transformNames are the transforms' parameters (thumbjob.Transforms),
// taken wherever the thumbnail options are.
var transformNames = []string{"enlarge", "rotate", "flip", "bg", "pad", "extend", "crop", "trim", "blur", "sharpen", "pixelate", "wm"}

// transforms reads the transforms of q: each value's syntax (a bad one is
// a 400 naming it); their bounds, and dpr's multiplying the pad, are
// Make's.
func transforms(q map[string]string) (thumbjob.Transforms, error) {
	var t thumbjob.Transforms
	enlarge, err := booleanOr(q, "enlarge", true)
	if err != nil {
		return t, err
	}
	t.NoEnlarge = !enlarge
	if v, ok := q["rotate"]; ok {
		if !slices.Contains([]string{"0", "90", "180", "270"}, v) {
			return t, bad("rotate", "must be 0, 90, 180 or 270 (degrees clockwise, after EXIF orientation)")
		}
		t.Rotate, _ = strconv.Atoi(v)
	}
	if v, ok := q["flip"]; ok {
		t.Flip = thumbjob.Flip(v)
		if !slices.Contains([]thumbjob.Flip{thumbjob.FlipHorizontal, thumbjob.FlipVertical, thumbjob.FlipBoth}, t.Flip) {
			return t, bad("flip", "must be h (across), v (down) or hv (both)")
		}
	}
	if v, ok := q["bg"]; ok {
		c, ok := colour(v)
		if !ok {
			return t, bad("bg", "must be a colour as RRGGBB or RRGGBBAA hex digits, such as ffffff or 00000000")
		}
		t.Background = &c
	}
	if t.Pad, err = pad(q); err != nil {
		return t, err
	}
	if t.Extend, err = boolean(q, "extend"); err != nil {
		return t, err
	}
	if t.Crop, err = crop(q); err != nil {
		return t, err
	}
	if t.Trim, err = trim(q); err != nil {
		return t, err
	}
	if t.Blur, err = sigma(q, "blur", thumbjob.MaxBlur); err != nil {
		return t, err
	}
	if t.Sharpen, err = sigma(q, "sharpen", thumbjob.MaxSharpen); err != nil {
		return t, err
	}
	if v, ok := q["pixelate"]; ok {
		if t.Pixelate, err = strconv.Atoi(v); err != nil || strings.TrimLeft(v, "0123456789") != "" {
			return t, bad("pixelate", "must be an integer from 0 to %d", thumbjob.MaxPixelate)
		}
	}
	if v, ok := q["wm"]; ok {
		if t.Watermark, err = parseWatermark(v); err != nil {
			return t, bad("wm", "%s", err)
		}
	}
	return t, nil
}

// booleanOr reads q[name] as true or false; def when absent.
func booleanOr(q map[string]string, name string, def bool) (bool, error) {
	if _, ok := q[name]; !ok {
		return def, nil
	}
	return boolean(q, name)
}

// colour reads RRGGBB (opaque) or RRGGBBAA.
func colour(v string) (thumbjob.Colour, bool) {
	if len(v) != 6 && len(v) != 8 {
		return thumbjob.Colour{}, false
	}
	b, err := hex.DecodeString(v)
	if err != nil {
		return thumbjob.Colour{}, false
	}
	c := thumbjob.Colour{R: b[0], G: b[1], B: b[2], A: 255}
	if len(b) == 4 {
		c.A = b[3]
	}
	return c, true
}

// numbers splits v at commas into plain decimals; nil when one is not.
func numbers(v string) []float64 {
	var out []float64
	for _, s := range strings.Split(v, ",") {
		f, ok := decimal(s)
		if !ok {
			return nil
		}
		out = append(out, f)
	}
	return out
}

// pad reads pad=T,R,B,L or pad=N (every side): whole pixels (dpr
// multiplies them, and Make bounds them after it).
func pad(q map[string]string) (thumbjob.Sides, error) {
	v, ok := q["pad"]
	if !ok {
		return thumbjob.Sides{}, nil
	}
	n := numbers(v)
	if len(n) == 1 {
		n = []float64{n[0], n[0], n[0], n[0]}
	}
	sides := make([]int, 4)
	for i := range n {
		if len(n) != 4 || n[i] != math.Trunc(n[i]) || n[i] > math.MaxInt32 {
			n = nil
			break
		}
		sides[i] = int(n[i])
	}
	if len(n) != 4 {
		return thumbjob.Sides{}, bad("pad", "must be one whole number of pixels, or four (top, right, bottom, left) separated by commas, each at most %d after dpr", thumbjob.MaxPad)
	}
	return thumbjob.Sides{Top: sides[0], Right: sides[1], Bottom: sides[2], Left: sides[3]}, nil
}

// crop reads crop=X,Y,W,H: a region of the source as displayed, in
// whole pixels, or (when one has a decimal point) in fractions of its
// sides; its bounds are Make's.
func crop(q map[string]string) (*thumbjob.Region, error) {
	v, ok := q["crop"]
	if !ok {
		return nil, nil
	}
	n := numbers(v)
	if len(n) != 4 {
		return nil, bad("crop", "must be X,Y,W,H: whole pixels, or fractions 0..1 written with a point (such as 0.25,0,0.5,1), W and H above 0")
	}
	return &thumbjob.Region{X: n[0], Y: n[1], W: n[2], H: n[3], Fractions: strings.Contains(v, ".")}, nil
}

// trim reads trim=THRESHOLD[,RRGGBB]: THRESHOLD 0..255.
func trim(q map[string]string) (*thumbjob.Trim, error) {
	v, ok := q["trim"]
	if !ok {
		return nil, nil
	}
	threshold, c, hasColour := strings.Cut(v, ",")
	f, ok := decimal(threshold)
	if !ok {
		return nil, bad("trim", "must be THRESHOLD[,RRGGBB]: a number 0 to 255 (how far from the border's colour a pixel may be), then optionally the colour to trim (default: the top-left pixel's)")
	}
	t := &thumbjob.Trim{Threshold: f}
	if hasColour {
		col, ok := colour(c)
		if !ok || len(c) != 6 {
			return nil, bad("trim", "has a colour that is not RRGGBB hex digits, such as ffffff")
		}
		t.Colour = &col
	}
	return t, nil
}

// sigma reads a Gaussian sigma (its bounds, 0 or from thumbjob.MinSigma
// to hi, are Make's).
func sigma(q map[string]string, name string, hi float64) (float64, error) {
	v, ok := q[name]
	if !ok {
		return 0, nil
	}
	f, ok := decimal(v)
	if !ok {
		return 0, bad(name, "must be a sigma from %g to %g, or 0 for none", thumbjob.MinSigma, hi)
	}
	return f, nil
}

// Watermark is how the configured watermark may be asked for.
type Watermark struct {
	// Configured: THUMBD_WATERMARK names one; without it wm= is a 400.
	Configured bool
	// Required (THUMBD_WATERMARK_REQUIRED) is put on every thumbnail; nil:
	// only on those that ask with wm=. With it, wm= is refused: the
	// operator places the mark.
	Required *thumbjob.Watermark
	// Mark names the configured image (thumbjob.Watermark.Mark).
	Mark string
}

// watermark is the watermark a request gets under the rules: the
// required one whatever it asked (asking is refused then), else the one
// it asked for, if any, when one is configured.
func (r Rules) watermark(a Asked) (*thumbjob.Watermark, error) {
	w := a.Options.Watermark
	switch {
	case r.Watermark.Required != nil && w != nil:
		return nil, a.bad("wm", "is not taken here: every thumbnail carries the operator's watermark (THUMBD_WATERMARK_REQUIRED)")
	case r.Watermark.Required != nil:
		w = r.Watermark.Required
	case w == nil:
		return nil, nil
	case !r.Watermark.Configured:
		return nil, a.bad("wm", "asks for the watermark, and none is configured (THUMBD_WATERMARK)")
	}
	mark := *w
	mark.Mark = r.Watermark.Mark
	return &mark, nil
}

// ParseWatermark reads OPACITY[,POSITION[,X,Y[,SCALE]]]: the syntax of wm=
// and of THUMBD_WATERMARK_OPTIONS, within its bounds. Opacity is above 0
// and at most 1; the position one of imgproxy's (default ce); X and Y
// whole pixels, 0 to thumbjob.MaxMarkOffset; scale 0 (the mark's own
// size) or above 0 to 1 (its width as a fraction of the thumbnail's).
func ParseWatermark(v string) (*thumbjob.Watermark, error) {
	w, err := parseWatermark(v)
	if err == nil {
		err = checkWatermark(w)
	}
	return w, err
}

// watermarkSyntax is what wm= must be.
func watermarkSyntax() error {
	return fmt.Errorf("must be OPACITY[,POSITION[,X,Y[,SCALE]]]: an opacity above 0 to 1, a position (%s), offsets in whole pixels (0 to %d), a scale 0 to 1 (0: the mark's own size)", positionNames(), thumbjob.MaxMarkOffset)
}

// parseWatermark reads wm='s syntax (checkWatermark its bounds).
func parseWatermark(v string) (*thumbjob.Watermark, error) {
	parts := strings.Split(v, ",")
	if len(parts) > 5 || len(parts) == 3 {
		return nil, watermarkSyntax()
	}
	w := &thumbjob.Watermark{Position: thumbjob.PositionCentre}
	op, ok := decimal(parts[0])
	if !ok {
		return nil, watermarkSyntax()
	}
	w.Opacity = op
	if len(parts) > 1 {
		w.Position = thumbjob.Position(parts[1])
		if !slices.Contains(thumbjob.Positions(), w.Position) {
			return nil, watermarkSyntax()
		}
	}
	if len(parts) > 3 {
		for i, dst := range []*int{&w.X, &w.Y} {
			n, err := strconv.Atoi(parts[2+i])
			if err != nil {
				return nil, watermarkSyntax()
			}
			*dst = n
		}
	}
	if len(parts) > 4 {
		s, ok := decimal(parts[4])
		if !ok {
			return nil, watermarkSyntax()
		}
		w.Scale = s
	}
	return w, nil
}

// checkWatermark holds a watermark to its bounds.
func checkWatermark(w *thumbjob.Watermark) error {
	if !(w.Opacity > 0 && w.Opacity <= 1) || w.X < 0 || w.X > thumbjob.MaxMarkOffset || w.Y < 0 || w.Y > thumbjob.MaxMarkOffset ||
		!(w.Scale >= 0 && w.Scale <= 1) || !slices.Contains(thumbjob.Positions(), w.Position) {
		return watermarkSyntax()
	}
	return nil
}

func positionNames() string {
	var names []string
	for _, p := range thumbjob.Positions() {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}
