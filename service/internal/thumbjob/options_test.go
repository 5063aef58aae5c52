package thumbjob

import (
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
