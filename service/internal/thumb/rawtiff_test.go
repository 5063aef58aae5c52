package thumb

import (
	"bytes"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// rawTIFF's files read back through libvips' own TIFF loader as the very
// pixels given: one strip (at most rowsPerStrip rows, its offset and count
// in the entries) and several (arrays of them), RGB and RGBA.
func TestRawTIFFReadsBack(t *testing.T) {
	for _, c := range []struct{ w, h, bands int }{{5, 3, 4}, {7, 16, 3}, {7, 40, 3}, {3, 33, 4}} {
		pix := make([]byte, c.w*c.h*c.bands)
		for i := range pix {
			pix[i] = byte(i*7 + i/13)
		}
		tiff, err := rawTIFF(pix, c.w, c.h, c.bands, 1)
		if err != nil {
			t.Fatal(err)
		}
		img, err := vips.NewImageFromBuffer(tiff)
		if err != nil {
			t.Fatalf("%dx%dx%d: %v", c.w, c.h, c.bands, err)
		}
		got, err := img.ToBytes()
		img.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, pix) {
			t.Errorf("%dx%dx%d: the pixels read back differ", c.w, c.h, c.bands)
		}
	}
	if _, err := rawTIFF(make([]byte, 10), 2, 2, 3, 1); err == nil {
		t.Error("a pixel buffer of the wrong length was wrapped")
	}
}
