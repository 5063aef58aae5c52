// Package quality scores a lossy thumbnail against a reference of the same
// size, so that formats and encoders are compared at equal quality rather
// than at equal `q` (whose meaning differs between encoders): SSIM on luma
// (Wang et al. 2004: 11x11 Gaussian window, sigma 1.5, K1 0.01, K2 0.03,
// L 255), the measure docs/engine.md's shrink study used.
package quality

import (
	"fmt"
	"image"
	"image/color"
	"math"
)

// SSIM is the mean structural similarity of a and b's luma (BT.601), 1 for
// identical images. Transparent pixels count as composited on white.
func SSIM(a, b image.Image) (float64, error) {
	if a.Bounds().Size() != b.Bounds().Size() {
		return 0, fmt.Errorf("quality: sizes differ: %v and %v", a.Bounds().Size(), b.Bounds().Size())
	}
	w, h := a.Bounds().Dx(), a.Bounds().Dy()
	if w < 11 || h < 11 {
		return 0, fmt.Errorf("quality: %dx%d is smaller than the 11x11 window", w, h)
	}
	x, y := luma(a), luma(b)
	mx, my := blur(x, w, h), blur(y, w, h)
	xx, yy, xy := blur(mul(x, x), w, h), blur(mul(y, y), w, h), blur(mul(x, y), w, h)
	const c1, c2 = (0.01 * 255) * (0.01 * 255), (0.03 * 255) * (0.03 * 255)
	var sum float64
	n := 0
	// Only windows wholly inside the image count (no padding).
	for j := 5; j < h-5; j++ {
		for i := 5; i < w-5; i++ {
			k := j*w + i
			sx, sy, sxy := xx[k]-mx[k]*mx[k], yy[k]-my[k]*my[k], xy[k]-mx[k]*my[k]
			sum += ((2*mx[k]*my[k] + c1) * (2*sxy + c2)) / ((mx[k]*mx[k] + my[k]*my[k] + c1) * (sx + sy + c2))
			n++
		}
	}
	return sum / float64(n), nil
}

func luma(img image.Image) []float64 {
	r := img.Bounds()
	out := make([]float64, 0, r.Dx()*r.Dy())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			a := float64(c.A) / 255
			on := func(v uint8) float64 { return float64(v)*a + 255*(1-a) }
			out = append(out, 0.299*on(c.R)+0.587*on(c.G)+0.114*on(c.B))
		}
	}
	return out
}

func mul(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] * b[i]
	}
	return out
}

// kernel is the normalised 11-tap Gaussian, sigma 1.5.
func kernel() [11]float64 {
	var k [11]float64
	var sum float64
	for i := range k {
		d := float64(i - 5)
		k[i] = math.Exp(-d * d / (2 * 1.5 * 1.5))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	return k
}

// blur is the separable Gaussian of p (w x h); edges are left unfiltered
// (SSIM reads only the interior).
func blur(p []float64, w, h int) []float64 {
	k := kernel()
	tmp := make([]float64, len(p))
	out := make([]float64, len(p))
	for j := 0; j < h; j++ {
		for i := 5; i < w-5; i++ {
			var s float64
			for t := -5; t <= 5; t++ {
				s += k[t+5] * p[j*w+i+t]
			}
			tmp[j*w+i] = s
		}
	}
	for j := 5; j < h-5; j++ {
		for i := 5; i < w-5; i++ {
			var s float64
			for t := -5; t <= 5; t++ {
				s += k[t+5] * tmp[(j+t)*w+i]
			}
			out[j*w+i] = s
		}
	}
	return out
}
