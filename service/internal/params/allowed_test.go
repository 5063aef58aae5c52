package params

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// nextSizes are Next.js's default deviceSizes and imageSizes.
var nextSizes = []int{16, 32, 48, 64, 96, 128, 256, 384, 640, 750, 828, 1080, 1200, 1920, 2048, 3840}

func TestAllowedLists(t *testing.T) {
	presets, err := ParsePresets("card:w=300&h=200&q=55;wide:w=1000")
	if err != nil {
		t.Fatal(err)
	}
	bounded := Rules{MaxSide: 4096, Presets: presets, Allowed: Allowed{Sides: nextSizes, Qualities: []int{75, 90}}}
	tests := []struct {
		name  string
		query string
		hints *Hints
		want  []string // words of the error's sentence; nil: accepted
	}{
		{"listed width", "w=640&q=75", nil, nil},
		{"listed width and height", "w=640&h=384", nil, nil},
		{"height alone", "h=828", nil, nil},
		{"default box, no choice", "", nil, nil},
		{"width between two", "w=1000", nil, []string{`"w"`, "width 1000", "828 and 1080", "THUMBD_ALLOWED_WIDTHS"}},
		{"width below all", "w=8", nil, []string{`"w"`, "smallest allowed size is 16"}},
		{"width above all", "w=4000", nil, []string{`"w"`, "largest allowed size is 3840"}},
		{"height off", "w=640&h=500", nil, []string{`"h"`, "height 500", "384 and 640"}},
		{"quality off", "w=640&q=80", nil, []string{`"q"`, "quality 80", "75 and 90", "THUMBD_ALLOWED_QUALITIES"}},
		{"quality below all", "w=640&q=10", nil, []string{`"q"`, "smallest allowed quality is 75"}},
		// dpr: the width after it is what must be listed.
		{"dpr lands on the list", "w=320&dpr=2", nil, nil},
		{"dpr leaves the list", "w=640&dpr=1.5", nil, []string{`"w"`, "width 960 at dpr 1.5", "828 and 1080"}},
		{"dpr scales the default box", "dpr=2", nil, []string{`"dpr"`, "width 512", "384 and 640"}},
		// Client hints choose as a query does.
		{"width hint on the list", "", &Hints{Width: []string{"1080"}}, nil},
		{"width hint off the list", "", &Hints{Width: []string{"1000"}}, []string{"Sec-CH-Width", "width 1000", "828 and 1080"}},
		{"dpr hint leaves the list", "w=640", &Hints{DPR: []string{"2.625"}}, []string{`"w"`, "width 1680 at dpr 2.625", "1200 and 1920"}},
		{"dpr hint on a preset", "preset=card", &Hints{DPR: []string{"2"}}, []string{"Sec-CH-DPR", "width 600 at dpr 2", "384 and 640"}},
		// A preset's own options are the operator's: not bound.
		{"preset alone", "preset=card", nil, nil},
		{"preset's width off the list", "preset=wide", nil, nil},
		{"preset overridden off the list", "preset=card&w=500", nil, []string{`"w"`, "width 500"}},
		{"preset's quality overridden", "preset=card&q=56", nil, []string{`"q"`, "quality 56"}},
		{"dpr on a preset", "preset=card&dpr=2", nil, []string{`"dpr"`, "width 600 at dpr 2"}},
	}
	for _, tc := range tests {
		q := query(t, tc.query)
		r := bounded
		r.Hints = tc.hints
		_, err := r.Upload(q)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s (%s): %v", tc.name, tc.query, err)
			}
		} else {
			var e *apierr.Error
			if !errors.As(err, &e) || e.Code != apierr.BadParameter || e.Status() != 400 {
				t.Errorf("%s (%s): got %v, want a 400 bad_parameter", tc.name, tc.query, err)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Message, w) {
					t.Errorf("%s (%s): %q does not say %q", tc.name, tc.query, e.Message, w)
				}
			}
		}
		// Off (no lists), and signed: every one of them is accepted.
		for name, rules := range map[string]Rules{"off": {MaxSide: 4096, Presets: presets, Hints: tc.hints}, "signed": r.Signed()} {
			if _, err := rules.Upload(q); err != nil {
				t.Errorf("%s (%s), %s: %v", tc.name, tc.query, name, err)
			}
		}
	}
}

