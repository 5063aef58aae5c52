// Package bmp decodes BMP and ICO sources in pure Go, for libvips, which
// has no loader of its own for them (only ImageMagick's, which thumbd
// does not link). It reads the header first (Config: what memcost prices),
// refuses a size over the caller's pixel limit before it allocates, and
// gives the pixels as thumb hands them to libvips: 8-bit RGB or RGBA
// samples, interleaved, rows from the top, never more bands than Config
// says. An ICO's PNG entry is decoded here too (image/png), so that every
// ICO reaches libvips the same way and a broken one is refused here,
// before libvips reads a byte of it.
//
// golang.org/x/image/bmp reads a subset (no RLE, no 16-bit, no bit
// fields, no OS/2 header, no ICO) and allocates before any limit can be
// checked, so this package is one decoder for every case instead.
//
// It reads every layout image-rs (lenient, its default) or ImageMagick 6
// reads; neither reads JPEG or PNG inside a BMP, OS/2's Huffman 1D or
// 64-bit pixels, nor does it. An embedded ICC profile is not applied
// (ImageMagick's convert does not either). Where files stray from the
// format:
//   - the planes field is not read; a header of no known size from 40
//     bytes on is read as Windows' (ImageMagick does);
//   - a palette longer than the bit count allows is cut to it; one cut
//     short by the pixel offset (OS/2 files) is what lies before it; an
//     index past the palette's end is opaque black;
//   - a pixel offset inside the headers is ignored: the pixels follow the
//     palette, as in an ICO;
//   - pixel data one byte short is read with that byte 0 (image-rs);
//     shorter is an error;
//   - bit fields all 0 (the three colour masks) are the default masks,
//     5-5-5 or 8-8-8, which keep the picture (ImageMagick 6 and image-rs
//     read black); one or two of them 0 are a band of 0, as both read it;
//     a field of fewer than 8 bits is scaled by repeating its bits, one
//     of more keeps its top 8;
//   - 32-bit pixels without bit fields have alpha in their fourth byte
//     (reserved by the format, used by its writers) unless it is 0
//     everywhere: then they are opaque, or in an ICO take the AND mask;
//     with bit fields, alpha is the alpha field's;
//   - RLE (RLE8, RLE4, OS/2's RLE24) may be top-down; pixels it skips
//     (delta, early end of line or of bitmap) are the palette's first
//     colour, as ImageMagick reads them (image-rs makes them black, the
//     BMP Suite's reference transparent), black in RLE24; a run past its
//     row's end is cut there (ImageMagick's encoder runs into the row's
//     padding); data past the last row, or a delta past the image, ends
//     the bitmap (image-rs); data that ends before the bitmap does is an
//     error;
//   - an ICO entry's missing AND mask is opaque; a PNG entry without its
//     IEND chunk is read (libpng and browsers read it).
//
// Every error wraps thumbjob.ErrUndecodable, or thumbjob.ErrTooManyPixels
// for a size over the limit, so that the engine answers its API code.
package bmp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Compression values of a BMP's info header.
const (
	biRGB            = 0
	biRLE8           = 1
	biRLE4           = 2
	biBitfields      = 3 // in an OS/2 2.x header of 1 bit a pixel: Huffman 1D
	biRLE24          = 4 // in an OS/2 2.x header; Windows' 4 is JPEG
	biAlphaBitfields = 6
)

const (
	fileHeaderLen = 14
	coreHeaderLen = 12 // OS/2 1.x BITMAPCOREHEADER
	infoHeaderLen = 40 // BITMAPINFOHEADER
	pngSignature  = "\x89PNG\r\n\x1a\n"
	// maxSide bounds a side as libvips does (VIPS_MAX_COORD).
	maxSide = 10_000_000
)

// Config is what a BMP's or an ICO's header declares, read without
// decoding a pixel.
type Config struct {
	Width, Height int
	// Bands is 3 (RGB) or 4 (RGBA): Decode makes as many, or fewer (a
	// 32-bit BMP whose alpha is 0 everywhere keeps an opaque fourth band).
	Bands int
	// BitCount is the bits a pixel as stored (1, 2, 4, 8, 16, 24, 32), or
	// the PNG entry's bit depth.
	BitCount int
	// Compression is the DIB's (0 RGB, 1 RLE8, 2 RLE4, 3 and 6 bit fields,
	// 4 OS/2's RLE24).
	Compression int
	TopDown     bool
	// PNG: the ICO's chosen entry is a PNG.
	PNG bool
}

