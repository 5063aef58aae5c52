package bmp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// dibSpec is a BMP to build: its info header's size (12: OS/2 1.x's core
// header; 16 to 64 but 40, 52 and 56: OS/2 2.x's; 40, 52, 56, 108, 124:
// Windows' versions 3, 4 and 5) and fields, its bit fields (in the header
// from 52 bytes on, after it below), palette and pixel data.
type dibSpec struct {
	size, w, h, bits, comp int
	planes                 int // 0 is written as 1
	used                   int // colours used (0: all)
	masks                  []uint32
	pal                    [][3]byte // RGB
	gap                    int       // bytes between the palette and the pixels
	offset                 int       // the pixel offset the file header gives, when not 0
	data                   []byte
}

func (s dibSpec) file() []byte {
	le := binary.LittleEndian
	info := make([]byte, s.size)
	le.PutUint32(info, uint32(s.size))
	planes := max(s.planes, 1)
	if s.size == coreHeaderLen {
		le.PutUint16(info[4:], uint16(s.w))
		le.PutUint16(info[6:], uint16(s.h))
		le.PutUint16(info[8:], uint16(planes))
		le.PutUint16(info[10:], uint16(s.bits))
	} else {
		le.PutUint32(info[4:], uint32(int32(s.w)))
		le.PutUint32(info[8:], uint32(int32(s.h)))
		le.PutUint16(info[12:], uint16(planes))
		le.PutUint16(info[14:], uint16(s.bits))
		for at, v := range map[int]int{16: s.comp, 20: len(s.data), 32: s.used} {
			if at+4 <= s.size {
				le.PutUint32(info[at:], uint32(v))
			}
		}
	}
	var extra []byte
	for i, m := range s.masks {
		if s.size >= 52 && 40+4*i+4 <= s.size {
			le.PutUint32(info[40+4*i:], m)
		} else if s.size < 52 {
			extra = le.AppendUint32(extra, m)
		}
	}
	for _, c := range s.pal {
		extra = append(extra, c[2], c[1], c[0])
		if s.size != coreHeaderLen {
			extra = append(extra, 0)
		}
	}
	extra = append(extra, make([]byte, s.gap)...)
	offset := fileHeaderLen + len(info) + len(extra)
	if s.offset != 0 {
		offset = s.offset
	}
	out := []byte("BM")
	out = le.AppendUint32(out, uint32(fileHeaderLen+len(info)+len(extra)+len(s.data)))
	out = le.AppendUint32(out, 0)
	out = le.AppendUint32(out, uint32(offset))
	out = append(out, info...)
	out = append(out, extra...)
	return append(out, s.data...)
}

// pack stores w x h values of n bits each (24: 0xRRGGBB, stored B, G,
// R), rows padded to 4 bytes, from the bottom unless topDown.
func pack(w, h, n int, topDown bool, v func(x, y int) uint32) []byte {
	rowBytes := stride(w, n)
	out := make([]byte, rowBytes*h)
	for y := range h {
		row := out[(h-1-y)*rowBytes:]
		if topDown {
			row = out[y*rowBytes:]
		}
		for x := range w {
			val := v(x, y)
			switch n {
			case 1, 2, 4, 8:
				row[x*n/8] |= byte(val << (8 - n - x*n%8))
			case 16:
				binary.LittleEndian.PutUint16(row[2*x:], uint16(val))
			case 24:
				row[3*x], row[3*x+1], row[3*x+2] = byte(val), byte(val>>8), byte(val>>16)
			case 32:
				binary.LittleEndian.PutUint32(row[4*x:], val)
			}
		}
	}
	return out
}

// The layouts' picture: 7x5 (odd, so that rows are padded).
const lw, lh = 7, 5

func colour(i int) [3]byte { return [3]byte{byte(i*16 + 5), byte(255 - i*13), byte(i * i * 7)} }

func palette(n int) [][3]byte {
	p := make([][3]byte, n)
	for i := range p {
		p[i] = colour(i)
	}
	return p
}

