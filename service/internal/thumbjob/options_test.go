package thumbjob

import (
	"math"
	"testing"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
)

func TestNormalisedIgnoresWhatDoesNotChangeOutput(t *testing.T) {
	a := Options{Width: 10, Height: 10, Fit: FitFill, Gravity: GravityEntropy, Format: imagefmt.PNG, Quality: 10}
	b := Options{Width: 10, Height: 10, Fit: FitFill, Gravity: GravityCentre, Format: imagefmt.PNG, Quality: 90}
	if a.Normalised() != b.Normalised() {
		t.Errorf("%s != %s", a.Normalised(), b.Normalised())
	}
	c := b
	c.Format = imagefmt.JPEG
	d := c
	d.Quality = 10
	if c.Normalised() == d.Normalised() {
		t.Error("jpeg quality not in the normalised options")
	}
}

func TestRegionIn(t *testing.T) {
	for _, c := range []struct {
		r            Region
		w, h         int
		x, y, cw, ch int
		ok           bool
	}{
		{Region{X: 10, Y: 20, W: 30, H: 40}, 100, 100, 10, 20, 30, 40, true},
		{Region{X: 90, Y: 90, W: 30, H: 40}, 100, 100, 90, 90, 10, 10, true},
		{Region{X: 100, Y: 0, W: 1, H: 1}, 100, 100, 0, 0, 0, 0, false},
		{Region{X: 0.3, Y: 0.3, W: 0.4, H: 0.4, Fractions: true}, 10, 10, 3, 3, 4, 4, true},
		{Region{X: 0.99, Y: 0.99, W: 0.01, H: 0.01, Fractions: true}, 1, 40, 0, 39, 1, 1, true},
		{Region{X: 0.25, Y: 0, W: 0.5, H: 1, Fractions: true}, 801, 3, 200, 0, 401, 3, true},
	} {
		x, y, cw, ch, ok := c.r.In(c.w, c.h)
		if x != c.x || y != c.y || cw != c.cw || ch != c.ch || ok != c.ok {
			t.Errorf("%+v in %dx%d: %d,%d %dx%d %t", c.r, c.w, c.h, x, y, cw, ch, ok)
		}
	}
}

func TestFromSource(t *testing.T) {
	for in, want := range map[imagefmt.Format]imagefmt.Format{
		imagefmt.WebP: imagefmt.WebP, imagefmt.PNG: imagefmt.PNG, imagefmt.GIF: imagefmt.GIF,
		imagefmt.BMP: imagefmt.BMP, "": imagefmt.JPEG, "svg": imagefmt.JPEG,
	} {
		spec, _ := imagefmt.Lookup(in)
		if in != "" && in != "svg" && !spec.Output {
			want = imagefmt.JPEG
		}
		if got := (Options{Format: imagefmt.Source}).FromSource(in).Format; got != want {
			t.Errorf("source %q: %q, want %q", in, got, want)
		}
	}
	if got := (Options{Format: imagefmt.PNG}).FromSource(imagefmt.WebP).Format; got != imagefmt.PNG {
		t.Errorf("a named format was replaced: %q", got)
	}
	a := Options{Width: 1, Format: imagefmt.Source, Quality: 50}.Normalised()
	b := Options{Width: 1, Format: imagefmt.Source, Quality: 60}.Normalised()
	if a == b {
		t.Errorf("the source format's quality is not in the key: %s", a)
	}
}

func TestPreviewTimes(t *testing.T) {
	for _, c := range []struct {
		f        Frame
		duration float64
		want     []float64
	}{
		{Frame{Count: 4}, 3, []float64{0.375, 1.125, 1.875, 2.625}},
		// every=S: the middles of S-second stretches, the last cut at the end.
		{Frame{Count: 25, Every: 3}, 10, []float64{1.5, 4.5, 7.5, 9.5}},
		{Frame{Count: 25, Every: 2.5}, 10, []float64{1.25, 3.75, 6.25, 8.75}},
		{Frame{Count: 25, Every: 0.1}, 0.3, []float64{0.05, 0.15, 0.25}},
		// At most Count, from the start; one frame when S outlasts the video.
		{Frame{Count: 2, Every: 1}, 10, []float64{0.5, 1.5}},
		{Frame{Count: 25, Every: 60}, 10, []float64{5}},
		// No preview, or no duration: none.
		{Frame{Count: 1, Every: 2}, 10, nil},
		{Frame{}, 10, nil},
		{Frame{Count: 4}, 0, nil},
	} {
		got := c.f.PreviewTimes(c.duration)
		if len(got) != len(c.want) {
			t.Errorf("%+v over %g s: %v, want %v", c.f, c.duration, got, c.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-9 {
				t.Errorf("%+v over %g s: %v, want %v", c.f, c.duration, got, c.want)
				break
			}
		}
	}
	a, b := Options{Frame: Frame{Count: 25, Every: 2}}, Options{Frame: Frame{Count: 25}}
	if a.Normalised() == b.Normalised() {
		t.Errorf("every not in the normalised options: %s", a.Normalised())
	}
}
