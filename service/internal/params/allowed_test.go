package params

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
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