// Alpha reports whether the decoded image has an alpha band.
func (c Config) Alpha() bool { return c.Bands == 4 }

// Image is a decoded BMP or ICO entry: Width x Height x Bands bytes, rows
// from the top, samples interleaved.
type Image struct {
	Pix                  []byte
	Width, Height, Bands int
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, fmt.Sprintf(format, args...))
}

// isICO tells an ICO from a BMP as imagefmt sniffs them.
func isICO(buf []byte) bool { return bytes.HasPrefix(buf, []byte("\x00\x00\x01\x00")) }

// DecodeConfig reads a BMP's or an ICO's header: for an ICO, that of the
// entry Decode would decode (the largest).
func DecodeConfig(buf []byte) (Config, error) {
	if isICO(buf) {
		e, err := icoEntry(buf)
		if err != nil {
			return Config{}, err
		}
		return e.config()
	}
	d, err := parseBMP(buf)
	if err != nil {
		return Config{}, err
	}
	return d.config(), nil
}

// Decode decodes a BMP, or an ICO's largest entry, refusing from the
// header (before allocating) a size of more than maxPixels.
func Decode(buf []byte, maxPixels int64) (Image, error) {
	if isICO(buf) {
		e, err := icoEntry(buf)
		if err != nil {
			return Image{}, err
		}
		return e.decode(maxPixels)
	}
	d, err := parseBMP(buf)
	if err != nil {
		return Image{}, err
	}
	if err := checkPixels("BMP", d.width, d.height, maxPixels); err != nil {
		return Image{}, err
	}
	return d.decode(buf[d.pixelOffset:])
}

func checkPixels(what string, w, h int, maxPixels int64) error {
	if px := int64(w) * int64(h); px > maxPixels {
		return fmt.Errorf("%w: the %s is %dx%d, more than the %d pixels allowed", thumbjob.ErrTooManyPixels, what, w, h, maxPixels)
	}
	return nil
}

// dib is a parsed device-independent bitmap header: a BMP's after its
// file header, or an ICO entry's.
type dib struct {
	width, height int
	topDown       bool
	bitCount      int
	compression   int
	palette       [][3]byte // RGB, padded to 1<<bitCount with black
	masks         [4]uint32 // R, G, B, A for 16- and 32-bit pixels
	alpha         bool      // 32-bit or bit-field pixels carry alpha
	pixelOffset   int       // where the pixels start in the buffer parsed
	ico           bool      // an ICO entry: an AND mask follows the pixels
}

func (d *dib) config() Config {
	c := Config{Width: d.width, Height: d.height, Bands: 3, BitCount: d.bitCount, Compression: d.compression, TopDown: d.topDown}
	if d.alpha || d.ico {
		c.Bands = 4
	}
	return c
}

func (d *dib) rle() bool {
	return d.compression == biRLE8 || d.compression == biRLE4 || d.compression == biRLE24
}

func parseBMP(buf []byte) (*dib, error) {
	if len(buf) < fileHeaderLen+4 || string(buf[:2]) != "BM" {
		return nil, malformed("BMP file header cut short")
	}
	offset := int64(binary.LittleEndian.Uint32(buf[10:]))
	if offset > int64(len(buf)) {
		return nil, malformed("BMP pixel data at %d, outside the file's %d bytes", offset, len(buf))
	}
	d, err := parseDIB(buf[fileHeaderLen:], false, int(offset)-fileHeaderLen)
	if err != nil {
		return nil, err
	}
	d.pixelOffset += fileHeaderLen
	return d, nil
}

