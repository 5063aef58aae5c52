package thumb

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/internal/heiftest"
	"github.com/thumbd/thumbd/internal/imagediff"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// TestHEIFTransformsAppliedOnce: AVIF and HEIC files with every irot and
// imir combination and no EXIF orientation, and with an EXIF orientation
// that says otherwise, come out as libheif's own decode shows them
// (Debian's heif-convert, which applies irot and imir and, as the HEIF
// specification asks, not EXIF's orientation): each transform applied
// exactly once.
func TestHEIFTransformsAppliedOnce(t *testing.T) {
	needTools(t, "heif-enc", "heif-convert")
	dir := t.TempDir()
	const w, h = 96, 64
	for _, kind := range []string{"avif", "heic"} {
		args := []string{"-q", "95", "-p", "chroma=444"}
		if kind == "avif" {
			args = append(args, "-A", "-p", "speed=9")
		}
		coded, err := heiftest.Encode(decodePNG(t, quadrants(t, w, h)), args...)
		if err != nil {
			t.Fatal(err)
		}
		for rot := range 4 {
			for _, mirror := range []heiftest.Mirror{heiftest.NoMirror, heiftest.MirrorTopBottom, heiftest.MirrorLeftRight} {
				for _, exif := range []int{0, 8} {
					name := fmt.Sprintf("%s-irot%d-imir%d-exif%d", kind, rot, mirror, exif)
					t.Run(name, func(t *testing.T) {
						src, err := heiftest.Transform(coded, heiftest.Options{Rotate: rot, Mirror: mirror, Orientation: exif})
						if err != nil {
							t.Fatal(err)
						}
						path := writeFile(t, dir, name+"."+kind, src)
						ref := filepath.Join(dir, name+".png")
						run(t, dir, "heif-convert", path, ref)
						b, err := os.ReadFile(ref)
						if err != nil {
							t.Fatal(err)
						}
						want := decodePNG(t, b)
						img, err := testEngine.Thumbnail(context.Background(), src, thumbjob.Options{Width: want.Bounds().Dx(), Height: want.Bounds().Dy(), Fit: thumbjob.FitFill, Format: imagefmt.PNG})
						if err != nil {
							t.Fatal(err)
						}
						got := decodePNG(t, img.Bytes)
						if got.Bounds().Size() != want.Bounds().Size() {
							t.Fatalf("%v, libheif's decode %v", got.Bounds().Size(), want.Bounds().Size())
						}
						if d := imagediff.MeanAbs(got, want); d > 6 {
							writePNG(t, filepath.Join("testdata", "failed", name+".png"), got)
							t.Fatalf("mean difference %.1f per channel from libheif's own decode (tolerance 6)", d)
						}
					})
				}
			}
		}
	}
}

// TestAVIFSequenceFirstFrame: an AVIF image sequence with no still image
// (brand avis, frames only in a track), at 8, 10 and 12 bits, with and
// without an alpha track, gives its first frame, as ffmpeg's own decode
// of that frame shows it, priced as one frame.
func TestAVIFSequenceFirstFrame(t *testing.T) {
	needTools(t, "ffmpeg")
	dir := t.TempDir()
	const w, h = 96, 64
	first := quadrants(t, w, h)
	second := pngOf(t, w, h, func(x, y int) color.NRGBA { return cWhite })
	opaqueRight := pngOf(t, w, h, func(x, y int) color.NRGBA {
		if x < w/2 {
			return color.NRGBA{0, 0, 0, 255}
		}
		return cWhite
	})
	for _, pixFmt := range []string{"yuv420p", "yuv420p10le", "yuv420p12le"} {
		colour, err := heiftest.EncodeSequence([][]byte{first, second, second}, pixFmt)
		if err != nil {
			t.Fatal(err)
		}
		refPath := writeFile(t, dir, pixFmt+".avif", colour)
		ref := filepath.Join(dir, pixFmt+".png")
		run(t, dir, "ffmpeg", "-hide_banner", "-loglevel", "error", "-i", refPath, "-frames:v", "1", "-pix_fmt", "rgb24", "-y", ref)
		b, err := os.ReadFile(ref)
		if err != nil {
			t.Fatal(err)
		}
		want := decodePNG(t, b)
		for _, withAlpha := range []bool{false, true} {
			name := fmt.Sprintf("%s-alpha-%v", pixFmt, withAlpha)
			t.Run(name, func(t *testing.T) {
				var alpha []byte
				if withAlpha {
					if alpha, err = heiftest.EncodeSequence([][]byte{opaqueRight, second, second}, pixFmt, heiftest.AlphaRange()...); err != nil {
						t.Fatal(err)
					}
				}
				src, err := heiftest.Sequence(colour, alpha)
				if err != nil {
					t.Fatal(err)
				}
				look := looked(src)
				if !look.Header.Sequence || look.Header.Frames != 1 || look.Header.Alpha != withAlpha {
					t.Fatalf("looked as %+v (%s)", look.Header, look.Unread)
				}
				img, err := testEngine.Thumbnail(context.Background(), src, thumbjob.Options{Width: w, Height: h, Fit: thumbjob.FitFill, Format: imagefmt.PNG})
				if err != nil {
					t.Fatal(err)
				}
				got := decodePNG(t, img.Bytes)
				if withAlpha {
					if _, _, _, a := got.At(5, 5).RGBA(); a > 0x1000 {
						t.Errorf("alpha on the left %#x, want transparent", a)
					}
					if _, _, _, a := got.At(w-5, 5).RGBA(); a < 0xf000 {
						t.Errorf("alpha on the right %#x, want opaque", a)
					}
					return
				}
				if d := imagediff.MeanAbs(got, want); d > 6 {
					writePNG(t, filepath.Join("testdata", "failed", "sequence-"+name+".png"), got)
					t.Fatalf("mean difference %.1f per channel from ffmpeg's first frame (tolerance 6)", d)
				}
			})
		}
	}
}

