package thumb

import (
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/draw"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/thumbd/thumbd/internal/heiftest"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/primaries"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// The matrices computed from H.273's chromaticities are the published
// ones: Display P3 to sRGB (CSS Color 4's, to its 7 decimals) and BT.2020
// to BT.709 (ITU-R BT.2087, to its 4); every one keeps white white (its
// rows sum to 1), DCI-P3's through the Bradford adaptation of its white.
func TestNCLXMatrix(t *testing.T) {
	published := map[int]struct {
		m   primaries.Matrix
		tol float64
	}{
		12: {primaries.Matrix{{1.2249401, -0.2249404, 0}, {-0.0420569, 1.0420571, 0}, {-0.0196376, -0.0786361, 1.0982735}}, 2e-4},
		9:  {primaries.Matrix{{1.6605, -0.5876, -0.0728}, {-0.1246, 1.1329, -0.0083}, {-0.0182, -0.1006, 1.1187}}, 1e-3},
	}
	for code, p := range published {
		m, ok := nclxMatrix(thumbjob.NCLX{Primaries: code, Transfer: 13})
		for i := range 3 {
			for j := range 3 {
				if !ok || math.Abs(m[i][j]-p.m[i][j]) > p.tol {
					t.Fatalf("primaries %d: %v (%v), want %v", code, m, ok, p.m)
				}
			}
		}
	}
	for code := range 256 {
		if !primaries.Known(code) {
			continue
		}
		m, ok := nclxMatrix(thumbjob.NCLX{Primaries: code, Transfer: 1})
		if code == primaries.SRGB {
			if ok {
				t.Errorf("sRGB's primaries converted: %v", m)
			}
			continue
		}
		for i, row := range m {
			if v := row[0] + row[1] + row[2]; !ok || math.Abs(v-1) > 1e-9 {
				t.Errorf("primaries %d: white's channel %d is %v (%v)", code, i, v, ok)
			}
		}
	}
	for _, c := range []thumbjob.NCLX{{}, {Primaries: 2, Transfer: 2}, {Primaries: 10}, {Primaries: 200}, {Primaries: 9, Transfer: transferPQ}, {Primaries: 9, Transfer: transferHLG}} {
		if m, ok := nclxMatrix(c); ok {
			t.Errorf("%+v converted by %v: want as coded", c, m)
		}
	}
}

// A flat patch in an AVIF whose nclx says Display P3 (and in one whose
// nclx says BT.2020, BT.709 or BT.2020 with PQ) comes out as the sRGB
// colour an independent conversion makes of the same decoded pixels:
// Debian's vips decodes the AVIF (its libheif turns YUV into RGB and
// ignores the primaries), and lcms converts that through heiftest's
// Display P3 ICC profile (vips icc_transform), or BT.2087's matrix is
// applied in linear light here. Tolerance 2 levels a channel: both sides
// start from the same 8-bit decode and round once more to 8 bits (1), and
// lcms' v4 profile stores its primaries as s15.16 numbers (CSS's P3
// matrix and the profile agree to 1e-4, well under a level); on Debian's
// 8.14 every case matches to the level. libvips 8.16.1's thumbnail of a
// translucent source comes out 1-2 levels under its decode (its
// premultiplied alpha's rounding, which bt709-alpha shows with no
// conversion at all), still within 2. The patch's colour is in sRGB's
// gamut, so no side clips; it moves 6-38 levels.
func TestNCLXThumbnail(t *testing.T) {
	needTools(t, "heif-enc", "vips")
	dir := t.TempDir()
	coded := color.NRGBA{R: 200, G: 110, B: 80, A: 255}
	patch := func(a uint8) image.Image {
		p := image.NewNRGBA(image.Rect(0, 0, 64, 64))
		c := coded
		c.A = a
		for y := range 64 {
			for x := range 64 {
				p.Set(x, y, c)
			}
		}
		return p
	}
	p3 := filepath.Join(dir, "p3.icc")
	if err := os.WriteFile(p3, heiftest.DisplayP3(), 0o600); err != nil {
		t.Fatal(err)
	}
	lcmsP3 := func(t *testing.T, decoded string) [3]float64 {
		out := filepath.Join(dir, "lcms.png")
		run(t, dir, "vips", "icc_transform", decoded, out, "srgb", "--input-profile", p3, "--intent", "relative")
		return centre(t, out)
	}
	cases := []struct {
		name string
		nclx thumbjob.NCLX
		icc  []byte // a colr prof beside the nclx
		// alpha is the patch's opacity, and the thumbnail's (255: none)
		alpha uint8
		// want converts the decoded (coded) pixel into what the thumbnail
		// must hold.
		want func(t *testing.T, decoded string) [3]float64
		// args are heif-enc's beyond the quality and 4:4:4
		args []string
	}{
		{"display-p3", thumbjob.NCLX{Primaries: 12, Transfer: 13, Matrix: 6, FullRange: true}, nil, 255, lcmsP3, nil},
		{"bt2020", thumbjob.NCLX{Primaries: 9, Transfer: 1, Matrix: 6, FullRange: true}, nil, 255, func(t *testing.T, decoded string) [3]float64 {
			bt2087 := primaries.Matrix{{1.6605, -0.5876, -0.0728}, {-0.1246, 1.1329, -0.0083}, {-0.0182, -0.1006, 1.1187}}
			c := centre(t, decoded)
			for i := range c {
				c[i] = linear(c[i] / 255)
			}
			c = bt2087.Apply(c)
			for i := range c {
				c[i] = 255 * encoded(c[i])
			}
			return c
		}, nil},
		{"bt709", thumbjob.NCLX{Primaries: 1, Transfer: 1, Matrix: 6, FullRange: true}, nil, 255, centre, nil},
		{"bt2020-pq", thumbjob.NCLX{Primaries: 9, Transfer: 16, Matrix: 6, FullRange: true}, nil, 255, centre, nil},
		// an ICC profile and an nclx: the profile is converted, the
		// nclx's primaries are not applied on top
		{"p3-icc-and-bt2020-nclx", thumbjob.NCLX{Primaries: 9, Transfer: 1, Matrix: 6, FullRange: true}, heiftest.DisplayP3(), 255, lcmsP3, nil},
		// alpha is kept, and the colour under it converted
		{"display-p3-alpha", thumbjob.NCLX{Primaries: 12, Transfer: 13, Matrix: 6, FullRange: true}, nil, 160, lcmsP3, nil},
		{"bt709-alpha", thumbjob.NCLX{Primaries: 1, Transfer: 1, Matrix: 6, FullRange: true}, nil, 160, centre, nil},
		// 10 bits (Debian 12's heif-enc needs 4:2:2 for a 10-bit AVIF):
		// RGB16 to scRGB, the matrix, then 8-bit sRGB
		{"display-p3-10bit", thumbjob.NCLX{Primaries: 12, Transfer: 13, Matrix: 6, FullRange: true}, nil, 255, lcmsP3, []string{"-b", "10", "-p", "chroma=422"}},
	}
	for _, c := range cases {
		for _, kind := range []string{"avif", "heic"} {
			t.Run(c.name+"-"+kind, func(t *testing.T) {
				n := c.nclx
				args := append([]string{"-q", "90", "-p", "chroma=444"}, c.args...)
				format := imagefmt.HEIC
				if kind == "avif" {
					args, format = append(args, "-A", "-p", "speed=9"), imagefmt.AVIF
				}
				var img image.Image = patch(c.alpha)
				if slices.Contains(c.args, "-b") { // heif-enc writes more than 8 bits from a 16-bit PNG only
					deep := image.NewNRGBA64(img.Bounds())
					draw.Draw(deep, deep.Bounds(), img, image.Point{}, draw.Src)
					img = deep
				}
				src, err := heiftest.Encode(img, args...)
				if err == nil {
					src, err = heiftest.Transform(src, heiftest.Options{ICC: c.icc, NCLX: heiftest.NCLX{Primaries: n.Primaries, Transfer: n.Transfer, Matrix: n.Matrix, FullRange: n.FullRange}})
				}
				if err != nil {
					t.Fatal(err)
				}
				path := writeFile(t, dir, c.name+"."+kind, src)
				decoded := filepath.Join(dir, c.name+"-"+kind+".png")
				run(t, dir, "vips", "copy", path+"[autorotate=false]", decoded+"[profile=none]")
				want := c.want(t, decoded)
				in := looked(src) // its nclx is the one given here
				in.Format, in.Header.NCLX = format, n
				got, err := testEngine.Run(context.Background(), in,
					thumbjob.Job{Options: thumbjob.Options{Width: 16, Height: 16, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}})
				if err != nil {
					t.Fatal(err)
				}
				px := color.NRGBAModel.Convert(decodePNG(t, got.Image.Bytes).At(8, 8)).(color.NRGBA)
				have := [3]float64{float64(px.R), float64(px.G), float64(px.B)}
				if px.A != c.alpha {
					t.Errorf("alpha %d, want %d", px.A, c.alpha)
				}
				for i := range 3 {
					if math.Abs(have[i]-want[i]) > 2 {
						t.Fatalf("%v, want %.1f (decoded as coded: %v)", have, want, centre(t, decoded))
					}
				}
				t.Logf("coded %v, decoded %v, thumbnail %v, want %.1f", coded, centre(t, decoded), have, want)
			})
		}
	}
}

// centre is the centre pixel of a PNG file, 0-255 a channel, not
// premultiplied by its alpha.
func centre(t *testing.T, path string) [3]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, b)
	px := color.NRGBAModel.Convert(img.At(img.Bounds().Dx()/2, img.Bounds().Dy()/2)).(color.NRGBA)
	return [3]float64{float64(px.R), float64(px.G), float64(px.B)}
}

