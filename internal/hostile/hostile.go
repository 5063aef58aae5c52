// Package hostile crafts the inputs a thumbnail service must survive:
// decompression bombs of every supported format (tiny files declaring huge
// sizes), animations with thousands of frames, minimal headers of formats
// the service does not serve, truncations and bit flips. Pure Go, no
// libvips, deterministic: the fuzz seeds and the hostile-input tests share
// it (at the module root, where a bench or soak mode can reach it too).
package hostile

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"strconv"
)

// Pattern is a small deterministic picture with gradients and edges.
func Pattern(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r := uint8(x * 255 / max(w-1, 1))
			g := uint8(y * 255 / max(h-1, 1))
			b := uint8((x ^ y) * 7)
			img.SetNRGBA(x, y, color.NRGBA{r, g, b, 255})
		}
	}
	return img
}

// JPEG encodes img as a baseline JPEG.
func JPEG(img image.Image, q int) []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: q}); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// PNG encodes img as a PNG.
func PNG(img image.Image) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// GIF encodes one frame with a palette of up to 256 colours.
func GIF(img image.Image) []byte {
	var buf bytes.Buffer
	if err := gif.Encode(&buf, img, &gif.Options{NumColors: 256}); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// AnimatedGIF has frames frames of w x h; each frame has its own local
// palette (a different colour), so the decoder switches tables per frame.
func AnimatedGIF(w, h, frames int) []byte {
	anim := &gif.GIF{}
	for i := 0; i < frames; i++ {
		pal := color.Palette{color.RGBA{uint8(i * 37), uint8(255 - i*11), uint8(i * 5), 255}, color.RGBA{0, 0, 0, 0}}
		p := image.NewPaletted(image.Rect(0, 0, w, h), pal)
		for j := range p.Pix {
			p.Pix[j] = uint8((j + i) % 2)
		}
		anim.Image = append(anim.Image, p)
		anim.Delay = append(anim.Delay, 2)
		anim.Disposal = append(anim.Disposal, gif.DisposalBackground)
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, anim); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// PNGBomb is a valid PNG header declaring w x h 8-bit RGB pixels followed
// by a few bytes of data.
func PNGBomb(w, h uint32) []byte {
	var buf bytes.Buffer
	buf.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2
	PNGChunk(&buf, "IHDR", ihdr)
	PNGChunk(&buf, "IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	PNGChunk(&buf, "IEND", nil)
	return buf.Bytes()
}

// PNGChunk appends a chunk with its CRC.
func PNGChunk(buf *bytes.Buffer, typ string, data []byte) {
	binary.Write(buf, binary.BigEndian, uint32(len(data)))
	c := append([]byte(typ), data...)
	buf.Write(c)
	binary.Write(buf, binary.BigEndian, crc32.ChecksumIEEE(c))
}

// PNGZeroChunks is a valid PNG with zero-length chunks inserted before the
// image data: an unknown ancillary chunk and an empty IDAT.
func PNGZeroChunks(src []byte) []byte {
	// The IHDR chunk ends at 8 + 8 + 13 + 4 = 33.
	var buf bytes.Buffer
	buf.Write(src[:33])
	PNGChunk(&buf, "zeRo", nil)
	PNGChunk(&buf, "IDAT", nil)
	buf.Write(src[33:])
	return buf.Bytes()
}

// JPEGWithSize patches the first SOF marker of a JPEG to declare w x h;
// the scan data stays that of the original small image.
func JPEGWithSize(src []byte, w, h uint16) []byte {
	out := bytes.Clone(src)
	for i := 2; i+9 < len(out); {
		if out[i] != 0xFF {
			break
		}
		m := out[i+1]
		n := int(binary.BigEndian.Uint16(out[i+2:]))
		if m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC {
			binary.BigEndian.PutUint16(out[i+5:], h)
			binary.BigEndian.PutUint16(out[i+7:], w)
			return out
		}
		i += 2 + n
	}
	panic("hostile: no SOF marker")
}

// JPEGBomb is a tiny baseline JPEG whose SOF declares w x h.
func JPEGBomb(w, h uint16) []byte { return JPEGWithSize(JPEG(Pattern(16, 16), 75), w, h) }

// JPEGEmptyComment inserts a comment segment with no content (length 2)
// right after SOI: a zero-size chunk.
func JPEGEmptyComment(src []byte) []byte {
	return append(append(bytes.Clone(src[:2]), 0xFF, 0xFE, 0x00, 0x02), src[2:]...)
}

// GIFBomb is a 1x1 GIF whose logical screen declares w x h.
func GIFBomb(w, h uint16) []byte {
	out := GIF(image.NewPaletted(image.Rect(0, 0, 1, 1), color.Palette{color.Black, color.White}))
	binary.LittleEndian.PutUint16(out[6:], w)
	binary.LittleEndian.PutUint16(out[8:], h)
	return out
}

// GIFFrameBomb is a GIF with a 1x1 logical screen whose single frame
// declares w x h at its image descriptor.
func GIFFrameBomb(w, h uint16) []byte {
	out := GIF(image.NewPaletted(image.Rect(0, 0, 1, 1), color.Palette{color.Black, color.White}))
	// Header 6, screen descriptor 7, global table (if any), then ','.
	i := bytes.IndexByte(out[13:], ',') + 13
	binary.LittleEndian.PutUint16(out[i+5:], w)
	binary.LittleEndian.PutUint16(out[i+7:], h)
	return out
}

func riff(chunks ...[]byte) []byte {
	body := []byte("WEBP")
	for _, c := range chunks {
		body = append(body, c...)
	}
	out := []byte("RIFF")
	out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
	return append(out, body...)
}

func webpChunk(fourcc string, data []byte) []byte {
	c := append([]byte(fourcc), binary.LittleEndian.AppendUint32(nil, uint32(len(data)))...)
	c = append(c, data...)
	if len(data)%2 == 1 {
		c = append(c, 0)
	}
	return c
}

func u24(b []byte, v int) []byte { return append(b, byte(v), byte(v>>8), byte(v>>16)) }

// vp8lHeader is a lossless bitstream header for w x h (1..16384) followed by
// a few bytes that do not decode.
func vp8lHeader(w, h int) []byte {
	bits := uint32(w-1) | uint32(h-1)<<14 | 1<<28 // alpha hint, version 0
	b := []byte{0x2f}
	b = binary.LittleEndian.AppendUint32(b, bits)
	return append(b, 0, 0, 0, 0, 0, 0, 0, 0)
}

// WebPBomb is a still WebP: a VP8X canvas of w x h (at most 16384 per side)
// and a lossless bitstream header of the same size, a few dozen bytes.
func WebPBomb(w, h int) []byte {
	x := []byte{0x10, 0, 0, 0} // alpha flag
	x = u24(u24(x, w-1), h-1)
	return riff(webpChunk("VP8X", x), webpChunk("VP8L", vp8lHeader(w, h)))
}

// WebPCanvasBomb is an animated WebP whose VP8X canvas declares w x h while
// its one frame is 1x1.
func WebPCanvasBomb(w, h int) []byte {
	x := []byte{0x02 | 0x10, 0, 0, 0} // animation + alpha
	x = u24(u24(x, w-1), h-1)
	anim := []byte{0, 0, 0, 0, 0, 0} // background colour, loop count
	frame := u24(u24(nil, 0), 0)     // x, y offsets /2
	frame = u24(u24(frame, 0), 0)    // width-1, height-1
	frame = u24(frame, 100)          // duration
	frame = append(frame, 0)         // flags
	frame = append(frame, webpChunk("VP8L", vp8lHeader(1, 1))...)
	return riff(webpChunk("VP8X", x), webpChunk("ANIM", anim), webpChunk("ANMF", frame))
}

// Unsupported returns minimal headers of formats thumbd does not serve,
// by name. Each would be accepted by some libvips loader.
func Unsupported() map[string][]byte {
	return map[string][]byte{
		"svg":       []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000"><rect width="10" height="10"/></svg>`),
		"svg-bare":  []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`),
		"pdf":       []byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"),
		"psd":       []byte("8BPS\x00\x01\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x10\x00\x00\x00\x10\x00\x08\x00\x03"),
		"ppm":       []byte("P6\n1 1\n255\n\x00\x00\x00"),
		"vips":      []byte{0x08, 0xf2, 0xa6, 0xb6, 0, 0, 0, 0},
		"matlab":    []byte("MATLAB 5.0 MAT-file"),
		"fits":      []byte("SIMPLE  =                    T"),
		"webp-wave": []byte("RIFF\x04\x00\x00\x00WAVE"),
		"cursor":    {0, 0, 2, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0, 40, 0, 0, 0, 22, 0, 0, 0},
		"jpeg-2b":   {0xFF, 0xD8},
		"png-7b":    []byte("\x89PNG\r\n\x1a"),
		"html":      []byte("<!DOCTYPE html><html></html>"),
		"zero":      {},
		"one-byte":  {0},
	}
}

// Malformed returns, by name, headers of the formats read since issue 35
// (HEIF, AVIF, TIFF, JPEG XL, BMP, ICO, video) that are sniffed as theirs and
// cannot be decoded: no pixel data, or a header that says nothing usable.
// Each must be a 4xx (422), never a 5xx.
func Malformed() map[string][]byte {
	le := binary.LittleEndian
	tiff := []byte("II*\x00\x08\x00\x00\x00") // little-endian, IFD at 8
	tiff = append(tiff, 0x03, 0x00)           // 3 entries: a 1x1 8-bit image without strips
	for _, e := range [][3]uint16{{256, 3, 1}, {257, 3, 1}, {258, 3, 8}} {
		tiff = le.AppendUint16(tiff, e[0])
		tiff = le.AppendUint16(tiff, e[1])
		tiff = le.AppendUint32(tiff, 1)
		tiff = le.AppendUint32(tiff, uint32(e[2]))
	}
	tiff = append(tiff, 0, 0, 0, 0)
	// A 1x1 24-bit BMP whose pixel row is missing.
	bmp := []byte("BM")
	bmp = le.AppendUint32(bmp, 54)
	bmp = append(bmp, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0)
	bmp = le.AppendUint32(bmp, 1)
	bmp = le.AppendUint32(bmp, 1)
	bmp = append(bmp, 1, 0, 24, 0)
	bmp = append(bmp, make([]byte, 24)...)
	return map[string][]byte{
		"tiff-no-strips": tiff,
		"tiff-be-no-ifd": []byte("MM\x00*\x00\x00\x00\x08\x00\x00"),
		"heic-ftyp-only": append([]byte{0, 0, 0, 0x18}, []byte("ftypheic\x00\x00\x00\x00mif1heic")...),
		"avif-ftyp-only": append([]byte{0, 0, 0, 0x1c}, []byte("ftypavif\x00\x00\x00\x00avifmif1miaf")...),
		"bmp-no-pixels":  bmp,
		// an entry of 40 bytes after the directory, the file ending there
		"ico-no-entry": {0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0, 40, 0, 0, 0, 22, 0, 0, 0},
		"jxl-cut":      {0xFF, 0x0A, 0xFA, 0x7F, 0x01, 0x90},
		// Videos (issue 47): a container with nothing in it, and one whose
		// index is empty: sniffed as a video, never priced.
		"video-mp4-ftyp-only":  []byte("\x00\x00\x00\x14ftypisom\x00\x00\x00\x00mp41"),
		"video-mp4-empty-moov": []byte("\x00\x00\x00\x14ftypisom\x00\x00\x00\x00mp41\x00\x00\x00\x08moov"),
		"video-webm-ebml-only": {0x1A, 0x45, 0xDF, 0xA3, 0x87, 0x42, 0x82, 0x84, 'w', 'e', 'b', 'm'},
	}
}

// Truncations returns src cut at a few points: just after the magic, in
// the header, at half, one byte short.
func Truncations(src []byte) map[string][]byte {
	out := map[string][]byte{}
	for _, n := range []int{4, 16, 40, len(src) / 2, len(src) - 1} {
		if n > 0 && n < len(src) {
			out["cut-"+strconv.Itoa(n)] = bytes.Clone(src[:n])
		}
	}
	return out
}

// BitFlips returns copies of src with bits flipped, deterministically
// from seed; the first 12 bytes (the magic the format is sniffed from)
// are kept so that the decoder, not the sniffer, meets the damage.
func BitFlips(src []byte, seed uint64, copies, flips int) [][]byte {
	r := rand.New(rand.NewPCG(seed, 0x7468756d6264))
	var out [][]byte
	keep := min(12, len(src))
	for c := 0; c < copies && len(src) > keep; c++ {
		b := bytes.Clone(src)
		for i := 0; i < flips; i++ {
			j := keep + r.IntN(len(b)-keep)
			b[j] ^= 1 << r.IntN(8)
		}
		out = append(out, b)
	}
	return out
}

// Random returns n random bytes, deterministically from seed.
func Random(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
