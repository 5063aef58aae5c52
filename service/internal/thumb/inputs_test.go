package thumb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
	"github.com/thumbd/thumbd/internal/heiftest"
	"github.com/thumbd/thumbd/internal/imagediff"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// inputCase is one source of a new input format, made at test time with
// Debian's own encoders from the golden tests' large.jpg (scaled to
// 634x422), and what it must decode to.
type inputCase struct {
	name   string
	format imagefmt.Format
	// make writes the source into dir from base.png (RGB, 634x422) and
	// alpha.png (RGBA, the same with a transparent left half) and returns
	// its path.
	make func(t *testing.T, dir string) string
	// alpha: the thumbnail keeps transparency.
	alpha bool
	// reference, when set, is the file (in the fixture directory) whose
	// thumbnail the source's must match, instead of the source's own
	// decode by Debian's vips.
	reference string
	// since is the libvips version the case needs ("8.15.0": JPEG XL
	// animation; Debian's 8.14 decodes every frame and keeps the last).
	since string
}

// run is a command of a test's fixture recipe; its output is shown on
// failure.
func run(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// needTools skips when a fixture tool is missing: scripts/deps.sh dev
// installs them all (libvips-tools, libheif-examples, libjxl-tools,
// libtiff-tools), so CI never skips.
func needTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing (scripts/deps.sh dev installs it)", tool)
			}
			t.Skipf("%s is missing (scripts/deps.sh dev installs it)", tool)
		}
	}
}

func tiffSave(args ...string) func(t *testing.T, dir string) string {
	return func(t *testing.T, dir string) string {
		run(t, dir, "vips", append([]string{"tiffsave", "base.png", "out.tif"}, args...)...)
		return filepath.Join(dir, "out.tif")
	}
}

// convertTo makes the source with ImageMagick (BMP and ICO: libvips
// writes neither); the last argument names the output, out.EXT.
func convertTo(args ...string) func(t *testing.T, dir string) string {
	return func(t *testing.T, dir string) string {
		needTools(t, "convert")
		run(t, dir, "convert", args...)
		out := args[len(args)-1]
		_, out, _ = strings.Cut(out, ":")
		if out == "" {
			out = args[len(args)-1]
		}
		return filepath.Join(dir, out)
	}
}

