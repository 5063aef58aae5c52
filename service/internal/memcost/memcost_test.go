package memcost

import (
	"bytes"
	"image"
	"image/gif"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "golang.org/x/image/webp"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

const seeds = "../thumb/testdata/fuzz-seeds"

// Every readable seed's size agrees with Go's own decoders (which read the
// same headers independently), and GIF frame counts with a full decode.
func TestReadHeaderAgreesWithGoDecoders(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(seeds, "ok-*"))
	files = append(files, "../thumb/testdata/sources/small.jpg", "../thumb/testdata/sources/large.jpg")
	if len(files) < 30 {
		t.Fatalf("only %d seeds found", len(files))
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h, err := ReadHeader(src)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		c, _, err := image.DecodeConfig(bytes.NewReader(src))
		switch {
		case h.Format == imagefmt.GIF:
			// Sized as libnsgif sizes it (the screen grown to the first
			// frame), not as Go's decoder: thumb's differential test holds
			// GIFs to libvips' reading.
		case err != nil:
			t.Logf("%s: Go's decoder: %v (not compared)", f, err)
		case c.Width != h.Width || c.Height != h.Height:
			t.Errorf("%s: header %dx%d, Go's decoder %dx%d", f, h.Width, h.Height, c.Width, c.Height)
		}
		if h.Bands < 1 || h.Bands > 4 || h.Frames < 1 {
			t.Errorf("%s: %+v", f, h)
		}
		if h.Format == imagefmt.GIF {
			g, err := gif.DecodeAll(bytes.NewReader(src))
			if err == nil && len(g.Image) != h.Frames {
				t.Errorf("%s: %d frames counted, %d decoded", f, h.Frames, len(g.Image))
			}
		}
	}
}

func TestReadHeaderDetails(t *testing.T) {
	cases := []struct {
		file                 string
		bands, bytes, frames int
	}{
		{"ok-jpeg-grey.jpg", 1, 1, 1},
		{"ok-jpeg-cmyk-profile.jpg", 4, 1, 1},
		{"ok-jpeg-baseline.jpg", 3, 1, 1},
		{"ok-jpeg-progressive.jpg", 3, 1, 1},
		{"ok-png-rgb.png", 3, 1, 1},
		{"ok-png-rgba16.png", 4, 2, 1},
		{"ok-png-grey-alpha.png", 2, 1, 1},
		{"ok-png-palette-trns.png", 4, 1, 1},
		{"ok-gif-static.gif", 4, 1, 1},
		{"frames-gif-300.gif", 4, 1, 300},
		{"ok-webp-lossy.webp", 3, 1, 1},
		{"ok-webp-alpha.webp", 4, 1, 1},
	}
	for _, c := range cases {
		src, err := os.ReadFile(filepath.Join(seeds, c.file))
		if err != nil {
			t.Fatal(err)
		}
		h, err := ReadHeader(src)
		if err != nil || h.Bands != c.bands || h.BytesPerSample != c.bytes || h.Frames != c.frames {
			t.Errorf("%s: %+v, %v; want %d bands, %d bytes a sample, %d frames", c.file, h, err, c.bands, c.bytes, c.frames)
		}
	}
	src, _ := os.ReadFile(filepath.Join(seeds, "ok-webp-animated.webp"))
	if h, err := ReadHeader(src); err != nil || h.Frames < 2 {
		t.Errorf("animated WebP: %+v, %v; want frames counted", h, err)
	}
}

// Bombs declare their size in a few bytes: the header gives it, nothing
// is decoded.
func TestReadHeaderOfBombs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(seeds, "pixels-*"))
	for _, f := range files {
		src, _ := os.ReadFile(f)
		h, err := ReadHeader(src)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		// A GIF's screen past 2048 a side is 1x1 to libnsgif (the engine
		// still refuses the declared screen: checkSource).
		if h.Pixels() < 100_000_000 && !strings.Contains(f, "frame-65535") && !strings.Contains(f, "gif-screen") {
			t.Errorf("%s: %dx%d, want the declared size", f, h.Width, h.Height)
		}
	}
}

// What is not an image, or is cut before its size, has no header; nothing
// panics on any prefix of a real file.
func TestReadHeaderRefusesGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("hello"), []byte("\xFF\xD8\xFF\xE0\x00\x10JFIF"), []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDX"), []byte("GIF89a")} {
		if h, err := ReadHeader(b); err == nil {
			t.Errorf("%q: %+v, want an error", b, h)
		}
	}
	files, _ := filepath.Glob(filepath.Join(seeds, "ok-*"))
	for _, f := range files {
		src, _ := os.ReadFile(f)
		for n := 0; n < min(len(src), 400); n++ {
			ReadHeader(src[:n])
		}
	}
}

