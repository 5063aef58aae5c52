package params

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

func TestQueryIsStrict(t *testing.T) {
	tests := []struct {
		raw   string
		names string // the parameters the error must name; "" for no error
	}{
		{"", ""},
		{"n=5", ""},
		{"n=", ""},
		{"widht=100", `"widht"`},
		{"n=1&n=2", `"n"`},
		{"n=1&x=1&y=2", `"x"`},
		{"=1", `""`},
		{"n=%zz", "malformed"},
		{"n=1;x=2", "malformed"},
	}
	for _, tc := range tests {
		q, err := Query(tc.raw, "n")
		if tc.names == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.raw, err)
			}
			continue
		}
		var e *apierr.Error
		if !errors.As(err, &e) || e.Code != apierr.BadParameter || !strings.Contains(e.Message, tc.names) {
			t.Errorf("%q: got %v (%v), want a bad_parameter naming %s", tc.raw, err, q, tc.names)
		}
	}
}

func TestInt(t *testing.T) {
	q := map[string]string{"a": "7", "b": "x", "c": "101", "d": "-1"}
	if n, err := Int(q, "a", 1, 0, 100); n != 7 || err != nil {
		t.Errorf("a: %d %v", n, err)
	}
	if n, err := Int(q, "absent", 42, 0, 100); n != 42 || err != nil {
		t.Errorf("default: %d %v", n, err)
	}
	for _, name := range []string{"b", "c", "d"} {
		if _, err := Int(q, name, 0, 0, 100); err == nil || !strings.Contains(err.Error(), strconv.Quote(name)) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// upload parses raw as POST /thumbnail does (the signature aside).
func upload(r Rules, raw string) (Thumbnail, error) {
	q, err := UploadQuery(raw)
	if err != nil {
		return Thumbnail{}, err
	}
	return r.Upload(q)
}

func TestUploadOptions(t *testing.T) {
	def := thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}
	tests := []struct {
		raw  string
		want thumbjob.Options
		bad  string // the parameter named in the error
	}{
		{"", def, ""},
		{"w=100", thumbjob.Options{Width: 100, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}, ""},
		{"h=4096&fit=inside&gravity=entropy&format=webp&q=1", thumbjob.Options{Height: 4096, Fit: thumbjob.FitInside, Gravity: thumbjob.GravityEntropy, Format: imagefmt.WebP, Quality: 1}, ""},
		{"format=jpeg", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.JPEG, Quality: 80}, ""},
		{"format=png&q=10", def, ""},
		{"w=0", thumbjob.Options{}, "w"},
		{"w=4097", thumbjob.Options{}, "w"},
		{"w=+5", thumbjob.Options{}, "w"},
		{"w=5x", thumbjob.Options{}, "w"},
		{"h=-1", thumbjob.Options{}, "h"},
		{"fit=Cover", thumbjob.Options{}, "fit"},
		{"gravity=center", thumbjob.Options{}, "gravity"},
		{"format=jpg", thumbjob.Options{}, "format"},
		{"format=gif", thumbjob.Options{}, "format"},
		// read, not written
		{"format=jxl", thumbjob.Options{}, "format"},
		{"format=heic", thumbjob.Options{}, "format"},
		{"format=bmp", thumbjob.Options{}, "format"},
		{"q=0", thumbjob.Options{}, "q"},
		{"q=100.0", thumbjob.Options{}, "q"},
		{"format=png&q=0x", thumbjob.Options{}, "q"},
		{"src=a.jpg", thumbjob.Options{}, "src"},
		{"w=5&w=6", thumbjob.Options{}, "w"},
		{"copyright=keep", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG, KeepCopyright: true}, ""},
		{"copyright=strip", def, ""},
		{"copyright=true", thumbjob.Options{}, "copyright"},
		// A video's frame (issue 47): keyframe alone is the default's job.
		{"t=1.5&keyframe=true", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG, Frame: thumbjob.Frame{At: 1.5, Given: true, Keyframe: true}}, ""},
		{"t=50%25", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG, Frame: thumbjob.Frame{At: 50, Percent: true, Given: true}}, ""},
		{"keyframe=true", def, ""},
		{"t=abc", thumbjob.Options{}, "t"},
		{"t=-1", thumbjob.Options{}, "t"},
		{"t=1e3", thumbjob.Options{}, "t"},
		{"t=101%25", thumbjob.Options{}, "t"},
		{"t=%25", thumbjob.Options{}, "t"},
		{"t=1000001", thumbjob.Options{}, "t"},
		{"t=1&keyframe=yes", thumbjob.Options{}, "keyframe"},
		// A preview (frames=N): an animation, WebP unless format says
		// otherwise; frames=1 is the default poster frame.
		{"frames=4", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.WebP, Quality: 80, Animated: true, Frame: thumbjob.Frame{Count: 4}}, ""},
		{"frames=25&keyframe=true&format=auto", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.Auto, Animated: true, Frame: thumbjob.Frame{Count: 25, Keyframe: true}}, ""},
		{"frames=1", def, ""},
		{"frames=0", thumbjob.Options{}, "frames"},
		{"frames=26", thumbjob.Options{}, "frames"},
		{"frames=abc", thumbjob.Options{}, "frames"},
		{"frames=+4", thumbjob.Options{}, "frames"},
		{"frames=4&t=1", thumbjob.Options{}, "frames"},
		{"frames=4&format=jpeg", thumbjob.Options{}, "frames"},
		{"frames=4&format=png", thumbjob.Options{}, "frames"},
		{"frames=4&rotate=90", thumbjob.Options{}, "rotate"},
		// every=S: a frame every S seconds, at most frames (25 unless
		// given); as frames otherwise.
		{"every=2", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.WebP, Quality: 80, Animated: true, Frame: thumbjob.Frame{Count: 25, Every: 2}}, ""},
		{"every=0.5&frames=6&keyframe=true", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.WebP, Quality: 80, Animated: true, Frame: thumbjob.Frame{Count: 6, Every: 0.5, Keyframe: true}}, ""},
		{"every=0", thumbjob.Options{}, "every"},
		{"every=-1", thumbjob.Options{}, "every"},
		{"every=abc", thumbjob.Options{}, "every"},
		{"every=1e3", thumbjob.Options{}, "every"},
		{"every=1000001", thumbjob.Options{}, "every"},
		{"every=2&frames=1", thumbjob.Options{}, "frames"},
		{"every=2&t=1", thumbjob.Options{}, "every"},
		{"every=2&format=jpeg", thumbjob.Options{}, "every"},
		{"every=2&pad=10", thumbjob.Options{}, "pad"},
	}
	for _, tc := range tests {
		got, err := upload(Rules{MaxSide: 4096}, tc.raw)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%q: %v", tc.raw, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), strconv.Quote(tc.bad))):
			t.Errorf("%q: error %v, want one about %q", tc.raw, err, tc.bad)
		case tc.bad == "" && (got.Options != tc.want || got.Src != ""):
			t.Errorf("%q: got %+v, want %+v", tc.raw, got, tc.want)
		}
	}
	if got, _ := upload(Rules{MaxSide: 100}, ""); got.Options.Width != 100 || got.Options.Height != 100 {
		t.Errorf("default box above max side: %+v", got)
	}
}

