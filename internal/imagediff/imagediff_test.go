package imagediff

import (
	"image"
	"image/color"
	"testing"
)

func TestMeanAbs(t *testing.T) {
	a := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	b := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	if d := MeanAbs(a, b); d != 0 {
		t.Fatalf("identical: %v", d)
	}
	b.SetNRGBA(0, 0, color.NRGBA{R: 8, G: 0, B: 0, A: 0})
	// One channel of eight differs by 8: mean 1.
	if d := MeanAbs(a, b); d != 1 {
		t.Fatalf("got %v, want 1", d)
	}
}