func inputCases() []inputCase {
	return []inputCase{
		{name: "tiff-lzw", format: imagefmt.TIFF, make: tiffSave("--compression", "lzw")},
		{name: "tiff-deflate-tiled", format: imagefmt.TIFF, make: tiffSave("--compression", "deflate", "--tile", "--tile-width", "128", "--tile-height", "128")},
		{name: "tiff-packbits", format: imagefmt.TIFF, make: tiffSave("--compression", "packbits")},
		{name: "tiff-jpeg", format: imagefmt.TIFF, make: tiffSave("--compression", "jpeg", "--Q", "95")},
		{name: "tiff-16bit", format: imagefmt.TIFF, make: func(t *testing.T, dir string) string {
			run(t, dir, "vips", "cast", "base.png", "w.v", "ushort")
			run(t, dir, "vips", "linear", "w.v", "w2.v", "257", "0", "--uchar=false")
			run(t, dir, "vips", "cast", "w2.v", "w3.v", "ushort")
			run(t, dir, "vips", "copy", "w3.v", "out.tif[compression=deflate]", "--interpretation", "rgb16")
			return filepath.Join(dir, "out.tif")
		}},
		{name: "tiff-cmyk", format: imagefmt.TIFF, make: func(t *testing.T, dir string) string {
			run(t, dir, "vips", "icc_export", "base.png", "out.tif", "--output-profile", "cmyk")
			return filepath.Join(dir, "out.tif")
		}},
		{name: "tiff-multipage", format: imagefmt.TIFF, make: func(t *testing.T, dir string) string {
			// The first page is base.png; the second, its negative, must not show.
			run(t, dir, "vips", "tiffsave", "base.png", "p1.tif")
			run(t, dir, "vips", "invert", "base.png", "neg.png")
			run(t, dir, "vips", "tiffsave", "neg.png", "p2.tif")
			run(t, dir, "tiffcp", "p1.tif", "p2.tif", "out.tif")
			return filepath.Join(dir, "out.tif")
		}},
		{name: "tiff-alpha", format: imagefmt.TIFF, alpha: true, make: func(t *testing.T, dir string) string {
			run(t, dir, "vips", "tiffsave", "alpha.png", "out.tif", "--compression", "lzw")
			return filepath.Join(dir, "out.tif")
		}},
		{name: "heic", format: imagefmt.HEIC, make: func(t *testing.T, dir string) string {
			run(t, dir, "heif-enc", "-q", "70", "base.png", "-o", "out.heic")
			return filepath.Join(dir, "out.heic")
		}},
		{name: "avif-8bit", format: imagefmt.AVIF, make: func(t *testing.T, dir string) string {
			run(t, dir, "heif-enc", "-A", "-q", "70", "-p", "speed=8", "base.png", "-o", "out.avif")
			return filepath.Join(dir, "out.avif")
		}},
		{name: "bmp-24bit", format: imagefmt.BMP, make: convertTo("base.png", "BMP3:out.bmp")},
		{name: "bmp-8bit-palette", format: imagefmt.BMP, make: convertTo("base.png", "-type", "palette", "-colors", "256", "BMP3:out.bmp")},
		{name: "bmp-rle8", format: imagefmt.BMP, make: convertTo("base.png", "-type", "palette", "-colors", "200", "-compress", "RLE", "BMP3:out.bmp")},
		{name: "bmp-32bit-alpha", format: imagefmt.BMP, alpha: true, make: convertTo("alpha.png", "BMP:out.bmp")},
		{name: "ico-bmp-entry", format: imagefmt.ICO, alpha: true, make: convertTo("alpha.png", "-resize", "128x85!", "out.ico")},
		// ImageMagick writes a PNG entry for 256x256 alone.
		{name: "ico-png-entry", format: imagefmt.ICO, alpha: true, make: convertTo("alpha.png", "-resize", "256x256!", "-define", "icon:format=png", "out.ico")},
		{name: "jxl-lossy", format: imagefmt.JXL, make: func(t *testing.T, dir string) string {
			run(t, dir, "cjxl", "base.png", "out.jxl", "-d", "1", "--quiet")
			return filepath.Join(dir, "out.jxl")
		}},
		{name: "jxl-lossless", format: imagefmt.JXL, make: func(t *testing.T, dir string) string {
			run(t, dir, "cjxl", "base.png", "out.jxl", "-d", "0", "--quiet")
			return filepath.Join(dir, "out.jxl")
		}},
		{name: "jxl-animated-first-frame", format: imagefmt.JXL, reference: "base.png", since: "8.15.0", make: func(t *testing.T, dir string) string {
			// Two frames of 100 ms, the second base.png's negative: the
			// first must show.
			needTools(t, "convert")
			run(t, dir, "convert", "-delay", "10", "base.png", "(", "base.png", "-negate", ")", "-loop", "0", "anim.gif")
			run(t, dir, "cjxl", "anim.gif", "out.jxl", "-d", "1", "--quiet")
			return filepath.Join(dir, "out.jxl")
		}},
		{name: "jxl-alpha", format: imagefmt.JXL, alpha: true, make: func(t *testing.T, dir string) string {
			run(t, dir, "cjxl", "alpha.png", "out.jxl", "-d", "1", "--quiet")
			return filepath.Join(dir, "out.jxl")
		}},
	}
}