// linear and encoded are sRGB's transfer curve (IEC 61966-2-1), both ways.
func linear(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

func encoded(v float64) float64 {
	v = min(max(v, 0), 1)
	if v <= 0.0031308 {
		return 12.92 * v
	}
	return 1.055*math.Pow(v, 1/2.4) - 0.055
}

// /info's ThumbHash is made from converted pixels too: a patch coded with
// Display P3 nclx primaries has the average colour of the same patch with
// a Display P3 ICC profile (lcms' conversion), not BT.709's.
func TestNCLXThumbHash(t *testing.T) {
	needTools(t, "heif-enc")
	p := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for y := range 64 {
		for x := range 64 {
			p.Set(x, y, color.NRGBA{R: 200, G: 110 + uint8(x), B: 80, A: 255})
		}
	}
	coded, err := heiftest.Encode(p, "-A", "-q", "90", "-p", "speed=9", "-p", "chroma=444")
	if err != nil {
		t.Fatal(err)
	}
	hash := func(n thumbjob.NCLX, icc []byte) string {
		t.Helper()
		src, err := heiftest.Transform(coded, heiftest.Options{ICC: icc, NCLX: heiftest.NCLX{Primaries: n.Primaries, Transfer: n.Transfer, Matrix: n.Matrix, FullRange: n.FullRange}})
		if err != nil {
			t.Fatal(err)
		}
		in := looked(src) // its nclx is the one given here
		in.Header.NCLX = n
		res, err := testEngine.Run(context.Background(), in,
			thumbjob.Job{Info: &thumbjob.InfoJob{ThumbHash: true}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Info.ThumbHash
	}
	p3 := hash(thumbjob.NCLX{Primaries: 12, Transfer: 13, Matrix: 6, FullRange: true}, nil)
	bt709 := hash(thumbjob.NCLX{Primaries: 1, Transfer: 1, Matrix: 6, FullRange: true}, nil)
	icc := hash(thumbjob.NCLX{}, heiftest.DisplayP3())
	// A ThumbHash's first 3 bytes are its average colour (L, P and Q, 6
	// bits each) and its luminance scale, what a primaries conversion
	// moves; its AC terms' quantisation may land a step apart between
	// lcms and the matrix.
	dc := func(h string) string {
		b, err := base64.StdEncoding.DecodeString(h)
		if err != nil || len(b) < 3 {
			t.Fatalf("ThumbHash %q: %v", h, err)
		}
		return string(b[:3])
	}
	if dc(p3) == dc(bt709) || dc(p3) != dc(icc) {
		t.Errorf("ThumbHash of P3 by nclx %s, by ICC %s, BT.709 %s: want P3's two alike, BT.709's apart", p3, icc, bt709)
	}
}
