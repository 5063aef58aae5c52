package bmp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

const noLimit = 1 << 40

// magick runs ImageMagick's convert in dir; the test is skipped without
// it (scripts/deps.sh installs Debian's imagemagick).
func magick(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	if out, err := exec.Command("convert", "-version").Output(); err != nil || !bytes.Contains(out, []byte("ImageMagick")) {
		t.Skip("ImageMagick's convert is not installed (Debian: apt-get install imagemagick)")
	}
	cmd := exec.Command("convert", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("convert %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// sources writes the test's two pictures into dir: src.png (RGB, smooth
// and many-coloured) and srca.png (the same with a gradient of alpha).
func sources(t *testing.T) string {
	dir := t.TempDir()
	magick(t, dir, "-size", "37x23", "plasma:fractal", "-seed", "3", "-blur", "0x1", "src.png")
	magick(t, dir, "-size", "37x23", "gradient:white-none", "fade.png")
	magick(t, dir, "src.png", "fade.png", "-compose", "copyopacity", "-composite", "srca.png")
	return dir
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rgba is img's pixels as RGBA (opaque where img has no alpha).
func rgba(img Image) []byte {
	if img.Bands == 4 {
		return img.Pix
	}
	out := make([]byte, 0, img.Width*img.Height*4)
	for i := 0; i < len(img.Pix); i += 3 {
		out = append(out, img.Pix[i], img.Pix[i+1], img.Pix[i+2], 255)
	}
	return out
}

// sameAsMagick decodes b and compares every pixel with ImageMagick's
// decode of the same file (ref: its name, with [n] for an ICO entry).
// bits, when given, are the bits of each band compared (all when not).
func sameAsMagick(t *testing.T, dir, ref string, b []byte, wantBands int, bits ...[4]byte) {
	t.Helper()
	img, err := Decode(b, noLimit)
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	if img.Bands != wantBands || len(img.Pix) != img.Width*img.Height*img.Bands {
		t.Fatalf("%s: %dx%d, %d bands, %d bytes; want %d bands", ref, img.Width, img.Height, img.Bands, len(img.Pix), wantBands)
	}
	want := magick(t, dir, ref, "-depth", "8", "rgba:-")
	got := rgba(img)
	if len(want) != len(got) {
		t.Fatalf("%s: %d bytes decoded, ImageMagick %d", ref, len(got), len(want))
	}
	mask := [4]byte{0xFF, 0xFF, 0xFF, 0xFF}
	if len(bits) > 0 && bits[0] != [4]byte{} {
		mask = bits[0]
	}
	for i := range got {
		if got[i]&mask[i%4] != want[i]&mask[i%4] {
			p := i / 4
			t.Fatalf("%s: pixel (%d, %d) is %v, ImageMagick's %v", ref, p%img.Width, p/img.Width, got[p*4:p*4+4], want[p*4:p*4+4])
		}
	}
	c, err := DecodeConfig(b)
	if err != nil || c.Width != img.Width || c.Height != img.Height || c.Bands != img.Bands {
		t.Errorf("%s: config %+v, %v; decoded %dx%d, %d bands", ref, c, err, img.Width, img.Height, img.Bands)
	}
}

// Every kind of BMP ImageMagick writes decodes to its pixels exactly.
func TestDecodeAgreesWithImageMagick(t *testing.T) {
	dir := sources(t)
	cases := []struct {
		name  string
		args  []string // convert's, writing name
		bits  int
		comp  int
		bands int
	}{
		{"p1.bmp", []string{"src.png", "-colors", "2", "-compress", "None", "-type", "palette", "BMP3:p1.bmp"}, 1, biRGB, 3},
		{"p4.bmp", []string{"src.png", "-colors", "16", "-compress", "None", "-type", "palette", "BMP3:p4.bmp"}, 4, biRGB, 3},
		{"p8.bmp", []string{"src.png", "-colors", "200", "-compress", "None", "-type", "palette", "BMP3:p8.bmp"}, 8, biRGB, 3},
		{"rle8.bmp", []string{"src.png", "-colors", "200", "-compress", "RLE", "-type", "palette", "BMP3:rle8.bmp"}, 8, biRLE8, 3},
		{"rle8-few.bmp", []string{"src.png", "-colors", "5", "-compress", "RLE", "-type", "palette", "BMP3:rle8-few.bmp"}, 8, biRLE8, 3},
		{"rgb24.bmp", []string{"src.png", "BMP3:rgb24.bmp"}, 24, biRGB, 3},
		{"os2.bmp", []string{"src.png", "BMP2:os2.bmp"}, 24, biRGB, 3},
		{"rgba32-v5.bmp", []string{"srca.png", "BMP:rgba32-v5.bmp"}, 32, biBitfields, 4},
		{"rgba32-v3.bmp", []string{"srca.png", "-define", "bmp3:alpha=true", "BMP3:rgba32-v3.bmp"}, 32, biRGB, 4},
		// (ImageMagick's BMP3 writer leaves out the bit fields it declares.)
		{"rgb555-v5.bmp", []string{"src.png", "-define", "bmp:subtype=RGB555", "BMP:rgb555-v5.bmp"}, 16, biBitfields, 3},
		{"rgb565-v5.bmp", []string{"src.png", "-define", "bmp:subtype=RGB565", "BMP:rgb565-v5.bmp"}, 16, biBitfields, 3},
		{"argb4444.bmp", []string{"srca.png", "-define", "bmp:subtype=ARGB4444", "BMP:argb4444.bmp"}, 16, biBitfields, 4},
		{"argb1555.bmp", []string{"srca.png", "-define", "bmp:subtype=ARGB1555", "BMP:argb1555.bmp"}, 16, biBitfields, 4},
	}
	// ImageMagick 6 scales a field of 4 bits or fewer by shifting it
	// (0xF is 0xF0: an opaque ARGB4444 pixel has alpha 240, an ARGB1555
	// one 128); this decoder repeats the bits (0xF is 0xFF), as browsers
	// do. The fields' own bits are compared.
	fields := map[string][4]byte{"argb4444.bmp": {0xF0, 0xF0, 0xF0, 0xF0}, "argb1555.bmp": {0xFF, 0xFF, 0xFF, 0x80}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			magick(t, dir, c.args...)
			b := read(t, filepath.Join(dir, c.name))
			cfg, err := DecodeConfig(b)
			if err != nil || cfg.BitCount != c.bits || cfg.Compression != c.comp {
				t.Fatalf("%+v, %v; want %d bits, compression %d", cfg, err, c.bits, c.comp)
			}
			sameAsMagick(t, dir, c.name, b, c.bands, fields[c.name])
		})
	}
}

// ImageMagick writes no RLE4: this test's encoder makes one from a 4-bit
// BMP's rows (runs, an absolute run, a delta, ends of lines), which both
// decoders read.
func TestDecodeRLE4(t *testing.T) {
	dir := sources(t)
	magick(t, dir, "src.png", "-colors", "16", "-compress", "None", "-type", "palette", "BMP3:p4.bmp")
	b := rle4(t, read(t, filepath.Join(dir, "p4.bmp")))
	os.WriteFile(filepath.Join(dir, "rle4.bmp"), b, 0o644)
	if c, err := DecodeConfig(b); err != nil || c.Compression != biRLE4 {
		t.Fatalf("%+v %v", c, err)
	}
	sameAsMagick(t, dir, "rle4.bmp", b, 3)
	// the same pixels as the uncompressed original
	a, _ := Decode(read(t, filepath.Join(dir, "p4.bmp")), noLimit)
	r, _ := Decode(b, noLimit)
	if !bytes.Equal(a.Pix, r.Pix) {
		t.Error("RLE4 and uncompressed 4-bit differ")
	}
}

// rle4 re-encodes a 4-bit BI_RGB BMP with RLE4: each row's first 6
// pixels as an absolute run, the rest as runs of equal nibble pairs.
func rle4(t *testing.T, src []byte) []byte {
	d, err := parseBMP(src)
	if err != nil || d.bitCount != 4 {
		t.Fatal(err)
	}
	rowBytes := stride(d.width, 4)
	nib := func(row []byte, x int) byte { return row[x/2] >> (4 * (1 - x%2)) & 0xF }
	var data []byte
	for y := range d.height {
		row := src[d.pixelOffset+y*rowBytes:]
		abs := min(6, d.width)
		data = append(data, 0, byte(abs))
		for x := 0; x < abs; x += 2 {
			v := nib(row, x) << 4
			if x+1 < abs {
				v |= nib(row, x+1)
			}
			data = append(data, v)
		}
		if (abs+1)/2%2 == 1 {
			data = append(data, 0)
		}
		for x := abs; x < d.width; {
			n := 1
			for x+n < d.width && n < 255 && nib(row, x+n) == nib(row, x+n%2) {
				n++
			}
			v := nib(row, x) << 4
			if x+1 < d.width {
				v |= nib(row, x+1)
			}
			data = append(data, byte(n), v)
			x += n
		}
		data = append(data, 0, 0)
	}
	data = append(data, 0, 1)
	out := bytes.Clone(src[:d.pixelOffset])
	binary.LittleEndian.PutUint32(out[14+16:], biRLE4)
	binary.LittleEndian.PutUint32(out[14+20:], uint32(len(data)))
	out = append(out, data...)
	binary.LittleEndian.PutUint32(out[2:], uint32(len(out)))
	return out
}

// topDown turns a bottom-up BI_RGB BMP into the same picture stored
// top-down (negative height, rows reversed).
func topDown(t *testing.T, src []byte) []byte {
	d, err := parseBMP(src)
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.Clone(src)
	binary.LittleEndian.PutUint32(out[22:], uint32(-int32(d.height)))
	rowBytes := stride(d.width, d.bitCount)
	for y := range d.height {
		copy(out[d.pixelOffset+y*rowBytes:][:rowBytes], src[d.pixelOffset+(d.height-1-y)*rowBytes:])
	}
	return out
}

func TestDecodeTopDown(t *testing.T) {
	dir := sources(t)
	for _, c := range []struct {
		name  string
		args  []string
		bands int
	}{
		{"p4.bmp", []string{"src.png", "-colors", "16", "-compress", "None", "-type", "palette", "BMP3:p4.bmp"}, 3},
		{"rgb24.bmp", []string{"src.png", "BMP3:rgb24.bmp"}, 3},
		{"rgba32.bmp", []string{"srca.png", "BMP:rgba32.bmp"}, 4},
	} {
		magick(t, dir, c.args...)
		b := read(t, filepath.Join(dir, c.name))
		want, err := Decode(b, noLimit)
		if err != nil {
			t.Fatal(err)
		}
		td := topDown(t, b)
		os.WriteFile(filepath.Join(dir, "td-"+c.name), td, 0o644)
		if cfg, _ := DecodeConfig(td); !cfg.TopDown {
			t.Errorf("%s: not read as top-down", c.name)
		}
		sameAsMagick(t, dir, "td-"+c.name, td, c.bands)
		if got, _ := Decode(td, noLimit); !bytes.Equal(got.Pix, want.Pix) {
			t.Errorf("%s: top-down pixels differ from bottom-up", c.name)
		}
	}
}

// icoOf makes a one-entry ICO of a BMP: its DIB, the height doubled, and
// an AND mask with every pixel whose x+y is a multiple of 3 transparent.
func icoOf(t *testing.T, src []byte) []byte {
	d, err := parseBMP(src)
	if err != nil || d.width > 256 || d.height > 256 {
		t.Fatal(err)
	}
	dibBytes := bytes.Clone(src[14:])
	binary.LittleEndian.PutUint32(dibBytes[8:], uint32(2*d.height))
	rowBytes := stride(d.width, 1)
	mask := make([]byte, rowBytes*d.height)
	for y := range d.height {
		for x := range d.width {
			if (x+y)%3 == 0 {
				mask[y*rowBytes+x/8] |= 0x80 >> (x % 8)
			}
		}
	}
	// the DIB's pixels follow its palette directly
	dibBytes = append(dibBytes[:d.pixelOffset-14], src[d.pixelOffset:]...)
	dibBytes = append(dibBytes, mask...)
	out := []byte{0, 0, 1, 0, 1, 0, byte(d.width), byte(d.height), 0, 0, 1, 0, byte(d.bitCount), 0}
	out = binary.LittleEndian.AppendUint32(out, uint32(len(dibBytes)))
	out = binary.LittleEndian.AppendUint32(out, 22)
	return append(out, dibBytes...)
}

func TestDecodeICO(t *testing.T) {
	dir := sources(t)
	// ImageMagick's own: 32-bit entries, the largest chosen.
	magick(t, dir, "srca.png", "-define", "icon:auto-resize=16,32,24", "x.ico")
	b := read(t, filepath.Join(dir, "x.ico"))
	img, err := Decode(b, noLimit)
	if err != nil || img.Width != 32 || img.Height != 32 {
		t.Fatalf("%dx%d, %v; want the 32x32 entry", img.Width, img.Height, err)
	}
	sameAsMagick(t, dir, "x.ico[1]", b, 4)

	// Entries of 4, 8 and 24 bits take their alpha from the AND mask.
	for _, c := range []struct{ name, colours, kind string }{{"p4", "16", "BMP3"}, {"p8", "200", "BMP3"}, {"rgb24", "0", "BMP3"}} {
		args := []string{"src.png", "-compress", "None", "-type", "palette", "-colors", c.colours, c.kind + ":" + c.name + ".bmp"}
		if c.colours == "0" {
			args = []string{"src.png", c.kind + ":" + c.name + ".bmp"}
		}
		magick(t, dir, args...)
		ico := icoOf(t, read(t, filepath.Join(dir, c.name+".bmp")))
		os.WriteFile(filepath.Join(dir, c.name+".ico"), ico, 0o644)
		sameAsMagick(t, dir, c.name+".ico", ico, 4)
		// the top row is the mask's last (23rd): x+22 a multiple of 3 at x=2
		if img, _ := Decode(ico, noLimit); img.Pix[3] != 255 || img.Pix[2*4+3] != 0 {
			t.Errorf("%s: the AND mask not applied: alpha %d, %d", c.name, img.Pix[3], img.Pix[2*4+3])
		}
	}

	// A 256x256 PNG entry is decoded here too.
	magick(t, dir, "srca.png", "-resize", "256x256!", "-depth", "8", "big.png")
	magick(t, dir, "big.png", "-define", "icon:format=png", "png.ico")
	b = read(t, filepath.Join(dir, "png.ico"))
	if c, err := DecodeConfig(b); err != nil || !c.PNG || c.Width != 256 || c.Height != 256 || c.Bands != 4 {
		t.Errorf("config %+v %v", c, err)
	}
	sameAsMagick(t, dir, "png.ico", b, 4)
	magick(t, dir, "big.png", "-interlace", "PNG", "-define", "icon:format=png", "interlaced.ico")
	sameAsMagick(t, dir, "interlaced.ico", read(t, filepath.Join(dir, "interlaced.ico")), 4)
}

// The pixel limit is checked from the header, before anything the size
// would make is allocated.
func TestDecodeLimitsBeforeAllocating(t *testing.T) {
	huge := bmpHeader(40, 60000, -60000, 24, biRGB, nil) // 3.6 GP top-down in 54 bytes
	huge = append(huge, make([]byte, 64)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decode(huge, 100_000_000)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, thumbjob.ErrTooManyPixels) || !strings.Contains(err.Error(), "60000x60000") {
		t.Errorf("over the limit: %v", err)
	}
	// Under an unbounded limit it is a truncated file: still no allocation.
	_, err = Decode(huge, noLimit)
	if !errors.Is(err, thumbjob.ErrUndecodable) {
		t.Errorf("truncated huge: %v", err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("%d bytes allocated for a refused header", grew)
	}
	ico := []byte{0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 32, 0, 33, 0, 0, 0, 22, 0, 0, 0}
	ico = append(ico, "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x01\x00\x00\x00\x01\x00\x00\x08\x06\x00\x00\x00"...)
	ico = append(ico, 0, 0, 0, 0)
	if _, err := Decode(ico, 1<<20); !errors.Is(err, thumbjob.ErrTooManyPixels) {
		t.Errorf("an ICO's 65536x65536 PNG entry: %v", err)
	}
}

// bmpHeader is a BMP's file and info headers (size bytes of it), then
// extra (bit fields, palette); the pixel offset is right after them.
func bmpHeader(size, w, h, bits, comp int, extra []byte) []byte {
	info := make([]byte, size)
	le := binary.LittleEndian
	le.PutUint32(info, uint32(size))
	if size == coreHeaderLen {
		le.PutUint16(info[4:], uint16(w))
		le.PutUint16(info[6:], uint16(h))
		le.PutUint16(info[8:], 1)
		le.PutUint16(info[10:], uint16(bits))
	} else {
		le.PutUint32(info[4:], uint32(int32(w)))
		le.PutUint32(info[8:], uint32(int32(h)))
		le.PutUint16(info[12:], 1)
		le.PutUint16(info[14:], uint16(bits))
		le.PutUint32(info[16:], uint32(comp))
	}
	out := []byte("BM")
	out = le.AppendUint32(out, 0)
	out = le.AppendUint32(out, 0)
	out = le.AppendUint32(out, uint32(14+size+len(extra)))
	out = append(out, info...)
	return append(out, extra...)
}

// rle8 is a 4x2 RLE8 BMP of a 3-colour palette with data.
func rle8(data ...byte) []byte {
	pal := []byte{0, 0, 0, 0, 0, 0, 255, 0, 0, 255, 0, 0}
	b := bmpHeader(40, 4, 2, 8, biRLE8, pal)
	binary.LittleEndian.PutUint32(b[14+32:], 3)
	return append(b, data...)
}

func set32(b []byte, at int, v uint32) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[at:], v)
	return b
}

func TestDecodeRLEEdges(t *testing.T) {
	red, green, black := []byte{255, 0, 0}, []byte{0, 255, 0}, []byte{0, 0, 0}
	row := func(px ...[]byte) []byte { return bytes.Join(px, nil) }
	for _, c := range []struct {
		name string
		src  []byte
		want []byte // top row first
	}{
		{"runs", rle8(4, 1, 0, 0, 4, 2, 0, 1), row(green, green, green, green, red, red, red, red)},
		{"absolute run, padded", rle8(0, 3, 1, 2, 1, 0, 1, 2, 0, 0, 4, 1, 0, 1), row(red, red, red, red, red, green, red, green)},
		{"delta skips (first colour)", rle8(0, 2, 2, 1, 2, 2, 0, 1), row(black, black, green, green, black, black, black, black)},
		{"run past the row's end: cut", rle8(6, 1, 0, 0, 4, 2, 0, 1), row(green, green, green, green, red, red, red, red)},
		{"early end of bitmap", rle8(2, 1, 0, 1), row(black, black, black, black, red, red, black, black)},
		{"last row done, no end marker", rle8(4, 1, 0, 0, 4, 2), row(green, green, green, green, red, red, red, red)},
		{"index past the palette: black", rle8(4, 9, 0, 0, 4, 1, 0, 1), row(red, red, red, red, black, black, black, black)},
		// Past the last row (a run, an absolute run, a delta), the rest is
		// ignored, as image-rs' lenient mode reads it.
		{"run past the last row: ignored", rle8(4, 1, 0, 0, 4, 1, 0, 0, 1, 1, 0, 1), row(red, red, red, red, red, red, red, red)},
		{"absolute run past the last row: ignored", rle8(0, 0, 0, 0, 0, 3, 1, 1, 1, 0), row(black, black, black, black, black, black, black, black)},
		{"delta past the image: the rest ignored", rle8(2, 2, 0, 2, 9, 0, 4, 1, 0, 1), row(black, black, black, black, green, green, black, black)},
		{"top-down", set32(rle8(4, 1, 0, 0, 4, 2, 0, 1), 22, 0xFFFFFFFE), row(red, red, red, red, green, green, green, green)},
	} {
		img, err := Decode(c.src, noLimit)
		if err != nil || !bytes.Equal(img.Pix, c.want) {
			t.Errorf("%s: %v %v, want %v", c.name, img.Pix, err, c.want)
		}
	}
}

// Every malformed file is an error naming what is wrong, never a panic.
func TestDecodeMalformed(t *testing.T) {
	le := binary.LittleEndian
	rgb := append(bmpHeader(40, 2, 2, 24, biRGB, nil), make([]byte, 16)...)
	pal := append(bmpHeader(40, 2, 2, 8, biRGB, make([]byte, 8)), make([]byte, 8)...)
	le.PutUint32(pal[14+32:], 2)
	for _, c := range []struct {
		name, want string
		src        []byte
	}{
		{"empty", "cut short", nil},
		{"just BM", "cut short", []byte("BM")},
		{"info header of 0 bytes", "info header of 0", set32(rgb, 14, 0)},
		{"info header of 13 bytes", "info header of 13", set32(rgb, 14, 13)},
		{"info header past the end", "info header of 4000", set32(rgb, 14, 4000)},
		{"zero width", "of 0x2 pixels", set32(rgb, 18, 0)},
		{"negative width", "of -2x2 pixels", set32(rgb, 18, 0xFFFFFFFE)},
		{"zero height", "of 2x0 pixels", set32(rgb, 22, 0)},
		{"3 bits a pixel", "3 bits a pixel", func() []byte { b := bytes.Clone(rgb); b[28] = 3; return b }()},
		{"0 bits a pixel", "0 bits a pixel", func() []byte { b := bytes.Clone(rgb); b[28] = 0; return b }()},
		{"JPEG compression", "compression 4", set32(rgb, 30, 4)},
		{"RLE8 on 24 bits", "RLE8 compression, 24 bits", set32(rgb, 30, biRLE8)},
		{"RLE4 on 8 bits", "RLE4 compression, 8 bits", set32(rle8(0, 1), 30, biRLE4)},
		{"bit fields on 24 bits", "bit fields and 24 bits", set32(rgb, 30, biBitfields)},
		{"bit fields cut short", "bit fields cut short", append(bmpHeader(40, 2, 2, 32, biBitfields, nil)[:54], 0, 0)},
		{"bit field not contiguous", "bit field 0x5", append(bmpHeader(40, 1, 1, 32, biBitfields, []byte{5, 0, 0, 0, 0, 0xFF, 0, 0, 0, 0, 0xFF, 0}), 0, 0, 0, 0)},
		{"16-bit bit field past 16 bits", "bit field 0x10000", append(bmpHeader(40, 1, 1, 16, biBitfields, []byte{0, 0, 1, 0, 0xE0, 3, 0, 0, 0x1F, 0, 0, 0}), 0, 0, 0, 0)},
		{"palette past the end", "palette cut short", set32(pal, 10, 0)[:14+40+4]},
		{"pixel offset past the end", "outside the file", set32(rgb, 10, 1<<30)},
		// One byte short is read (the last byte 0), two are not.
		{"pixels cut short", "pixel data of 14 bytes", rgb[:len(rgb)-2]},
		{"RLE delta cut short", "delta cut short", rle8(0, 2, 1)},
		{"RLE absolute run cut short", "absolute run cut short", rle8(0, 4, 1, 1)},
		{"RLE data ends", "RLE data ends at row 1", rle8(4, 1, 0, 0)},
		{"OS/2 Huffman", "OS/2 BMP with compression 3", bmpHeader(64, 2, 2, 1, 3, make([]byte, 64))},
		{"OS/2 RLE24 on 8 bits", "OS/2 BMP with compression 4", bmpHeader(64, 2, 2, 8, 4, make([]byte, 64))},
		{"PNG compression", "compression 5", set32(rgb, 30, 5)},
		{"ICO without entries", "directory of 0 entries", []byte{0, 0, 1, 0, 0, 0}},
		{"ICO directory cut short", "directory of 2 entries", []byte{0, 0, 1, 0, 2, 0, 16, 16, 0, 0, 1, 0, 32, 0, 40, 0, 0, 0, 22, 0, 0, 0}},
		{"ICO entry past the end", "outside the file", []byte{0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0, 40, 0, 0, 0, 22, 0, 0, 0}},
		{"ICO entry inside the directory", "outside the file", append([]byte{0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0, 8, 0, 0, 0, 6, 0, 0, 0}, make([]byte, 8)...)},
		{"ICO PNG entry without IHDR", "without an IHDR", append([]byte{0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0, 12, 0, 0, 0, 22, 0, 0, 0}, "\x89PNG\r\n\x1a\nabcd"...)},
		{"ICO PNG entry with a bad checksum", "ICO's PNG entry: png: invalid format: invalid checksum", icoOfPNG(damagedPNG(t, "crc"))},
		{"ICO PNG entry cut in its pixels", "ICO's PNG entry", icoOfPNG(damagedPNG(t, "cut"))},
		{"ICO PNG entry with bad compressed data", "ICO's PNG entry", icoOfPNG(damagedPNG(t, "zlib"))},
		{"ICO DIB entry cut short", "pixel data of 0 bytes", append([]byte{0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0, 40, 0, 0, 0, 22, 0, 0, 0}, bmpHeader(40, 16, 32, 32, 0, nil)[14:]...)},
	} {
		_, err := Decode(c.src, noLimit)
		if !errors.Is(err, thumbjob.ErrUndecodable) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// built is every file the tests build: the layouts, the RLE4 cases, the
// ICO PNG entries.
func built(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for _, l := range layouts() {
		out[l.name] = l.spec.file()
	}
	for _, c := range rle4Cases() {
		out["rle4 "+c.name] = c.src
	}
	for _, kind := range []string{"rgba", "rgb with tRNS", "grey16", "palette", "no IEND"} {
		p, _ := pngOf(t, kind)
		out["ico png "+kind] = icoOfPNG(p)
	}
	return out
}

// Every prefix of every fixture, and the fixtures with bytes flipped, is
// decoded or refused without a panic; so is every prefix of every built
// file, and every built file with each of its bytes flipped.
func TestDecodeCutAndFlipped(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.*")
	if len(files) < 5 {
		t.Fatalf("%d fixtures", len(files))
	}
	for _, f := range files {
		src := read(t, f)
		if _, err := Decode(src, noLimit); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		for n := range len(src) {
			if _, err := Decode(src[:n], noLimit); err == nil && n < 60 {
				t.Errorf("%s cut at %d decoded", f, n)
			}
		}
		for i := range src {
			b := bytes.Clone(src)
			b[i] ^= 0xA5
			Decode(b, 1<<20)
		}
	}
	for name, src := range built(t) {
		for n := range len(src) {
			if err := decodeWithinConfig(src[:n], 1<<20); err != nil {
				t.Errorf("%s cut at %d: %v", name, n, err)
			}
		}
		for i := range src {
			for _, x := range []byte{0x01, 0x80, 0xA5, 0xFF} {
				b := bytes.Clone(src)
				b[i] ^= x
				if err := decodeWithinConfig(b, 1<<20); err != nil {
					t.Errorf("%s with byte %d ^ %#x: %v", name, i, x, err)
				}
			}
		}
	}
}

// decodeWithinConfig decodes b; when it decodes, the image must be what
// DecodeConfig announced: its size, and at most its bands (memcost prices
// DecodeConfig's). An error must be one of the two the engine knows.
func decodeWithinConfig(b []byte, maxPixels int64) error {
	img, err := Decode(b, maxPixels)
	if err != nil {
		if !errors.Is(err, thumbjob.ErrUndecodable) && !errors.Is(err, thumbjob.ErrTooManyPixels) {
			return fmt.Errorf("untyped error %v", err)
		}
		return nil
	}
	c, err := DecodeConfig(b)
	switch {
	case err != nil:
		return fmt.Errorf("decoded %dx%d, but DecodeConfig: %v", img.Width, img.Height, err)
	case img.Width < 1 || img.Height < 1 || img.Bands < 3 || img.Bands > 4 || len(img.Pix) != img.Width*img.Height*img.Bands:
		return fmt.Errorf("decoded %dx%d, %d bands, in %d bytes", img.Width, img.Height, img.Bands, len(img.Pix))
	case img.Width != c.Width || img.Height != c.Height || img.Bands > c.Bands:
		return fmt.Errorf("decoded %dx%d, %d bands; DecodeConfig said %dx%d, %d bands", img.Width, img.Height, img.Bands, c.Width, c.Height, c.Bands)
	}
	return nil
}

// fuzzCorpus is the fuzz target's kept corpus: each file's one []byte.
func fuzzCorpus(t *testing.T) map[string][]byte {
	files, _ := filepath.Glob("testdata/fuzz/FuzzDecode/*")
	out := map[string][]byte{}
	for _, f := range files {
		lines := strings.SplitN(strings.TrimSpace(string(read(t, f))), "\n", 2)
		lit, ok := strings.CutPrefix(lines[len(lines)-1], "[]byte(")
		lit, ok2 := strings.CutSuffix(lit, ")")
		b, err := strconv.Unquote(lit)
		if len(lines) != 2 || lines[0] != "go test fuzz v1" || !ok || !ok2 || err != nil {
			t.Fatalf("%s: not a corpus file of one []byte: %v", f, err)
		}
		out[f] = []byte(b)
	}
	return out
}

// What Decode makes is never more than DecodeConfig said (the memory
// price is computed from DecodeConfig), over the fixtures, the built
// files and the fuzz corpus.
func TestDecodeWithinConfig(t *testing.T) {
	all := fuzzCorpus(t)
	files, _ := filepath.Glob("testdata/*.*")
	for _, f := range files {
		all[f] = read(t, f)
	}
	for name, b := range built(t) {
		all[name] = b
	}
	for name, b := range all {
		if err := decodeWithinConfig(b, 1<<20); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzDecode: no input panics, every error is typed, and an image
// decoded is never larger than DecodeConfig announced. Seeds: the
// fixtures and every file the tests build (every layout, RLE4 among
// them); testdata/fuzz/FuzzDecode keeps what runs found.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.*")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, b := range built(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := decodeWithinConfig(b, 1<<20); err != nil {
			t.Fatal(err)
		}
	})
}