// fixtureDir holds base.png and alpha.png, made once per test.
func fixtureDir(t *testing.T) string {
	t.Helper()
	needTools(t, "vips")
	dir := t.TempDir()
	large, err := filepath.Abs(filepath.Join("testdata", "sources", "large.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, "vips", "resize", large, "base.png", "0.33")
	// alpha.png: base.png with its left half transparent, its right opaque.
	run(t, dir, "vips", "black", "half.v", "317", "422")
	run(t, dir, "vips", "embed", "half.v", "mask.v", "0", "0", "634", "422", "--extend", "white")
	run(t, dir, "vips", "cast", "mask.v", "mask8.v", "uchar")
	run(t, dir, "vips", "bandjoin", "base.png mask8.v", "alpha.png")
	return dir
}

// TestNewInputFormats makes a thumbnail of each new input format and
// checks its pixels against Debian's own vips command (libvips-tools,
// its own decoders) making the same thumbnail from the same file: within
// 3 levels per channel on average, alpha included. The formats' own
// decoders (libde265, dav1d, libtiff, libjxl) are exact or near it; the
// tolerance is for two libvips versions' resize arithmetic.
func TestNewInputFormats(t *testing.T) {
	dir := fixtureDir(t)
	for _, tc := range inputCases() {
		t.Run(tc.name, func(t *testing.T) {
			switch tc.format {
			case imagefmt.HEIC, imagefmt.AVIF:
				needTools(t, "heif-enc")
			case imagefmt.JXL:
				needTools(t, "cjxl")
			case imagefmt.TIFF:
				needTools(t, "tiffcp")
			}
			have, _ := versionNumber(Version())
			if need, _ := versionNumber(tc.since); have < need {
				t.Skipf("libvips %s: the case needs %s (the images ship 8.16.1; scripts/test.sh runs it there)", Version(), tc.since)
			}
			sub := t.TempDir()
			for _, f := range []string{"base.png", "alpha.png"} {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(sub, f), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			path := tc.make(t, sub)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := looked(src).Format; got != tc.format {
				t.Fatalf("sniffed as %q, want %q", got, tc.format)
			}
			img, err := testEngine.Thumbnail(context.Background(), src, thumbjob.Options{Width: 160, Height: 120, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG})
			if err != nil {
				t.Fatal(err)
			}
			got := decodePNG(t, img.Bytes)
			refSrc := path
			if tc.reference != "" {
				refSrc = filepath.Join(sub, tc.reference)
			}
			run(t, sub, "vips", "thumbnail", refSrc, "ref.png", "160", "--height", "120", "--crop", "centre", "--export-profile", "srgb")
			ref, err := os.ReadFile(filepath.Join(sub, "ref.png"))
			if err != nil {
				t.Fatal(err)
			}
			want := decodePNG(t, ref)
			if got.Bounds().Size() != image.Pt(160, 120) || want.Bounds().Size() != got.Bounds().Size() {
				t.Fatalf("size %v, reference %v, want 160x120", got.Bounds().Size(), want.Bounds().Size())
			}
			if _, _, _, a := got.At(5, 60).RGBA(); tc.alpha != (a < 0x8000) {
				t.Errorf("alpha at the left edge %#x: want transparent %v", a, tc.alpha)
			}
			if d := imagediff.MeanAbs(got, want); d > 3 {
				writePNG(t, filepath.Join("testdata", "failed", "input-"+tc.name+".png"), got)
				t.Fatalf("mean difference %.2f per channel from Debian's vips thumbnail (tolerance 3); output in testdata/failed", d)
			}
		})
	}
}

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestMultiPageTIFFIsFirstPageOnly: a TIFF of more pages than the frame
// limit is one image to thumbd (its first page), not an animation refused.
func TestMultiPageTIFFIsFirstPageOnly(t *testing.T) {
	needTools(t, "vips", "tiffcp")
	dir := fixtureDir(t)
	run(t, dir, "vips", "tiffsave", "base.png", "p.tif")
	run(t, dir, "tiffcp", "p.tif", "p.tif", "p.tif", "three.tif")
	src, err := os.ReadFile(filepath.Join(dir, "three.tif"))
	if err != nil {
		t.Fatal(err)
	}
	e := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 2, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1})
	img, err := e.Thumbnail(context.Background(), src, thumbjob.Options{Width: 64, Height: 64, Fit: thumbjob.FitCover, Format: imagefmt.WebP, Quality: 80, Animated: true})
	if err != nil {
		t.Fatalf("3 pages, frame limit 2, animated asked: %v", err)
	}
	if img.Frames != 1 {
		t.Errorf("%d frames, want the first page only", img.Frames)
	}
}

// TestInputsSetting: a format left out of Inputs is a 415 naming it and
// the setting; the others still decode. (libvips' loader blocks are
// process-wide, so that the loader stays blocked is checked on a whole
// thumbd: TestInputsSettingBlocksLoaders in package main.)
func TestInputsSetting(t *testing.T) {
	needTools(t, "vips")
	dir := fixtureDir(t)
	run(t, dir, "vips", "tiffsave", "base.png", "x.tif")
	tiff, err := os.ReadFile(filepath.Join(dir, "x.tif"))
	if err != nil {
		t.Fatal(err)
	}
	e := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 2, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1,
		Inputs: []imagefmt.Format{imagefmt.JPEG, imagefmt.PNG}})
	if got := e.Inputs(); len(got) != 2 || got[0] != imagefmt.PNG || got[1] != imagefmt.JPEG {
		t.Fatalf("Inputs() = %v, want [png jpeg]", got)
	}
	_, err = e.Thumbnail(context.Background(), tiff, thumbjob.Options{Width: 64, Height: 64, Fit: thumbjob.FitCover, Format: imagefmt.PNG})
	if !errors.Is(err, thumbjob.ErrUnsupportedFormat) || !strings.Contains(err.Error(), "TIFF") || !strings.Contains(err.Error(), "THUMBD_INPUTS") {
		t.Fatalf("TIFF left out: %v, want unsupported_format naming TIFF and THUMBD_INPUTS", err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "base.png"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Thumbnail(context.Background(), png, thumbjob.Options{Width: 64, Height: 64, Fit: thumbjob.FitCover, Format: imagefmt.PNG}); err != nil {
		t.Fatalf("PNG kept: %v", err)
	}
}

// TestEveryInputFormatIsReadable: the test engine (every input format
// wanted) reads each row of the format table: a build that lost a codec
// fails here rather than answer 415 in production.
func TestEveryInputFormatIsReadable(t *testing.T) {
	got := testEngine.Inputs()
	for _, f := range imagefmt.Inputs() {
		if !testEngine.accepted()[f] {
			t.Errorf("%s: no loader in this libvips (%s); the engine reads %v", f, strconv.Quote(strings.Join(loaderClasses[f], ",")), got)
		}
	}
}

// phoneLike writes into dir what a phone's camera does and Debian's
// heif-enc cannot: base.png (634x422) cut to 512x512-style tiles (a 2x2
// grid of 317x211), HEVC each, in a grid item turned by irot (a quarter
// turn clockwise), with EXIF orientation 6 (which the HEIF standard says
// to ignore: irot is the one transform) and a Display P3 profile. With
// alpha, an AVIF: 10-bit, its alpha an auxiliary image, turned the same.
func phoneLike(t *testing.T, dir string, avif bool) string {
	t.Helper()
	needTools(t, "heif-enc")
	f, err := os.Open(filepath.Join(dir, "base.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if avif {
		// Debian's heif-enc writes 10-bit alpha only this way (heiftest.Encode).
		a, err := os.ReadFile(filepath.Join(dir, "alpha.png"))
		if err != nil {
			t.Fatal(err)
		}
		rgba := decodePNG(t, a)
		wide := image.NewNRGBA64(rgba.Bounds())
		draw.Draw(wide, wide.Bounds(), rgba, image.Point{}, draw.Src)
		args := []string{"-A", "-b", "10", "-p", "chroma=422", "-q", "90", "-p", "speed=8"}
		alpha, err := heiftest.EncodeAlpha(wide, args...)
		if err != nil {
			t.Fatal(err)
		}
		main, err := heiftest.Encode(wide, append(args, "--no-alpha")...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := heiftest.Transform(main, heiftest.Options{Alpha: alpha, Rotate: 3})
		if err != nil {
			t.Fatal(err)
		}
		return writeFile(t, dir, "out.avif", out)
	}
	// Even tiles (316x210), as encoders write them: the grid is 632x420.
	tw, th := 316, 210
	var tiles [][]byte
	for _, r := range []image.Rectangle{image.Rect(0, 0, tw, th), image.Rect(tw, 0, 2*tw, th), image.Rect(0, th, tw, 2*th), image.Rect(tw, th, 2*tw, 2*th)} {
		tile := image.NewNRGBA(image.Rect(0, 0, tw, th))
		draw.Draw(tile, tile.Bounds(), src, r.Min, draw.Src)
		enc, err := heiftest.Encode(tile, "-q", "85")
		if err != nil {
			t.Fatal(err)
		}
		tiles = append(tiles, enc)
	}
	out, err := heiftest.Grid(tiles, 2, 2, 2*tw, 2*th, heiftest.Options{Rotate: 3, Orientation: 6, ICC: heiftest.DisplayP3()})
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, "out.heic", out)
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPhoneLikeHEIF: a grid HEIC with irot, EXIF orientation and a P3
// profile, and a 10-bit AVIF with alpha and irot, come out portrait (irot
// applied once, EXIF's 6 not applied on top: that would make them
// landscape again), in sRGB through the profile, alpha kept, and match
// Debian's vips making the same thumbnail.
func TestPhoneLikeHEIF(t *testing.T) {
	dir := fixtureDir(t)
	for _, avif := range []bool{false, true} {
		name := map[bool]string{false: "heic-grid-irot-exif6-p3", true: "avif-10bit-alpha-irot"}[avif]
		t.Run(name, func(t *testing.T) {
			path := phoneLike(t, dir, avif)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			img, err := testEngine.Thumbnail(context.Background(), src, thumbjob.Options{Width: 120, Height: 120, Fit: thumbjob.FitInside, Format: imagefmt.PNG})
			if err != nil {
				t.Fatal(err)
			}
			got := decodePNG(t, img.Bytes)
			// base.png is 634x422 (the grid 632x420): turned, portrait.
			if got.Bounds().Dx() != 80 || got.Bounds().Dy() != 120 {
				t.Fatalf("%v, want 80x120: irot applied once, EXIF orientation not on top", got.Bounds().Size())
			}
			ref := filepath.Join(t.TempDir(), "ref.png")
			run(t, dir, "vips", "thumbnail", path, ref, "120", "--height", "120", "--export-profile", "srgb")
			b, err := os.ReadFile(ref)
			if err != nil {
				t.Fatal(err)
			}
			if d := imagediff.MeanAbs(got, decodePNG(t, b)); d > 3 {
				writePNG(t, filepath.Join("testdata", "failed", "input-"+name+".png"), got)
				t.Fatalf("mean difference %.2f per channel from Debian's vips thumbnail (tolerance 3)", d)
			}
			// base.png's left half is transparent in alpha.png; turned
			// clockwise, that is the top half.
			if _, _, _, a := got.At(40, 5).RGBA(); avif != (a < 0x8000) {
				t.Errorf("alpha at the top %#x: want transparent %v", a, avif)
			}
		})
	}
}

// blockedLoaderChild is TestInputsSettingBlocksLoaders' child process
// (libvips' blocks are process-wide): an engine that accepts JPEG only,
// then libvips asked directly, past thumbd's own format check, to load the
// TIFF at path. It prints the error and exits 0 only if libvips refused.
func blockedLoaderChild(path string) int {
	New(thumbjob.Config{MaxPixels: 1 << 24, MaxFrames: 1, MaxSide: 4096, Threads: 1, Inputs: []imagefmt.Format{imagefmt.JPEG}}).Start()
	b, err := os.ReadFile(path)
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 2
	}
	img, err := vips.NewImageFromBuffer(b)
	if err == nil {
		img.Close()
		os.Stderr.WriteString("libvips loaded the TIFF")
		return 1
	}
	os.Stderr.WriteString(vipsMessage(err))
	return 0
}

// TestInputsSettingBlocksLoaders: a format left out of THUMBD_INPUTS has
// its libvips loader blocked, so its parser never runs even if a bug let
// its bytes past the format check.
func TestInputsSettingBlocksLoaders(t *testing.T) {
	needTools(t, "vips")
	dir := fixtureDir(t)
	run(t, dir, "vips", "tiffsave", "base.png", "x.tif")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^$")
	cmd.Env = append(os.Environ(), "THUMBD_TEST_BLOCKED_LOADER="+filepath.Join(dir, "x.tif"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "blocked") {
		t.Fatalf("child: %v: %s (want libvips' \"operation is blocked\")", err, out)
	}
}

// TestInputsDecideByWhatReachesTheDecoder: THUMBD_INPUTS holds for the
// decoder a file's pixels reach, not for its container's name: an HEVC
// image in a file branded avif is a HEIC, an AV1 image branded heic an
// AVIF, and a TIFF whose strips are JPEG needs JPEG accepted.
func TestInputsDecideByWhatReachesTheDecoder(t *testing.T) {
	needTools(t, "vips", "heif-enc")
	dir := fixtureDir(t)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	run(t, dir, "vips", "tiffsave", "base.png", "jpeg.tif", "--compression", "jpeg")
	run(t, dir, "vips", "tiffsave", "base.png", "deflate.tif", "--compression", "deflate")
	run(t, dir, "heif-enc", "-q", "50", "-o", "x.heic", "base.png")
	run(t, dir, "heif-enc", "-A", "-p", "speed=9", "-q", "50", "-o", "x.avif", "base.png")
	// rebrand swaps the brand names in the file's ftyp box.
	rebrand := func(b []byte, from, to string) []byte {
		b = bytes.Clone(b)
		n := int(binary.BigEndian.Uint32(b))
		copy(b[:n], bytes.ReplaceAll(b[:n], []byte(from), []byte(to)))
		return b
	}
	hevcAsAVIF, av1AsHEIC := rebrand(read("x.heic"), "heic", "avif"), rebrand(read("x.avif"), "avif", "heic")
	o := thumbjob.Options{Width: 64, Height: 64, Fit: thumbjob.FitCover, Format: imagefmt.PNG}
	for _, c := range []struct {
		name   string
		inputs []imagefmt.Format
		src    []byte
		refuse string // "" when it is served
	}{
		{"a JPEG-coded TIFF, JPEG left out", []imagefmt.Format{imagefmt.TIFF, imagefmt.PNG}, read("jpeg.tif"), "JPEG"},
		{"a deflate TIFF, JPEG left out", []imagefmt.Format{imagefmt.TIFF, imagefmt.PNG}, read("deflate.tif"), ""},
		{"a JPEG-coded TIFF, both in", []imagefmt.Format{imagefmt.TIFF, imagefmt.JPEG}, read("jpeg.tif"), ""},
		{"HEVC branded avif, HEIC left out", []imagefmt.Format{imagefmt.AVIF}, hevcAsAVIF, "HEIC"},
		{"HEVC branded avif, HEIC in", []imagefmt.Format{imagefmt.HEIC}, hevcAsAVIF, ""},
		{"AV1 branded heic, AVIF left out", []imagefmt.Format{imagefmt.HEIC}, av1AsHEIC, "AVIF"},
		{"AV1 branded heic, AVIF in", []imagefmt.Format{imagefmt.AVIF}, av1AsHEIC, ""},
	} {
		e := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 2, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1, Inputs: c.inputs})
		_, err := e.Thumbnail(context.Background(), c.src, o)
		switch {
		case c.refuse == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.refuse != "" && (!errors.Is(err, thumbjob.ErrUnsupportedFormat) || !strings.Contains(err.Error(), c.refuse)):
			t.Errorf("%s: %v, want unsupported_format naming %s", c.name, err, c.refuse)
		}
	}
}
