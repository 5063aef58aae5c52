package thumbjob

import "testing"

func TestHEIFThumbnail(t *testing.T) {
	for _, c := range []struct {
		name                 string
		dw, dh, tw, th, w, h int
		fit                  Fit
		libvips, use         bool
	}{
		{"inside: shrinks", 4032, 3024, 320, 240, 256, 256, FitInside, true, true},
		{"inside: exactly the box", 4032, 3024, 320, 240, 320, 320, FitInside, false, false},
		{"inside: the larger shrink", 4032, 3024, 320, 240, 300, 1000, FitInside, true, true},
		{"contain as inside", 4032, 3024, 320, 240, 256, 256, FitContain, true, true},
		{"cover: 240 rows short of 256", 4032, 3024, 320, 240, 256, 256, FitCover, false, false},
		{"cover: both sides over", 4032, 3024, 320, 240, 200, 200, FitCover, true, true},
		{"fill: both sides over", 4032, 3024, 320, 240, 300, 200, FitFill, true, true},
		{"fill: one side short", 4032, 3024, 320, 240, 300, 250, FitFill, false, false},
		{"portrait", 3024, 4032, 240, 320, 256, 256, FitInside, true, true},
		{"no thumbnail", 4032, 3024, 0, 0, 256, 256, FitInside, false, false},
		{"not narrower than the image", 640, 480, 640, 480, 256, 256, FitInside, false, false},
		{"libvips' tolerance, not thumbd's", 640, 480, 320, 256, 256, 256, FitInside, true, false},
		{"rounded honestly", 4032, 2268, 320, 180, 256, 256, FitInside, true, true},
		{"beyond libvips' tolerance", 640, 480, 320, 320, 256, 256, FitInside, false, false},
		{"no box", 640, 480, 320, 240, 0, 256, FitInside, false, false},
	} {
		libvips, use := HEIFThumbnail(c.dw, c.dh, c.tw, c.th, c.w, c.h, c.fit)
		if libvips != c.libvips || use != c.use {
			t.Errorf("%s: libvips %v, use %v; want %v, %v", c.name, libvips, use, c.libvips, c.use)
		}
	}
}