// FuzzLook: the sniff and every format's header reader, seeded with the
// engine's seeds and a real file of each format read since issue 35.
func FuzzLook(f *testing.F) {
	var files []string
	for _, glob := range []string{filepath.Join(seeds, "*"), filepath.Join(headers, "*"), "../bmp/testdata/*"} {
		more, _ := filepath.Glob(glob)
		files = append(files, more...)
	}
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil && len(b) < 1<<16 {
			f.Add(b)
		}
	}
	f.Add(phoneWithThumbnail(320, 240, 1, false)) // two thumbnails, one turned
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Look(b)
		h := s.Header
		if err == nil && (h.Width <= 0 || h.Height <= 0 || h.Frames < 1 || h.Bands < 1 || h.BytesPerSample < 1 || h.Format != s.Format) {
			t.Fatalf("%+v without an error", h)
		}
		if err != nil && h != (Header{}) {
			t.Fatalf("a header with an error: %+v, %v", h, err)
		}
		if h.ChunkBytes > len(b) {
			t.Fatalf("a strip of %d bytes in a file of %d", h.ChunkBytes, len(b))
		}
		// priced without overflow, as the engine bounds it
		if err == nil {
			if c := Estimate(h, Job{Width: 256, Height: 256, Fit: "cover", Output: imagefmt.WebP, MaxSide: 8192, MaxPixels: 100_000_000}); c < fixedCost {
				t.Fatalf("%+v priced %d", h, c)
			}
		}
		// The copy the engine hands libvips when it uses no embedded
		// thumbnail: the same bytes but the thmb types, the same primary.
		out := WithoutHEIFThumbnails(b)
		if len(out) != len(b) {
			t.Fatalf("WithoutHEIFThumbnails: %d bytes of %d", len(out), len(b))
		}
		if s.Format != imagefmt.HEIC && s.Format != imagefmt.AVIF {
			return
		}
		if o, oerr := Look(out); err == nil && (oerr != nil || o.Header.Width != h.Width || o.Header.Height != h.Height || o.Header.ThumbWidth != 0) {
			t.Fatalf("without thumbnails: %+v, %v; was %+v", o.Header, oerr, h)
		}
	})
}

// The estimate grows with what a job holds: the source's pixels (PNG
// decodes whole, JPEG shrinks on load), the box, the frames, the encoder.
func TestEstimateOrders(t *testing.T) {
	photo := Header{Format: imagefmt.JPEG, Width: 4032, Height: 3024, Bands: 3, BytesPerSample: 1, Frames: 1}
	png := Header{Format: imagefmt.PNG, Width: 4032, Height: 3024, Bands: 3, BytesPerSample: 1, Frames: 1}
	small := Job{Width: 256, Height: 256, Fit: "cover", Output: imagefmt.PNG}
	big := Job{Width: 4096, Fit: "cover", Output: imagefmt.PNG, MaxSide: 4096}
	less := func(a, b int64, why string) {
		t.Helper()
		if a >= b {
			t.Errorf("%s: %d >= %d", why, a, b)
		}
	}
	less(Estimate(photo, small), Estimate(png, small), "JPEG shrinks on load, PNG does not")
	less(Estimate(photo, small), Estimate(photo, big), "a larger box")
	quality := small
	quality.QualityShrink = true
	less(Estimate(photo, small), Estimate(photo, quality), "THUMBD_JPEG_SHRINK=quality decodes 2x per side")
	avif := small
	avif.Output = imagefmt.AVIF
	less(Estimate(photo, small), Estimate(photo, avif), "AVIF's encoder")
	gif := Header{Format: imagefmt.GIF, Width: 320, Height: 240, Bands: 4, BytesPerSample: 1, Frames: 50}
	anim := Job{Width: 256, Height: 256, Fit: "cover", Output: imagefmt.WebP, Animated: true}
	still := anim
	still.Animated = false
	less(Estimate(gif, still), Estimate(gif, anim), "every frame")
	pngOut := anim
	pngOut.Output = imagefmt.PNG
	if Estimate(gif, pngOut) != Estimate(gif, Job{Width: 256, Height: 256, Fit: "cover", Output: imagefmt.PNG}) {
		t.Error("animated=true with a format that cannot animate sized as an animation")
	}
	// A HEIF grid's tiles decode whole: 3x3 tiles of 512 showing 1100x1100
	// cost the 1536x1536 they cover.
	grid := Header{Format: imagefmt.HEIC, Width: 1100, Height: 1100, Bands: 3, BytesPerSample: 1, Frames: 1, Tiles: 9, TileWidth: 512, TileHeight: 512}
	whole := grid
	whole.Width, whole.Height, whole.Tiles = 1536, 1536, 0
	if Estimate(grid, small) != Estimate(whole, small) {
		t.Errorf("a grid priced at %d, its tiles' area at %d", Estimate(grid, small), Estimate(whole, small))
	}
	// The engine never decodes more than MaxPixels: neither does the estimate.
	bomb := Header{Format: imagefmt.PNG, Width: 100000, Height: 100000, Bands: 4, BytesPerSample: 1, Frames: 1}
	capped := small
	capped.MaxPixels = 40_000_000
	if got := Estimate(bomb, capped); got > fixedCost+int64(decodeFactor*40_000_000*4)+8<<20 {
		t.Errorf("a 10 GP header sized at %d bytes, over the MaxPixels bound", got)
	}
}