func index(x, y, n int) int { return (x*3 + y*5) % n }
func rgbAt(x, y int) [3]byte {
	return [3]byte{byte(x*37 + y*11), byte(x*19 + y*53 + 3), byte(x*y*29 + 7)}
}
func alphaAt(x, y int) byte  { return byte(255 - x*30 - y*9) }
func rgb24(c [3]byte) uint32 { return uint32(c[0])<<16 | uint32(c[1])<<8 | uint32(c[2]) }
func opaque(c [3]byte) rgbaF { return rgbaF{float64(c[0]), float64(c[1]), float64(c[2]), 255} }
func indexed(n int) func(x, y int) uint32 {
	return func(x, y int) uint32 { return uint32(index(x, y, n)) }
}

// rgbaF is a pixel as a reader makes it, to within 1 of each sample.
type rgbaF [4]float64

// field8 stores the 8-bit sample c in mask's bits (rounded) and says what
// a reader makes of what is stored: v*255/(2^n-1) for n bits (0 for no
// field).
func field8(c byte, mask uint32) (stored uint32, read float64) {
	if mask == 0 {
		return 0, 0
	}
	top := float64(uint64(1)<<bits.OnesCount32(mask) - 1)
	v := uint32(math.Round(float64(c) * top / 255))
	return v << bits.TrailingZeros32(mask), float64(v) * 255 / top
}

// fields is the picture (rgbAt, alphaAt) stored in bit fields of n bits
// a pixel with masks R, G, B, A, and what a reader makes of it.
func fields(n int, masks [4]uint32) ([]byte, func(x, y int) rgbaF) {
	samples := func(x, y int) [4]byte { c := rgbAt(x, y); return [4]byte{c[0], c[1], c[2], alphaAt(x, y)} }
	data := pack(lw, lh, n, false, func(x, y int) uint32 {
		v := uint32(0)
		for i, s := range samples(x, y) {
			f, _ := field8(s, masks[i])
			v |= f
		}
		return v
	})
	return data, func(x, y int) rgbaF {
		out := rgbaF{0, 0, 0, 255}
		for i, s := range samples(x, y) {
			if _, r := field8(s, masks[i]); i < 3 || masks[3] != 0 {
				out[i] = r
			}
		}
		return out
	}
}

// rleRows encodes the picture's rows (values of 4 or 8 bits, or 24-bit
// colours) as RLE, from the bottom unless topDown: the first pixel a run
// of one, the rest an absolute run (padded to 2 bytes), each row ended,
// the bitmap ended.
func rleRows(n int, topDown bool, v func(x, y int) uint32) []byte {
	var out []byte
	for r := range lh {
		y := lh - 1 - r
		if topDown {
			y = r
		}
		first := v(0, y)
		switch n {
		case 4:
			out = append(out, 1, byte(first<<4))
		case 8:
			out = append(out, 1, byte(first))
		case 24:
			out = append(out, 1, byte(first), byte(first>>8), byte(first>>16))
		}
		out = append(out, 0, lw-1)
		var run []byte
		for x := 1; x < lw; x++ {
			val := v(x, y)
			switch n {
			case 4:
				if (x-1)%2 == 0 {
					run = append(run, byte(val<<4))
				} else {
					run[len(run)-1] |= byte(val)
				}
			case 8:
				run = append(run, byte(val))
			case 24:
				run = append(run, byte(val), byte(val>>8), byte(val>>16))
			}
		}
		out = append(out, run...)
		if len(run)%2 == 1 {
			out = append(out, 0)
		}
		out = append(out, 0, 0)
	}
	return append(out, 0, 1)
}

// layout is one way of storing the picture (or a variant of it), as the
// BMP Suite's g/ and q/ sets have them, and what it must decode to.
type layout struct {
	name  string
	spec  dibSpec
	want  func(x, y int) rgbaF
	bands int
	// magick: ImageMagick 6 reads the file to the same pixels, to the
	// bits of each band ({} all); where it does not, the case says why.
	magick bool
	bits   [4]byte
}

