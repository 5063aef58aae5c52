// Package bmp decodes BMP and ICO sources in pure Go, for libvips, which
// has no loader of its own for them (only ImageMagick's, which thumbd
// does not link). It reads the header first (Config: what memcost prices),
// refuses a size over the caller's pixel limit before it allocates, and
// gives the pixels as libvips' vips_image_new_from_memory takes them:
// 8-bit samples, interleaved, rows from the top. An ICO's PNG entry is
// given back as its bytes, for libvips' own PNG loader.
//
// golang.org/x/image/bmp reads a subset (no RLE, no 16-bit, no bit
// fields, no OS/2 header, no ICO) and allocates before any limit can be
// checked, so this package is one decoder for every case instead.
//
// Choices where files stray from the format (browsers' choices):
//   - a palette index past the palette's end is opaque black;
//   - pixels an RLE bitmap skips (delta, early end of line or bitmap) are
//     the palette's first colour;
//   - an RLE run past its row's end is cut there (ImageMagick's encoder
//     runs into the row's padding); a run past the last row is an error,
//     as is pixel data shorter than the rows it declares;
//   - 32-bit pixels without bit fields have alpha in their fourth byte
//     (reserved by the format, used by its writers) unless it is 0
//     everywhere: then they are opaque, or in an ICO take the AND mask;
//     with bit fields, alpha is the alpha field's;
//   - an ICO entry's missing AND mask is opaque.
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
	biBitfields      = 3
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
	// Bands is 3 (RGB) or 4 (RGBA) for a decoded DIB; for a PNG entry,
	// what its IHDR says (1 to 4).
	Bands int
	// BitCount is the bits a pixel as stored (1, 4, 8, 16, 24, 32), or
	// the PNG entry's bit depth.
	BitCount int
	// Compression is the DIB's (0 RGB, 1 RLE8, 2 RLE4, 3 and 6 bit fields).
	Compression int
	TopDown     bool
	// PNG: the ICO's chosen entry is a PNG (Decode gives its bytes).
	PNG bool
}

// Alpha reports whether the decoded image has an alpha band.
func (c Config) Alpha() bool { return c.Bands == 2 || c.Bands == 4 }

// Image is a decoded BMP or ICO entry: Pix (Width x Height x Bands bytes,
// rows from the top, samples interleaved), or PNG, the bytes of an ICO's
// PNG entry for libvips to decode.
type Image struct {
	Pix                  []byte
	Width, Height, Bands int
	PNG                  []byte
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, fmt.Sprintf(format, args...))
}

// IsBMP and IsICO tell the two apart as imagefmt sniffs them.
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
	alpha         bool      // 32-bit pixels carry alpha
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

func parseBMP(buf []byte) (*dib, error) {
	if len(buf) < fileHeaderLen+4 || string(buf[:2]) != "BM" {
		return nil, malformed("BMP file header cut short")
	}
	offset := binary.LittleEndian.Uint32(buf[10:])
	d, err := parseDIB(buf[fileHeaderLen:], false)
	if err != nil {
		return nil, err
	}
	// The pixels start where the file header says, after the palette.
	if uint64(offset) < uint64(fileHeaderLen+d.pixelOffset) || uint64(offset) > uint64(len(buf)) {
		return nil, malformed("BMP pixel data at %d, outside the file's %d bytes after its %d bytes of headers", offset, len(buf), fileHeaderLen+d.pixelOffset)
	}
	d.pixelOffset = int(offset)
	return d, nil
}