// Each transform is priced, at its bounds: the filters grow with sigma,
// crop and trim decode the whole JPEG, the others hold a copy of the
// output, and none of them at its largest makes a 4096 box's job
// unbounded.
func TestEstimateTransforms(t *testing.T) {
	photo := Header{Format: imagefmt.JPEG, Width: 4032, Height: 3024, Bands: 3, BytesPerSample: 1, Frames: 1}
	base := Job{Width: 256, Height: 256, Fit: "cover", Output: imagefmt.PNG, MaxSide: 4096, MaxPixels: 40_000_000}
	with := func(j Job, t thumbjob.Transforms) Job { j.Transforms = t; return j }
	plain := Estimate(photo, base)
	more := func(why string, tr thumbjob.Transforms) int64 {
		t.Helper()
		got := Estimate(photo, with(base, tr))
		if got <= plain {
			t.Errorf("%s: %d, not more than the plain resize's %d", why, got, plain)
		}
		return got
	}
	more("rotate", thumbjob.Transforms{Rotate: 90})
	more("flip", thumbjob.Transforms{Flip: thumbjob.FlipBoth})
	// extend holds a canvas only where it adds one: around a fit inside.
	if Estimate(photo, with(base, thumbjob.Transforms{Extend: true})) != plain {
		t.Error("extend priced on a cover, which fills its box")
	}
	inside := base
	inside.Fit = thumbjob.FitInside
	if Estimate(photo, with(inside, thumbjob.Transforms{Extend: true})) <= Estimate(photo, inside) {
		t.Error("extend around a fit inside not priced")
	}
	more("pixelate", thumbjob.Transforms{Pixelate: thumbjob.MaxPixelate})
	pad := more("pad at its bound", thumbjob.Transforms{Pad: thumbjob.Sides{Top: thumbjob.MaxPad, Right: thumbjob.MaxPad, Bottom: thumbjob.MaxPad, Left: thumbjob.MaxPad}})
	padded := float64(2*thumbjob.MaxPad+256) * float64(2*thumbjob.MaxPad+256)
	if want := int64((padded-256*256)*encoderBytes[imagefmt.PNG] + padded*copyBytes); pad-plain < want {
		t.Errorf("pad=%d: %d more, want at least the padded output's %d", thumbjob.MaxPad, pad-plain, want)
	}
	// A crop decodes the whole source at the shrink its region allows: a
	// 256x256 region to 256x256 none.
	whole := int64(4032 * 3024 * 3)
	crop := more("crop without a shrink", thumbjob.Transforms{Crop: &thumbjob.Region{X: 0, Y: 0, W: 256, H: 256}})
	if crop-plain < whole*3/4 {
		t.Errorf("crop: %d more, want about the whole source decoded (%d)", crop-plain, whole)
	}
	// A 2048x2048 region to 256x256: an eighth, as the engine does; with
	// THUMBD_JPEG_SHRINK=quality (the engine does not shrink crops then),
	// whole.
	small := Estimate(photo, with(base, thumbjob.Transforms{Crop: &thumbjob.Region{X: 0, Y: 0, W: 2048, H: 2048}}))
	if small >= crop-whole/2 {
		t.Errorf("a 2048x2048 crop to 256x256: %d, not shrunk on load (a whole decode: %d)", small, crop)
	}
	quality := with(base, thumbjob.Transforms{Crop: &thumbjob.Region{X: 0, Y: 0, W: 2048, H: 2048}})
	quality.QualityShrink = true
	if Estimate(photo, quality) < crop {
		t.Error("THUMBD_JPEG_SHRINK=quality: a crop decodes whole")
	}
	// A tall region, w alone: the engine follows the region's aspect
	// (256 x 4096, bounded) and cannot shrink on load.
	tall := base
	tall.Height, tall.Fit = 0, "inside"
	if got := Estimate(photo, with(tall, thumbjob.Transforms{Crop: &thumbjob.Region{X: 0, Y: 0, W: 100, H: 2000}})); got < crop {
		t.Errorf("a 100x2000 crop to w=256: %d, under a whole decode's %d", got, crop)
	}
	trim := more("trim", thumbjob.Transforms{Trim: &thumbjob.Trim{Threshold: 10}})
	if trim <= crop {
		t.Errorf("trim %d not more than a whole crop %d: it reads the source again", trim, crop)
	}
	// A thin crop covered scales far more than the whole source would.
	thin := more("a thin crop covered", thumbjob.Transforms{Crop: &thumbjob.Region{X: 0, Y: 0, W: 4000, H: 10}})
	if thin < int64(resizedFactor*4*256*102400) {
		t.Errorf("a 4000x10 crop covered to 256x256 (102400x256 scaled): %d", thin)
	}
	// The filters grow with sigma, and at their bounds on a 4096 box stay
	// within a few hundred MB.
	big := base
	big.Width, big.Height, big.Fit = 4096, 4096, "fill"
	for _, f := range []struct {
		name string
		tr   func(float64) thumbjob.Transforms
		hi   float64
	}{
		{"blur", func(s float64) thumbjob.Transforms { return thumbjob.Transforms{Blur: s} }, thumbjob.MaxBlur},
		{"sharpen", func(s float64) thumbjob.Transforms { return thumbjob.Transforms{Sharpen: s} }, thumbjob.MaxSharpen},
	} {
		lo, hi := Estimate(photo, with(base, f.tr(0.3))), Estimate(photo, with(base, f.tr(f.hi)))
		if lo <= plain || hi <= lo {
			t.Errorf("%s: plain %d, sigma 0.3 %d, sigma %g %d: want growing", f.name, plain, lo, f.hi, hi)
		}
		if top := Estimate(photo, with(big, f.tr(f.hi))); top > Estimate(photo, big)+600<<20 {
			t.Errorf("%s at %g on a 4096 box: %d, more than 600 MiB over the resize", f.name, f.hi, top)
		}
	}
	if Estimate(photo, JobOf(thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Format: imagefmt.PNG, Transforms: thumbjob.Transforms{Blur: 5}})) <= Estimate(photo, JobOf(thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Format: imagefmt.PNG})) {
		t.Error("JobOf drops the transforms")
	}
}

