package params

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

func TestTransforms(t *testing.T) {
	red := &thumbjob.Colour{R: 255, A: 255}
	for _, tc := range []struct {
		raw  string
		want thumbjob.Transforms
	}{
		{"", thumbjob.Transforms{}},
		{"enlarge=true", thumbjob.Transforms{}},
		{"enlarge=false", thumbjob.Transforms{NoEnlarge: true}},
		{"rotate=0", thumbjob.Transforms{}},
		{"rotate=270&flip=hv", thumbjob.Transforms{Rotate: 270, Flip: thumbjob.FlipBoth}},
		{"flip=h", thumbjob.Transforms{Flip: thumbjob.FlipHorizontal}},
		{"bg=ff0000", thumbjob.Transforms{Background: red}},
		{"bg=FF000080", thumbjob.Transforms{Background: &thumbjob.Colour{R: 255, A: 128}}},
		{"pad=4", thumbjob.Transforms{Pad: thumbjob.Sides{Top: 4, Right: 4, Bottom: 4, Left: 4}}},
		{"pad=1,2,3,4&dpr=2", thumbjob.Transforms{Pad: thumbjob.Sides{Top: 2, Right: 4, Bottom: 6, Left: 8}}},
		{"pad=1024", thumbjob.Transforms{Pad: thumbjob.Sides{Top: 1024, Right: 1024, Bottom: 1024, Left: 1024}}},
		{"extend=true", thumbjob.Transforms{Extend: true}},
		{"crop=10,20,30,40", thumbjob.Transforms{Crop: &thumbjob.Region{X: 10, Y: 20, W: 30, H: 40}}},
		{"crop=0.25,0,0.5,1", thumbjob.Transforms{Crop: &thumbjob.Region{X: 0.25, W: 0.5, H: 1, Fractions: true}}},
		{"trim=10", thumbjob.Transforms{Trim: &thumbjob.Trim{Threshold: 10}}},
		{"trim=0.5,ff0000", thumbjob.Transforms{Trim: &thumbjob.Trim{Threshold: 0.5, Colour: &thumbjob.Colour{R: 255, A: 255}}}},
		{"blur=0.3&sharpen=10&pixelate=256", thumbjob.Transforms{Blur: 0.3, Sharpen: 10, Pixelate: 256}},
		{"blur=100&pixelate=1", thumbjob.Transforms{Blur: 100}},
		{"blur=0&sharpen=0&pixelate=0", thumbjob.Transforms{}},
	} {
		got, err := upload(Rules{MaxSide: 4096}, tc.raw)
		if err != nil {
			t.Errorf("%q: %v", tc.raw, err)
			continue
		}
		if !reflect.DeepEqual(got.Options.Transforms, tc.want) {
			t.Errorf("%q: %+v, want %+v", tc.raw, got.Options.Transforms, tc.want)
		}
	}
}

// Every transform's bad values are a 400 naming it.
func TestTransformsBadValues(t *testing.T) {
	for name, values := range map[string][]string{
		"enlarge":  {"", "yes", "0"},
		"rotate":   {"", "45", "-90", "360", "90.0"},
		"flip":     {"", "x", "vh", "H"},
		"bg":       {"", "fff", "ff00zz", "#ff0000", "ff0000ff00"},
		"pad":      {"", "-1", "1.5", "1,2", "1,2,3,4,5", "1025", "a"},
		"extend":   {"", "1"},
		"crop":     {"", "1,2,3", "0,0,0,10", "0,0,10,-1", "0,0,1.5,0.5", "1,0,0.5,0.5", "0,0,1e3,1", "1.0,0,0.5,0.5"},
		"trim":     {"", "256", "-1", "10,fff", "10,ff0000ff", "x"},
		"blur":     {"", "0.2", "100.5", "-1", "NaN"},
		"sharpen":  {"0.1", "10.5", "x"},
		"pixelate": {"-1", "257", "2.5"},
	} {
		for _, v := range values {
			_, err := upload(Rules{MaxSide: 4096}, name+"="+v)
			if err == nil || apierr.From(err).Code != apierr.BadParameter || !strings.Contains(err.Error(), `"`+name+`"`) {
				t.Errorf("%s=%s: %v, want a 400 naming it", name, v, err)
			}
		}
	}
	// pad's bound holds after dpr.
	if _, err := upload(Rules{MaxSide: 4096}, "pad=600&dpr=2"); err == nil || !strings.Contains(err.Error(), `"pad"`) {
		t.Errorf("pad=600&dpr=2: %v", err)
	}
	// animated=true takes none of the transforms of one frame.
	for _, name := range frameTransforms {
		if _, err := upload(Rules{MaxSide: 4096}, "format=webp&animated=true&"+name+"=1"); err == nil || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("animated=true&%s: %v", name, err)
		}
	}
}

