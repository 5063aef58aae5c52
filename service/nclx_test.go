package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/thumbd/thumbd/internal/heiftest"
)

// TestNCLXThroughTheCorridor: an AVIF's nclx colr is read by the header
// look and carried with the job into both engine modes, which convert
// its primaries alike: a flat patch coded with Display P3 primaries comes
// out redder than the same patch coded with BT.709's (which stays as
// coded), identically in process and in a cell; a PQ source (HDR, not
// tone-mapped) answers 200 as coded. The engine's tests check the
// converted values against lcms and BT.2087
// (service/internal/thumb, TestNCLXThumbnail).
func TestNCLXThroughTheCorridor(t *testing.T) {
	patch := image.NewNRGBA(image.Rect(0, 0, 48, 48))
	for y := range 48 {
		for x := range 48 {
			patch.Set(x, y, color.NRGBA{R: 200, G: 110, B: 80, A: 255})
		}
	}
	coded, err := heiftest.Encode(patch, "-A", "-q", "90", "-p", "speed=9", "-p", "chroma=444")
	if err != nil {
		t.Fatal(err)
	}
	src := func(n heiftest.NCLX) []byte {
		b, err := heiftest.Transform(coded, heiftest.Options{NCLX: n})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	inproc, _ := newTestServer(t, testConfig(t))
	cells := newCellsServer(t, cellsConfig(t), "")
	centre := func(name, url string, b []byte) color.RGBA {
		s, _, body := postThumb(t, url, "?w=16&h=16&format=png", b)
		if s != 200 {
			t.Fatalf("%s at %s: %d %s", name, url, s, body)
		}
		img, err := png.Decode(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return color.RGBAModel.Convert(img.At(8, 8)).(color.RGBA)
	}
	p3 := src(heiftest.NCLX{Primaries: 12, Transfer: 13, Matrix: 6, FullRange: true})
	bt709 := src(heiftest.NCLX{Primaries: 1, Transfer: 1, Matrix: 6, FullRange: true})
	pq := src(heiftest.NCLX{Primaries: 9, Transfer: 16, Matrix: 6, FullRange: true})
	for _, url := range []string{inproc.URL, cells.URL} {
		a, b := centre("P3", url, p3), centre("BT.709", url, bt709)
		if int(a.R)-int(b.R) < 8 || int(b.B)-int(a.B) < 4 || b.R < 195 || b.R > 203 {
			t.Errorf("%s: P3 %v, BT.709 %v: want BT.709 as coded (200, 110, 80) and P3 redder (213, 104, 72)", url, a, b)
		}
		if c := centre("PQ", url, pq); c != b {
			t.Errorf("%s: PQ %v, want as coded %v", url, c, b)
		}
	}
}