// parseDIB reads an info header (any version), its bit fields and its
// palette. pixelAt is where the file header says the pixels start in b
// (an ICO entry's: -1, none); pixelOffset is set to it when it lies past
// the palette, else to the first byte after the palette.
func parseDIB(b []byte, ico bool, pixelAt int) (*dib, error) {
	le := binary.LittleEndian
	if len(b) < 4 {
		return nil, malformed("BMP info header cut short")
	}
	size := le.Uint32(b)
	if uint64(size) > uint64(len(b)) {
		return nil, malformed("BMP info header of %d bytes in %d", size, len(b))
	}
	d := &dib{ico: ico}
	paletteEntry := 4
	var width, height int64
	os2 := false // an OS/2 2.x header: compressions 3 and 4 are its own
	switch {
	case size == coreHeaderLen:
		width, height = int64(le.Uint16(b[4:])), int64(int16(le.Uint16(b[6:])))
		d.bitCount = int(le.Uint16(b[10:]))
		paletteEntry = 3
	case size >= 16:
		width, height = int64(int32(le.Uint32(b[4:]))), int64(int32(le.Uint32(b[8:])))
		d.bitCount = int(le.Uint16(b[14:]))
		if size >= 20 {
			d.compression = int(le.Uint32(b[16:]))
		}
		os2 = size <= 64 && size != infoHeaderLen && size != 52 && size != 56
	default:
		return nil, malformed("BMP info header of %d bytes", size)
	}
	if height < 0 {
		height, d.topDown = -height, true
	}
	if ico {
		height /= 2 // the XOR image, then the AND mask
	}
	if width <= 0 || height <= 0 || width > maxSide || height > maxSide {
		return nil, malformed("BMP of %dx%d pixels", width, height)
	}
	d.width, d.height = int(width), int(height)
	p := int(size)
	switch c := d.compression; {
	case c == biRGB:
		switch d.bitCount {
		case 1, 2, 4, 8, 24:
		case 16:
			d.masks = [4]uint32{0x7C00, 0x03E0, 0x001F, 0}
		case 32: // the fourth byte is alpha unless it is 0 everywhere
			d.masks = [4]uint32{0xFF0000, 0xFF00, 0xFF, 0xFF000000}
			d.alpha = true
		default:
			return nil, malformed("BMP of %d bits a pixel", d.bitCount)
		}
	case c == biRLE8 && d.bitCount == 8, c == biRLE4 && d.bitCount == 4, os2 && c == biRLE24 && d.bitCount == 24:
	case c == biRLE8 || c == biRLE4:
		return nil, malformed("BMP with RLE%d compression, %d bits a pixel", map[int]int{biRLE8: 8, biRLE4: 4}[c], d.bitCount)
	case os2 && (c == biRLE24 || c == biBitfields && d.bitCount < 16):
		return nil, malformed("OS/2 BMP with compression %d, %d bits a pixel (RLE24 or Huffman 1D)", c, d.bitCount)
	case c == biBitfields || c == biAlphaBitfields:
		var err error
		if p, err = d.readMasks(b, size); err != nil {
			return nil, err
		}
	default:
		return nil, malformed("BMP with compression %d (JPEG, PNG or unknown)", c)
	}
	if d.bitCount <= 8 {
		colours := 1 << d.bitCount
		if size >= 36 {
			if used := le.Uint32(b[32:]); used != 0 && used < uint32(colours) {
				colours = int(used)
			}
		}
		if pixelAt >= p && pixelAt < p+colours*paletteEntry {
			colours = (pixelAt - p) / paletteEntry // the rest would be the pixels
		}
		if p+colours*paletteEntry > len(b) {
			return nil, malformed("BMP palette cut short")
		}
		d.palette = make([][3]byte, 1<<d.bitCount) // past the colours given: black
		for i := range colours {
			e := b[p+i*paletteEntry:]
			d.palette[i] = [3]byte{e[2], e[1], e[0]}
		}
		p += colours * paletteEntry
	}
	d.pixelOffset = max(p, pixelAt)
	return d, nil
}

