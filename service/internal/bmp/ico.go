package bmp

import (
	"encoding/binary"
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
	d, err := parseDIB(e.data, true)
	if err != nil {
		return Config{}, err
	}
	return d.config(), nil
}

// pngConfig reads a PNG entry's IHDR.
func pngConfig(b []byte) (Config, error) {
	if len(b) < 29 || string(b[12:16]) != "IHDR" {
		return Config{}, malformed("ICO's PNG entry without an IHDR")
	}
	w, h := binary.BigEndian.Uint32(b[16:]), binary.BigEndian.Uint32(b[20:])
	if w == 0 || h == 0 || w > maxSide || h > maxSide {
		return Config{}, malformed("ICO's PNG entry of %dx%d pixels", w, h)
	}
	c := Config{Width: int(w), Height: int(h), BitCount: int(b[24]), PNG: true}
	switch b[25] {
	case 0:
		c.Bands = 1
	case 4:
		c.Bands = 2
	case 2:
		c.Bands = 3
	default: // palette (maybe with tRNS), RGBA
		c.Bands = 4
	}
	return c, nil
}

func (e entry) decode(maxPixels int64) (Image, error) {
	c, err := e.config()
	if err != nil {
		return Image{}, err
	}
	if err := checkPixels("ICO image", c.Width, c.Height, maxPixels); err != nil {
		return Image{}, err
	}
	if c.PNG {
		return Image{Width: c.Width, Height: c.Height, Bands: c.Bands, PNG: e.data}, nil
	}
	d, _ := parseDIB(e.data, true) // config parsed it already
	img, err := d.decode(e.data[d.pixelOffset:])
	if err != nil {
		return Image{}, err
	}
	xorBytes := 0
	if d.compression == biRGB || d.compression >= biBitfields {
		xorBytes = stride(d.width, d.bitCount) * d.height
	}
	d.applyMask(img.Pix, e.data[d.pixelOffset:], xorBytes)
	return img, nil
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
