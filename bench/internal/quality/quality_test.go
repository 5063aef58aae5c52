package quality

import (
	"image"
	"image/color"
	"math/rand/v2"
	"testing"
)

func noise(w, h int, seed uint64) *image.Gray {
	r := rand.New(rand.NewPCG(seed, 1))
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.IntN(256))
	}
	return img
}

func TestSSIM(t *testing.T) {
	a := noise(64, 48, 1)
	if s, err := SSIM(a, a); err != nil || s != 1 {
		t.Fatalf("identical: %v %v", s, err)
	}
	// A little noise costs a little; unrelated noise costs nearly all.
	b := image.NewGray(a.Rect)
	copy(b.Pix, a.Pix)
	for i := 0; i < len(b.Pix); i += 7 {
		b.Pix[i] ^= 4
	}
	near, _ := SSIM(a, b)
	far, _ := SSIM(a, noise(64, 48, 2))
	if !(near < 1 && near > 0.95 && far < 0.1) {
		t.Errorf("near %.4f, far %.4f", near, far)
	}
	// Symmetric.
	if back, _ := SSIM(b, a); back != near {
		t.Errorf("SSIM(b, a) %.6f != SSIM(a, b) %.6f", back, near)
	}
	// Transparent is white.
	clear := image.NewNRGBA(image.Rect(0, 0, 16, 16))
	white := image.NewGray(clear.Rect)
	for i := range white.Pix {
		white.Pix[i] = 255
	}
	if s, _ := SSIM(clear, white); s != 1 {
		t.Errorf("transparent vs white: %v", s)
	}
	clear.Set(8, 8, color.NRGBA{A: 255})
	if s, _ := SSIM(clear, white); s >= 1 {
		t.Errorf("a black pixel changed nothing: %v", s)
	}
}

func TestSSIMRefusesMismatches(t *testing.T) {
	if _, err := SSIM(noise(20, 20, 1), noise(20, 21, 1)); err == nil {
		t.Error("different sizes accepted")
	}
	if _, err := SSIM(noise(10, 10, 1), noise(10, 10, 1)); err == nil {
		t.Error("smaller than the window accepted")
	}
}
