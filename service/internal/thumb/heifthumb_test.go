package thumb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"strings"
	"testing"

	"encoding/base64"
	"github.com/thumbd/thumbd/internal/heiftest"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbhashtest"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

var (
	heifGreen = color.NRGBA{G: 200, A: 255}
	heifRed   = color.NRGBA{R: 200, A: 255}
)

func solidImage(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return img
}

// heifWithThumbnail is a green pw x ph HEIC (or AVIF) whose embedded
// thumbnail is a red tw x th image: a decode's colour tells which of the
// two it read.
func heifWithThumbnail(t *testing.T, avif bool, pw, ph, tw, th int) []byte {
	t.Helper()
	needTools(t, "heif-enc")
	args := []string{"-q", "80"}
	if avif {
		args = append(args, "-A")
	}
	thumb, err := heiftest.Encode(solidImage(tw, th, heifRed), args...)
	if err != nil {
		t.Fatal(err)
	}
	return heifWithThumbnailOf(t, pw, ph, thumb, args...)
}

// heifWithThumbnailOf is a green pw x ph image encoded by heif-enc with
// args (a HEIC, or an AVIF with -A) whose embedded thumbnail is thumb, a
// single-image file of the same kind.
func heifWithThumbnailOf(t *testing.T, pw, ph int, thumb []byte, args ...string) []byte {
	t.Helper()
	primary, err := heiftest.Encode(solidImage(pw, ph, heifGreen), args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := heiftest.Transform(primary, heiftest.Options{Thumbnail: thumb})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// isRed says whether c is the thumbnail's red rather than the primary's green.
func isRed(c color.Color) bool {
	r, g, _, _ := c.RGBA()
	return r > g
}

func TestHEIFEmbeddedThumbnail(t *testing.T) {
	for _, avif := range []bool{false, true} {
		name := map[bool]string{false: "heic", true: "avif"}[avif]
		t.Run(name, func(t *testing.T) {
			src := heifWithThumbnail(t, avif, 640, 480, 320, 240)
			for _, c := range []struct {
				name      string
				o         thumbjob.Options
				w, h      int
				thumbnail bool
			}{
				{"inside 256: the thumbnail shrinks", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitInside}, 256, 192, true},
				{"inside 320: the thumbnail would not shrink", thumbjob.Options{Width: 320, Height: 320, Fit: thumbjob.FitInside}, 320, 240, false},
				{"inside 400: the thumbnail would be enlarged", thumbjob.Options{Width: 400, Height: 400, Fit: thumbjob.FitInside}, 400, 300, false},
				{"width 319", thumbjob.Options{Width: 319, Fit: thumbjob.FitInside}, 319, 239, true},
				{"cover 200x200: both sides cover it", thumbjob.Options{Width: 200, Height: 200, Fit: thumbjob.FitCover}, 200, 200, true},
				{"cover 256x256: 240 rows do not", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover}, 256, 256, false},
				{"fill 300x200", thumbjob.Options{Width: 300, Height: 200, Fit: thumbjob.FitFill}, 300, 200, true},
				{"fill 300x250", thumbjob.Options{Width: 300, Height: 250, Fit: thumbjob.FitFill}, 300, 250, false},
			} {
				t.Run(c.name, func(t *testing.T) {
					c.o.Format = imagefmt.PNG
					img, err := testEngine.Thumbnail(context.Background(), src, c.o)
					if err != nil {
						t.Fatal(err)
					}
					got := decodePNG(t, img.Bytes)
					if got.Bounds().Dx() != c.w || got.Bounds().Dy() != c.h {
						t.Errorf("%v, want %dx%d", got.Bounds().Size(), c.w, c.h)
					}
					if red := isRed(got.At(c.w/2, c.h/2)); red != c.thumbnail {
						t.Errorf("decoded the embedded thumbnail: %v, want %v", red, c.thumbnail)
					}
				})
			}
		})
	}
}

func TestHEIFThumbHashFromEmbeddedThumbnail(t *testing.T) {
	for _, c := range []struct {
		name      string
		tw, th    int
		thumbnail bool
	}{
		{"320x240", 320, 240, true},
		{"104x78", 104, 78, true},
		{"96x72: smaller than the hash", 96, 72, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := heifWithThumbnail(t, false, 640, 480, c.tw, c.th)
			info, err := testEngine.Info(context.Background(), src, thumbjob.InfoJob{ThumbHash: true})
			if err != nil {
				t.Fatal(err)
			}
			hash, err := base64.StdEncoding.DecodeString(info.ThumbHash)
			if err != nil {
				t.Fatal(err)
			}
			avg := thumbhashtest.AverageRGBA(hash)
			if red := avg[0] > avg[1]; red != c.thumbnail {
				t.Errorf("average %v: from the embedded thumbnail %v, want %v", avg, red, c.thumbnail)
			}
		})
	}
}

