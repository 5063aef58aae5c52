package thumb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/internal/hostile"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// icoOf is a one-entry ICO of entry (a PNG, or a DIB with its height
// doubled), w x h in its directory.
func icoOf(entry []byte, w, h int) []byte {
	out := []byte{0, 0, 1, 0, 1, 0, byte(w), byte(h), 0, 0, 1, 0, 32, 0}
	out = binary.LittleEndian.AppendUint32(out, uint32(len(entry)))
	out = binary.LittleEndian.AppendUint32(out, 22)
	return append(out, entry...)
}

// TestMalformedICOSameAnswerForEveryOutput: a broken ICO is refused with
// the same error (code and sentence: the decoder's, in Go, before libvips
// reads a byte) whether the thumbnail asked for is a PNG, a JPEG or a
// WebP. An ICO's PNG entry used to go to libvips' PNG loader, which
// refused it while encoding: Debian's libvips said so in other words for
// a PNG ("vips2png: unable to write to target"), the images' 8.16.1
// answered PNG and refused JPEG and WebP (issue 45).
func TestMalformedICOSameAnswerForEveryOutput(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 48, 40))
	for i := range m.Pix {
		m.Pix[i] = byte(i * 7)
	}
	m.SetNRGBA(0, 0, color.NRGBA{1, 2, 3, 4})
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	idat := bytes.Index(good, []byte("IDAT"))
	damaged := func(f func(b []byte) []byte) []byte { return icoOf(f(bytes.Clone(good)), 48, 40) }
	// A 32-bit DIB entry of 16x16 whose pixels stop after 3 rows.
	dib := make([]byte, 40, 40+3*64)
	binary.LittleEndian.PutUint32(dib, 40)
	binary.LittleEndian.PutUint32(dib[4:], 16)
	binary.LittleEndian.PutUint32(dib[8:], 32)
	dib[12], dib[14] = 1, 32
	dib = append(dib, bytes.Repeat([]byte{9, 99, 199, 255}, 48)...)
	cases := map[string][]byte{
		"PNG entry, a checksum wrong": damaged(func(b []byte) []byte { b[idat+4+100] ^= 0xFF; return b }),
		"PNG entry cut in its pixels": damaged(func(b []byte) []byte { return b[:idat+200] }),
		"PNG entry cut in half":       damaged(func(b []byte) []byte { return b[:len(b)/2] }),
		"PNG entry's zlib broken":     damaged(func(b []byte) []byte { b[idat+4] ^= 0xFF; b[idat+5] ^= 0xFF; return b }),
		"DIB entry cut short":         icoOf(dib, 16, 16),
		"no entry":                    hostile.Malformed()["ico-no-entry"],
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			var first error
			for _, f := range []imagefmt.Format{imagefmt.PNG, imagefmt.JPEG, imagefmt.WebP} {
				_, err := testEngine.Thumbnail(context.Background(), src, thumbjob.Options{Width: 32, Height: 32, Fit: thumbjob.FitCover, Format: f})
				var e *thumbjob.Error
				if !errors.As(err, &e) || e != thumbjob.ErrUndecodable || strings.Contains(err.Error(), "vips") {
					t.Fatalf("%s: %v, want the decoder's unprocessable_image", f, err)
				}
				if first == nil {
					first = err
				} else if err.Error() != first.Error() {
					t.Errorf("%s: %q; png: %q", f, err, first)
				}
			}
		})
	}
}
