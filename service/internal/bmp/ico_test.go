package bmp

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// icoOfPNG is a one-entry ICO whose entry is the PNG p.
func icoOfPNG(p []byte) []byte {
	out := []byte{0, 0, 1, 0, 1, 0, 9, 6, 0, 0, 1, 0, 32, 0}
	out = binary.LittleEndian.AppendUint32(out, uint32(len(p)))
	out = binary.LittleEndian.AppendUint32(out, 22)
	return append(out, p...)
}

// pngChunk is a PNG chunk with its checksum.
func pngChunk(typ string, data []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	out = append(out, typ...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(append([]byte(typ), data...)))
}

const pw, ph = 9, 6 // the PNG entries' picture

// pngOf is the picture (rgbAt, alphaAt) as a PNG of the given kind, and
// its pixels as RGBA (16-bit samples: their high byte).
func pngOf(t testing.TB, kind string) ([]byte, [][4]byte) {
	t.Helper()
	var img image.Image
	want := make([][4]byte, pw*ph)
	r := image.Rect(0, 0, pw, ph)
	var trns []byte
	switch kind {
	case "rgba", "no IEND":
		m := image.NewNRGBA(r)
		for i := range want {
			c := rgbAt(i%pw, i/pw)
			want[i] = [4]byte{c[0], c[1], c[2], alphaAt(i%pw, i/pw)}
			m.SetNRGBA(i%pw, i/pw, color.NRGBA{want[i][0], want[i][1], want[i][2], want[i][3]})
		}
		img = m
	case "rgb", "rgb with tRNS":
		m := image.NewRGBA(r)
		for i := range want {
			c := rgbAt(i%pw, i/pw)
			want[i] = [4]byte{c[0], c[1], c[2], 255}
			m.SetRGBA(i%pw, i/pw, color.RGBA{c[0], c[1], c[2], 255})
		}
		img = m
		if kind == "rgb with tRNS" { // pixel (0, 0)'s colour is transparent
			c := want[0]
			trns = []byte{0, c[0], 0, c[1], 0, c[2]}
			for i := range want {
				if want[i] == c {
					want[i][3] = 0
				}
			}
		}
	case "grey":
		m := image.NewGray(r)
		for i := range want {
			v := rgbAt(i%pw, i/pw)[1]
			want[i] = [4]byte{v, v, v, 255}
			m.SetGray(i%pw, i/pw, color.Gray{v})
		}
		img = m
	case "grey16", "rgba16":
		m := image.NewNRGBA64(r)
		g := image.NewGray16(r)
		for i := range want {
			c := rgbAt(i%pw, i/pw)
			s := func(b byte) uint16 { return uint16(b) * 257 } // ImageMagick's 8 bits of it are b too
			m.SetNRGBA64(i%pw, i/pw, color.NRGBA64{s(c[0]), s(c[1]), s(c[2]), s(alphaAt(i%pw, i/pw))})
			g.SetGray16(i%pw, i/pw, color.Gray16{s(c[1])})
			want[i] = [4]byte{c[0], c[1], c[2], alphaAt(i%pw, i/pw)}
			if kind == "grey16" {
				want[i] = [4]byte{c[1], c[1], c[1], 255}
			}
		}
		img = m
		if kind == "grey16" {
			img = g
		}
	case "palette":
		p := color.Palette{}
		for i := range 5 {
			c := colour(i)
			p = append(p, color.NRGBA{c[0], c[1], c[2], byte(i * 60)})
		}
		m := image.NewPaletted(r, p)
		for i := range want {
			k := index(i%pw, i/pw, 5)
			m.SetColorIndex(i%pw, i/pw, uint8(k))
			c := colour(k)
			want[i] = [4]byte{c[0], c[1], c[2], byte(k * 60)}
		}
		img = m
	default:
		t.Fatalf("no PNG kind %q", kind)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if trns != nil { // after IHDR (8 + 25 bytes)
		b = append(append(bytes.Clone(b[:33]), pngChunk("tRNS", trns)...), b[33:]...)
	}
	if kind == "no IEND" {
		b = b[:len(b)-12]
	}
	return b, want
}

// damagedPNG is the RGBA picture's PNG damaged: a checksum wrong ("crc"),
// cut in its pixel data ("cut"), its compressed data broken ("zlib").
func damagedPNG(t testing.TB, how string) []byte {
	b, _ := pngOf(t, "rgba")
	idat := bytes.Index(b, []byte("IDAT"))
	b = bytes.Clone(b)
	switch how {
	case "crc":
		b[idat+4+int(binary.BigEndian.Uint32(b[idat-4:]))] ^= 0x10
	case "cut":
		b = b[:idat+12]
	case "zlib": // the zlib header, the chunk's checksum made right again
		n := int(binary.BigEndian.Uint32(b[idat-4:]))
		b[idat+4], b[idat+5] = 0x12, 0x34
		binary.BigEndian.PutUint32(b[idat+4+n:], crc32.ChecksumIEEE(b[idat:idat+4+n]))
	}
	return b
}

// An ICO's PNG entry is decoded here, as its DIB entries are: to RGB, or
// RGBA where the PNG has alpha (a tRNS chunk included), the bands
// DecodeConfig announces; 16-bit samples keep their high byte.
func TestDecodeICOPNGEntries(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		kind      string
		bands     int
		bitDepth  int
		magickCmp bool
	}{
		{"rgba", 4, 8, true},
		{"rgb", 3, 8, true},
		{"rgb with tRNS", 4, 8, true},
		{"grey", 3, 8, true},
		{"grey16", 3, 16, true},
		{"rgba16", 4, 16, true},
		{"palette", 4, 4, true}, // 5 colours: image/png writes 4 bits
		// libpng and browsers read a PNG whose IEND is missing.
		{"no IEND", 4, 8, false},
	} {
		t.Run(c.kind, func(t *testing.T) {
			p, want := pngOf(t, c.kind)
			ico := icoOfPNG(p)
			cfg, err := DecodeConfig(ico)
			if err != nil || !cfg.PNG || cfg.Width != pw || cfg.Height != ph || cfg.Bands != c.bands || cfg.BitCount != c.bitDepth {
				t.Fatalf("config %+v, %v; want %dx%d, %d bands, %d bits", cfg, err, pw, ph, c.bands, c.bitDepth)
			}
			img, err := Decode(ico, noLimit)
			if err != nil || img.Width != pw || img.Height != ph || img.Bands != c.bands {
				t.Fatalf("%dx%d %d bands, %v", img.Width, img.Height, img.Bands, err)
			}
			got := rgba(img)
			for i, w := range want {
				if g := got[i*4:][:4]; [4]byte(g) != w {
					t.Fatalf("pixel (%d, %d) is %v, want %v", i%pw, i/pw, g, w)
				}
			}
			if c.magickCmp {
				name := strings.ReplaceAll(c.kind, " ", "-") + ".ico"
				if err := os.WriteFile(filepath.Join(dir, name), ico, 0o600); err != nil {
					t.Fatal(err)
				}
				sameAsMagick(t, dir, name, ico, c.bands)
			}
		})
	}
}
