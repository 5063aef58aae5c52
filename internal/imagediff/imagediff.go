// Package imagediff compares decoded images with a tolerance, as golden
// thumbnails need: libvips builds (8.14, 8.16 with SIMD) differ by a level
// or two per channel, so byte equality would fail for no visible reason.
package imagediff

import (
	"image"
	"image/color"
)

// MeanAbs is the mean absolute difference per channel (R, G, B, A in
// 0..255) of two images of the same size, compared from their top-left
// corners.
func MeanAbs(a, b image.Image) float64 {
	var sum, n float64
	ab, bb := a.Bounds(), b.Bounds()
	for y := 0; y < ab.Dy(); y++ {
		for x := 0; x < ab.Dx(); x++ {
			ca := color.NRGBAModel.Convert(a.At(ab.Min.X+x, ab.Min.Y+y)).(color.NRGBA)
			cb := color.NRGBAModel.Convert(b.At(bb.Min.X+x, bb.Min.Y+y)).(color.NRGBA)
			for _, d := range []int{int(ca.R) - int(cb.R), int(ca.G) - int(cb.G), int(ca.B) - int(cb.B), int(ca.A) - int(cb.A)} {
				sum += float64(max(d, -d))
			}
			n += 4
		}
	}
	return sum / n
}
