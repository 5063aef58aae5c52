package thumb

import (
	"errors"
	"testing"

	"github.com/thumbd/thumbd/service/internal/hostile"
)

// libvips 8.14 sizes a GIF from its frames and ignores a larger logical
// screen, so a 40-byte GIF declaring 65535x65535 used to be thumbnailed;
// what the header declares is held to the pixel limit like every format.
func TestGIFScreenHeldToPixelLimit(t *testing.T) {
	opts := Options{Width: 8, Height: 8, Fit: FitCover, Gravity: GravityCentre, Format: FormatPNG}
	if _, err := testEngine.Thumbnail(hostile.GIFBomb(65535, 65535), opts); !errors.Is(err, ErrTooManyPixels) {
		t.Fatalf("65535x65535 screen: %v", err)
	}
	if _, err := testEngine.Thumbnail(hostile.GIFBomb(6000, 6000), opts); err != nil {
		t.Fatalf("6000x6000 screen (36 MP, allowed): %v", err)
	}
}
