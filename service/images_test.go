package main

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
	"github.com/thumbd/thumbd/internal/imagediff"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
)

// Test sources are drawn here, deterministically, rather than kept as blobs.

// scene draws a w x h picture with smooth gradients and a few hard edges,
// enough structure for resampling and cropping to show.
func scene(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			r := uint8(255 * fx)
			g := uint8(255 * fy)
			b := uint8(128 + 100*math.Sin(8*fx+5*fy))
			if (x/(w/8+1)+y/(h/6+1))%2 == 0 {
				r, g = g, r
			}
			img.SetNRGBA(x, y, color.NRGBA{r, g, b, 255})
		}
	}
	return img
}

func encodeJPEG(t testing.TB, img image.Image, q int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// alphaPNG is a scene whose left half is fully transparent.
func alphaPNG(t testing.TB, w, h int) []byte {
	img := scene(w, h)
	for y := 0; y < h; y++ {
		for x := 0; x < w/2; x++ {
			img.Pix[y*img.Stride+x*4+3] = 0
		}
	}
	return encodePNG(t, img)
}

func greyPNG(t testing.TB, w, h int) []byte {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i % 251)
	}
	return encodePNG(t, img)
}

func png16(t testing.TB, w, h int) []byte {
	img := image.NewNRGBA64(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetNRGBA64(x, y, color.NRGBA64{uint16(x * 65535 / w), uint16(y * 65535 / h), 40000, 65535})
		}
	}
	return encodePNG(t, img)
}

// animatedGIF has frames frames; the first is red, the others blue.
func animatedGIF(t testing.TB, w, h, frames int) []byte {
	t.Helper()
	pal := color.Palette{color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}}
	anim := &gif.GIF{}
	for i := 0; i < frames; i++ {
		p := image.NewPaletted(image.Rect(0, 0, w, h), pal)
		if i > 0 {
			for j := range p.Pix {
				p.Pix[j] = 1
			}
		}
		anim.Image = append(anim.Image, p)
		anim.Delay = append(anim.Delay, 10)
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, anim); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// viaLibvips loads src with libvips, lets edit change it, and saves it in
// the format save picks: how the CMYK, WebP and EXIF sources are made.
func viaLibvips(t testing.TB, src []byte, edit func(*vips.ImageRef) error, save func(*vips.ImageRef) ([]byte, *vips.ImageMetadata, error)) []byte {
	t.Helper()
	img, err := vips.NewImageFromBuffer(src)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	if edit != nil {
		if err := edit(img); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := save(img)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func webpOf(t testing.TB, src []byte) []byte {
	return viaLibvips(t, src, nil, func(i *vips.ImageRef) ([]byte, *vips.ImageMetadata, error) {
		return i.ExportWebp(&vips.WebpExportParams{Quality: 90, ReductionEffort: 4})
	})
}

// cmykJPEG converts to CMYK with libvips' built-in profile and keeps the
// profile out of the file, the hard case: the engine must fall back to a
// CMYK profile on its own.
func cmykJPEG(t testing.TB, src []byte) []byte {
	return viaLibvips(t, src, func(i *vips.ImageRef) error {
		return i.ToColorSpace(vips.InterpretationCMYK)
	}, func(i *vips.ImageRef) ([]byte, *vips.ImageMetadata, error) {
		return i.ExportJpeg(&vips.JpegExportParams{Quality: 95, StripMetadata: true})
	})
}

// rotatedJPEG stores the scene rotated by 90 degrees with EXIF orientation
// 6 ("rotate 90 clockwise to display"), so a correct thumbnail looks like
// the unrotated scene.
func rotatedJPEG(t testing.TB, src []byte) []byte {
	return viaLibvips(t, src, func(i *vips.ImageRef) error {
		if err := i.Rotate(vips.Angle270); err != nil {
			return err
		}
		return i.SetOrientation(6)
	}, func(i *vips.ImageRef) ([]byte, *vips.ImageMetadata, error) {
		return i.ExportJpeg(&vips.JpegExportParams{Quality: 95})
	})
}

// decoded decodes a thumbnail with Go's decoders, independent of libvips.
func decoded(t testing.TB, b []byte) (image.Image, string) {
	t.Helper()
	if spec, _ := imagefmt.Identify(b); spec.Format == imagefmt.AVIF {
		lossless, err := imagediff.VipsToPNG(b)
		if err != nil {
			t.Fatalf("thumbnail does not decode: %v", err)
		}
		img, _, err := image.Decode(bytes.NewReader(lossless))
		if err != nil {
			t.Fatal(err)
		}
		return img, "avif"
	}
	img, format, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("thumbnail does not decode: %v", err)
	}
	return img, format
}