func layouts() []layout {
	pal := func(n int) func(x, y int) rgbaF {
		return func(x, y int) rgbaF { return opaque(colour(index(x, y, n))) }
	}
	direct := func(x, y int) rgbaF { return opaque(rgbAt(x, y)) }
	withAlpha := func(x, y int) rgbaF {
		c := rgbAt(x, y)
		return rgbaF{float64(c[0]), float64(c[1]), float64(c[2]), float64(alphaAt(x, y))}
	}
	argb32 := func(x, y int) uint32 { return rgb24(rgbAt(x, y)) | uint32(alphaAt(x, y))<<24 }
	rgbField := func(x, y int) uint32 { return rgb24(rgbAt(x, y)) }
	idx8 := pack(lw, lh, 8, false, indexed(40))
	l := []layout{
		// OS/2 1.x: a 12-byte header, 3-byte palette entries.
		{name: "core 1-bit", spec: dibSpec{size: 12, w: lw, h: lh, bits: 1, pal: palette(2), data: pack(lw, lh, 1, false, indexed(2))}, want: pal(2), bands: 3, magick: true},
		{name: "core 4-bit", spec: dibSpec{size: 12, w: lw, h: lh, bits: 4, pal: palette(16), data: pack(lw, lh, 4, false, indexed(16))}, want: pal(16), bands: 3, magick: true},
		{name: "core 8-bit", spec: dibSpec{size: 12, w: lw, h: lh, bits: 8, pal: palette(256), data: idx8}, want: pal(40), bands: 3, magick: true},
		{name: "core 24-bit", spec: dibSpec{size: 12, w: lw, h: lh, bits: 24, data: pack(lw, lh, 24, false, rgbField)}, want: direct, bands: 3, magick: true},
		// q/pal8os2sp: the palette's size is implied by the pixel offset
		// (ImageMagick reads 256 entries whatever the offset, and finds
		// this small file short).
		{name: "core 8-bit, palette cut by the pixel offset", spec: dibSpec{size: 12, w: lw, h: lh, bits: 8, pal: palette(40), data: idx8}, want: pal(40), bands: 3},
		// OS/2 2.x: 16 to 64 bytes. ImageMagick 6 reads the 64-byte
		// header's palette wrongly (q/pal8os2v2 comes out black), and a
		// 16-byte header's compression from the palette after it.
		{name: "OS/2 2.x 64-byte header", spec: dibSpec{size: 64, w: lw, h: lh, bits: 8, used: 40, pal: palette(40), data: idx8}, want: pal(40), bands: 3},
		{name: "OS/2 2.x 16-byte header", spec: dibSpec{size: 16, w: lw, h: lh, bits: 8, pal: palette(256), data: idx8}, want: pal(40), bands: 3},
		{name: "1-bit", spec: dibSpec{size: 40, w: lw, h: lh, bits: 1, pal: palette(2), data: pack(lw, lh, 1, false, indexed(2))}, want: pal(2), bands: 3, magick: true},
		// q/pal2: Windows CE's 2 bits a pixel (image-rs reads it,
		// ImageMagick 6 does not).
		{name: "2-bit", spec: dibSpec{size: 40, w: lw, h: lh, bits: 2, pal: palette(4), data: pack(lw, lh, 2, false, indexed(4))}, want: pal(4), bands: 3},
		{name: "4-bit, 13 colours", spec: dibSpec{size: 40, w: lw, h: lh, bits: 4, used: 13, pal: palette(13), data: pack(lw, lh, 4, false, indexed(13))}, want: pal(13), bands: 3, magick: true},
		// b/pal8badindex: indices past the palette are black (ImageMagick
		// refuses the file).
		{name: "8-bit, indices past the palette", spec: dibSpec{size: 40, w: lw, h: lh, bits: 8, used: 10, pal: palette(10), data: pack(lw, lh, 8, false, indexed(16))}, want: func(x, y int) rgbaF {
			if i := index(x, y, 16); i < 10 {
				return opaque(colour(i))
			}
			return rgbaF{0, 0, 0, 255}
		}, bands: 3},
		// q/pal8oversizepal and b/badplanes, read as image-rs' lenient
		// mode reads them (ImageMagick refuses both).
		{name: "8-bit, 300 colours declared", spec: dibSpec{size: 40, w: lw, h: lh, bits: 8, used: 300, pal: palette(300), data: idx8}, want: pal(40), bands: 3},
		{name: "8-bit, 3 planes", spec: dibSpec{size: 40, w: lw, h: lh, bits: 8, planes: 3, pal: palette(40), used: 40, data: idx8}, want: pal(40), bands: 3},
		{name: "8-bit v4", spec: dibSpec{size: 108, w: lw, h: lh, bits: 8, used: 40, pal: palette(40), data: idx8}, want: pal(40), bands: 3, magick: true},
		{name: "8-bit v5", spec: dibSpec{size: 124, w: lw, h: lh, bits: 8, used: 40, pal: palette(40), data: idx8}, want: pal(40), bands: 3, magick: true},
		{name: "8-bit top-down", spec: dibSpec{size: 40, w: lw, h: -lh, bits: 8, used: 40, pal: palette(40), data: pack(lw, lh, 8, true, indexed(40))}, want: pal(40), bands: 3, magick: true},
		// q/pal8offs: unused bytes between the palette and the pixels.
		{name: "8-bit, pixels after a gap", spec: dibSpec{size: 40, w: lw, h: lh, bits: 8, used: 40, pal: palette(40), gap: 100, data: idx8}, want: pal(40), bands: 3, magick: true},
		// A pixel offset inside the headers is ignored: the pixels follow
		// the palette, as in an ICO (ImageMagick refuses the file).
		{name: "8-bit, pixel offset inside the info header", spec: dibSpec{size: 40, w: lw, h: lh, bits: 8, used: 40, pal: palette(40), offset: 30, data: idx8}, want: pal(40), bands: 3},
		// b/badheadersize: a header of no known size, read as Windows'.
		{name: "66-byte header", spec: dibSpec{size: 66, w: lw, h: lh, bits: 8, used: 40, pal: palette(40), data: idx8}, want: pal(40), bands: 3, magick: true},
		{name: "24-bit", spec: dibSpec{size: 40, w: lw, h: lh, bits: 24, data: pack(lw, lh, 24, false, rgbField)}, want: direct, bands: 3, magick: true},
		{name: "24-bit v4", spec: dibSpec{size: 108, w: lw, h: lh, bits: 24, data: pack(lw, lh, 24, false, rgbField)}, want: direct, bands: 3, magick: true},
		{name: "24-bit v5", spec: dibSpec{size: 124, w: lw, h: lh, bits: 24, data: pack(lw, lh, 24, false, rgbField)}, want: direct, bands: 3, magick: true},
		{name: "24-bit top-down", spec: dibSpec{size: 40, w: lw, h: -lh, bits: 24, data: pack(lw, lh, 24, true, rgbField)}, want: direct, bands: 3, magick: true},
		// Many writers leave out the last byte: image-rs reads it as 0
		// (ImageMagick refuses the file). Here the last row's padding.
		{name: "24-bit, one byte short", spec: dibSpec{size: 40, w: lw, h: lh, bits: 24, data: pack(lw, lh, 24, false, rgbField)[:stride(lw, 24)*lh-1]}, want: direct, bands: 3},
		{name: "32-bit, alpha in the fourth byte", spec: dibSpec{size: 40, w: lw, h: lh, bits: 32, data: pack(lw, lh, 32, false, argb32)}, want: withAlpha, bands: 4, magick: true},
		{name: "32-bit, fourth byte 0: opaque", spec: dibSpec{size: 40, w: lw, h: lh, bits: 32, data: pack(lw, lh, 32, false, rgbField)}, want: direct, bands: 4, magick: true},
		{name: "24-bit RLE (OS/2 2.x)", spec: dibSpec{size: 64, w: lw, h: lh, bits: 24, comp: 4, data: rleRows(24, false, rgbField)}, want: direct, bands: 3},
		{name: "8-bit RLE", spec: dibSpec{size: 40, w: lw, h: lh, bits: 8, comp: biRLE8, used: 40, pal: palette(40), data: rleRows(8, false, indexed(40))}, want: pal(40), bands: 3, magick: true},
		{name: "4-bit RLE", spec: dibSpec{size: 40, w: lw, h: lh, bits: 4, comp: biRLE4, pal: palette(16), data: rleRows(4, false, indexed(16))}, want: pal(16), bands: 3, magick: true},
		// b/rletopdown: not allowed by the format, read by ImageMagick and
		// by image-rs' lenient mode: the first rows stored are the top.
		{name: "8-bit RLE top-down", spec: dibSpec{size: 40, w: lw, h: -lh, bits: 8, comp: biRLE8, used: 40, pal: palette(40), data: rleRows(8, true, indexed(40))}, want: pal(40), bands: 3, magick: true},
		{name: "4-bit RLE top-down", spec: dibSpec{size: 40, w: lw, h: -lh, bits: 4, comp: biRLE4, pal: palette(16), data: rleRows(4, true, indexed(16))}, want: pal(16), bands: 3, magick: true},
	}
	// Bit fields: the masks the file declares (R, G, B, A), those the
	// pixels are stored with (the defaults where all three colour masks
	// are 0), the header they are in.
	bf := []struct {
		name   string
		size   int
		n      int
		comp   int
		masks  [4]uint32
		read   [4]uint32 // the masks the pixels are stored with
		bands  int
		magick bool
		bits   [4]byte
	}{
		{"16-bit, no bit fields (5-5-5)", 40, 16, biRGB, [4]uint32{0x7C00, 0x03E0, 0x001F}, [4]uint32{0x7C00, 0x03E0, 0x001F}, 3, true, [4]byte{}},
		{"16-bit 5-6-5 after a 40-byte header", 40, 16, biBitfields, [4]uint32{0xF800, 0x07E0, 0x001F}, [4]uint32{0xF800, 0x07E0, 0x001F}, 3, true, [4]byte{}},
		{"16-bit 5-6-5 v4", 108, 16, biBitfields, [4]uint32{0xF800, 0x07E0, 0x001F}, [4]uint32{0xF800, 0x07E0, 0x001F}, 3, true, [4]byte{}},
		{"16-bit X1R5G5B5 v3 (56 bytes)", 56, 16, biBitfields, [4]uint32{0x7C00, 0x03E0, 0x001F}, [4]uint32{0x7C00, 0x03E0, 0x001F}, 3, true, [4]byte{}},
		// ImageMagick 6 shifts fields of 4 bits or fewer (0xF is 0xF0):
		// their own bits are compared.
		{"16-bit A4R4G4B4 v5", 124, 16, biBitfields, [4]uint32{0x0F00, 0x00F0, 0x000F, 0xF000}, [4]uint32{0x0F00, 0x00F0, 0x000F, 0xF000}, 4, true, [4]byte{0xF0, 0xF0, 0xF0, 0xF0}},
		{"16-bit A1R5G5B5 v5", 124, 16, biBitfields, [4]uint32{0x7C00, 0x03E0, 0x001F, 0x8000}, [4]uint32{0x7C00, 0x03E0, 0x001F, 0x8000}, 4, true, [4]byte{0xFF, 0xFF, 0xFF, 0x80}},
		{"16-bit R2G3B1 (q/rgb16-231)", 40, 16, biBitfields, [4]uint32{0x0030, 0x000E, 0x0001}, [4]uint32{0x0030, 0x000E, 0x0001}, 3, true, [4]byte{0xC0, 0xE0, 0x80}},
		// All three colour masks 0: the default masks (ImageMagick 6 and
		// image-rs read black). One of them 0 (b/rgb16-880): a band of 0,
		// as both read it.
		{"16-bit, bit fields all 0: 5-5-5", 40, 16, biBitfields, [4]uint32{}, [4]uint32{0x7C00, 0x03E0, 0x001F}, 3, false, [4]byte{}},
		{"16-bit R8G8, blue field 0", 40, 16, biBitfields, [4]uint32{0xFF00, 0x00FF, 0}, [4]uint32{0xFF00, 0x00FF, 0}, 3, true, [4]byte{}},
		{"32-bit A8R8G8B8 v5", 124, 32, biBitfields, [4]uint32{0xFF0000, 0xFF00, 0xFF, 0xFF000000}, [4]uint32{0xFF0000, 0xFF00, 0xFF, 0xFF000000}, 4, true, [4]byte{}},
		{"32-bit X8B8G8R8 v3 (56 bytes)", 56, 32, biBitfields, [4]uint32{0xFF, 0xFF00, 0xFF0000}, [4]uint32{0xFF, 0xFF00, 0xFF0000}, 3, true, [4]byte{}},
		// q/rgba32abf: ImageMagick 6 does not know the compression.
		{"32-bit BI_ALPHABITFIELDS after a 40-byte header", 40, 32, biAlphaBitfields, [4]uint32{0xFF00, 0xFF0000, 0xFF000000, 0xFF}, [4]uint32{0xFF00, 0xFF0000, 0xFF000000, 0xFF}, 4, false, [4]byte{}},
		// Fields of more than 8 bits keep their top 8, as image-rs does
		// (ImageMagick 6 rounds them, 1 lower here and there).
		{"32-bit R11G11B10", 40, 32, biBitfields, [4]uint32{0xFFE00000, 0x001FFC00, 0x000003FF}, [4]uint32{0xFFE00000, 0x001FFC00, 0x000003FF}, 3, false, [4]byte{}},
		{"32-bit A2R10G10B10 v5", 124, 32, biBitfields, [4]uint32{0x3FF00000, 0x000FFC00, 0x000003FF, 0xC0000000}, [4]uint32{0x3FF00000, 0x000FFC00, 0x000003FF, 0xC0000000}, 4, false, [4]byte{}},
		{"32-bit, bit fields all 0: 8-8-8", 40, 32, biBitfields, [4]uint32{}, [4]uint32{0xFF0000, 0xFF00, 0xFF}, 3, false, [4]byte{}},
	}
	for _, c := range bf {
		data, want := fields(c.n, c.read)
		masks := c.masks[:3]
		if c.comp == biAlphaBitfields || c.size >= 56 {
			masks = c.masks[:]
		}
		if c.comp == biRGB {
			masks = nil
		}
		l = append(l, layout{name: c.name, spec: dibSpec{size: c.size, w: lw, h: lh, bits: c.n, comp: c.comp, masks: masks, data: data}, want: want, bands: c.bands, magick: c.magick, bits: c.bits})
	}
	return l
}

