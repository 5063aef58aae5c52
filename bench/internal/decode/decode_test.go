package decode

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// vipsCopy converts with Debian's vips command, as a client of thumbd
// would get the file from libvips' encoders.
func vipsCopy(t *testing.T, in []byte, inExt, outSpec string) []byte {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "in"+inExt)
	if err := os.WriteFile(src, in, 0o600); err != nil {
		t.Fatal(err)
	}
	if inExt == ".gif" || inExt == ".webp" {
		src += "[n=-1]" // every frame of an animation
	}
	out := filepath.Join(dir, outSpec)
	if msg, err := exec.Command("vips", "copy", src, out).CombinedOutput(); err != nil {
		t.Fatalf("vips copy: %v: %s", err, msg)
	}
	b, err := os.ReadFile(strings.SplitN(out, "[", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var colours = []color.RGBA{{255, 0, 0, 255}, {0, 200, 0, 255}, {0, 0, 255, 255}}

// animatedGIF has one flat colour a frame; with transparent, the left
// quarter of every frame is transparent.
func animatedGIF(t *testing.T, transparent bool) []byte {
	t.Helper()
	pal := color.Palette{color.RGBA{}, colours[0], colours[1], colours[2]}
	g := &gif.GIF{LoopCount: 0}
	for i := range colours {
		img := image.NewPaletted(image.Rect(0, 0, 40, 24), pal)
		for y := 0; y < 24; y++ {
			for x := 0; x < 40; x++ {
				if !transparent || x >= 10 {
					img.SetColorIndex(x, y, uint8(i+1))
				}
			}
		}
		g.Image, g.Delay, g.Disposal = append(g.Image, img), append(g.Delay, 5*(i+1)), append(g.Disposal, gif.DisposalBackground)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func near(a, b color.Color) bool {
	ar, ag, ab, aa := a.RGBA()
	br, bg, bb, ba := b.RGBA()
	d := func(x, y uint32) bool { return x>>8 < y>>8+30 && y>>8 < x>>8+30 }
	return d(ar, br) && d(ag, bg) && d(ab, bb) && d(aa, ba)
}

func TestWebPAnimation(t *testing.T) {
	for _, tc := range []struct {
		name        string
		transparent bool
		out         string
	}{
		{"lossy", false, "out.webp[Q=90]"},
		{"lossy with alpha (ALPH chunks)", true, "out.webp[Q=90]"},
		{"lossless (VP8L)", true, "out.webp[lossless]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := WebPAnimation(vipsCopy(t, animatedGIF(t, tc.transparent), ".gif", tc.out))
			if err != nil {
				t.Fatal(err)
			}
			if a.Width != 40 || a.Height != 24 || a.Loop != 0 || len(a.Frames) != len(colours) {
				t.Fatalf("%dx%d loop %d, %d frames", a.Width, a.Height, a.Loop, len(a.Frames))
			}
			for i, f := range a.Frames {
				if f.Duration != 50*(i+1) {
					t.Errorf("frame %d: %d ms, want %d", i, f.Duration, 50*(i+1))
				}
				// Where the frame sits on the canvas, the canvas' (30, 12).
				if c := f.Image.At(30-f.X, 12-f.Y); !near(c, colours[i]) {
					t.Errorf("frame %d: %v at the centre, want %v", i, c, colours[i])
				}
				if tc.transparent && f.X == 0 {
					if _, _, _, a := f.Image.At(2, 12).RGBA(); a != 0 {
						t.Errorf("frame %d: the transparent quarter has alpha %d", i, a>>8)
					}
				}
			}
		})
	}
}

func TestWebPAnimationRefusesWhatIsNotOne(t *testing.T) {
	anim := vipsCopy(t, animatedGIF(t, false), ".gif", "anim.webp")
	oneFrame := vipsCopy(t, vipsCopy(t, anim, ".webp", "first.png"), ".png", "first.webp")
	cs, err := chunks(anim[12:])
	if err != nil || len(cs) < 2+len(colours) || cs[0].fourCC != "VP8X" || cs[1].fourCC != "ANIM" || cs[2].fourCC != "ANMF" {
		t.Fatalf("chunks %v %v", cs, err)
	}
	// with rebuilds the animation with its first frame's ANMF payload changed.
	with := func(change func(p []byte) []byte) []byte {
		return riff(cs[0], cs[1], chunk{"ANMF", change(bytes.Clone(cs[2].payload))})
	}
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"a PNG":                 {vipsCopy(t, anim, ".webp", "again.png"), "not a RIFF WEBP"},
		"a still WebP":          {oneFrame, "not animated"},
		"only a RIFF header":    {[]byte("RIFF\x04\x00\x00\x00WEBP"), "not animated"},
		"cut in a chunk":        {anim[:len(anim)-40], "runs past the end"},
		"cut in a chunk header": {append(bytes.Clone(anim[:30]), "ANMF"...), "cut short"},
		"no frames":             {riff(cs[0], cs[1]), "without frames"},
		"ANIM cut short":        {riff(cs[0], chunk{"ANIM", []byte{0, 0}}, cs[2]), "ANIM chunk cut short"},
		"ANMF cut short":        {with(func(p []byte) []byte { return p[:10] }), "ANMF chunk cut short"},
		"no bitstream":          {with(func(p []byte) []byte { return p[:16] }), "no VP8 or VP8L"},
		"a corrupt bitstream": {with(func(p []byte) []byte {
			for i := 16 + 8; i < 16+8+20; i++ {
				p[i] = 0xAA
			}
			return p
		}), "frame 0"},
		"a frame off the canvas":   {with(func(p []byte) []byte { p[0] = 10; return p }), "leaves the 40x24 canvas"},
		"a frame header that lies": {with(func(p []byte) []byte { p[6]--; return p }), "the frame header says 39x24"},
	} {
		if _, err := WebPAnimation(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
}

func TestStill(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 32, 20))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	var p bytes.Buffer
	if err := png.Encode(&p, img); err != nil {
		t.Fatal(err)
	}
	for format, b := range map[string][]byte{
		"png": p.Bytes(), "jpeg": vipsCopy(t, p.Bytes(), ".png", "o.jpg"), "webp": vipsCopy(t, p.Bytes(), ".png", "o.webp"),
		"avif": vipsCopy(t, p.Bytes(), ".png", "o.avif"),
	} {
		got, err := Still(format, b)
		if err != nil || got.Bounds().Size() != image.Pt(32, 20) {
			t.Errorf("%s: %v %v", format, got, err)
		}
	}
	if _, err := Still("gif", p.Bytes()); err == nil || !strings.Contains(err.Error(), `no decoder for "gif"`) {
		t.Errorf("gif: %v", err)
	}
	if _, err := Still("avif", []byte("not an image")); err == nil || !strings.Contains(err.Error(), "vips copy") {
		t.Errorf("not an AVIF: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := Still("avif", []byte("x")); err == nil || !strings.Contains(err.Error(), "libvips-tools") {
		t.Errorf("no vips command: %v", err)
	}
}