func TestDPRAutoAnimated(t *testing.T) {
	tests := []struct {
		raw      string
		w, h, q  int
		format   imagefmt.Format
		animated bool
		badParam string
	}{
		{"dpr=2&w=100&h=50", 200, 100, 0, imagefmt.PNG, false, ""},
		{"dpr=1.5&w=100", 150, 0, 0, imagefmt.PNG, false, ""},
		{"dpr=2", 512, 512, 0, imagefmt.PNG, false, ""}, // the default box too
		{"dpr=4&w=3000", 4096, 0, 0, imagefmt.PNG, false, ""},
		{"dpr=1&w=7", 7, 0, 0, imagefmt.PNG, false, ""},
		{"format=auto", 256, 256, 0, imagefmt.Auto, false, ""},
		{"format=auto&q=40", 256, 256, 40, imagefmt.Auto, false, ""},
		{"format=auto&animated=true", 256, 256, 0, imagefmt.Auto, true, ""},
		{"format=webp&animated=true", 256, 256, 80, imagefmt.WebP, true, ""},
		{"format=webp&animated=false", 256, 256, 80, imagefmt.WebP, false, ""},
		{"dpr=0.5", 0, 0, 0, "", false, "dpr"},
		{"dpr=5", 0, 0, 0, "", false, "dpr"},
		{"dpr=2x", 0, 0, 0, "", false, "dpr"},
		{"dpr=1e0", 0, 0, 0, "", false, "dpr"},
		{"dpr=NaN", 0, 0, 0, "", false, "dpr"},
		{"dpr=", 0, 0, 0, "", false, "dpr"},
		{"animated=1", 0, 0, 0, "", false, "animated"},
		{"animated=", 0, 0, 0, "", false, "animated"},
		{"animated=true", 0, 0, 0, "", false, "animated"}, // png does not animate
		{"format=jpeg&animated=true", 0, 0, 0, "", false, "animated"},
	}
	for _, tc := range tests {
		got, err := upload(Rules{MaxSide: 4096}, tc.raw)
		o := got.Options
		switch {
		case tc.badParam != "":
			if err == nil || !strings.Contains(err.Error(), strconv.Quote(tc.badParam)) {
				t.Errorf("%q: %v, want an error about %s", tc.raw, err, tc.badParam)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.raw, err)
		case o.Width != tc.w || o.Height != tc.h || o.Quality != tc.q || o.Format != tc.format || o.Animated != tc.animated:
			t.Errorf("%q: %+v", tc.raw, o)
		}
	}
}

