package thumb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