// Work: a plain thumbnail is 1; blur=100 on a 4096x4096 answer of a
// 4096x4096 PNG is the measured 5.3; a small blur on a small answer adds
// little; a trim adds its search.
func TestWork(t *testing.T) {
	png := Header{Format: imagefmt.PNG, Width: 4096, Height: 4096, Bands: 3, BytesPerSample: 1, Frames: 1}
	jpeg := Header{Format: imagefmt.JPEG, Width: 4032, Height: 3024, Bands: 3, BytesPerSample: 1, Frames: 1}
	for _, c := range []struct {
		name     string
		h        Header
		j        Job
		min, max float64
	}{
		{"plain", png, Job{Width: 4096, Height: 4096, Fit: "fill", Output: imagefmt.PNG}, 1, 1},
		{"blur=100 on 4096²", png, Job{Width: 4096, Height: 4096, Fit: "fill", Output: imagefmt.PNG, Transforms: thumbjob.Transforms{Blur: 100}}, 5.0, 5.6},
		{"blur=2 on 256² of a JPEG", jpeg, Job{Width: 256, Height: 256, Fit: "cover", Output: imagefmt.WebP, Transforms: thumbjob.Transforms{Blur: 2}}, 1, 1.2},
		{"blur=100 on 256² of a JPEG", jpeg, Job{Width: 256, Height: 256, Fit: "cover", Output: imagefmt.WebP, Transforms: thumbjob.Transforms{Blur: 100}}, 1.5, 4},
		{"trim", jpeg, Job{Width: 256, Height: 256, Fit: "cover", Output: imagefmt.WebP, Transforms: thumbjob.Transforms{Trim: &thumbjob.Trim{Threshold: 10}}}, 1.5, 1.5},
	} {
		if w := Work(c.h, c.j); w < c.min || w > c.max {
			t.Errorf("%s: work %.2f, want %.1f to %.1f", c.name, w, c.min, c.max)
		}
	}
}

// max_bytes prices a second attempt for a format with a quality, none
// for one without.
func TestWorkMaxBytes(t *testing.T) {
	jpeg := Header{Format: imagefmt.JPEG, Width: 4032, Height: 3024, Bands: 3, BytesPerSample: 1, Frames: 1}
	j := Job{Width: 256, Height: 256, Fit: thumbjob.FitCover, Output: imagefmt.WebP, MaxBytes: 10000}
	if w := Work(jpeg, j); w != 2 {
		t.Errorf("WebP fit to 10 kB: work %.2f, want 2", w)
	}
	j.Output = imagefmt.PNG
	if w := Work(jpeg, j); w != 1 {
		t.Errorf("PNG: work %.2f, want 1", w)
	}
}