// Every layout of the BMP Suite's g/ and q/ sets that image-rs or
// ImageMagick reads, built here, decodes to its picture (to within 1 of
// each sample: readers scale bit fields by rounding or by repeating
// bits), and where ImageMagick 6 reads it, to ImageMagick's pixels too
// (that part is skipped only when its convert is not installed).
func TestDecodeLayouts(t *testing.T) {
	dir := t.TempDir()
	for _, c := range layouts() {
		t.Run(c.name, func(t *testing.T) {
			b := c.spec.file()
			img, err := Decode(b, noLimit)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := DecodeConfig(b)
			if err != nil || cfg.Width != lw || cfg.Height != lh || cfg.Bands != c.bands || img.Width != lw || img.Height != lh || img.Bands != c.bands {
				t.Fatalf("config %+v %v; decoded %dx%d %d bands; want %dx%d %d bands", cfg, err, img.Width, img.Height, img.Bands, lw, lh, c.bands)
			}
			got := rgba(img)
			for y := range lh {
				for x := range lw {
					w, g := c.want(x, y), got[(y*lw+x)*4:][:4]
					for i := range 4 {
						if math.Abs(float64(g[i])-w[i]) > 1 {
							t.Fatalf("pixel (%d, %d) is %v, want %v", x, y, g, w)
						}
					}
				}
			}
			if !c.magick {
				return
			}
			name := strings.NewReplacer(" ", "_", "/", "_", ",", "", ":", "", "(", "", ")", "").Replace(c.name) + ".bmp"
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
			sameAsMagick(t, dir, name, b, c.bands, c.bits)
		})
	}
}