// TestLinkUTransforms: link-u's AVIF samples, written by another encoder
// (cavif, which lists irot before ispe), each stored turned or mirrored
// and marked to display as the original: every one comes out as the
// original. Debian's libheif 1.15 (under its libvips 8.14, the dev build)
// cannot decode the turned ones ("bad image dimensions on decode"): a 422
// there, never a wrong picture.
func TestLinkUTransforms(t *testing.T) {
	ref, err := os.ReadFile(filepath.Join("testdata", "linku", "kimono-127x180.png"))
	if err != nil {
		t.Fatal(err)
	}
	want := decodePNG(t, ref)
	files, _ := filepath.Glob(filepath.Join("testdata", "linku", "*.avif"))
	if len(files) != 6 {
		t.Fatalf("%d link-u files", len(files))
	}
	have, _ := versionNumber(Version())
	need, _ := versionNumber("8.16.0")
	old := have < need
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		img, err := testEngine.Thumbnail(context.Background(), src, thumbjob.Options{Width: 127, Height: 180, Fit: thumbjob.FitFill, Format: imagefmt.PNG})
		turned := strings.Contains(f, "rotate")
		if old && turned {
			if !errors.Is(err, thumbjob.ErrUndecodable) {
				t.Errorf("%s on libvips %s: %v, want undecodable", f, Version(), err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if d := imagediff.MeanAbs(decodePNG(t, img.Bytes), want); d > 3 {
			t.Errorf("%s: mean difference %.1f from the original (tolerance 3)", f, d)
		}
	}
}

// TestLinkUSequences: link-u's AVIF image sequences (their meta names an
// alpha item it does not hold, which libheif refuses; libvips does not
// open the avis brand) give their first frame: the ones with alpha as
// star.png, the ones without as ffmpeg's own decode of that frame (they
// flag full range over limited-range samples: both decoders follow the
// flag).
func TestLinkUSequences(t *testing.T) {
	needTools(t, "ffmpeg")
	ref, err := os.ReadFile(filepath.Join("testdata", "linku", "star.png"))
	if err != nil {
		t.Fatal(err)
	}
	star := decodePNG(t, ref)
	files, _ := filepath.Glob(filepath.Join("testdata", "linku", "star-*.avifs"))
	if len(files) != 6 {
		t.Fatalf("%d star sequences", len(files))
	}
	dir := t.TempDir()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		img, err := testEngine.Thumbnail(context.Background(), src, thumbjob.Options{Width: 159, Height: 159, Fit: thumbjob.FitFill, Format: imagefmt.PNG})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		got, want := decodePNG(t, img.Bytes), star
		if !strings.Contains(f, "alpha") {
			out := filepath.Join(dir, filepath.Base(f)+".png")
			abs, _ := filepath.Abs(f)
			run(t, dir, "ffmpeg", "-hide_banner", "-loglevel", "error", "-i", abs, "-frames:v", "1", "-pix_fmt", "rgb24", "-y", out)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			want = decodePNG(t, b)
		}
		if d := imagediff.MeanAbs(got, want); d > 4 {
			t.Errorf("%s: mean difference %.1f from its first frame (tolerance 4)", f, d)
		}
	}
}
