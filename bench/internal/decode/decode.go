// Package decode turns the thumbnails the bench gets back into pixels, so
// that the contract check can see that they are what was asked and the
// engine comparison can score them: PNG, JPEG and WebP with Go's decoders;
// AVIF, and any other format Go cannot decode, with the vips command of
// Debian's libvips-tools; an animated WebP frame by frame, each frame with Go's WebP
// decoder.
package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"

	"github.com/thumbd/thumbd/bench/internal/formats"
	"github.com/thumbd/thumbd/internal/imagediff"
	"golang.org/x/image/webp"
)

// goDecoder is Go's decoder of format, nil for none.
func goDecoder(format string) func(io.Reader) (image.Image, error) {
	switch format {
	case "png":
		return png.Decode
	case "jpeg":
		return jpeg.Decode
	case "webp":
		return webp.Decode
	}
	return nil
}

// NeedsVips reports whether decoding format takes the vips command.
func NeedsVips(format string) bool { return goDecoder(format) == nil }

// Still decodes a one-frame image in format: PNG, JPEG and WebP in Go, any
// other format thumbd writes (AVIF; thumbd's format table) through the
// vips command.
func Still(format string, b []byte) (image.Image, error) {
	if dec := goDecoder(format); dec != nil {
		return dec(bytes.NewReader(b))
	}
	if _, written := formats.Quality(format); !written {
		return nil, fmt.Errorf("decode: no decoder for %q", format)
	}
	p, err := imagediff.VipsToPNG(b)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", format, err)
	}
	return png.Decode(bytes.NewReader(p))
}

// Animation is an animated WebP: its canvas, its loop count (0: forever)
// and its frames in order.
type Animation struct {
	Width, Height int
	Loop          int
	Frames        []Frame
}

// Frame is one frame of an animation: where it sits on the canvas, how
// long it shows and its pixels (a frame may cover only the part of the
// canvas that changed).
type Frame struct {
	X, Y     int
	Duration int // milliseconds
	Image    image.Image
}

type chunk struct {
	fourCC  string
	payload []byte
}

// chunks splits a RIFF body into its chunks; each payload is padded to an
// even length, the size field not counting the pad.
func chunks(b []byte) ([]chunk, error) {
	var out []chunk
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, errors.New("webp: a chunk header is cut short")
		}
		size := int(binary.LittleEndian.Uint32(b[4:8]))
		if size > len(b)-8 {
			return nil, fmt.Errorf("webp: chunk %q of %d bytes runs past the end", b[:4], size)
		}
		out = append(out, chunk{string(b[:4]), b[8 : 8+size]})
		b = b[min(8+size+size%2, len(b)):]
	}
	return out, nil
}

func u24(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 }

// riff wraps chunks into a WebP file.
func riff(cs ...chunk) []byte {
	body := []byte("WEBP")
	for _, c := range cs {
		body = append(body, c.fourCC...)
		body = binary.LittleEndian.AppendUint32(body, uint32(len(c.payload)))
		body = append(body, c.payload...)
		if len(c.payload)%2 == 1 {
			body = append(body, 0)
		}
	}
	return append(binary.LittleEndian.AppendUint32([]byte("RIFF"), uint32(len(body))), body...)
}

// WebPAnimation reads an animated WebP (a VP8X canvas with the animation
// flag, an ANIM chunk, ANMF frames) and decodes every frame. Go's WebP
// decoder reads still images only, so each frame's bitstream (VP8 or VP8L,
// with its ALPH chunk if any) is decoded as a still WebP of its own.
func WebPAnimation(b []byte) (Animation, error) {
	var a Animation
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return a, errors.New("webp: not a RIFF WEBP file")
	}
	end := min(8+int(binary.LittleEndian.Uint32(b[4:8])), len(b))
	cs, err := chunks(b[12:end])
	if err != nil {
		return a, err
	}
	if len(cs) == 0 || cs[0].fourCC != "VP8X" || len(cs[0].payload) < 10 || cs[0].payload[0]&0x02 == 0 {
		return a, errors.New("webp: not animated (no VP8X chunk with the animation flag first)")
	}
	a.Width, a.Height = u24(cs[0].payload[4:])+1, u24(cs[0].payload[7:])+1
	for _, c := range cs[1:] {
		switch c.fourCC {
		case "ANIM":
			if len(c.payload) < 6 {
				return a, errors.New("webp: ANIM chunk cut short")
			}
			a.Loop = int(binary.LittleEndian.Uint16(c.payload[4:6]))
		case "ANMF":
			f, err := frame(c.payload)
			if err != nil {
				return a, fmt.Errorf("webp: frame %d: %w", len(a.Frames), err)
			}
			if f.X+f.Image.Bounds().Dx() > a.Width || f.Y+f.Image.Bounds().Dy() > a.Height {
				return a, fmt.Errorf("webp: frame %d (%v at %d,%d) leaves the %dx%d canvas", len(a.Frames), f.Image.Bounds().Size(), f.X, f.Y, a.Width, a.Height)
			}
			a.Frames = append(a.Frames, f)
		}
	}
	if len(a.Frames) == 0 {
		return a, errors.New("webp: an animation without frames")
	}
	return a, nil
}

// frame decodes one ANMF payload: offset/2, size-1 and duration (24 bits
// each), a flags byte, then the frame's chunks.
func frame(p []byte) (Frame, error) {
	if len(p) < 16 {
		return Frame{}, errors.New("ANMF chunk cut short")
	}
	f := Frame{X: 2 * u24(p), Y: 2 * u24(p[3:]), Duration: u24(p[12:])}
	w, h := u24(p[6:])+1, u24(p[9:])+1
	cs, err := chunks(p[16:])
	if err != nil {
		return f, err
	}
	var alpha, bits *chunk
	for i := range cs {
		switch cs[i].fourCC {
		case "ALPH":
			alpha = &cs[i]
		case "VP8 ", "VP8L":
			bits = &cs[i]
		}
	}
	if bits == nil {
		return f, errors.New("no VP8 or VP8L bitstream")
	}
	still := riff(*bits)
	if alpha != nil {
		// A lossy frame's alpha is a chunk of its own, which a still WebP
		// carries after a VP8X header with the alpha flag.
		vp8x := make([]byte, 10)
		vp8x[0] = 0x10
		vp8x[4], vp8x[5], vp8x[6] = byte(w-1), byte((w-1)>>8), byte((w-1)>>16)
		vp8x[7], vp8x[8], vp8x[9] = byte(h-1), byte((h-1)>>8), byte((h-1)>>16)
		still = riff(chunk{"VP8X", vp8x}, *alpha, *bits)
	}
	if f.Image, err = webp.Decode(bytes.NewReader(still)); err != nil {
		return f, err
	}
	if got := f.Image.Bounds().Size(); got != image.Pt(w, h) {
		return f, fmt.Errorf("the bitstream is %v, the frame header says %dx%d", got, w, h)
	}
	return f, nil
}