// readMasks reads the bit fields (from 52 bytes on the header holds them,
// and from 56 the alpha field; before, they follow it: 3, or 4 for
// BI_ALPHABITFIELDS) and returns where the palette starts.
func (d *dib) readMasks(b []byte, size uint32) (int, error) {
	if d.bitCount != 16 && d.bitCount != 32 {
		return 0, malformed("BMP with bit fields and %d bits a pixel", d.bitCount)
	}
	n, at, p := 3, 40, int(size)
	if d.compression == biAlphaBitfields {
		n = 4
	}
	if size < 52 {
		at = p
		p += 4 * n
	} else if size >= 56 {
		n = 4
	}
	if size >= 52 && size < uint32(at+4*n) || len(b) < at+4*n {
		return 0, malformed("BMP bit fields cut short")
	}
	for i := range n {
		d.masks[i] = binary.LittleEndian.Uint32(b[at+4*i:])
	}
	if d.masks[0]|d.masks[1]|d.masks[2] == 0 {
		// No colour field at all: the defaults keep the picture.
		d.masks[0], d.masks[1], d.masks[2] = 0x7C00, 0x03E0, 0x001F
		if d.bitCount == 32 {
			d.masks[0], d.masks[1], d.masks[2] = 0xFF0000, 0xFF00, 0xFF
		}
	}
	for _, m := range d.masks {
		if m != 0 && !contiguous(m) || d.bitCount == 16 && m > 0xFFFF {
			return 0, malformed("BMP bit field %#x", m)
		}
	}
	d.alpha = d.masks[3] != 0
	return p, nil
}

// contiguous: a bit field is one run of set bits.
func contiguous(m uint32) bool {
	m >>= bits.TrailingZeros32(m)
	return m&(m+1) == 0
}

// stride is a stored row's bytes (rows are padded to 4 bytes).
func stride(width, bitCount int) int { return (width*bitCount + 31) / 32 * 4 }

// decode decodes the pixels in px (the buffer from the pixel offset).
func (d *dib) decode(px []byte) (Image, error) {
	c := d.config()
	img := Image{Width: d.width, Height: d.height, Bands: c.Bands}
	var err error
	if d.rle() {
		img.Pix, err = d.decodeRLE(px, c.Bands)
		return img, err
	}
	rowBytes := stride(d.width, d.bitCount)
	if int64(len(px)) < int64(rowBytes)*int64(d.height)-1 {
		return Image{}, malformed("BMP pixel data of %d bytes for %d rows of %d", len(px), d.height, rowBytes)
	}
	img.Pix = make([]byte, d.width*d.height*c.Bands)
	for y := range d.height {
		src := px[y*rowBytes : min((y+1)*rowBytes, len(px))]
		if len(src) < rowBytes { // the last row, a byte short: a 0
			src = append(bytes.Clone(src), 0)
		}
		row := y
		if !d.topDown {
			row = d.height - 1 - y
		}
		d.decodeRow(img.Pix[row*d.width*c.Bands:][:d.width*c.Bands], src, c.Bands)
	}
	if d.bitCount == 32 && d.compression == biRGB {
		d.alpha = !opaqueIfNoAlpha(img.Pix)
	}
	return img, nil
}

// opaqueIfNoAlpha makes RGBA pixels whose alpha is 0 everywhere opaque,
// and says whether it did.
func opaqueIfNoAlpha(pix []byte) bool {
	for i := 3; i < len(pix); i += 4 {
		if pix[i] != 0 {
			return false
		}
	}
	for i := 3; i < len(pix); i += 4 {
		pix[i] = 255
	}
	return true
}

// decodeRow decodes one stored row into dst (width x bands bytes).
func (d *dib) decodeRow(dst, src []byte, bands int) {
	for x := range d.width {
		out := dst[x*bands:][:bands]
		if bands == 4 {
			out[3] = 255
		}
		switch d.bitCount {
		case 1, 2, 4, 8:
			bit := x * d.bitCount
			i := int(src[bit/8]>>(8-d.bitCount-bit%8)) & (1<<d.bitCount - 1)
			copy(out, d.palette[i][:])
		case 24:
			out[0], out[1], out[2] = src[3*x+2], src[3*x+1], src[3*x]
		case 16, 32:
			var v uint32
			if d.bitCount == 16 {
				v = uint32(binary.LittleEndian.Uint16(src[2*x:]))
			} else {
				v = binary.LittleEndian.Uint32(src[4*x:])
			}
			out[0], out[1], out[2] = field(v, d.masks[0]), field(v, d.masks[1]), field(v, d.masks[2])
			if bands == 4 && d.alpha {
				out[3] = field(v, d.masks[3])
			}
		}
	}
}