// get parses a GET /thumbnail query as the service does (with no
// signature to check).
func get(raw string) (Thumbnail, error) {
	q, err := GetQuery(raw)
	if err != nil {
		return Thumbnail{}, err
	}
	return Rules{MaxSide: 4096}.Get(q)
}

func TestGet(t *testing.T) {
	got, err := get("src=a/b.jpg&w=10")
	if err != nil || got.Src != "a/b.jpg" || got.URL != "" || got.Options.Width != 10 {
		t.Fatalf("%+v %v", got, err)
	}
	got, err = get("url=https%3A%2F%2Fimages.example.com%2Fa.jpg%3Fv%3D1&w=10")
	if err != nil || got.URL != "https://images.example.com/a.jpg?v=1" || got.Src != "" || got.Options.Width != 10 {
		t.Fatalf("%+v %v", got, err)
	}
	if got, err := get("src=&w=10"); err != nil || got.Src != "" {
		t.Fatalf("empty src: %+v %v (the source stage refuses an empty name)", got, err)
	}
	for raw, want := range map[string]apierr.Code{
		"w=10":           apierr.BadParameter,
		"src=a&url=b":    apierr.BadParameter,
		"url=":           apierr.BadURL,
		"url=a&url=b":    apierr.BadParameter,
		"src=a&w=0":      apierr.BadParameter,
		"url=x&widht=10": apierr.BadParameter,
	} {
		if _, err := get(raw); apierr.From(err).Code != want || err == nil {
			t.Errorf("%q: %v, want %s", raw, err, want)
		}
	}
}