// judge checks what a query got: accepted when want is nil, else an
// error saying each of want.
func judge(t *testing.T, raw string, err error, want []string) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Errorf("%s: %v", raw, err)
	case want != nil && err == nil:
		t.Errorf("%s: accepted, want a 400", raw)
	case want != nil:
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", raw, err, w)
			}
		}
	}
}

func query(t *testing.T, raw string) map[string]string {
	t.Helper()
	q, err := UploadQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestAllowedOneList(t *testing.T) {
	// Each list binds alone: widths without qualities leave q free.
	r := Rules{MaxSide: 4096, Allowed: Allowed{Sides: []int{640}}}
	if _, err := r.Upload(query(t, "w=640&q=37")); err != nil {
		t.Errorf("q with no quality list: %v", err)
	}
	r = Rules{MaxSide: 4096, Allowed: Allowed{Qualities: []int{75}}}
	if _, err := r.Upload(query(t, "w=999&q=75")); err != nil {
		t.Errorf("w with no width list: %v", err)
	}
	_, err := r.Upload(query(t, "w=999&q=74"))
	if err == nil || !strings.Contains(err.Error(), "the only allowed quality is 75") {
		t.Errorf("q off a one-value list: %v", err)
	}
	// GET reads through the same rule.
	r = Rules{MaxSide: 4096, Allowed: Allowed{Sides: []int{640}}}
	if _, err := r.Get(map[string]string{"src": "a.jpg", "w": "641"}); err == nil {
		t.Error("GET w=641 with only 640 allowed: accepted")
	}
}

func TestParseAllowed(t *testing.T) {
	got, err := ParseAllowedSides(" 3840,16, 640,16 ")
	if err != nil || !slices.Equal(got, []int{16, 640, 3840}) || FormatInts(got) != "16,640,3840" {
		t.Errorf("sides: %v %v", got, err)
	}
	for _, bad := range []string{"", "640,", "abc", "0", "-5", "+5", "1.5", "64 0", "2000000"} {
		if _, err := ParseAllowedSides(bad); err == nil {
			t.Errorf("sides %q: accepted", bad)
		}
	}
	for _, bad := range []string{"0", "101", "75,x"} {
		if _, err := ParseAllowedQualities(bad); err == nil || !strings.Contains(err.Error(), "1 to 100") {
			t.Errorf("qualities %q: %v", bad, err)
		}
	}
}

// familyValues are a value of each transform's family (and of the focal
// point) that makes a job of its own: the bounded mode takes none of them
// unsigned unless the operator lists it.
var familyValues = []struct{ name, query, other string }{
	{"enlarge", "enlarge=false", ""},
	{"rotate", "rotate=90", "rotate=180"},
	{"flip", "flip=h", "flip=v"},
	{"bg", "bg=ff0000", "bg=00ff00"},
	{"pad", "pad=10", "pad=12"},
	{"extend", "extend=true", ""},
	{"crop", "crop=0,0,10,10", "crop=0,0,10,11"},
	{"trim", "trim=10", "trim=11"},
	{"blur", "blur=5", "blur=5.5"},
	{"sharpen", "sharpen=1", "sharpen=2"},
	{"pixelate", "pixelate=4", "pixelate=5"},
	{"wm", "wm=0.5", "wm=0.6"},
	{"fx", "gravity=focal&fx=0.5&fy=0.5", "gravity=focal&fx=0.25&fy=0.5"},
}

// The bounded mode bounds the transforms and the focal point too: unsigned,
// each comes from a preset or is refused, naming the parameter and how to
// allow it; signed, or off, anything goes.
func TestBoundedModeBoundsTransforms(t *testing.T) {
	presets := Presets{}
	for _, f := range familyValues {
		q := query(t, "w=640&"+f.query)
		presets["p_"+f.name] = q
	}
	wm := Watermark{Configured: true, Mark: "m"}
	bounded := Rules{MaxSide: 4096, Presets: presets, Watermark: wm, Allowed: Allowed{Sides: nextSizes, Qualities: []int{75}}}
	for _, f := range familyValues {
		q := query(t, "w=640&"+f.query)
		_, err := bounded.Upload(q)
		var e *apierr.Error
		if !errors.As(err, &e) || e.Code != apierr.BadParameter {
			t.Errorf("%s unsigned: %v, want a 400 bad_parameter", f.query, err)
		} else {
			for _, w := range []string{strconv.Quote(f.name), "THUMBD_ALLOWED_TRANSFORMS", "preset", "sign"} {
				if !strings.Contains(e.Message, w) {
					t.Errorf("%s unsigned: %q does not say %q", f.query, e.Message, w)
				}
			}
		}
		if _, err := bounded.Signed().Upload(q); err != nil {
			t.Errorf("%s signed: %v", f.query, err)
		}
		off := bounded
		off.Allowed = Allowed{}
		if _, err := off.Upload(q); err != nil {
			t.Errorf("%s off: %v", f.query, err)
		}
		// From a preset: the operator's, not bound; another value given
		// over it is the client's.
		if _, err := bounded.Upload(query(t, "preset=p_"+f.name)); err != nil {
			t.Errorf("preset with %s: %v", f.query, err)
		}
		if f.other != "" {
			if _, err := bounded.Upload(query(t, "preset=p_"+f.name+"&"+f.other)); err == nil {
				t.Errorf("preset with %s, overridden by %s: accepted", f.query, f.other)
			}
		}
	}
	// Values that change nothing make no job of their own: taken.
	for _, raw := range []string{"blur=0", "sharpen=0", "pixelate=0", "pixelate=1", "rotate=0", "enlarge=true", "extend=false", "pad=0"} {
		if _, err := bounded.Upload(query(t, "w=640&"+raw)); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
	// GET reads through the same rule.
	if _, err := bounded.Get(map[string]string{"src": "a.jpg", "w": "640", "blur": "5"}); err == nil {
		t.Error("GET blur=5 unsigned: accepted")
	}
	// Another grammar's operator values (Asked.Chooser "") are a
	// preset's; its client's are bound, named its way.
	asked := func(chosen ...string) Asked {
		return Asked{Options: thumbjob.Options{Width: 640, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG,
			Transforms: thumbjob.Transforms{Blur: 5, NoEnlarge: true}},
			Name: func(name string) string { return "option " + name + "!" },
			Chooser: func(name string) string {
				if slices.Contains(chosen, name) {
					return "option " + name + "!"
				}
				return ""
			}}
	}
	if _, err := bounded.Make(asked("w")); err != nil {
		t.Errorf("the operator's values: %v", err)
	}
	if _, err := bounded.Make(asked("w", "blur")); err == nil || !strings.Contains(err.Error(), "option blur!") {
		t.Errorf("the client's blur: %v", err)
	}
}

// No answer is wider than the lists: pad adds to the box, so the box plus
// the pad must be on the list (after dpr), whoever chose each; extend
// alone keeps the box.
func TestBoundedFinalSize(t *testing.T) {
	presets := Presets{
		"framed": {"pad": "10"},
		"boxed":  {"pad": "8", "extend": "true", "fit": "inside"},
		"wide":   {"w": "640", "pad": "10"},
		"ext":    {"extend": "true", "fit": "inside"},
	}
	bounded := Rules{MaxSide: 4096, Presets: presets, Allowed: Allowed{Sides: nextSizes}}
	for _, tc := range []struct {
		raw  string
		want []string // nil: accepted
	}{
		{"preset=framed&w=640", []string{`"w"`, "width 660", "pad", "640 and 750"}},
		{"preset=framed&w=620", nil},
		{"preset=framed&w=620&h=620", nil},
		{"preset=framed&h=640", []string{`"h"`, "height 660"}},
		{"preset=framed&w=300&dpr=2", nil}, // 600 + 2 x 20
		{"preset=framed&w=310&dpr=2", []string{`"w"`, "width 660 at dpr 2", "pad"}},
		{"preset=boxed&w=624&h=368", nil},
		{"preset=boxed&w=640&h=384", []string{"width 656"}},
		{"preset=ext&w=640&h=384", nil},
		{"preset=wide", nil},                                   // the operator's own size
		{"preset=wide&dpr=2", []string{`"dpr"`, "width 1320"}}, // 1280 + 2 x 10 x 2
		{"preset=framed", nil},                                 // the default box and the pad: the operator's
	} {
		_, err := bounded.Upload(query(t, tc.raw))
		judge(t, tc.raw, err, tc.want)
		if _, err := bounded.Signed().Upload(query(t, tc.raw)); err != nil {
			t.Errorf("%s signed: %v", tc.raw, err)
		}
	}
}

// THUMBD_ALLOWED_TRANSFORMS lists the values an unsigned request may
// give: compared as read (blur=5 is blur=5.0; pad=8 is pad=8,8,8,8), pad
// in pixels after dpr; a value off the list names the allowed ones.
func TestAllowedTransformValues(t *testing.T) {
	values, err := ParseAllowedTransforms(" blur=5; blur=10;pad=8 ;bg=ffffff;rotate=90;flip=h;enlarge=false;extend=true;crop=0.25,0.25,0.5,0.5;trim=10;sharpen=1;pixelate=8;wm=0.5,soea;fx=0.5;fy=0.25;fy=0.75")
	if err != nil {
		t.Fatal(err)
	}
	if got := values.String(); got != "blur=5;blur=10;pad=8;bg=ffffff;rotate=90;flip=h;enlarge=false;extend=true;crop=0.25,0.25,0.5,0.5;trim=10;sharpen=1;pixelate=8;wm=0.5,soea;fx=0.5;fy=0.25;fy=0.75" {
		t.Errorf("written back: %s", got)
	}
	bounded := Rules{MaxSide: 4096, Watermark: Watermark{Configured: true}, Allowed: Allowed{Sides: nextSizes, Transforms: values}}
	for _, tc := range []struct {
		raw  string
		want []string // nil: accepted
	}{
		{"w=640&blur=5", nil},
		{"w=640&blur=5.0", nil},
		{"w=624&blur=10&pad=8", nil},
		{"w=624&pad=8,8,8,8", nil},
		{"w=312&pad=4&dpr=2", nil}, // 8 pixels after dpr
		{"w=312&pad=8&dpr=2", []string{`"pad"`, "pad=8 at dpr 2", "pad=8 (", "THUMBD_ALLOWED_TRANSFORMS"}},
		{"w=640&blur=7", []string{`"blur"`, "blur=7", "blur=5, blur=10", "THUMBD_ALLOWED_TRANSFORMS", "preset", "sign"}},
		{"w=640&bg=ffffffff", nil},
		{"w=640&bg=fffffe", []string{`"bg"`, "bg=ffffff"}},
		{"w=640&rotate=90&flip=h&enlarge=false&extend=true", nil},
		{"w=640&rotate=270", []string{`"rotate"`, "rotate=90"}},
		{"w=640&flip=hv", []string{`"flip"`}},
		{"w=640&crop=0.25,0.25,0.50,0.5", nil},
		{"w=640&crop=0,0,10,10", []string{`"crop"`}},
		{"w=640&trim=10", nil},
		{"w=640&trim=10,ffffff", []string{`"trim"`}},
		{"w=640&sharpen=1&pixelate=8", nil},
		{"w=640&wm=0.5,soea", nil},
		{"w=640&wm=0.5", []string{`"wm"`, "wm=0.5,soea"}},
		{"w=640&gravity=focal&fx=0.5&fy=0.75", nil},
		{"w=640&gravity=focal&fx=0.5&fy=0.5", []string{`"fy"`, "fy=0.25, fy=0.75"}},
		// Listed, yet the box plus the pad must be on the list.
		{"w=640&pad=8", []string{`"w"`, "width 656", "pad"}},
	} {
		_, err := bounded.Upload(query(t, tc.raw))
		judge(t, tc.raw, err, tc.want)
	}
	// The transforms list alone switches the bounded mode on: a family
	// it does not name is refused.
	alone := Rules{MaxSide: 4096, Allowed: Allowed{Transforms: values}}
	if _, err := alone.Upload(query(t, "w=999&blur=5")); err != nil {
		t.Errorf("listed, no width list: %v", err)
	}
	only, _ := ParseAllowedTransforms("blur=5")
	alone.Allowed.Transforms = only
	if _, err := alone.Upload(query(t, "w=999&sharpen=1")); err == nil || !strings.Contains(err.Error(), "no sharpen") {
		t.Errorf("a family the list does not name: %v", err)
	}

	for _, bad := range []string{"", "blur", "blur=", "blur=200", "w=640", "q=75", "preset=x", "pad=1,2", "wm=2", "fx=1.5", "gravity=focal", " ; "} {
		if _, err := ParseAllowedTransforms(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// FuzzBounded: whatever the query, what the bounded mode accepts unsigned
// is on its lists: each transform and focal point a listed value or none,
// each side the query chose, pad included, a listed width.
func FuzzBounded(f *testing.F) {
	for _, q := range []string{"w=640", "w=624&pad=8", "w=640&pad=8", "w=320&dpr=2&blur=5", "w=312&pad=4&dpr=2",
		"gravity=focal&fx=0.5&fy=0.5&w=64", "bg=FFFFFF&h=64", "blur=5.0&q=75&w=64", "pad=0&blur=0&rotate=0", "dpr=2.5&h=256"} {
		f.Add(q)
	}
	values, err := ParseAllowedTransforms("blur=5;pad=8;bg=ffffff;fx=0.5;fy=0.5")
	if err != nil {
		f.Fatal(err)
	}
	sides := []int{64, 640}
	rules := Rules{MaxSide: 4096, Allowed: Allowed{Sides: sides, Qualities: []int{75}, Transforms: values}}
	f.Fuzz(func(t *testing.T, raw string) {
		req, err := upload(rules, raw)
		if err != nil {
			return
		}
		o, q := req.Options, query(t, raw)
		white := thumbjob.Colour{R: 255, G: 255, B: 255, A: 255}
		eight := thumbjob.Sides{Top: 8, Right: 8, Bottom: 8, Left: 8}
		rest := o.Transforms
		rest.Blur, rest.Pad, rest.Background = 0, thumbjob.Sides{}, nil
		switch {
		case o.Blur != 0 && o.Blur != 5, o.Pad != (thumbjob.Sides{}) && o.Pad != eight,
			o.Background != nil && *o.Background != white, !reflect.DeepEqual(rest, thumbjob.Transforms{}),
			o.Gravity == thumbjob.GravityFocal && (o.FocalX != 0.5 || o.FocalY != 0.5):
			t.Fatalf("%q: off the transforms list: %+v", raw, o)
		}
		_, chose := q["dpr"]
		padded := o.Pad != (thumbjob.Sides{})
		for name, side := range map[string]int{"w": o.Width + o.Pad.Left + o.Pad.Right, "h": o.Height + o.Pad.Top + o.Pad.Bottom} {
			_, given := q[name]
			if (given || chose || padded) && side != o.Pad.Left+o.Pad.Right && side != o.Pad.Top+o.Pad.Bottom && !slices.Contains(sides, side) {
				t.Fatalf("%q: %s answers %d: %+v", raw, name, side, o)
			}
		}
		if v, ok := q["q"]; ok {
			if n, _ := strconv.Atoi(v); n != 75 {
				t.Fatalf("%q: q=%s taken", raw, v)
			}
		}
	})
}

// Same: every option it knows is the same between two equal requests and
// differs when its value does (optional values compared by value, not by
// pointer); an option it does not know is never the same.
func TestSame(t *testing.T) {
	for name := range asked {
		if !Same(name, Asked{}, Asked{}) {
			t.Errorf("%s: two empty requests differ", name)
		}
	}
	red := func() *thumbjob.Colour { return &thumbjob.Colour{R: 255, A: 255} }
	for name, change := range map[string]func(*Asked){
		"w":         func(a *Asked) { a.Options.Width = 10 },
		"dpr":       func(a *Asked) { a.DPR = 2 },
		"bg":        func(a *Asked) { a.Options.Background = red() },
		"trim":      func(a *Asked) { a.Options.Trim = &thumbjob.Trim{Threshold: 10, Colour: red()} },
		"min":       func(a *Asked) { a.Options.MinHeight = 5 },
		"max_bytes": func(a *Asked) { a.Options.MaxBytes = 1000 },
	} {
		var a, b, c Asked
		change(&a)
		change(&b)
		if !Same(name, a, b) {
			t.Errorf("%s: the same value (in another pointer) differs", name)
		}
		if Same(name, a, c) {
			t.Errorf("%s: a changed value is the same", name)
		}
	}
	if !Same("dpr", Asked{DPR: 0}, Asked{DPR: 1}) {
		t.Error("dpr 0 (none) is not dpr 1")
	}
	if Same("fit", Asked{}, Asked{}) {
		t.Error("an option Same does not know is the same")
	}
}
