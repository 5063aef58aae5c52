// Package params is the parse stage: it turns a request's query into typed
// values and refuses what the contract refuses. Queries are strict on every
// route: a bad escape, a parameter the route does not know or one given
// twice is a 400 bad_parameter naming it, so that a typo such as widht=100
// never silently gives the default size.
package params

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Query decodes a raw query string, allowing only the known names, each at
// most once.
func Query(raw string, known ...string) (map[string]string, error) {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return nil, apierr.New(apierr.BadParameter, "The query string is malformed: %s.", err)
	}
	q := make(map[string]string, len(v))
	for _, name := range sortedKeys(v) {
		if !slices.Contains(known, name) {
			return nil, apierr.New(apierr.BadParameter, "Parameter %q is not known here; this route takes %s.", name, list(known))
		}
		if len(v[name]) > 1 {
			return nil, apierr.New(apierr.BadParameter, "Parameter %q is given %d times; give it once.", name, len(v[name]))
		}
		q[name] = v[name][0]
	}
	return q, nil
}

// sortedKeys makes the parameter an error names the same on every run.
func sortedKeys(v url.Values) []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func list(names []string) string {
	if len(names) == 0 {
		return "no parameters"
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return strings.Join(quoted, ", ")
}

// bad is a 400 about one parameter.
func bad(name, format string, args ...any) error {
	return apierr.New(apierr.BadParameter, "Parameter %q %s.", name, fmt.Sprintf(format, args...))
}

// Int reads q[name] as a decimal integer in lo..hi; def when absent.
func Int(q map[string]string, name string, def, lo, hi int64) (int64, error) {
	v, ok := q[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, bad(name, "must be an integer from %d to %d", lo, hi)
	}
	return n, nil
}

// DefaultSide is the box's side when neither w nor h is given.
const DefaultSide = thumbjob.DefaultSide

// Thumbnail is a parsed thumbnail request.
type Thumbnail struct {
	Options thumbjob.Options
	// Src names the source file (GET /thumbnail?src=).
	Src string
	// URL is the origin URL (GET /thumbnail?url=), not yet checked; when
	// both are empty the source is the request body.
	URL string
	// Vary names the client hints the answer varies with (Rules.Hints).
	Vary         []string
	qualityGiven bool   // the query (or its preset) gave q
	hints        *Hints // the request's client hints (nil: off), for SaveData
}

// Negotiate resolves format=auto with the request's Accept header and
// reports whether it did: the answer then varies with Accept.
func (t *Thumbnail) Negotiate(accept string) bool {
	if t.Options.Format != imagefmt.Auto {
		return false
	}
	c := imagefmt.Negotiate(accept, t.Options.Animated)
	t.Options.Format, t.Options.AlphaFormat = c.Opaque, c.Alpha
	return true
}

// optionNames are the parameters of every thumbnail request.
var optionNames = append([]string{"w", "h", "fit", "gravity", "fx", "fy", "format", "q", "dpr", "animated", "copyright", "t", "keyframe", "frames", "every"}, transformNames...)

// Rules are the settings a thumbnail query is read with.
type Rules struct {
	MaxSide     int     // bounds w and h
	Presets     Presets // what preset=NAME may name
	PresetsOnly bool    // no option but a preset is taken
	// Hints are the request's client hints; nil when they are off
	// (THUMBD_CLIENT_HINTS=false).
	Hints *Hints
	// Watermark says how thumbnails may carry the configured watermark.
	Watermark Watermark
	// Allowed bounds what an unsigned query chooses
	// (THUMBD_ALLOWED_WIDTHS, THUMBD_ALLOWED_QUALITIES,
	// THUMBD_ALLOWED_TRANSFORMS); Signed drops it.
	Allowed Allowed
	// HintsSigned (signing on): hints apply only to a query that says
	// hints=on, which the signature covers; elsewhere hints=off is the
	// default. Hints are outside the signature: left to them, a signed
	// URL without w would be any width up to the max side, each a job and
	// a cache key of its own.
	HintsSigned bool
	// FilterSpan bounds a blur's or a sharpen's sigma times the answer's
	// longest side for what a query chooses (0: no bound); a signed query
	// and a preset are not bound (Signed).
	FilterSpan float64
	// signed: the request's signature was checked (Signed); a client
	// asks for the source as it is only then (Options.AsIs).
	signed bool
}

// DefaultFilterSpan is Rules.FilterSpan for unsigned queries: sigma times
// the longest side at most 16384 (sigma 4 at 4096 pixels, 64 at 256). A
// Gaussian's cost grows with its mask (6 sigma) times the pixels it runs
// over: blur=100 on a 4096x4096 answer took 9.5 CPU-seconds against 1.8
// for the plain thumbnail; at the bound, the same answer's blur adds
// about 0.4.
const DefaultFilterSpan = 16384

// uploadNames are the parameters of POST /thumbnail: its signature and
// the options (the body is the source).
var uploadNames = append([]string{"sig", "exp", "preset", "hints"}, optionNames...)

// UploadQuery decodes the query of POST /thumbnail, strictly. The
// signature is checked on what it returns, before Upload reads it.
func UploadQuery(raw string) (map[string]string, error) { return Query(raw, uploadNames...) }

// Upload reads a POST /thumbnail query decoded by UploadQuery.
func (r Rules) Upload(q map[string]string) (Thumbnail, error) {
	return r.thumbnail(q)
}

// thumbnail reads the options of q, its preset's first, then the client
// hints for what they leave open, into the values they ask (read); the
// job is then made by Make, which checks every bound and holds the final
// options to r.Allowed and r.FilterSpan.
func (r Rules) thumbnail(query map[string]string) (Thumbnail, error) {
	preset, err := r.withPreset(query)
	if err != nil {
		return Thumbnail{}, err
	}
	hints, err := r.hintsFor(preset)
	if err != nil {
		return Thumbnail{}, err
	}
	q, vary, err := hints.apply(preset, r.MaxSide)
	if err != nil {
		return Thumbnail{}, err
	}
	a, err := read(q, r.MaxSide)
	if err != nil {
		return Thumbnail{Vary: vary, hints: hints}, err
	}
	a.Chooser = func(name string) string { return askedBy(name, query, preset, q) }
	_, a.qualityGiven = q["q"]
	a.vary, a.hints = vary, hints
	return r.Make(a)
}

// parameter names a query parameter in a sentence.
func parameter(name string) string { return fmt.Sprintf("Parameter %q", name) }

// filterSpan holds each filter a request chose (who names who chose it,
// "" for the operator) to r.FilterSpan: its sigma times the answer's
// longest side.
func (r Rules) filterSpan(o thumbjob.Options, who func(name string) string) error {
	if r.FilterSpan <= 0 {
		return nil
	}
	side := float64(max(o.Width, o.Height))
	for _, f := range []struct {
		name  string
		sigma float64
	}{{"blur", o.Blur}, {"sharpen", o.Sharpen}} {
		if by := who(f.name); by != "" && f.sigma*side > r.FilterSpan {
			return &apierr.Error{Code: apierr.BadParameter, Message: fmt.Sprintf(
				"%s %s=%g on an answer %g pixels a side: its sigma times the side may be at most %g unsigned (sigma %g here); a smaller sigma, a smaller answer, a preset or a signed URL is served.",
				by, f.name, f.sigma, side, r.FilterSpan, math.Floor(r.FilterSpan/side*10)/10)}
		}
	}
	return nil
}

// askedBy names who chose option name: the query's parameter, the client
// hint that filled it in (hints only add options, after the preset), or
// "" for the operator (a preset).
func askedBy(name string, query, preset, final map[string]string) string {
	if _, ok := query[name]; ok {
		return fmt.Sprintf("Parameter %q", name)
	}
	_, inPreset := preset[name]
	if _, ok := final[name]; !ok || inPreset {
		return ""
	}
	if name == "w" {
		return "Header " + HintWidth
	}
	return "Header " + HintDPR
}

// hintsFor is the request's hints as q allows them: hints=on or off, by
// default on, or off when signing is on (HintsSigned). nil: none apply,
// and the answer varies with none.
func (r Rules) hintsFor(q map[string]string) (*Hints, error) {
	on := !r.HintsSigned
	if v, ok := q["hints"]; ok {
		switch v {
		case "on":
			on = true
		case "off":
			on = false
		default:
			return nil, bad("hints", "must be on or off")
		}
	}
	if !on {
		return nil, nil
	}
	return r.Hints, nil
}

// getNames are the parameters of GET /thumbnail: its source, its
// signature and the options.
var getNames = append([]string{"src", "url", "sig", "exp", "preset", "hints"}, optionNames...)

// GetQuery decodes the query of GET /thumbnail, strictly (known names,
// each once). The signature is checked on what it returns, before Get
// reads it.
func GetQuery(raw string) (map[string]string, error) { return Query(raw, getNames...) }

// Get reads a GET /thumbnail query decoded by GetQuery. Its source is a
// file of the source directory (src) or an origin's image (url): exactly
// one of them.
func (r Rules) Get(q map[string]string) (Thumbnail, error) {
	src, u, err := getSource(q, "/thumbnail")
	if err != nil {
		return Thumbnail{}, err
	}
	t, err := r.thumbnail(q)
	t.Src, t.URL = src, u
	return t, err
}

// getSource reads a GET's source: a file of the source directory (src)
// or an origin's image (url), exactly one of them.
func getSource(q map[string]string, route string) (src, u string, err error) {
	src, hasSrc := q["src"]
	u, hasURL := q["url"]
	switch {
	case hasSrc && hasURL:
		return "", "", apierr.New(apierr.BadParameter, "Give \"src\" or \"url\", not both.")
	case !hasSrc && !hasURL:
		return "", "", apierr.New(apierr.BadParameter, "GET %s needs a source: \"src\" (a file name) or \"url\" (an origin URL).", route)
	case hasURL && u == "":
		return "", "", apierr.New(apierr.BadURL, "Parameter \"url\" is empty.")
	}
	return src, u, nil
}

// read reads a query's thumbnail options into the values they ask:
// each value's syntax is checked here (a bad one is a 400 naming it),
// its bounds by Make. w, h and q are whole numbers from 1.
func read(q map[string]string, maxSide int) (Asked, error) {
	a := Asked{Name: parameter}
	o := thumbjob.Options{Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}
	for _, side := range []struct {
		name string
		dst  *int
	}{{"w", &o.Width}, {"h", &o.Height}, {"q", &o.Quality}} {
		v, ok := q[side.name]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || strings.TrimLeft(v, "0123456789") != "" {
			if side.name == "q" {
				return a, bad("q", "must be an integer from 1 to 100")
			}
			return a, bad(side.name, "must be an integer from 1 to %d", maxSide)
		}
		*side.dst = n
	}
	var err error
	if o.Fit, err = oneOf(q, "fit", thumbjob.Fits()); err != nil {
		return a, err
	}
	if o.Gravity, err = oneOf(q, "gravity", thumbjob.Gravities()); err != nil {
		return a, err
	}
	if o.FocalX, o.FocalY, err = focal(q, o.Gravity); err != nil {
		return a, err
	}
	if o.Format, err = oneOf(q, "format", append(imagefmt.Outputs(), imagefmt.Auto)); err != nil {
		return a, err
	}
	if o.Animated, err = boolean(q, "animated"); err != nil {
		return a, err
	}
	copyright, err := oneOf(q, "copyright", []string{"strip", "keep"})
	if err != nil {
		return a, err
	}
	o.KeepCopyright = copyright == "keep"
	if o.Frame, err = frameOf(q); err != nil {
		return a, err
	}
	if _, given := q["format"]; !given && o.Frame.Count > 1 {
		o.Format = imagefmt.WebP // a preview animates: WebP unless format says otherwise
	}
	if a.DPR, err = dprOf(q); err != nil {
		return a, err
	}
	if o.Transforms, err = transforms(q); err != nil {
		return a, err
	}
	a.Options = o
	return a, nil
}

// frameTransforms are the transforms animated=true does not take.
var frameTransforms = []string{"rotate", "flip", "pad", "extend", "crop", "trim", "blur", "sharpen", "pixelate", "wm"}

// dprOf reads dpr, 1 when absent (its bounds are Make's).
func dprOf(q map[string]string) (float64, error) {
	v, ok := q["dpr"]
	if !ok {
		return 1, nil
	}
	dpr, ok := decimal(v)
	if !ok {
		return 0, bad("dpr", "must be a number from 1 to 4, such as 2 or 1.5")
	}
	return dpr, nil
}

// focal reads gravity=focal's point, fx and fy: both given with it, and
// neither without it.
func focal(q map[string]string, g thumbjob.Gravity) (x, y float64, err error) {
	fx, hasX := q["fx"]
	fy, hasY := q["fy"]
	switch {
	case g != thumbjob.GravityFocal && (hasX || hasY):
		name := "fx"
		if !hasX {
			name = "fy"
		}
		return 0, 0, bad(name, "is gravity=focal's point: give it with gravity=focal")
	case g == thumbjob.GravityFocal && (!hasX || !hasY):
		return 0, 0, apierr.New(apierr.BadParameter, "Parameter \"gravity\" is focal: give its point as fx and fy, fractions 0 to 1 of the source's width and height.")
	case g != thumbjob.GravityFocal:
		return 0, 0, nil
	}
	if x, err = fraction("fx", fx); err == nil {
		y, err = fraction("fy", fy)
	}
	return x, y, err
}

// fraction reads a plain decimal (its bounds, 0 to 1, are Make's).
func fraction(name, v string) (float64, error) {
	f, ok := decimal(v)
	if !ok {
		return 0, bad(name, "must be a number from 0 to 1, such as 0.3")
	}
	return f, nil
}

// decimal reads plain decimals only: ParseFloat alone would take "0x1p1",
// "1e0", "NaN" or "Inf".
func decimal(v string) (float64, bool) {
	digits := strings.Trim(strings.Replace(v, ".", "", 1), "0123456789")
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil && digits == "" && v != "" && v != "."
}

// boolean reads q[name] as true or false; false when absent.
func boolean(q map[string]string, name string) (bool, error) {
	switch v, ok := q[name]; {
	case !ok || v == "false":
		return false, nil
	case v == "true":
		return true, nil
	}
	return false, bad(name, "must be true or false")
}

func animatedFormats() []string {
	var out []string
	for _, f := range imagefmt.Outputs() {
		if s, _ := imagefmt.Lookup(f); s.Animated {
			out = append(out, string(f))
		}
	}
	return out
}

// oneOf reads q[name] as one of the allowed values; the first is the
// default when the parameter is absent.
func oneOf[T ~string](q map[string]string, name string, allowed []T) (T, error) {
	v, ok := q[name]
	if !ok {
		return allowed[0], nil
	}
	if slices.Contains(allowed, T(v)) {
		return T(v), nil
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return "", bad(name, "must be one of %s", strings.Join(names, ", "))
}
