package params

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Allowed is the bounded unsigned mode (THUMBD_ALLOWED_WIDTHS,
// THUMBD_ALLOWED_QUALITIES, THUMBD_ALLOWED_TRANSFORMS), as Next.js's own
// optimizer bounds its deviceSizes, imageSizes and qualities: what an
// unsigned client chooses must be on these lists, so that it cannot make
// one fresh job per width from 1 to the max side, nor per blur sigma or
// padding. What the operator chose (a preset's options, the default box, a
// format's default quality) is not bound, nor is a signed request
// (Rules.Signed). Any list switches the mode on; in it, a nil width or
// quality list is no bound, and a transform the transforms list does not
// name is refused.
type Allowed struct {
	Sides     []int // the answer's width and height, after dpr, client hints and pad; sorted
	Qualities []int // q; sorted
	// Transforms are the values an unsigned request may give the
	// transforms and the focal point (boundNames).
	Transforms TransformValues
}

func (a Allowed) on() bool { return a.Sides != nil || a.Qualities != nil || a.Transforms != nil }

// boundNames are the parameters THUMBD_ALLOWED_TRANSFORMS lists values
// of: every transform, and gravity=focal's point, whose values are
// unbounded (each a job, a cache entry and a stored object of its own).
// fit, gravity, format and animated have few values, counted in
// docs/hardening.md's arithmetic.
var boundNames = append(slices.Clone(transformNames), "fx", "fy")

// TransformValue is one entry of THUMBD_ALLOWED_TRANSFORMS: a parameter,
// its value as written, and what the job holds for it (held).
type TransformValue struct {
	Name, Value string
	held        string
}

// TransformValues are THUMBD_ALLOWED_TRANSFORMS' entries, in its order.
type TransformValues []TransformValue

// ParseAllowedTransforms reads THUMBD_ALLOWED_TRANSFORMS: NAME=VALUE
// entries separated by ";" (values hold commas: pad=8,0,8,0), each read
// as the query reads it, such as "blur=5;pad=8;bg=ffffff". A name may
// come back with other values.
func ParseAllowedTransforms(s string) (TransformValues, error) {
	var out TransformValues
	var errs []error
	for _, entry := range strings.Split(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		v, err := parseTransformValue(entry)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, v)
	}
	if len(out) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("want NAME=VALUE entries separated by \";\", such as blur=5;pad=8, NAME one of %s", strings.Join(boundNames, ", ")))
	}
	return out, errors.Join(errs...)
}

func parseTransformValue(entry string) (TransformValue, error) {
	name, value, _ := strings.Cut(entry, "=")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !slices.Contains(boundNames, name) {
		return TransformValue{}, fmt.Errorf("%q: want NAME=VALUE, NAME one of %s", entry, strings.Join(boundNames, ", "))
	}
	q := map[string]string{name: value}
	if name == "fx" || name == "fy" {
		q = map[string]string{"gravity": "focal", "fx": "0", "fy": "0", name: value}
	}
	a, err := read(q, math.MaxInt32)
	if err == nil {
		// its bounds, as any request's (a watermark as if one is configured)
		a.Options, err = Rules{MaxSide: math.MaxInt32, Watermark: Watermark{Configured: true}}.bounds(a)
	}
	if err != nil {
		return TransformValue{}, fmt.Errorf("%q: %s", entry, apierr.From(err).Message)
	}
	return TransformValue{Name: name, Value: value, held: held(name, a.Options)}, nil
}

// String writes the entries back in the setting's syntax.
func (vs TransformValues) String() string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.Name + "=" + v.Value
	}
	return strings.Join(s, ";")
}

// Lists reports whether the list holds a value of parameter name.
func (vs TransformValues) Lists(name string) bool {
	return slices.ContainsFunc(vs, func(v TransformValue) bool { return v.Name == name })
}

// held is what o holds for parameter name, as text: two values that
// make the same job hold the same (blur=5 and blur=5.0; pad=8 and
// pad=8,8,8,8; pad in pixels after dpr).
func held(name string, o thumbjob.Options) string {
	var v any
	switch name {
	case "enlarge":
		v = o.NoEnlarge
	case "rotate":
		v = o.Rotate
	case "flip":
		v = o.Flip
	case "bg":
		v = o.Background
	case "pad":
		v = o.Pad
	case "extend":
		v = o.Extend
	case "crop":
		v = o.Crop
	case "trim":
		v = o.Trim
	case "blur":
		v = o.Blur
	case "sharpen":
		v = o.Sharpen
	case "pixelate":
		v = o.Pixelate
	case "wm":
		if w := o.Watermark; w != nil {
			mark := *w
			mark.Mark = "" // the configured image's, not the request's
			v = mark
		}
	case "fx":
		v = o.FocalX
	case "fy":
		v = o.FocalY
	}
	b, _ := json.Marshal(v) // plain values and structs of them
	return string(b)
}

