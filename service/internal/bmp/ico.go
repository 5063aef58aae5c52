package bmp

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"io"
	"strings"
)

const (
	icoHeaderLen = 6
	icoEntryLen  = 16
)

// entry is an ICO directory's chosen entry: its bytes, and the size the
// directory gives it.
type entry struct {
	data []byte
	w, h int // the directory's (0 there means 256)
}

// icoEntry reads the directory and picks the largest entry by the
// directory's sizes (then the most bits a pixel, then the first), as
// browsers do; the entry's own header then gives its real size.
func icoEntry(buf []byte) (entry, error) {
	le := binary.LittleEndian
	if len(buf) < icoHeaderLen || le.Uint16(buf) != 0 || le.Uint16(buf[2:]) != 1 {
		return entry{}, malformed("ICO header cut short or not an icon")
	}
	n := int(le.Uint16(buf[4:]))
	if n == 0 || len(buf) < icoHeaderLen+n*icoEntryLen {
		return entry{}, malformed("ICO directory of %d entries in %d bytes", n, len(buf))
	}
	var best entry
	bestBits, found := -1, false
	for i := range n {
		e := buf[icoHeaderLen+i*icoEntryLen:][:icoEntryLen]
		w, h, bitCount := int(e[0]), int(e[1]), int(le.Uint16(e[6:]))
		if w == 0 {
			w = 256
		}
		if h == 0 {
			h = 256
		}
		size, offset := le.Uint32(e[8:]), le.Uint32(e[12:])
		if uint64(offset) < uint64(icoHeaderLen+n*icoEntryLen) || uint64(offset)+uint64(size) > uint64(len(buf)) || size < 8 {
			return entry{}, malformed("ICO entry %d: %d bytes at %d, outside the file's %d bytes after its directory", i, size, offset, len(buf))
		}
		if !found || w*h > best.w*best.h || (w*h == best.w*best.h && bitCount > bestBits) {
			best, bestBits, found = entry{data: buf[offset : offset+size], w: w, h: h}, bitCount, true
		}
	}
	return best, nil
}

func (e entry) isPNG() bool { return len(e.data) >= 8 && string(e.data[:8]) == pngSignature }

func (e entry) config() (Config, error) {
	if e.isPNG() {
		return pngConfig(e.data)
	}
	d, err := parseDIB(e.data, true, -1)
	if err != nil {
		return Config{}, err
	}
	return d.config(), nil
}

// pngConfig reads a PNG entry's IHDR, and whether a tRNS chunk before
// its pixels gives it alpha: its bands are RGB(A), as Decode makes them.
func pngConfig(b []byte) (Config, error) {
	if len(b) < 33 || string(b[12:16]) != "IHDR" {
		return Config{}, malformed("ICO's PNG entry without an IHDR")
	}
	w, h := binary.BigEndian.Uint32(b[16:]), binary.BigEndian.Uint32(b[20:])
	if w == 0 || h == 0 || w > maxSide || h > maxSide {
		return Config{}, malformed("ICO's PNG entry of %dx%d pixels", w, h)
	}
	c := Config{Width: int(w), Height: int(h), Bands: 3, BitCount: int(b[24]), PNG: true}
	switch b[25] {
	case 4, 6: // grey or RGB with alpha
		c.Bands = 4
	case 0, 2, 3: // grey, RGB, palette: alpha from a tRNS chunk
		if hasChunkBeforePixels(b, "tRNS") {
			c.Bands = 4
		}
	default:
		return Config{}, malformed("ICO's PNG entry of colour type %d", b[25])
	}
	return c, nil
}

// hasChunkBeforePixels reports whether the PNG b has a chunk of type typ
// between its IHDR and its first IDAT.
func hasChunkBeforePixels(b []byte, typ string) bool {
	for p := 33; p+8 <= len(b); {
		switch string(b[p+4 : p+8]) {
		case typ:
			return true
		case "IDAT", "IEND":
			return false
		}
		p += 12 + int(binary.BigEndian.Uint32(b[p:])) // past the end: the walk ends
	}
	return false
}

// pngIEND is the chunk that ends a PNG.
const pngIEND = "\x00\x00\x00\x00IEND\xae\x42\x60\x82"

func (e entry) decode(maxPixels int64) (Image, error) {
	c, err := e.config()
	if err != nil {
		return Image{}, err
	}
	if err := checkPixels("ICO image", c.Width, c.Height, maxPixels); err != nil {
		return Image{}, err
	}
	if c.PNG {
		return decodePNG(e.data, c)
	}
	d, _ := parseDIB(e.data, true, -1) // config parsed it already
	img, err := d.decode(e.data[d.pixelOffset:])
	if err != nil {
		return Image{}, err
	}
	xorBytes := 0
	if !d.rle() {
		xorBytes = stride(d.width, d.bitCount) * d.height
	}
	d.applyMask(img.Pix, e.data[d.pixelOffset:], xorBytes)
	return img, nil
}