// Transforms work in presets, and a request's own value overrides the
// preset's.
func TestTransformsInPresets(t *testing.T) {
	presets, err := ParsePresets("card:w=100&h=100&rotate=90&bg=00ff00&pad=2&blur=2&enlarge=false&flip=v&crop=0,0,0.5,0.5&trim=5,ffffff&sharpen=1&pixelate=3&extend=true&gravity=sw")
	if err != nil {
		t.Fatal(err)
	}
	r := Rules{MaxSide: 4096, Presets: presets}
	if errs := r.CheckPresets(); errs != nil {
		t.Fatal(errs)
	}
	got, err := upload(r, "preset=card&rotate=180")
	if err != nil {
		t.Fatal(err)
	}
	want := thumbjob.Transforms{Rotate: 180, Background: &thumbjob.Colour{G: 255, A: 255}, Pad: thumbjob.Sides{Top: 2, Right: 2, Bottom: 2, Left: 2}, Blur: 2, NoEnlarge: true,
		Flip: thumbjob.FlipVertical, Crop: &thumbjob.Region{W: 0.5, H: 0.5, Fractions: true}, Trim: &thumbjob.Trim{Threshold: 5, Colour: &thumbjob.Colour{R: 255, G: 255, B: 255, A: 255}},
		Sharpen: 1, Pixelate: 3, Extend: true}
	if !reflect.DeepEqual(got.Options.Transforms, want) || got.Options.Gravity != thumbjob.GravitySouthWest {
		t.Errorf("%+v, want %+v", got.Options.Transforms, want)
	}
	bad := Rules{MaxSide: 4096, Presets: Presets{"odd": {"rotate": "45"}}}
	if errs := bad.CheckPresets(); len(errs) != 1 || !strings.Contains(errs[0].Error(), `"rotate"`) {
		t.Errorf("a preset with rotate=45: %v", errs)
	}
}

// Each transform changes the normalised job (so the ETag and the caches
// tell them apart); none set leaves the plain resize's text as it was.
func TestTransformsNormalised(t *testing.T) {
	plain, err := upload(Rules{MaxSide: 4096}, "w=100&h=100")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := plain.Options.Normalised(), "w=100,h=100,fit=cover,gravity=centre,format=png,q=0,animated=false"; got != want {
		t.Errorf("plain resize: %s, want %s (the key it had before the transforms)", got, want)
	}
	seen := map[string]string{plain.Options.Normalised(): "plain"}
	for _, raw := range []string{"enlarge=false", "rotate=90", "rotate=180", "flip=h", "flip=v", "bg=ffffff", "bg=ffffff00",
		"pad=1", "pad=1,0,0,0", "extend=true", "crop=0,0,10,10", "crop=0,0,0.5,0.5", "trim=10", "trim=10,ffffff", "trim=11",
		"blur=1", "sharpen=1", "pixelate=2", "gravity=n", "gravity=se", "fit=inside&extend=true&gravity=n", "fit=inside&extend=true&gravity=s"} {
		got, err := upload(Rules{MaxSide: 4096}, "w=100&h=100&"+raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		n := got.Options.Normalised()
		if other, ok := seen[n]; ok {
			t.Errorf("%s and %s normalise alike: %s", raw, other, n)
		}
		seen[n] = raw
	}
}

func TestWatermarkParameter(t *testing.T) {
	configured := Rules{MaxSide: 4096, Watermark: Watermark{Configured: true}}
	for _, tc := range []struct {
		raw  string
		want *thumbjob.Watermark
	}{
		{"", nil},
		{"wm=1", &thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionCentre}},
		{"wm=0.5,soea", &thumbjob.Watermark{Opacity: 0.5, Position: thumbjob.PositionSouthEast}},
		{"wm=0.3,re,10,20", &thumbjob.Watermark{Opacity: 0.3, Position: thumbjob.PositionReplicate, X: 10, Y: 20}},
		{"wm=1,nowe,0,4096,0.25", &thumbjob.Watermark{Opacity: 1, Position: thumbjob.PositionNorthWest, Y: 4096, Scale: 0.25}},
	} {
		got, err := upload(configured, tc.raw)
		if err != nil || !reflect.DeepEqual(got.Options.Watermark, tc.want) {
			t.Errorf("%q: %+v %v, want %+v", tc.raw, got.Options.Watermark, err, tc.want)
		}
	}
	for _, v := range []string{"", "0", "1.5", "-1", "x", "1,middle", "1,ce,1", "1,ce,-1,0", "1,ce,0,4097", "1,ce,0,0,1.5", "1,ce,0,0,0.5,1", "1,CE"} {
		_, err := upload(configured, "wm="+v)
		if err == nil || apierr.From(err).Code != apierr.BadParameter || !strings.Contains(err.Error(), `"wm"`) {
			t.Errorf("wm=%s: %v, want a 400 naming it", v, err)
		}
	}
	// Another watermark image, another key and ETag (a result store keeps
	// results across restarts, and the image may change between them).
	a, b := configured, configured
	a.Watermark.Mark, b.Watermark.Mark = "aaaa", "bbbb"
	ga, _ := upload(a, "wm=1")
	gb, _ := upload(b, "wm=1")
	if ga.Options.Watermark.Mark != "aaaa" || ga.Options.Normalised() == gb.Options.Normalised() {
		t.Errorf("the watermark's image is not in the key: %s, %s", ga.Options.Normalised(), gb.Options.Normalised())
	}
	// With no watermark configured, wm= says so.
	if _, err := upload(Rules{MaxSide: 4096}, "wm=1"); err == nil || !strings.Contains(err.Error(), "none is configured (THUMBD_WATERMARK)") {
		t.Errorf("wm=1 with none configured: %v", err)
	}
	// Required: on every thumbnail, placed by the settings; wm= refused.
	mark := &thumbjob.Watermark{Opacity: 0.5, Position: thumbjob.PositionSouthEast, X: 16, Y: 16, Scale: 0.25}
	required := Rules{MaxSide: 4096, Watermark: Watermark{Configured: true, Required: mark}}
	got, err := upload(required, "w=10")
	if err != nil || !reflect.DeepEqual(got.Options.Watermark, mark) {
		t.Errorf("required: %+v %v", got.Options.Watermark, err)
	}
	if _, err := upload(required, "wm=0.01"); err == nil || !strings.Contains(err.Error(), "THUMBD_WATERMARK_REQUIRED") {
		t.Errorf("wm= with a required watermark: %v", err)
	}
	// Presets may ask for it, when there is one.
	p := Rules{MaxSide: 4096, Presets: Presets{"marked": {"w": "10", "wm": "1,soea"}}}
	if errs := p.CheckPresets(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "THUMBD_WATERMARK") {
		t.Errorf("a preset with wm= and no watermark: %v", errs)
	}
	p.Watermark.Configured = true
	if errs := p.CheckPresets(); errs != nil {
		t.Errorf("a preset with wm=: %v", errs)
	}
	if got, err := upload(p, "preset=marked"); err != nil || got.Options.Watermark == nil || got.Options.Watermark.Position != thumbjob.PositionSouthEast {
		t.Errorf("preset=marked: %+v %v", got.Options.Watermark, err)
	}
}

