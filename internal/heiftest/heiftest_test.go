package heiftest

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/image/draw"

	"github.com/thumbd/thumbd/internal/imagediff"
)

// The files this package writes are checked by Debian's decoders, each in
// the package the message names; without one, the test skips.
var debianPackage = map[string]string{
	"heif-enc":   "libheif-examples",
	"heif-info":  "libheif-examples",
	"vips":       "libvips-tools",
	"vipsheader": "libvips-tools",
	"exiftool":   "libimage-exiftool-perl",
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian's %s)", tool, debianPackage[tool])
		}
	}
}

// run runs a tool, returning its standard output (vips warns on stderr).
func run(t *testing.T, tool string, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(tool, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %q: %v: %s", tool, args, err, stderr.Bytes())
	}
	return string(out)
}

func write(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "image.heif")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// source is the service's large test photo at w x h.
func source(t *testing.T, w, h int) *image.NRGBA {
	t.Helper()
	f, err := os.Open("../../service/internal/thumb/testdata/sources/large.jpg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src, err := jpeg.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.CatmullRom.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
	return dst
}

func encode(t *testing.T, img image.Image, args ...string) []byte {
	t.Helper()
	b, err := Encode(img, args...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decode is vips's decode (libheif's), with its transforms applied.
func decode(t *testing.T, heif []byte) image.Image {
	t.Helper()
	b, err := imagediff.VipsToPNG(heif)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// header is vipsheader's line: "PATH: WxH FORMAT, N bands, ...".
func header(t *testing.T, path string) string {
	t.Helper()
	return strings.TrimPrefix(strings.TrimSpace(run(t, "vipsheader", path)), path+": ")
}

// transformed is img as seen through fn, which gives the source pixel of
// each (x, y) of a w x h result.
func transformed(img image.Image, w, h int, fn func(x, y int) (int, int)) *image.NRGBA64 {
	out := image.NewNRGBA64(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			sx, sy := fn(x, y)
			out.Set(x, y, img.At(sx, sy))
		}
	}
	return out
}

func tiles(t *testing.T, src image.Image, cols, rows int, args ...string) [][]byte {
	t.Helper()
	b := src.Bounds()
	tw, th := b.Dx()/cols, b.Dy()/rows
	var out [][]byte
	for r := range rows {
		for c := range cols {
			tile := image.NewNRGBA(image.Rect(0, 0, tw, th))
			draw.Copy(tile, image.Point{}, src, image.Rect(c*tw, r*th, (c+1)*tw, (r+1)*th), draw.Src, nil)
			out = append(out, encode(t, tile, args...))
		}
	}
	return out
}

func TestGridDecodesToTheSource(t *testing.T) {
	needTools(t, "heif-enc", "heif-info", "vips", "vipsheader")
	src := source(t, 1024, 768)
	parts := tiles(t, src, 2, 2, "-q", "80")
	heic, err := Grid(parts, 2, 2, 1024, 768, Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := write(t, heic)
	if info := run(t, "heif-info", path); !strings.Contains(info, "image: 1024x768") {
		t.Errorf("heif-info:\n%s", info)
	}
	if h := header(t, path); !strings.HasPrefix(h, "1024x768 uchar, 3 bands") {
		t.Errorf("vipsheader: %s", h)
	}
	if d := imagediff.MeanAbs(decode(t, heic), src); d > 3 {
		t.Errorf("the grid decodes %.2f levels from its source", d)
	}

	// The tolerance tells tiles out of place: the first and last swapped.
	parts[0], parts[3] = parts[3], parts[0]
	swapped, err := Grid(parts, 2, 2, 1024, 768, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := imagediff.MeanAbs(decode(t, swapped), src); d < 10 {
		t.Errorf("swapped tiles decode only %.2f levels from the source", d)
	}
}

func TestTransformTurnsAndFlips(t *testing.T) {
	needTools(t, "heif-enc", "vips", "vipsheader")
	const w, h = 128, 96
	src := source(t, w, h)
	heic := encode(t, src, "-q", "90")
	base := imagediff.MeanAbs(decode(t, heic), src) // the codec's own loss
	for _, c := range []struct {
		name   string
		opts   Options
		w, h   int
		source func(x, y int) (int, int)
	}{
		{"irot 1: a quarter turn anticlockwise", Options{Rotate: 1}, h, w, func(x, y int) (int, int) { return w - 1 - y, x }},
		{"irot 2", Options{Rotate: 2}, w, h, func(x, y int) (int, int) { return w - 1 - x, h - 1 - y }},
		{"irot 3", Options{Rotate: 3}, h, w, func(x, y int) (int, int) { return y, h - 1 - x }},
		{"imir left-right", Options{Mirror: MirrorLeftRight}, w, h, func(x, y int) (int, int) { return w - 1 - x, y }},
		{"imir top-bottom", Options{Mirror: MirrorTopBottom}, w, h, func(x, y int) (int, int) { return x, h - 1 - y }},
		{"irot 1 then imir left-right", Options{Rotate: 1, Mirror: MirrorLeftRight}, h, w, func(x, y int) (int, int) { return w - 1 - y, h - 1 - x }},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Transform(heic, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := header(t, write(t, out)), fmt.Sprintf("%dx%d ", c.w, c.h); !strings.HasPrefix(got, want) {
				t.Errorf("vipsheader: %s, want %s", got, want)
			}
			img := decode(t, out)
			if d := imagediff.MeanAbs(img, transformed(src, c.w, c.h, c.source)); d > base+0.5 {
				t.Errorf("%.2f levels from the source so transformed (the codec's loss: %.2f)", d, base)
			}
		})
	}
}

func TestExifOrientation(t *testing.T) {
	needTools(t, "heif-enc", "heif-info", "exiftool")
	// 48 rows: heif-enc makes a grid of one 64x64 tile (x265's least) with its
	// description in idat, which Transform reads too.
	heic, err := Transform(encode(t, source(t, 64, 48), "-q", "50"), Options{Orientation: 6})
	if err != nil {
		t.Fatal(err)
	}
	path := write(t, heic)
	if info := run(t, "heif-info", path); !strings.Contains(info, "Exif") {
		t.Errorf("heif-info sees no Exif:\n%s", info)
	}
	if got := strings.TrimSpace(run(t, "exiftool", "-s3", "-n", "-Orientation", path)); got != "6" {
		t.Errorf("exiftool's orientation: %q", got)
	}
}

// TestDisplayP3 checks the profile with lcms, through vips: a P3 colour
// converted to sRGB comes out as the standard P3-to-sRGB matrix says.
func TestDisplayP3(t *testing.T) {
	needTools(t, "heif-enc", "heif-info", "vips", "exiftool")
	p3 := color.NRGBA{R: 60, G: 200, B: 90, A: 255}
	flat := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	draw.Draw(flat, flat.Bounds(), image.NewUniform(p3), image.Point{}, draw.Src)
	heic, err := Transform(encode(t, flat, "-q", "95"), Options{ICC: DisplayP3()})
	if err != nil {
		t.Fatal(err)
	}
	path := write(t, heic)
	if info := run(t, "heif-info", path); !strings.Contains(info, "color profile: prof") {
		t.Errorf("heif-info:\n%s", info)
	}
	if got := strings.TrimSpace(run(t, "exiftool", "-s3", "-ProfileDescription", path)); got != "Display P3" {
		t.Errorf("exiftool's profile description: %q", got)
	}

	out := filepath.Join(t.TempDir(), "srgb.png")
	run(t, "vips", "icc_transform", path, out, "srgb")
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	lin := func(v uint8) float64 {
		c := float64(v) / 255
		if c <= 0.04045 {
			return c / 12.92
		}
		return math.Pow((c+0.055)/1.055, 2.4)
	}
	enc := func(l float64) float64 {
		l = min(max(l, 0), 1)
		if l <= 0.0031308 {
			return 255 * 12.92 * l
		}
		return 255 * (1.055*math.Pow(l, 1/2.4) - 0.055)
	}
	r, g, b := lin(p3.R), lin(p3.G), lin(p3.B)
	want := [3]float64{
		enc(1.2249*r - 0.2247*g),
		enc(-0.0420*r + 1.0419*g),
		enc(-0.0197*r - 0.0786*g + 1.0983*b),
	}
	got := color.NRGBAModel.Convert(img.At(32, 32)).(color.NRGBA)
	for i, v := range []uint8{got.R, got.G, got.B} {
		if math.Abs(float64(v)-want[i]) > 4 {
			t.Errorf("P3 %v to sRGB: %v, want about %.0f", p3, got, want)
			break
		}
	}
}

// NCLX writes an nclx colr box that libheif and exiftool read back with
// its code points; beside an ICC profile, both boxes are written.
func TestNCLX(t *testing.T) {
	needTools(t, "heif-enc", "heif-info", "exiftool")
	flat := image.NewNRGBA(image.Rect(0, 0, 32, 32))
	draw.Draw(flat, flat.Bounds(), image.NewUniform(color.NRGBA{R: 60, G: 200, B: 90, A: 255}), image.Point{}, draw.Src)
	coded := encode(t, flat, "-A", "-q", "90", "-p", "speed=9")
	pq := NCLX{Primaries: 9, Transfer: 16, Matrix: 9}
	avif, err := Transform(coded, Options{NCLX: pq})
	if err != nil {
		t.Fatal(err)
	}
	path := write(t, avif)
	if info := run(t, "heif-info", path); !strings.Contains(info, "color profile: nclx") {
		t.Errorf("heif-info:\n%s", info)
	}
	got := run(t, "exiftool", "-s3", "-ColorPrimaries", "-TransferCharacteristics", "-MatrixCoefficients", path)
	for _, want := range []string{"BT.2020, BT.2100", "SMPTE ST 2084", "BT.2020 non-constant"} {
		if !strings.Contains(got, want) {
			t.Errorf("exiftool: %q, want %q", got, want)
		}
	}
	both, err := Transform(coded, Options{NCLX: pq, ICC: DisplayP3()})
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(both, []byte("colr")); n != 2 || !bytes.Contains(both, []byte("colrprof")) || !bytes.Contains(both, []byte("colrnclx\x00\x09\x00\x10\x00\x09\x00")) {
		t.Errorf("%d colr boxes, want one prof and one nclx (9, 16, 9, limited)", n)
	}
}

func TestAVIF10BitAlphaTurned(t *testing.T) {
	needTools(t, "heif-enc", "heif-info", "vips", "vipsheader")
	const w, h = 128, 96
	src := image.NewNRGBA64(image.Rect(0, 0, w, h))
	photo := source(t, w, h)
	for y := range h {
		for x := range w {
			c := photo.NRGBAAt(x, y)
			src.SetNRGBA64(x, y, color.NRGBA64{R: uint16(c.R) * 257, G: uint16(c.G) * 257, B: uint16(c.B) * 257, A: uint16(0xffff * x / (w - 1))})
		}
	}
	args := []string{"-A", "-b", "10", "-p", "chroma=422", "-q", "90"}
	alpha, err := EncodeAlpha(src, args...)
	if err != nil {
		t.Fatal(err)
	}
	avif, err := Transform(encode(t, src, append(args, "--no-alpha")...), Options{Alpha: alpha, Rotate: 1})
	if err != nil {
		t.Fatal(err)
	}
	path := write(t, avif)
	if info := run(t, "heif-info", path); !strings.Contains(info, "alpha channel: yes") || !strings.Contains(info, "image/avif") {
		t.Errorf("heif-info:\n%s", info)
	}
	if got := header(t, path); !strings.HasPrefix(got, "96x128 ushort, 4 bands") {
		t.Errorf("vipsheader: %s, want 96x128, 16-bit (from 10), with alpha", got)
	}
	want := transformed(src, h, w, func(x, y int) (int, int) { return w - 1 - y, x })
	// 10-bit samples come out of vips as 16-bit (<<6); MeanAbs compares 8-bit.
	if d := imagediff.MeanAbs(decode(t, avif), want); d > 3 {
		t.Errorf("%.2f levels from the source turned, alpha included", d)
	}
}

// TestIPhoneLikeHEIC is the lead's example: a 2x2 grid with irot, EXIF
// orientation 6 and Display P3, as an iPhone writes a portrait photo.
func TestIPhoneLikeHEIC(t *testing.T) {
	needTools(t, "heif-enc", "heif-info", "vips", "vipsheader", "exiftool")
	src := source(t, 1024, 768)
	heic, err := Grid(tiles(t, src, 2, 2, "-q", "80"), 2, 2, 1024, 768,
		Options{Rotate: 3, Orientation: 6, ICC: DisplayP3()})
	if err != nil {
		t.Fatal(err)
	}
	path := write(t, heic)
	info := run(t, "heif-info", path)
	for _, want := range []string{"image: 768x1024", "color profile: prof", "Exif"} {
		if !strings.Contains(info, want) {
			t.Errorf("heif-info has no %q:\n%s", want, info)
		}
	}
	if got := header(t, path); !strings.HasPrefix(got, "768x1024 uchar, 3 bands") {
		t.Errorf("vipsheader: %s", got)
	}
	if got := strings.TrimSpace(run(t, "exiftool", "-s3", "-n", "-Orientation", path)); got != "6" {
		t.Errorf("exiftool's orientation: %q", got)
	}
	want := transformed(src, 768, 1024, func(x, y int) (int, int) { return y, 767 - x })
	if d := imagediff.MeanAbs(decode(t, heic), want); d > 3 {
		t.Errorf("%.2f levels from the source turned clockwise", d)
	}
}

// solid is a w x h image of one colour.
func solid(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return img
}

// TestThumbnail checks the thmb item with libheif, through heif-info and
// vips: the thumbnail is listed, vips reads it as the primary's thumbnail
// (red), and the primary stays green.
func TestThumbnail(t *testing.T) {
	needTools(t, "heif-enc", "heif-info", "vips")
	for _, kind := range []struct {
		name string
		args []string
	}{{"HEIC", []string{"-q", "80"}}, {"AVIF", []string{"-A", "-q", "80"}}} {
		t.Run(kind.name, func(t *testing.T) {
			primary := encode(t, solid(640, 480, color.NRGBA{G: 200, A: 255}), kind.args...)
			thumb := encode(t, solid(320, 240, color.NRGBA{R: 200, A: 255}), kind.args...)
			heif, err := Transform(primary, Options{Thumbnail: thumb})
			if err != nil {
				t.Fatal(err)
			}
			path := write(t, heif)
			if info := run(t, "heif-info", path); !strings.Contains(info, "thumbnail") || !strings.Contains(info, "320x240") {
				t.Errorf("heif-info sees no 320x240 thumbnail:\n%s", info)
			}
			for _, c := range []struct {
				name string
				in   string
				w, h int
				red  bool
			}{{"primary", path, 640, 480, false}, {"thumbnail", path + "[thumbnail]", 320, 240, true}} {
				out := filepath.Join(t.TempDir(), "out.png")
				run(t, "vips", "copy", c.in, out)
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				img, err := png.Decode(bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				r, g, _, _ := img.At(c.w/2, c.h/2).RGBA()
				if img.Bounds().Dx() != c.w || img.Bounds().Dy() != c.h || (r > g) != c.red {
					t.Errorf("%s: %v, centre r %d g %d; want %dx%d, red %v", c.name, img.Bounds().Size(), r>>8, g>>8, c.w, c.h, c.red)
				}
			}
		})
	}
	if _, err := Transform(encode(t, solid(128, 96, color.NRGBA{A: 255}), "-q", "50"), Options{Thumbnail: []byte("not HEIF")}); err == nil {
		t.Error("Transform took a thumbnail that is no HEIF file")
	}
}