func FuzzQuery(f *testing.F) {
	for _, q := range []string{
		"", "w=100", "h=4096&fit=inside&gravity=entropy&format=webp&q=1", "w=0", "w=-1", "w=4097",
		"w=99999999999999999999", "w=1e3", "w=0x10", "w=+5", "w= 5", "w=5&w=abc", "w=abc&w=5",
		"fit=Cover", "gravity=center", "format=jpg", "q=100.0", "q=", "w=%zz", "w=%EF%BC%95",
		"w=\u0665", "fit=cover%00", "format=png;q=3", "w=1&h=1&fit=contain&format=jpeg&q=100",
		"w=256&h=256&fit=cover&gravity=attention", "q=-0", "w=007", "h=4096&w=4096", "&&&=&w", "src=x&w=1",
		"format=auto", "format=auto&q=50", "animated=true&format=webp", "animated=1", "dpr=2&w=100", "dpr=1.5", "dpr=0x1p1", "dpr=4.0001",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		req, err := upload(Rules{MaxSide: 4096}, raw)
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) || e.Code != apierr.BadParameter || !strings.HasSuffix(e.Message, ".") {
				t.Fatalf("%q: error %v is not a bad_parameter sentence", raw, err)
			}
			return
		}
		o := req.Options
		// What parsed was a query of known names, each given once.
		v, perr := url.ParseQuery(raw)
		if perr != nil {
			t.Fatalf("%q parsed though url.ParseQuery refuses it: %v", raw, perr)
		}
		for k, vs := range v {
			if len(vs) != 1 || !slices.Contains(uploadNames, k) {
				t.Fatalf("%q: accepted %s=%v", raw, k, vs)
			}
		}
		if o.Width < 0 || o.Width > 4096 || o.Height < 0 || o.Height > 4096 || (o.Width == 0 && o.Height == 0) {
			t.Fatalf("%q: box %dx%d", raw, o.Width, o.Height)
		}
		spec, ok := imagefmt.Lookup(o.Format)
		switch {
		case o.Format == imagefmt.Auto:
			if o.Quality < 0 || o.Quality > 100 {
				t.Fatalf("%q: %+v", raw, o)
			}
		case !ok || !spec.Output || (spec.Quality != 0 && (o.Quality < 1 || o.Quality > 100)) || (spec.Quality == 0 && o.Quality != 0):
			t.Fatalf("%q: %+v", raw, o)
		case o.Animated && !spec.Animated:
			t.Fatalf("%q: animated %s", raw, o.Format)
		}
		if !slices.Contains(thumbjob.Fits(), o.Fit) || !slices.Contains(thumbjob.Gravities(), o.Gravity) {
			t.Fatalf("%q: %+v", raw, o)
		}
		// The options written back as a query parse to the same
		// thumbnail: what the ETag is derived from names one output.
		back := url.Values{"fit": {string(o.Fit)}, "gravity": {string(o.Gravity)}, "format": {string(o.Format)}, "animated": {strconv.FormatBool(o.Animated)}}
		if o.Quality > 0 {
			back.Set("q", strconv.Itoa(o.Quality))
		}
		if o.Width > 0 {
			back.Set("w", strconv.Itoa(o.Width))
		}
		if o.Height > 0 {
			back.Set("h", strconv.Itoa(o.Height))
		}
		again, err := upload(Rules{MaxSide: 4096}, back.Encode())
		if err != nil || again.Options.Normalised() != o.Normalised() {
			t.Fatalf("%q: %+v reparsed as %+v (%v)", raw, o, again.Options, err)
		}
	})
}