// parseDIB reads an info header (any version), its bit fields and its
// palette; pixelOffset is set to the first byte after them.
func parseDIB(b []byte, ico bool) (*dib, error) {
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
	switch {
	case size == coreHeaderLen:
		width, height = int64(le.Uint16(b[4:])), int64(int16(le.Uint16(b[6:])))
		if le.Uint16(b[8:]) != 1 {
			return nil, malformed("BMP with %d planes", le.Uint16(b[8:]))
		}
		d.bitCount = int(le.Uint16(b[10:]))
		paletteEntry = 3
	case size >= 16 && size <= 64 || size == 108 || size == 124:
		width, height = int64(int32(le.Uint32(b[4:]))), int64(int32(le.Uint32(b[8:])))
		if le.Uint16(b[12:]) != 1 {
			return nil, malformed("BMP with %d planes", le.Uint16(b[12:]))
		}
		d.bitCount = int(le.Uint16(b[14:]))
		if size >= 20 {
			d.compression = int(le.Uint32(b[16:]))
		}
		if size == 64 && d.compression >= biBitfields {
			// OS/2 2.x: 3 is Huffman 1D, 4 RLE24; neither is read.
			return nil, malformed("OS/2 BMP with compression %d", d.compression)
		}
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
	switch d.compression {
	case biRGB:
		switch d.bitCount {
		case 1, 4, 8, 24:
		case 16:
			d.masks = [4]uint32{0x7C00, 0x03E0, 0x001F, 0}
		case 32: // the fourth byte is alpha unless it is 0 everywhere
			d.masks = [4]uint32{0xFF0000, 0xFF00, 0xFF, 0xFF000000}
			d.alpha = true
		default:
			return nil, malformed("BMP of %d bits a pixel", d.bitCount)
		}
	case biRLE8, biRLE4:
		if want := map[int]int{biRLE8: 8, biRLE4: 4}[d.compression]; d.bitCount != want || d.topDown {
			return nil, malformed("BMP with RLE%d compression, %d bits a pixel, top-down %t", want, d.bitCount, d.topDown)
		}
	case biBitfields, biAlphaBitfields:
		if d.bitCount != 16 && d.bitCount != 32 {
			return nil, malformed("BMP with bit fields and %d bits a pixel", d.bitCount)
		}
		n := 3
		if d.compression == biAlphaBitfields {
			n = 4
		}
		at := 40 // masks in the header (52 bytes and more), else after it
		if size == infoHeaderLen {
			at = p
			p += 4 * n
		} else if size >= 56 {
			n = 4
		}
		if size > infoHeaderLen && size < uint32(at+4*n) || len(b) < at+4*n {
			return nil, malformed("BMP bit fields cut short")
		}
		for i := range n {
			d.masks[i] = le.Uint32(b[at+4*i:])
		}
		for i, m := range d.masks {
			if (m == 0 && i < 3) || (m != 0 && !contiguous(m)) || (d.bitCount == 16 && m > 0xFFFF) {
				return nil, malformed("BMP bit field %#x", m)
			}
		}
		d.alpha = d.masks[3] != 0
	default:
		return nil, malformed("BMP with compression %d (JPEG, PNG or unknown)", d.compression)
	}
	if d.bitCount <= 8 {
		colours := 1 << d.bitCount
		if size >= 36 {
			if used := le.Uint32(b[32:]); used != 0 {
				if used > uint32(colours) {
					return nil, malformed("BMP palette of %d colours for %d bits a pixel", used, d.bitCount)
				}
				colours = int(used)
			}
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
	d.pixelOffset = p
	return d, nil
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
	if d.compression == biRLE8 || d.compression == biRLE4 {
		img.Pix, err = d.decodeRLE(px, c.Bands)
		return img, err
	}
	rowBytes := stride(d.width, d.bitCount)
	if int64(len(px)) < int64(rowBytes)*int64(d.height) {
		return Image{}, malformed("BMP pixel data of %d bytes for %d rows of %d", len(px), d.height, rowBytes)
	}
	img.Pix = make([]byte, d.width*d.height*c.Bands)
	for y := range d.height {
		src := px[y*rowBytes : (y+1)*rowBytes]
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
		switch d.bitCount {
		case 1, 4, 8:
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
			for i := range bands {
				out[i] = field(v, d.masks[i])
			}
		}
		if bands == 4 && !d.alpha {
			out[3] = 255
		}
	}
}

// field is a bit field's value scaled to 8 bits by repeating its bits (5
// bits abcde make abcdeabc), as ImageMagick and browsers scale them.
func field(v, mask uint32) byte {
	if mask == 0 {
		return 255
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

// decodeRLE decodes RLE8 or RLE4 data (bottom-up, as RLE always is).
func (d *dib) decodeRLE(px []byte, bands int) ([]byte, error) {
	idx := make([]byte, d.width*d.height) // palette indices; skipped pixels are 0
	x, y := 0, 0                          // y counts rows from the bottom
	put := func(i byte) error {
		if y >= d.height {
			return malformed("BMP RLE run past the last row at (%d, %d)", x, y)
		}
		if x < d.width {
			idx[(d.height-1-y)*d.width+x] = i
		}
		x++ // past the row's end: dropped (ImageMagick encodes the row's padding)
		return nil
	}
	nibble := func(v byte, k int) byte {
		if d.compression == biRLE8 {
			return v
		}
		if k%2 == 0 {
			return v >> 4
		}
		return v & 0x0F
	}
	p := 0
	for {
		if p+2 > len(px) {
			if y >= d.height || (y == d.height-1 && x >= d.width) {
				break // the last row done: the end-of-bitmap marker is implied
			}
			return nil, malformed("BMP RLE data ends at row %d of %d", y, d.height)
		}
		n, v := int(px[p]), px[p+1]
		p += 2
		if n > 0 { // a run of n pixels
			for k := range n {
				if err := put(nibble(v, k)); err != nil {
					return nil, err
				}
			}
			continue
		}
		switch v {
		case 0: // end of line
			x, y = 0, y+1
		case 1: // end of bitmap
			return d.expand(idx, bands), nil
		case 2: // delta
			if p+2 > len(px) {
				return nil, malformed("BMP RLE delta cut short")
			}
			x, y = x+int(px[p]), y+int(px[p+1])
			p += 2
			if x > d.width || y > d.height || (y == d.height && x > 0) {
				return nil, malformed("BMP RLE delta past the image to (%d, %d)", x, y)
			}
		default: // an absolute run of v pixels, padded to 2 bytes
			count := int(v)
			size := count
			if d.compression == biRLE4 {
				size = (count + 1) / 2
			}
			if p+size > len(px) {
				return nil, malformed("BMP RLE absolute run cut short")
			}
			for k := range count {
				b := px[p+k]
				if d.compression == biRLE4 {
					b = px[p+k/2]
				}
				if err := put(nibble(b, k)); err != nil {
					return nil, err
				}
			}
			p += size + size%2
		}
	}
	return d.expand(idx, bands), nil
}

// expand turns palette indices into RGB(A) pixels.
func (d *dib) expand(idx []byte, bands int) []byte {
	pix := make([]byte, len(idx)*bands)
	for i, v := range idx {
		out := pix[i*bands:][:bands]
		copy(out, d.palette[v][:])
		if bands == 4 {
			out[3] = 255
		}
	}
	return pix
}