// decodePNG decodes a PNG entry (its IHDR read into c) to c's bands. An
// IEND follows the entry's bytes, for a PNG that lacks its own: the
// decoder stops at the first.
func decodePNG(data []byte, c Config) (Image, error) {
	m, err := png.Decode(io.MultiReader(bytes.NewReader(data), strings.NewReader(pngIEND)))
	if err != nil {
		return Image{}, malformed("ICO's PNG entry: %v", err)
	}
	if b := m.Bounds(); b.Dx() != c.Width || b.Dy() != c.Height {
		return Image{}, malformed("ICO's PNG entry decoded to %dx%d, its IHDR says %dx%d", b.Dx(), b.Dy(), c.Width, c.Height)
	}
	return Image{Pix: samples(m, c.Bands), Width: c.Width, Height: c.Height, Bands: c.Bands}, nil
}

// samples is m's pixels as 8-bit RGB or RGBA (bands), rows from the top;
// 16-bit samples keep their high byte, as libvips' cast to 8 bits does.
// The image types are image/png's (RGBA and RGBA64 only for opaque
// images: nothing to unpremultiply). Where m's own buffer holds as many
// bytes a pixel or more (RGBA, 16-bit), the samples move down inside it
// (pixel i's are read before they are written, never past pixel i's own
// bytes), so that the decode holds the image once: memcost prices BMP and
// ICO at their decoded pixels twice, with the TIFF hand-over.
func samples(m image.Image, bands int) []byte {
	b := m.Bounds()
	w, n := b.Dx(), b.Dx()*b.Dy()
	whole := func(stride, bpp int) bool { return b.Min == (image.Point{}) && stride == w*bpp }
	var pix []byte // m's own buffer, when it is reused
	at := func(i int) [4]byte {
		c := color.NRGBAModel.Convert(m.At(b.Min.X+i%w, b.Min.Y+i/w)).(color.NRGBA)
		return [4]byte{c.R, c.G, c.B, c.A}
	}
	switch m := m.(type) {
	case *image.NRGBA:
		if whole(m.Stride, 4) && bands == 4 {
			return m.Pix[:4*n]
		}
		if whole(m.Stride, 4) {
			pix, at = m.Pix, func(i int) [4]byte { return [4]byte(m.Pix[4*i:]) }
		}
	case *image.RGBA:
		if whole(m.Stride, 4) {
			pix, at = m.Pix, func(i int) [4]byte { return [4]byte(m.Pix[4*i:]) }
		}
	case *image.NRGBA64:
		if whole(m.Stride, 8) {
			pix, at = m.Pix, func(i int) [4]byte { s := m.Pix[8*i:]; return [4]byte{s[0], s[2], s[4], s[6]} }
		}
	case *image.RGBA64:
		if whole(m.Stride, 8) {
			pix, at = m.Pix, func(i int) [4]byte { s := m.Pix[8*i:]; return [4]byte{s[0], s[2], s[4], s[6]} }
		}
	case *image.Gray:
		if whole(m.Stride, 1) {
			at = func(i int) [4]byte { v := m.Pix[i]; return [4]byte{v, v, v, 255} }
		}
	case *image.Gray16:
		if whole(m.Stride, 2) {
			at = func(i int) [4]byte { v := m.Pix[2*i]; return [4]byte{v, v, v, 255} }
		}
	case *image.Paletted:
		if whole(m.Stride, 1) {
			pal := make([][4]byte, 256) // past the palette: opaque black
			for i := range pal {
				pal[i] = [4]byte{0, 0, 0, 255}
				if i < len(m.Palette) {
					c := color.NRGBAModel.Convert(m.Palette[i]).(color.NRGBA)
					pal[i] = [4]byte{c.R, c.G, c.B, c.A}
				}
			}
			at = func(i int) [4]byte { return pal[m.Pix[i]] }
		}
	}
	if pix == nil {
		pix = make([]byte, n*bands)
	}
	for i := range n {
		s := at(i)
		copy(pix[i*bands:][:bands], s[:])
	}
	return pix[:n*bands]
}

// applyMask makes transparent the pixels the AND mask (1 bit a pixel,
// after the XOR image) sets, unless the image has alpha of its own (a
// 32-bit image whose alpha is not all 0). A missing mask is opaque.
func (d *dib) applyMask(pix, px []byte, xorBytes int) {
	if d.alpha {
		return
	}
	rowBytes := stride(d.width, 1)
	if xorBytes == 0 || len(px) < xorBytes+rowBytes*d.height {
		return
	}
	mask := px[xorBytes:]
	for y := range d.height {
		row := d.height - 1 - y
		if d.topDown {
			row = y
		}
		for x := range d.width {
			if mask[y*rowBytes+x/8]&(0x80>>(x%8)) != 0 {
				pix[(row*d.width+x)*4+3] = 0
			}
		}
	}
}
