package thumb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"image"
	"image/color"
	"image/gif"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/internal/hostile"
	"github.com/thumbd/thumbd/internal/imagediff"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// The fuzz seeds and the odd-source corpus: small images in every variant
// of the four source formats that real uploads carry, made here (Go's
// encoders and libvips' savers) and kept in testdata/fuzz-seeds, plus
// bombs and headers of formats thumbd does not serve. The file name says
// what the engine must answer:
//
//	ok-*          a thumbnail
//	pixels-*      thumbjob.ErrTooManyPixels
//	frames-*      thumbjob.ErrTooManyFrames
//	unsupported-* thumbjob.ErrUnsupportedFormat
//	malformed-*   thumbjob.ErrUndecodable (a broken file of an input format)
//
//	go test -run TestOddSources -write-seeds ./service/internal/thumb  # rewrite them
var writeSeeds = flag.Bool("write-seeds", false, "rewrite testdata/fuzz-seeds")

const seedDir = "testdata/fuzz-seeds"

// makeSeeds builds the corpus. Sources are 48x32 so that the files stay
// small and the fuzzer runs fast.
func makeSeeds(t testing.TB) map[string][]byte {
	const w, h = 48, 32
	pat := hostile.Pattern(w, h)
	baseJPEG := hostile.JPEG(pat, 85)
	basePNG := hostile.PNG(pat)
	s := map[string][]byte{}

	// JPEG
	s["ok-jpeg-baseline.jpg"] = baseJPEG
	grey := image.NewGray(pat.Bounds())
	for i := range grey.Pix {
		grey.Pix[i] = uint8(i * 5)
	}
	s["ok-jpeg-grey.jpg"] = hostile.JPEG(grey, 80)
	s["ok-jpeg-progressive.jpg"] = save(t, basePNG, nil, func(i *vips.ImageRef) ([]byte, *vips.ImageMetadata, error) {
		return i.ExportJpeg(&vips.JpegExportParams{Quality: 80, Interlace: true, StripMetadata: true})
	})
	s["ok-jpeg-444.jpg"] = save(t, basePNG, nil, func(i *vips.ImageRef) ([]byte, *vips.ImageMetadata, error) {
		return i.ExportJpeg(&vips.JpegExportParams{Quality: 80, SubsampleMode: vips.VipsForeignSubsampleOff, StripMetadata: true})
	})
	cmyk := func(strip bool) []byte {
		return save(t, basePNG, func(i *vips.ImageRef) error { return i.ToColorSpace(vips.InterpretationCMYK) },
			func(i *vips.ImageRef) ([]byte, *vips.ImageMetadata, error) {
				return i.ExportJpeg(&vips.JpegExportParams{Quality: 90, StripMetadata: strip})
			})
	}
	s["ok-jpeg-cmyk-noprofile.jpg"] = cmyk(true)
	s["ok-jpeg-cmyk-profile.jpg"] = cmyk(false)
	for o := 1; o <= 8; o++ {
		s["ok-jpeg-exif-"+string(rune('0'+o))+".jpg"] = save(t, basePNG, func(i *vips.ImageRef) error { return i.SetOrientation(o) },
			func(i *vips.ImageRef) ([]byte, *vips.ImageMetadata, error) {
				return i.ExportJpeg(&vips.JpegExportParams{Quality: 80})
			})
	}
	s["ok-jpeg-empty-comment.jpg"] = hostile.JPEGEmptyComment(baseJPEG)
	s["ok-jpeg-1x1.jpg"] = hostile.JPEG(hostile.Pattern(1, 1), 80)
	s["ok-jpeg-thin.jpg"] = hostile.JPEG(hostile.Pattern(400, 1), 80)

	// PNG
	s["ok-png-rgb.png"] = basePNG
	alpha := image.NewNRGBA(pat.Bounds())
	copy(alpha.Pix, pat.Pix)
	for i := 3; i < len(alpha.Pix); i += 4 {
		alpha.Pix[i] = uint8(i * 3)
	}
	s["ok-png-rgba.png"] = hostile.PNG(alpha)
	pal16 := make(color.Palette, 16)
	for i := range pal16 {
		pal16[i] = color.RGBA{uint8(i * 16), uint8(255 - i*16), 128, 255}
	}
	pal16[15] = color.RGBA{} // transparent entry: a tRNS chunk
	p4 := image.NewPaletted(pat.Bounds(), pal16)
	for i := range p4.Pix {
		p4.Pix[i] = uint8(i % 16)
	}
	s["ok-png-palette-trns.png"] = hostile.PNG(p4)
	p1 := image.NewPaletted(pat.Bounds(), color.Palette{color.Black, color.White})
	for i := range p1.Pix {
		p1.Pix[i] = uint8((i / 3) % 2)
	}
	s["ok-png-1bit.png"] = hostile.PNG(p1)
	s["ok-png-grey.png"] = hostile.PNG(grey)
	g16 := image.NewGray16(pat.Bounds())
	for i := 0; i < len(g16.Pix); i += 2 {
		g16.Pix[i], g16.Pix[i+1] = uint8(i), uint8(i*7)
	}
	s["ok-png-grey16.png"] = hostile.PNG(g16)
	rgba16 := image.NewNRGBA64(pat.Bounds())
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			rgba16.SetNRGBA64(x, y, color.NRGBA64{uint16(x * 1365), uint16(y * 2047), 40000, uint16(30000 + x*700)})
		}
	}
	s["ok-png-rgba16.png"] = hostile.PNG(rgba16)
	s["ok-png-grey-alpha.png"] = save(t, hostile.PNG(alpha), func(i *vips.ImageRef) error { return i.ToColorSpace(vips.InterpretationBW) },
		func(i *vips.ImageRef) ([]byte, *vips.ImageMetadata, error) {
			return i.ExportPng(&vips.PngExportParams{Compression: 6})
		})
	s["ok-png-interlaced.png"] = save(t, basePNG, nil, func(i *vips.ImageRef) ([]byte, *vips.ImageMetadata, error) {
		return i.ExportPng(&vips.PngExportParams{Compression: 6, Interlace: true})
	})
	s["ok-png-zero-chunks.png"] = hostile.PNGZeroChunks(basePNG)

	// WebP
	webp := func(src []byte, p vips.WebpExportParams, pages bool) []byte {
		img := loadForSeed(t, src, pages)
		defer img.Close()
		out, _, err := img.ExportWebp(&p)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	s["ok-webp-lossy.webp"] = webp(basePNG, vips.WebpExportParams{Quality: 75, ReductionEffort: 4}, false)
	s["ok-webp-lossless.webp"] = webp(basePNG, vips.WebpExportParams{Lossless: true, ReductionEffort: 4}, false)
	s["ok-webp-alpha.webp"] = webp(hostile.PNG(alpha), vips.WebpExportParams{Quality: 75, ReductionEffort: 4}, false)
	s["ok-webp-exif-6.webp"] = webp(s["ok-jpeg-exif-6.jpg"], vips.WebpExportParams{Quality: 75, ReductionEffort: 4}, false)
	s["ok-webp-animated.webp"] = webp(hostile.AnimatedGIF(w, h, 3), vips.WebpExportParams{Quality: 75, ReductionEffort: 4}, true)

	// GIF
	var buf bytes.Buffer
	if err := gif.Encode(&buf, pat, nil); err != nil {
		t.Fatal(err)
	}
	s["ok-gif-static.gif"] = buf.Bytes()
	s["ok-gif-animated-local-palettes.gif"] = hostile.AnimatedGIF(w, h, 4)
	s["ok-gif-libvips.gif"] = save(t, basePNG, nil, func(i *vips.ImageRef) ([]byte, *vips.ImageMetadata, error) {
		return i.ExportGIF(&vips.GifExportParams{Effort: 1, Bitdepth: 4})
	})
	s["ok-gif-frame-larger-than-screen.gif"] = hostile.GIFFrameBomb(4, 4)
	s["ok-gif-interlaced.gif"] = gifInterlaced(t, buf.Bytes())

	// A zero-size unknown chunk appended to a WebP (its RIFF size fixed).
	zw := append(bytes.Clone(s["ok-webp-lossy.webp"]), 'Z', 'E', 'R', 'O', 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(zw[4:], uint32(len(zw)-8))
	s["ok-webp-zero-chunk.webp"] = zw

	// Bombs and limits (the test engine allows 40 MP and 256 frames).
	s["pixels-png-100000x100000.png"] = hostile.PNGBomb(100000, 100000)
	s["pixels-jpeg-65000x65000.jpg"] = hostile.JPEGBomb(65000, 65000)
	s["pixels-gif-screen-65535x65535.gif"] = hostile.GIFBomb(65535, 65535)
	s["pixels-webp-16383x16383.webp"] = hostile.WebPBomb(16383, 16383)
	s["pixels-webp-canvas-16383x16383.webp"] = hostile.WebPCanvasBomb(16383, 16383)
	s["pixels-gif-frame-65535x65535.gif"] = hostile.GIFFrameBomb(65535, 65535)
	s["pixels-jpeg-progressive-65000x65000.jpg"] = hostile.JPEGWithSize(s["ok-jpeg-progressive.jpg"], 65000, 65000)
	s["frames-gif-300.gif"] = hostile.AnimatedGIF(1, 1, 300)
	for name, b := range hostile.Unsupported() {
		s["unsupported-"+name] = b
	}
	for name, b := range hostile.Malformed() {
		s["malformed-"+name] = b
	}
	return s
}

// gifInterlaced sets the interlace flag of a one-frame GIF's image
// descriptor: decoders then read its rows in the four interlaced passes.
func gifInterlaced(t testing.TB, src []byte) []byte {
	out := bytes.Clone(src)
	i := 13
	if out[10]&0x80 != 0 { // global colour table
		i += 3 << (out[10]&7 + 1)
	}
	for out[i] == '!' { // extensions before the image descriptor
		i += 2
		for out[i] != 0 {
			i += int(out[i]) + 1
		}
		i++
	}
	if out[i] != ',' {
		t.Fatalf("no image descriptor at %d", i)
	}
	out[i+9] |= 0x40
	return out
}

func save(t testing.TB, src []byte, edit func(*vips.ImageRef) error, export func(*vips.ImageRef) ([]byte, *vips.ImageMetadata, error)) []byte {
	t.Helper()
	img := loadForSeed(t, src, false)
	defer img.Close()
	if edit != nil {
		if err := edit(img); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := export(img)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func loadForSeed(t testing.TB, src []byte, pages bool) *vips.ImageRef {
	t.Helper()
	p := vips.NewImportParams()
	if pages {
		p.NumPages.Set(-1)
	}
	img, err := vips.LoadImageFromBuffer(src, p)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// readSeeds returns the stored corpus, sorted by name.
func readSeeds(t testing.TB) ([]string, map[string][]byte) {
	t.Helper()
	entries, err := os.ReadDir(seedDir)
	if err != nil {
		t.Fatalf("%v (go test -run TestOddSources -write-seeds makes them)", err)
	}
	seeds := map[string][]byte{}
	var names []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(seedDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		seeds[e.Name()] = b
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, seeds
}

// TestOddSources runs every stored seed through the engine with a few
// option sets and checks the documented answer; damaged copies of each
// valid one (truncated, bit-flipped) must give a thumbnail or
// thumbjob.ErrUndecodable, never anything else.
func TestOddSources(t *testing.T) {
	if *writeSeeds {
		os.RemoveAll(seedDir)
		os.MkdirAll(seedDir, 0o755)
		for name, b := range makeSeeds(t) {
			if err := os.WriteFile(filepath.Join(seedDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	names, seeds := readSeeds(t)
	if len(names) < 40 {
		t.Fatalf("only %d seeds", len(names))
	}
	optionSets := []thumbjob.Options{
		{Width: 40, Height: 40, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityAttention, Format: imagefmt.PNG},
		{Width: 30, Height: 50, Fit: thumbjob.FitContain, Format: imagefmt.JPEG, Quality: 50},
		{Width: 24, Fit: thumbjob.FitInside, Format: imagefmt.WebP, Quality: 60},
		{Width: 64, Height: 16, Fit: thumbjob.FitFill, Format: imagefmt.PNG},
	}
	for _, name := range names {
		src := seeds[name]
		t.Run(name, func(t *testing.T) {
			for _, o := range optionSets {
				img, err := testEngine.Thumbnail(context.Background(), src, o)
				switch kind, _, _ := strings.Cut(name, "-"); kind {
				case "ok":
					if err != nil {
						t.Fatalf("%+v: %v", o, err)
					}
					checkThumbnail(t, img, o)
				case "pixels":
					wantErr(t, err, thumbjob.ErrTooManyPixels)
				case "frames":
					wantErr(t, err, thumbjob.ErrTooManyFrames)
				case "unsupported":
					wantErr(t, err, thumbjob.ErrUnsupportedFormat)
				case "malformed":
					wantErr(t, err, thumbjob.ErrUndecodable)
				default:
					t.Fatalf("seed %s: name says nothing", name)
				}
			}
			if !strings.HasPrefix(name, "ok-") {
				return
			}
			var damaged [][]byte
			for _, b := range hostile.Truncations(src) {
				damaged = append(damaged, b)
			}
			damaged = append(damaged, hostile.BitFlips(src, uint64(len(src)), 6, 4)...)
			for i, b := range damaged {
				img, err := testEngine.Thumbnail(context.Background(), b, optionSets[i%len(optionSets)])
				if err != nil {
					if len(b) < 12 && errors.Is(err, thumbjob.ErrUnsupportedFormat) {
						continue // cut inside the magic bytes
					}
					if !errors.Is(err, thumbjob.ErrUndecodable) && !errors.Is(err, thumbjob.ErrTooManyPixels) && !errors.Is(err, thumbjob.ErrTooManyFrames) {
						t.Errorf("damaged copy %d: %v", i, err)
					}
					continue
				}
				checkThumbnail(t, img, optionSets[i%len(optionSets)])
			}
		})
	}
}

// TestOrientationsSwapSides checks EXIF orientations 1-8 on a 48x32 source:
// 5-8 are displayed 32x48, so w=16 alone gives 16x24 (and 16x11 for 1-4).
func TestOrientationsSwapSides(t *testing.T) {
	_, seeds := readSeeds(t)
	for o := 1; o <= 8; o++ {
		src := seeds["ok-jpeg-exif-"+string(rune('0'+o))+".jpg"]
		img, err := testEngine.Thumbnail(context.Background(), src, thumbjob.Options{Width: 16, Fit: thumbjob.FitInside, Format: imagefmt.PNG})
		if err != nil {
			t.Fatalf("orientation %d: %v", o, err)
		}
		wantH := 11
		if o >= 5 {
			wantH = 24
		}
		if img.Width != 16 || img.Height != wantH {
			t.Errorf("orientation %d: %dx%d, want 16x%d", o, img.Width, img.Height, wantH)
		}
	}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
}

// checkThumbnail holds what every successful thumbnail must be: bytes of
// the asked format that libvips reads back at the reported size, the exact
// box for cover, contain and fill, within it for inside.
func checkThumbnail(t testing.TB, img thumbjob.Image, o thumbjob.Options) {
	t.Helper()
	if spec, _ := imagefmt.Lookup(o.Format); !spec.Magic(img.Bytes) || img.Format != o.Format {
		t.Fatalf("%+v: output is not %s", o, o.Format)
	}
	var h header
	if o.Format == imagefmt.AVIF {
		// No thumbd build reads AVIF: its size is read from the container.
		w, ht, ok := imagediff.AVIFSize(img.Bytes)
		if !ok {
			t.Fatalf("%+v: output has no size", o)
		}
		h = header{width: w, height: ht, pages: 1}
	} else {
		var err error
		if h, err = probe(img.Bytes); err != nil {
			t.Fatalf("%+v: output does not read back: %v", o, err)
		}
	}
	if h.width != img.Width || h.height != img.Height || h.pages != 1 {
		t.Fatalf("%+v: output %dx%d (%d pages), reported %dx%d", o, h.width, h.height, h.pages, img.Width, img.Height)
	}
	if o.Width == 0 || o.Height == 0 {
		if img.Width < 1 || img.Height < 1 || img.Width > max(o.Width, 4096) || img.Height > max(o.Height, 4096) {
			t.Fatalf("%+v: output %dx%d", o, img.Width, img.Height)
		}
		return
	}
	switch o.Fit {
	case thumbjob.FitInside:
		if img.Width > o.Width || img.Height > o.Height || (img.Width != o.Width && img.Height != o.Height) {
			t.Fatalf("%+v: inside gave %dx%d", o, img.Width, img.Height)
		}
	default:
		if img.Width != o.Width || img.Height != o.Height {
			t.Fatalf("%+v: %s gave %dx%d", o, o.Fit, img.Width, img.Height)
		}
	}
}