// No query panics the parser, and every refusal is a 400 bad_parameter.
func FuzzTransforms(f *testing.F) {
	for _, seed := range []string{"pad=1,2,3,4,5", "crop=0,0,1,1", "crop=0.5,0.5,0.5,0.5", "trim=10,ffffff", "bg=ff000080",
		"rotate=90&flip=hv", "blur=100&sharpen=10&pixelate=256", "wm=1,re,4,4,0.5", "enlarge=false&extend=true&gravity=se", "pad=,,,"} {
		f.Add(seed)
	}
	rules := Rules{MaxSide: 4096, Watermark: Watermark{Configured: true}}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := UploadQuery(raw)
		if err != nil {
			return
		}
		got, err := rules.Upload(q)
		if err != nil {
			if apierr.From(err).Code != apierr.BadParameter {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		tr := got.Options.Transforms
		if tr.Blur < 0 || tr.Blur > thumbjob.MaxBlur || tr.Sharpen < 0 || tr.Sharpen > thumbjob.MaxSharpen || tr.Pixelate < 0 || tr.Pixelate > thumbjob.MaxPixelate ||
			max(tr.Pad.Top, tr.Pad.Right, tr.Pad.Bottom, tr.Pad.Left) > thumbjob.MaxPad || min(tr.Pad.Top, tr.Pad.Right, tr.Pad.Bottom, tr.Pad.Left) < 0 {
			t.Fatalf("%q: out of bounds %+v", raw, tr)
		}
		if c := tr.Crop; c != nil && (c.W <= 0 || c.H <= 0 || c.X < 0 || c.Y < 0) {
			t.Fatalf("%q: crop %+v", raw, *c)
		}
	})
}

// TestFilterSpan: unsigned, a blur's or a sharpen's sigma times the
// answer's longest side (dpr included) is bounded; a signed query and a
// preset's filter are not.
func TestFilterSpan(t *testing.T) {
	r := Rules{MaxSide: 4096, FilterSpan: DefaultFilterSpan, Presets: Presets{"soft": query(t, "w=4096&blur=50")}}
	for _, c := range []struct {
		raw string
		ok  bool
	}{
		{"w=4096&blur=4", true},
		{"w=4096&blur=100", false},
		{"w=4096&h=10&sharpen=5", false},
		{"w=100&blur=100", true},
		{"blur=64", true}, // the default 256
		{"blur=65", false},
		{"w=2048&dpr=2&blur=5", false},
		{"w=2048&blur=5", true},
		{"preset=soft", true},
		{"preset=soft&blur=50", false}, // given over the preset: the client's
	} {
		_, err := r.Upload(query(t, c.raw))
		var e *apierr.Error
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v", c.raw, err)
		case !c.ok && (!errors.As(err, &e) || e.Code != apierr.BadParameter || !strings.Contains(e.Message, "sign")):
			t.Errorf("%s: %v, want a 400 naming a signed URL", c.raw, err)
		}
		if _, err := r.Signed().Upload(query(t, c.raw)); err != nil {
			t.Errorf("%s signed: %v", c.raw, err)
		}
	}
}