// rle5x2 is a 5x2 RLE4 BMP of a 4-colour palette (0 purple, 1 red, 2 green,
// 3 blue) with data, stored top-down when topDown.
func rle5x2(topDown bool, data ...byte) []byte {
	h := 2
	if topDown {
		h = -2
	}
	return dibSpec{size: 40, w: 5, h: h, bits: 4, comp: biRLE4, used: 4, pal: [][3]byte{{128, 0, 255}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}}, data: data}.file()
}

// rle4Cases are RLE4 bitmaps as encoders and damaged files have them, and
// their pixels (top row first); magick: ImageMagick reads them the same.
func rle4Cases() []struct {
	name   string
	src    []byte
	want   string // a letter a pixel: Purple, Red, Green, Blue
	magick bool
} {
	return []struct {
		name   string
		src    []byte
		want   string
		magick bool
	}{
		{"runs of odd counts", rle5x2(false, 3, 0x12, 2, 0x30, 0, 0, 5, 0x22, 0, 1), "GGGGG RGRBP", true},
		{"absolute runs: an odd byte count padded, an even one not", rle5x2(false, 0, 5, 0x12, 0x31, 0x20, 0, 0, 0, 0, 3, 0x32, 0x10, 2, 0x11, 0, 1), "BGRRR RGBRG", true},
		// The old decoder read the absolute run's nibbles past the data's
		// end here (index out of range). ImageMagick refuses data that
		// ends before an end-of-bitmap marker, or at an early one.
		{"an absolute run last, its padding left out", rle5x2(false, 5, 0x11, 0, 0, 0, 5, 0x12, 0x31, 0x20), "RGBRG RRRRR", false},
		{"delta: skipped pixels are the first colour", rle5x2(false, 1, 0x11, 0, 2, 2, 1, 2, 0x22, 0, 1), "PPPGG RPPPP", true},
		{"early end of line and of bitmap", rle5x2(false, 2, 0x33, 0, 0, 1, 0x22, 0, 1), "GPPPP BBPPP", false},
		{"runs past the row's end are cut there", rle5x2(false, 7, 0x12, 0, 0, 0, 7, 0x33, 0x33, 0x33, 0x30, 0, 1), "BBBBB RGRGR", true},
		{"data past the last row is ignored", rle5x2(false, 5, 0x11, 0, 0, 5, 0x22, 0, 0, 5, 0x33, 0, 1), "GGGGG RRRRR", false},
		{"a delta past the image ends it", rle5x2(false, 5, 0x11, 0, 2, 0, 5, 5, 0x33, 0, 1), "PPPPP RRRRR", false},
		{"top-down", rle5x2(true, 5, 0x11, 0, 0, 5, 0x22, 0, 1), "RRRRR GGGGG", true},
	}
}