func TestPresets(t *testing.T) {
	presets, err := ParsePresets(" small:w=128&h=128&fit=cover; hero:w=1200&format=webp ;thumb_2x:w=64&dpr=2;")
	if err != nil || len(presets) != 3 || presets["hero"]["format"] != "webp" || presets["small"]["fit"] != "cover" {
		t.Fatalf("%v %v", presets, err)
	}
	if again, err := ParsePresets(presets.String()); err != nil || again.String() != presets.String() {
		t.Errorf("%q reparsed as %q (%v)", presets.String(), again.String(), err)
	}
	if p, err := ParsePresets(""); err != nil || p != nil {
		t.Errorf("empty: %v %v", p, err)
	}
	_, err = ParsePresets("nocolon; Big:w=1; a:w=1; a:w=2; b:widht=1; c:w=1&w=2; d:%zz; e:src=x.jpg")
	for _, want := range []string{`"nocolon"`, `"Big"`, `"a" is given twice`, `"b"`, `"widht"`, `"c"`, `"d"`, `"e"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s: %v", want, err)
		}
	}
	bounded := Rules{MaxSide: 1000, Presets: Presets{"big": {"w": "2000"}, "ok": {"w": "10"}, "odd": {"fit": "stretch"}}}
	if errs := bounded.CheckPresets(); len(errs) != 2 || !strings.Contains(errs[0].Error(), `"big"`) || !strings.Contains(errs[1].Error(), `"odd"`) {
		t.Errorf("%v", errs)
	}

	rules := Rules{MaxSide: 4096, Presets: presets}
	only := rules
	only.PresetsOnly = true
	for _, tc := range []struct {
		rules Rules
		raw   string
		want  string // the options, or the parameter an error names
	}{
		{rules, "preset=small", "128x128 cover png"},
		{rules, "preset=small&format=webp&w=100", "100x128 cover webp"},
		{rules, "preset=thumb_2x", "128x0 cover png"},
		{rules, "w=10", "10x0 cover png"},
		{rules, "preset=nope", `"preset"`},
		{rules, "preset=", `"preset"`},
		{rules, "preset=small&preset=hero", `"preset"`},
		{Rules{MaxSide: 4096}, "preset=small", `"preset"`},
		{only, "preset=hero", "1200x0 cover webp"},
		{only, "preset=hero&w=10", `"w"`},
		{only, "preset=hero&format=png", `"format"`},
		{only, "", `"preset"`},
		{only, "q=5", `"q"`},
	} {
		got, err := upload(tc.rules, tc.raw)
		o := got.Options
		if s := fmt.Sprintf("%dx%d %s %s", o.Width, o.Height, o.Fit, o.Format); err == nil && s != tc.want {
			t.Errorf("%q: %s, want %s", tc.raw, s, tc.want)
		} else if err != nil && (apierr.From(err).Code != apierr.BadParameter || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want an error naming %s", tc.raw, err, tc.want)
		}
	}
	// GET takes presets the same way.
	q, err := GetQuery("src=a.jpg&preset=small")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := only.Get(q); err != nil || got.Options.Width != 128 || got.Src != "a.jpg" {
		t.Errorf("GET with a preset: %+v %v", got, err)
	}
}

// gravity=focal takes its point as fx and fy, fractions 0..1; both or
// neither, and only with it.
func TestFocalPoint(t *testing.T) {
	focal := func(x, y float64) thumbjob.Options {
		return thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityFocal, FocalX: x, FocalY: y, Format: imagefmt.PNG}
	}
	for _, tc := range []struct {
		raw  string
		want thumbjob.Options
		bad  string
	}{
		{"gravity=focal&fx=0.3&fy=0.7", focal(0.3, 0.7), ""},
		{"gravity=focal&fx=0&fy=1", focal(0, 1), ""},
		{"gravity=focal&fx=.25&fy=1.0", focal(0.25, 1), ""},
		{"gravity=focal&fx=0.3", thumbjob.Options{}, "gravity"},
		{"gravity=focal&fy=0.3", thumbjob.Options{}, "gravity"},
		{"gravity=focal", thumbjob.Options{}, "gravity"},
		{"fx=0.3&fy=0.3", thumbjob.Options{}, "fx"},
		{"gravity=centre&fy=0.3", thumbjob.Options{}, "fy"},
		{"gravity=focal&fx=1.01&fy=0.5", thumbjob.Options{}, "fx"},
		{"gravity=focal&fx=-0.1&fy=0.5", thumbjob.Options{}, "fx"},
		{"gravity=focal&fx=0.5&fy=NaN", thumbjob.Options{}, "fy"},
		{"gravity=focal&fx=0.5&fy=1e-1", thumbjob.Options{}, "fy"},
		{"gravity=focal&fx=0.5&fy=", thumbjob.Options{}, "fy"},
		{"gravity=focal&fx=.&fy=0.5", thumbjob.Options{}, "fx"},
		{"gravity=focal&fx=0.5&fx=0.5&fy=0.5", thumbjob.Options{}, "fx"},
	} {
		got, err := upload(Rules{MaxSide: 4096}, tc.raw)
		switch {
		case tc.bad == "" && (err != nil || got.Options != tc.want):
			t.Errorf("%q: %+v %v", tc.raw, got.Options, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), strconv.Quote(tc.bad))):
			t.Errorf("%q: error %v, want one about %q", tc.raw, err, tc.bad)
		}
	}
	// The point is in the ETag's text; without focal, it is not.
	if a, b := focal(0.3, 0.7).Normalised(), focal(0.3, 0.71).Normalised(); a == b || !strings.Contains(a, "gravity=focal:0.3:0.7") {
		t.Errorf("normalised: %s, %s", a, b)
	}
	// A preset carries a focal point; a request naming another gravity
	// drops it, one naming focal may move it.
	rules := Rules{MaxSide: 4096, Presets: Presets{"face": {"w": "100", "h": "100", "gravity": "focal", "fx": "0.2", "fy": "0.8"}}}
	for raw, want := range map[string]string{
		"preset=face":                      "focal 0.2 0.8",
		"preset=face&gravity=attention":    "attention 0 0",
		"preset=face&fx=0.9":               "focal 0.9 0.8",
		"preset=face&gravity=focal&fy=0.1": "focal 0.2 0.1",
	} {
		got, err := upload(rules, raw)
		if o := got.Options; err != nil || fmt.Sprintf("%s %g %g", o.Gravity, o.FocalX, o.FocalY) != want {
			t.Errorf("%q: %+v %v, want %s", raw, o, err, want)
		}
	}
}