// Signed are the rules for a signed request: its signer chose its
// options, so neither the allow-lists nor the filter span bind it.
func (r Rules) Signed() Rules {
	r.Allowed, r.FilterSpan, r.signed = Allowed{}, 0, true
	return r
}

// ParseAllowedSides reads THUMBD_ALLOWED_WIDTHS: comma-separated pixel
// counts such as Next.js's "640,750,828,1080,1200,1920,2048,3840". Values
// over the max side are refused by the config's check.
func ParseAllowedSides(s string) ([]int, error) { return parseInts(s, 1, 1<<20, "widths") }

// ParseAllowedQualities reads THUMBD_ALLOWED_QUALITIES: comma-separated
// qualities 1 to 100, such as "75".
func ParseAllowedQualities(s string) ([]int, error) { return parseInts(s, 1, 100, "qualities") }

func parseInts(s string, lo, hi int, what string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < lo || n > hi || strings.TrimLeft(f, "0123456789") != "" {
			return nil, fmt.Errorf("%q: want comma-separated %s, integers %d to %d", f, what, lo, hi)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatInts writes a list back in the settings' syntax.
func FormatInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// check refuses what the client chose off the lists: o is the final
// options of a; a.Chooser names who chose each (the request, a client
// hint's header, or "" when the operator's preset or default gave it).
func (a Allowed) check(o thumbjob.Options, asked Asked) error {
	if !a.on() {
		return nil
	}
	if err := a.Transforms.check(o, asked); err != nil {
		return err
	}
	// The answer's size is the box plus the pad: whoever chose either
	// part chose the size, which must be on the list.
	dpr, padBy := asked.chooser("dpr"), ""
	if o.Pad != (thumbjob.Sides{}) {
		padBy = asked.chooser("pad")
	}
	side := func(name string, n, pad int, what string) error {
		by := asked.chooser(name)
		if by == "" {
			by = dpr
		}
		if by == "" && pad != 0 {
			by = padBy
		}
		if n == 0 || a.Sides == nil || by == "" || slices.Contains(a.Sides, n+pad) {
			return nil
		}
		detail := ""
		if asked.DPR != 0 && asked.DPR != 1 {
			detail = fmt.Sprintf(" at dpr %g", asked.DPR)
		}
		if pad != 0 {
			detail += fmt.Sprintf(" (a box of %d and a pad of %d)", n, pad)
		}
		return apierr.New(apierr.BadParameter, "%s makes the %s %d%s, which is not allowed here: %s (THUMBD_ALLOWED_WIDTHS).", by, what, n+pad, detail, nearest(a.Sides, n+pad, "size"))
	}
	if err := side("w", o.Width, o.Pad.Left+o.Pad.Right, "width"); err != nil {
		return err
	}
	if err := side("h", o.Height, o.Pad.Top+o.Pad.Bottom, "height"); err != nil {
		return err
	}
	if by := asked.chooser("q"); by != "" && a.Qualities != nil && asked.Options.Quality != 0 {
		n := asked.Options.Quality
		if !slices.Contains(a.Qualities, n) {
			return apierr.New(apierr.BadParameter, "%s asks for quality %d, which is not allowed here: %s (THUMBD_ALLOWED_QUALITIES).", by, n, nearest(a.Qualities, n, "quality"))
		}
	}
	return nil
}

// unlisted are options of another grammar (imgproxy's min-width and
// min-height, extend_aspect_ratio, gravity offsets, max_bytes) that have
// no value THUMBD_ALLOWED_TRANSFORMS can list: unsigned, a client takes
// none. (raw and skip_processing are a signed URL's or a preset's in
// every mode: Rules.Make.)
var unlisted = []string{"min", "extend_ar", "offset", "max_bytes"}

// check refuses a transform or focal point the client chose that the
// list does not hold. A value that changes nothing (blur=0, rotate=0,
// enlarge=true) makes no job of its own and is taken.
func (vs TransformValues) check(o thumbjob.Options, asked Asked) error {
	for _, name := range unlisted {
		if by := asked.chooser(name); by != "" && !Same(name, asked, Asked{}) {
			return apierr.New(apierr.BadParameter, "%s is not taken unsigned here (THUMBD_ALLOWED_TRANSFORMS lists none of it): give it in a preset, or sign the URL.", by)
		}
	}
	for _, name := range boundNames {
		by := asked.chooser(name)
		if by == "" {
			continue
		}
		h := held(name, o)
		if slices.Contains(transformNames, name) && h == held(name, thumbjob.Options{}) {
			continue
		}
		var listed []string
		found := false
		for _, v := range vs {
			if v.Name == name {
				listed = append(listed, v.Name+"="+v.Value)
				found = found || v.held == h
			}
		}
		if found {
			continue
		}
		asks := queryText(name, asked)
		if listed == nil {
			return apierr.New(apierr.BadParameter, "%s asks for %s, and no %s is taken unsigned here: list the values to allow in THUMBD_ALLOWED_TRANSFORMS (such as %s), give it in a preset, or sign the URL.", by, asks, name, strings.SplitN(asks, " ", 2)[0])
		}
		unit := ""
		if name == "pad" {
			unit = " (pixels after dpr)"
		}
		return apierr.New(apierr.BadParameter, "%s asks for %s, which is not taken unsigned here: THUMBD_ALLOWED_TRANSFORMS allows %s%s; list it there, give it in a preset, or sign the URL.", by, asks, strings.Join(listed, ", "), unit)
	}
	return nil
}

// queryText writes an option a request asked for in thumbd's syntax
// (NAME=VALUE, the pad's before dpr, with the dpr), whichever grammar
// asked: what THUMBD_ALLOWED_TRANSFORMS would list.
func queryText(name string, a Asked) string {
	o := a.Options
	var v string
	switch name {
	case "enlarge":
		v = strconv.FormatBool(!o.NoEnlarge)
	case "rotate":
		v = strconv.Itoa(o.Rotate)
	case "flip":
		v = string(o.Flip)
	case "bg":
		if c := o.Background; c != nil {
			v = c.String()
		}
	case "pad":
		p := o.Pad
		v = fmt.Sprintf("%d,%d,%d,%d", p.Top, p.Right, p.Bottom, p.Left)
		if p.Top == p.Right && p.Right == p.Bottom && p.Bottom == p.Left {
			v = strconv.Itoa(p.Top)
		}
		if a.DPR != 0 && a.DPR != 1 {
			v += fmt.Sprintf(" at dpr %g", a.DPR)
		}
	case "extend":
		v = strconv.FormatBool(o.Extend)
	case "crop":
		if c := o.Crop; c != nil {
			v = fmt.Sprintf("%g,%g,%g,%g", c.X, c.Y, c.W, c.H)
		}
	case "trim":
		if t := o.Trim; t != nil {
			v = fmt.Sprintf("%g", t.Threshold)
			if t.Colour != nil {
				v += "," + t.Colour.String()[:6]
			}
		}
	case "blur":
		v = fmt.Sprintf("%g", o.Blur)
	case "sharpen":
		v = fmt.Sprintf("%g", o.Sharpen)
	case "pixelate":
		v = strconv.Itoa(o.Pixelate)
	case "wm":
		if w := o.Watermark; w != nil {
			v = fmt.Sprintf("%g,%s,%d,%d,%g", w.Opacity, w.Position, w.X, w.Y, w.Scale)
		}
	case "fx":
		v = fmt.Sprintf("%g", o.FocalX)
	case "fy":
		v = fmt.Sprintf("%g", o.FocalY)
	}
	return name + "=" + v
}

// nearest names the allowed values either side of n (sorted is sorted).
func nearest(sorted []int, n int, what string) string {
	i, _ := slices.BinarySearch(sorted, n)
	switch {
	case len(sorted) == 1:
		return fmt.Sprintf("the only allowed %s is %d", what, sorted[0])
	case i == 0:
		return fmt.Sprintf("the smallest allowed %s is %d", what, sorted[0])
	case i == len(sorted):
		return fmt.Sprintf("the largest allowed %s is %d", what, sorted[i-1])
	}
	return fmt.Sprintf("the nearest allowed are %d and %d", sorted[i-1], sorted[i])
}