// heifWithThumbnailFile is a green 640x480 HEIC whose embedded thumbnail
// is thumb, a single-image HEIC file.
func heifWithThumbnailFile(t *testing.T, thumb []byte) []byte {
	t.Helper()
	return heifWithThumbnailOf(t, 640, 480, thumb, "-q", "80")
}

// TestHEIFThumbnailThumbdRefuses covers the thumbnails libvips would
// decode and thumbd does not let it: one of another aspect ratio (within
// libvips' 0.1, beyond thumbd's 1 %). A broken thumbnail is a 422 when
// thumbd uses it (libvips' own choice would fall back to the primary, past
// the estimate that priced the thumbnail), and the primary is decoded when
// the box is beyond it.
func TestHEIFThumbnailThumbdRefuses(t *testing.T) {
	needTools(t, "heif-enc")
	inside := func(side int) thumbjob.Options {
		return thumbjob.Options{Width: side, Height: side, Fit: thumbjob.FitInside, Format: imagefmt.PNG}
	}
	offAspect := heifWithThumbnail(t, false, 640, 480, 320, 256)
	thumb, err := heiftest.Encode(solidImage(320, 240, heifRed), "-q", "80")
	if err != nil {
		t.Fatal(err)
	}
	// The coded picture zeroed: the file's last bytes are its mdat's.
	broken := bytes.Clone(thumb)
	at := bytes.LastIndex(broken, []byte("mdat")) + 4
	clear(broken[at+4:])
	brokenThumb := heifWithThumbnailFile(t, broken)
	for _, c := range []struct {
		name string
		src  []byte
		o    thumbjob.Options
		w, h int
	}{
		{"320x256 thumbnail of 4:3", offAspect, inside(256), 256, 192},
		{"broken thumbnail, box beyond it", brokenThumb, inside(400), 400, 300},
	} {
		t.Run(c.name, func(t *testing.T) {
			img, err := testEngine.Thumbnail(context.Background(), c.src, c.o)
			if err != nil {
				t.Fatal(err)
			}
			got := decodePNG(t, img.Bytes)
			if got.Bounds().Dx() != c.w || got.Bounds().Dy() != c.h || isRed(got.At(c.w/2, c.h/2)) {
				t.Errorf("%v, red %v; want %dx%d of the primary (green)", got.Bounds().Size(), isRed(got.At(c.w/2, c.h/2)), c.w, c.h)
			}
		})
	}
	t.Run("broken thumbnail, used", func(t *testing.T) {
		_, err := testEngine.Thumbnail(context.Background(), brokenThumb, inside(256))
		if !errors.Is(err, thumbjob.ErrUndecodable) {
			t.Errorf("%v, want ErrUndecodable (a 422)", err)
		}
	})
	t.Run("thumbnail decoding to another size than its ispe", func(t *testing.T) {
		// Coded 240x320, declared 320x240: libvips' own check of the
		// decoded aspect ratio keeps the primary, which thumbd refuses.
		lying, err := heiftest.Encode(solidImage(240, 320, heifRed), "-q", "80")
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(lying, []byte("ispe")) + 8
		if at < 8 || at+8 > len(lying) {
			t.Fatal("no ispe in heif-enc's file")
		}
		binary.BigEndian.PutUint32(lying[at:], 320)
		binary.BigEndian.PutUint32(lying[at+4:], 240)
		_, err = testEngine.Thumbnail(context.Background(), heifWithThumbnailFile(t, lying), inside(256))
		if !errors.Is(err, thumbjob.ErrUndecodable) || !strings.Contains(err.Error(), "its header says 320x240") {
			t.Errorf("%v, want ErrUndecodable: the embedded thumbnail is 640x480, its header says 320x240", err)
		}
	})
	t.Run("ThumbHash of the off-aspect file", func(t *testing.T) {
		info, err := testEngine.Info(context.Background(), offAspect, thumbjob.InfoJob{ThumbHash: true})
		if err != nil {
			t.Fatal(err)
		}
		hash, err := base64.StdEncoding.DecodeString(info.ThumbHash)
		if err != nil {
			t.Fatal(err)
		}
		if avg := thumbhashtest.AverageRGBA(hash); avg[0] > avg[1] {
			t.Errorf("average %v: from the 320x256 thumbnail", avg)
		}
	})
}
