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