func TestDecodeRLE4Edges(t *testing.T) {
	colours := map[rune][]byte{'P': {128, 0, 255}, 'R': {255, 0, 0}, 'G': {0, 255, 0}, 'B': {0, 0, 255}}
	dir := t.TempDir()
	for i, c := range rle4Cases() {
		t.Run(c.name, func(t *testing.T) {
			var want []byte
			for _, r := range strings.ReplaceAll(c.want, " ", "") {
				want = append(want, colours[r]...)
			}
			img, err := Decode(c.src, noLimit)
			if err != nil || string(img.Pix) != string(want) {
				t.Fatalf("%v %v, want %v", img.Pix, err, want)
			}
			if c.magick {
				name := fmt.Sprintf("rle4-%d.bmp", i)
				if err := os.WriteFile(filepath.Join(dir, name), c.src, 0o600); err != nil {
					t.Fatal(err)
				}
				sameAsMagick(t, dir, name, c.src, 3)
			}
		})
	}
	for _, c := range []struct {
		name, want string
		src        []byte
	}{
		{"cut in a row", "RLE data ends at row 1 of 2", rle5x2(false, 5, 0x11, 0, 0, 2, 0x22)},
		{"absolute run cut short", "absolute run cut short", rle5x2(false, 0, 5, 0x12)},
		{"delta cut short", "delta cut short", rle5x2(false, 0, 2, 1)},
		{"nothing", "RLE data ends at row 0 of 2", rle5x2(false)},
	} {
		if _, err := Decode(c.src, noLimit); !errors.Is(err, thumbjob.ErrUndecodable) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