// field is a bit field's value scaled to 8 bits by repeating its bits (5
// bits abcde make abcdeabc), as ImageMagick and browsers scale them; a
// field of more than 8 bits keeps its top 8; no field is 0.
func field(v, mask uint32) byte {
	if mask == 0 {
		return 0
	}
	n := bits.OnesCount32(mask)
	v = (v & mask) >> bits.TrailingZeros32(mask)
	if n >= 8 {
		return byte(v >> (n - 8))
	}
	var out uint32
	for have := 0; have < 8; have += n {
		out = out<<n | v
	}
	return byte(out >> ((8+n-1)/n*n - 8))
}

// decodeRLE decodes RLE8, RLE4 or RLE24 data: rows from the bottom
// unless the header says top-down; escapes 0 0 end a row, 0 1 the bitmap,
// 0 2 dx dy move (a delta), 0 n start an absolute run of n pixels (padded
// to 2 bytes); n v is a run of n pixels of v (RLE24: n b g r).
func (d *dib) decodeRLE(px []byte, bands int) ([]byte, error) {
	w, h := d.width, d.height
	pix := make([]byte, w*h*bands)
	var skipped [3]byte // RLE24's skipped pixels are black
	if d.compression != biRLE24 {
		skipped = d.palette[0]
	}
	copy(pix, skipped[:])
	if bands == 4 {
		pix[3] = 255
	}
	for filled := bands; filled < len(pix); filled *= 2 { // the first pixel, doubled
		copy(pix[filled:], pix[:filled])
	}
	x, y := 0, 0 // y counts rows as stored
	// span is where pixel x of the row is in pix, and how many of n pixels
	// from there fit in the row (those past its end are dropped).
	span := func(n int) (int, int) {
		row := y
		if !d.topDown {
			row = h - 1 - y
		}
		return (row*w + x) * bands, min(n, max(w-x, 0))
	}
	set := func(at int, c [3]byte) { pix[at], pix[at+1], pix[at+2] = c[0], c[1], c[2] }
	for p := 0; y < h; {
		if p+2 > len(px) {
			if y == h-1 && x >= w {
				break // the last row complete: the end marker is implied
			}
			return nil, malformed("BMP RLE data ends at row %d of %d", y, h)
		}
		n, v := int(px[p]), px[p+1]
		p += 2
		if n > 0 { // a run of n pixels: one colour, or RLE4's two in turn
			var a, b [3]byte
			switch d.compression {
			case biRLE8:
				a, b = d.palette[v], d.palette[v]
			case biRLE4:
				a, b = d.palette[v>>4], d.palette[v&0x0F]
			case biRLE24:
				if p+2 > len(px) {
					return nil, malformed("BMP RLE data ends at row %d of %d", y, h)
				}
				a = [3]byte{px[p+1], px[p], v}
				b = a
				p += 2
			}
			at, k := span(n)
			for i := 0; i < k; i, at = i+1, at+bands {
				if i%2 == 0 {
					set(at, a)
				} else {
					set(at, b)
				}
			}
			x += n
			continue
		}
		switch v {
		case 0: // end of line
			x, y = 0, y+1
		case 1: // end of bitmap
			return pix, nil
		case 2: // delta; past the image, it ends the bitmap
			if p+2 > len(px) {
				return nil, malformed("BMP RLE delta cut short")
			}
			x, y = x+int(px[p]), y+int(px[p+1])
			p += 2
		default: // an absolute run of v pixels, padded to 2 bytes
			count, size := int(v), int(v)
			switch d.compression {
			case biRLE4:
				size = (count + 1) / 2
			case biRLE24:
				size = 3 * count
			}
			if p+size > len(px) {
				return nil, malformed("BMP RLE absolute run cut short")
			}
			run := px[p : p+size]
			at, k := span(count)
			for i := 0; i < k; i, at = i+1, at+bands {
				switch d.compression {
				case biRLE8:
					set(at, d.palette[run[i]])
				case biRLE4:
					set(at, d.palette[run[i/2]>>(4*(1-i%2))&0x0F])
				case biRLE24:
					set(at, [3]byte{run[3*i+2], run[3*i+1], run[3*i]})
				}
			}
			x += count
			p += size + size%2
		}
	}
	return pix, nil
}
