package memcost

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/image/tiff"

	"github.com/thumbd/thumbd/internal/heiftest"
	"github.com/thumbd/thumbd/internal/hostile"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// The fixtures in testdata/headers are real files of the formats read
// since issue 35, made from 20x12 PNGs (8-bit RGB, RGBA, 16-bit RGB,
// grey) with Debian's tools:
//
//	heif-enc -q 30 [-b 10] in.png -o heic-*.heic  (x265; a one-tile grid)
//	vips copy in.png avif-*.avif[bitdepth=12]      (aom)
//	heif-enc -A -q 30 -p speed=9 --colour_primaries 12|9
//	    --transfer_characteristic 13|16 --matrix_coefficients 6|9
//	    --full_range_flag 1|0 in.png -o avif-p3|pq.avif, whose colr nclx
//	    (2, 2, 6, full: Debian 12's heif-enc ignores those options) was
//	    then rewritten in place to 12, 13, 6, full and 9, 16, 9, limited
//	cjxl [-d 0] [--container=1] in.png jxl-*.jxl   (and from a 2-frame GIF)
//	convert in.png [-define tiff:tile-geometry=16x16] [-colorspace CMYK]
//	    [-endian MSB] [TIFF64:] -compress None tiff-*.tif
const headers = "testdata/headers"

func TestLookNewFormats(t *testing.T) {
	type want struct {
		format                     imagefmt.Format
		bands, bytes, depth, pages int
		alpha, tiled               bool
		tileW, tileH, tiles        int
		compression                int
	}
	cases := map[string]want{
		"heic-8.heic":         {format: imagefmt.HEIC, bands: 3, bytes: 1, depth: 8, tileW: 64, tileH: 64, tiles: 1},
		"heic-10.heic":        {format: imagefmt.HEIC, bands: 3, bytes: 2, depth: 10, tileW: 64, tileH: 64, tiles: 1},
		"heic-alpha.heic":     {format: imagefmt.HEIC, bands: 4, bytes: 1, depth: 8, alpha: true, tileW: 64, tileH: 64, tiles: 1},
		"avif-8.avif":         {format: imagefmt.AVIF, bands: 3, bytes: 1, depth: 8},
		"avif-12.avif":        {format: imagefmt.AVIF, bands: 3, bytes: 2, depth: 12},
		"avif-alpha.avif":     {format: imagefmt.AVIF, bands: 4, bytes: 1, depth: 8, alpha: true},
		"avif-p3.avif":        {format: imagefmt.AVIF, bands: 3, bytes: 1, depth: 8},
		"avif-pq.avif":        {format: imagefmt.AVIF, bands: 3, bytes: 1, depth: 8},
		"jxl-lossy.jxl":       {format: imagefmt.JXL, bands: 3, bytes: 1, depth: 8},
		"jxl-16.jxl":          {format: imagefmt.JXL, bands: 3, bytes: 2, depth: 16},
		"jxl-alpha.jxl":       {format: imagefmt.JXL, bands: 4, bytes: 1, depth: 8, alpha: true},
		"jxl-grey.jxl":        {format: imagefmt.JXL, bands: 1, bytes: 1, depth: 8},
		"jxl-container.jxl":   {format: imagefmt.JXL, bands: 3, bytes: 1, depth: 8},
		"jxl-animated.jxl":    {format: imagefmt.JXL, bands: 4, bytes: 1, depth: 8, alpha: true},
		"tiff-strips.tif":     {format: imagefmt.TIFF, bands: 3, bytes: 1, depth: 8, pages: 1, tileW: 20, tileH: 12, compression: 1},
		"tiff-tiled.tif":      {format: imagefmt.TIFF, bands: 3, bytes: 1, depth: 8, pages: 1, tiled: true, tileW: 16, tileH: 16, compression: 1},
		"tiff-16.tif":         {format: imagefmt.TIFF, bands: 3, bytes: 2, depth: 16, pages: 1, tileW: 20, tileH: 12, compression: 1},
		"tiff-cmyk.tif":       {format: imagefmt.TIFF, bands: 4, bytes: 1, depth: 8, pages: 1, tileW: 20, tileH: 12, compression: 1},
		"tiff-alpha.tif":      {format: imagefmt.TIFF, bands: 4, bytes: 1, depth: 8, pages: 1, alpha: true, tileW: 20, tileH: 12, compression: 1},
		"tiff-3pages-lzw.tif": {format: imagefmt.TIFF, bands: 1, bytes: 1, depth: 8, pages: 3, tileW: 20, tileH: 12, compression: 5},
		"tiff-be.tif":         {format: imagefmt.TIFF, bands: 3, bytes: 1, depth: 8, pages: 1, tileW: 20, tileH: 12, compression: 1},
		"tiff-big.tif":        {format: imagefmt.TIFF, bands: 3, bytes: 1, depth: 8, pages: 1, tileW: 20, tileH: 12, compression: 1},
		"tiff-palette.tif":    {format: imagefmt.TIFF, bands: 3, bytes: 1, depth: 4, pages: 1, tileW: 20, tileH: 12, compression: 1},
	}
	files, _ := filepath.Glob(filepath.Join(headers, "*"))
	if len(files) != len(cases) {
		t.Errorf("%d fixtures, %d cases", len(files), len(cases))
	}
	for name, w := range cases {
		src, err := os.ReadFile(filepath.Join(headers, name))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Look(src)
		h := s.Header
		got := want{h.Format, h.Bands, h.BytesPerSample, h.BitDepth, h.Pages, h.Alpha, h.Tiled, h.TileWidth, h.TileHeight, h.Tiles, h.Compression}
		if err != nil || s.Format != w.format || got != w || h.Width != 20 || h.Height != 12 || h.Frames != 1 {
			t.Errorf("%s: %+v, %v\nwant %+v", name, h, err, w)
		}
		if w.format == imagefmt.TIFF && !strings.Contains(name, "big") {
			// Go's own TIFF reader, independently
			// (which reads neither 4-bit palettes nor CMYK)
			c, err := tiff.DecodeConfig(bytes.NewReader(src))
			if err != nil && strings.Contains(err.Error(), "unsupported feature") {
				continue
			}
			if err != nil || c.Width != h.Width || c.Height != h.Height {
				t.Errorf("%s: x/image/tiff says %dx%d (%v)", name, c.Width, c.Height, err)
			}
		}
	}
}

// BMP and ICO headers are the decoder's own (bmp.DecodeConfig).
func TestLookBMPAndICO(t *testing.T) {
	for name, w := range map[string]Header{
		"p1.bmp":      {Format: imagefmt.BMP, Width: 12, Height: 8, Bands: 3, BytesPerSample: 1, Frames: 1, BitDepth: 1},
		"rgba32.bmp":  {Format: imagefmt.BMP, Width: 12, Height: 8, Bands: 4, Alpha: true, BytesPerSample: 1, Frames: 1, BitDepth: 32, Compression: 3},
		"rle8.bmp":    {Format: imagefmt.BMP, Width: 12, Height: 8, Bands: 3, BytesPerSample: 1, Frames: 1, BitDepth: 8, Compression: 1},
		"ico-bmp.ico": {Format: imagefmt.ICO, Width: 16, Height: 16, Bands: 4, Alpha: true, BytesPerSample: 1, Frames: 1, BitDepth: 32},
		"ico-png.ico": {Format: imagefmt.ICO, Width: 16, Height: 16, Bands: 4, Alpha: true, BytesPerSample: 1, Frames: 1, BitDepth: 8},
	} {
		src, err := os.ReadFile(filepath.Join("../bmp/testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if h, err := ReadHeader(src); err != nil || h != w {
			t.Errorf("%s: %+v, %v; want %+v", name, h, err, w)
		}
	}
}

// ISO BMFF boxes, for HEIF structures Debian's encoders do not write.
func bx(typ string, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	return append(binary.BigEndian.AppendUint32(nil, uint32(8+len(body))), append([]byte(typ), body...)...)
}

func fullBox(typ string, version byte, parts ...[]byte) []byte {
	return bx(typ, append([][]byte{{version, 0, 0, 0}}, parts...)...)
}

func be16(v int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
func be32(v int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func ispe(w, h int) []byte { return fullBox("ispe", 0, be32(w), be32(h)) }

type testItem struct {
	id    int
	typ   string
	props []int // indexes into the properties, from 1
}

// heifFile is an image with a primary item, items, their properties and
// references (iref's boxes).
func heifFile(brand string, primary int, items []testItem, props [][]byte, refs ...[]byte) []byte {
	var infes, ipma [][]byte
	ipma = append(ipma, be32(len(items)))
	for _, it := range items {
		infes = append(infes, fullBox("infe", 2, be16(it.id), be16(0), []byte(it.typ)))
		ipma = append(ipma, be16(it.id), []byte{byte(len(it.props))})
		for _, p := range it.props {
			ipma = append(ipma, []byte{0x80 | byte(p)})
		}
	}
	meta := fullBox("meta", 0,
		fullBox("hdlr", 0, be32(0), []byte("pict"), make([]byte, 13)),
		fullBox("pitm", 0, be16(primary)),
		fullBox("iinf", 0, append([][]byte{be16(len(items))}, infes...)...),
		fullBox("iref", 0, refs...),
		bx("iprp", bx("ipco", props...), fullBox("ipma", 0, ipma...)))
	return append(bx("ftyp", []byte(brand), be32(0), []byte("mif1"), []byte(brand)), meta...)
}

func ref(typ string, from int, to ...int) []byte {
	parts := [][]byte{be16(from), be16(len(to))}
	for _, t := range to {
		parts = append(parts, be16(t))
	}
	return bx(typ, parts...)
}

func TestLookHEIFStructures(t *testing.T) {
	hvcC := bx("hvcC", append(make([]byte, 17), 0xFA, 0xFA, 0, 0, 0, 0)) // bitDepthLumaMinus8 = 2
	// an iPhone's photo: a 2x2 grid of 512x512 tiles showing 1000x900,
	// rotated 90 degrees, with an alpha and a depth image
	grid := heifFile("heic", 1, []testItem{
		{1, "grid", []int{1, 2}}, {2, "hvc1", []int{3, 4}}, {3, "hvc1", []int{3, 4}}, {4, "hvc1", []int{3, 4}}, {5, "hvc1", []int{3, 4}},
		{6, "hvc1", []int{3, 5}}, {7, "hvc1", []int{3, 6}},
	}, [][]byte{ispe(1000, 900), bx("irot", []byte{1}), ispe(512, 512), hvcC,
		fullBox("auxC", 0, []byte("urn:com:apple:photo:2020:aux:hdrgainmap\x00")), fullBox("auxC", 0, []byte("urn:mpeg:hevc:2015:auxid:1\x00"))},
		ref("dimg", 1, 2, 3, 4, 5), ref("auxl", 6, 1))
	h, err := ReadHeader(grid)
	if err != nil || h.Format != imagefmt.HEIC || h.Width != 1000 || h.Height != 900 || h.Tiles != 4 || h.TileWidth != 512 ||
		h.Rotation != 90 || h.BitDepth != 10 || h.BytesPerSample != 2 || h.Alpha {
		t.Errorf("grid: %+v, %v", h, err)
	}
	// the same with its alpha image (auxid:1) referring to the grid
	withAlpha := heifFile("heic", 1, []testItem{{1, "grid", []int{1}}, {2, "hvc1", []int{3}}, {7, "hvc1", []int{3, 4}}},
		[][]byte{ispe(512, 512), bx("free"), ispe(512, 512), fullBox("auxC", 0, []byte("urn:mpeg:hevc:2015:auxid:1\x00"))},
		ref("dimg", 1, 2), ref("auxl", 7, 1))
	if h, err := ReadHeader(withAlpha); err != nil || !h.Alpha || h.Bands != 4 {
		t.Errorf("alpha: %+v, %v", h, err)
	}
	// an AVIF with pixi (12 bits), irot 270, alpha without auxC
	avif := heifFile("avif", 2, []testItem{{2, "av01", []int{1, 2, 3}}, {3, "av01", []int{1}}},
		[][]byte{ispe(640, 480), fullBox("pixi", 0, []byte{3, 12, 12, 12}), bx("irot", []byte{3})}, ref("auxl", 3, 2))
	if h, err := ReadHeader(avif); err != nil || h.Format != imagefmt.AVIF || h.Width != 640 || h.BitDepth != 12 || h.Rotation != 270 || !h.Alpha {
		t.Errorf("avif: %+v, %v", h, err)
	}
	// An AVIF sequence without a meta box: its first frame, of its
	// sample entry's size, alpha from a track that refers to it.
	if h, err := ReadHeader(avifSequence(320, 240, true)); err != nil || h.Width != 320 || h.Height != 240 || h.Frames != 1 || h.BitDepth != 10 || !h.Alpha ||
		!h.Sequence || h.NCLX != (thumbjob.NCLX{Primaries: 12, Transfer: 13, Matrix: 6, FullRange: true}) {
		t.Errorf("sequence (its sample entry's colr read): %+v, %v", h, err)
	}
	if h, err := ReadHeader(avifSequence(320, 240, false)); err != nil || h.Alpha || h.Bands != 3 {
		t.Errorf("sequence without alpha: %+v, %v", h, err)
	}
	// A 64-bit box size.
	large := append(bx("ftyp", []byte("avif"), be32(0)), 0, 0, 0, 1)
	meta := avif[bytes.Index(avif, []byte("meta"))-4:]
	large = append(append(large, "meta"...), binary.BigEndian.AppendUint64(nil, uint64(len(meta)+8))...)
	large = append(large, meta[8:]...)
	if h, err := ReadHeader(large); err != nil || h.Width != 640 {
		t.Errorf("64-bit box size: %+v, %v", h, err)
	}

	for name, b := range map[string][]byte{
		"no meta":            bx("ftyp", []byte("heic"), be32(0)),
		"no primary item":    bytes.Replace(avif, []byte("pitm"), []byte("xitm"), 1),
		"primary not listed": heifFile("avif", 9, []testItem{{2, "av01", []int{1}}}, [][]byte{ispe(1, 1)}),
		"no ispe":            heifFile("avif", 2, []testItem{{2, "av01", nil}}, nil),
		"ispe cut short":     heifFile("avif", 2, []testItem{{2, "av01", []int{1}}}, [][]byte{fullBox("ispe", 0, be32(5))}),
		"zero size":          heifFile("avif", 2, []testItem{{2, "av01", []int{1}}}, [][]byte{ispe(0, 480)}),
		"property past ipco": heifFile("avif", 2, []testItem{{2, "av01", []int{1, 7}}}, [][]byte{ispe(5, 5)}),
		"grid without tiles": heifFile("heic", 1, []testItem{{1, "grid", []int{1}}}, [][]byte{ispe(5, 5)}),
		"grid tile unlisted": heifFile("heic", 1, []testItem{{1, "grid", []int{1}}}, [][]byte{ispe(5, 5)}, ref("dimg", 1, 4)),
		"grid short of tiles": heifFile("heic", 1, []testItem{{1, "grid", []int{1}}, {2, "hvc1", []int{2}}},
			[][]byte{ispe(1000, 1000), ispe(512, 512)}, ref("dimg", 1, 2, 2)),
		"iref cut short":      heifFile("heic", 1, []testItem{{1, "hvc1", []int{1}}}, [][]byte{ispe(5, 5)}, bx("dimg", be16(1), be16(40), be16(2))),
		"box past the end":    append(bx("ftyp", []byte("heic"), be32(0)), 0, 0, 1, 0, 'm', 'e', 't', 'a', 0, 0, 0, 0),
		"sequence no tracks":  append(bx("ftyp", []byte("avis"), be32(0)), bx("moov", bx("mvhd"))...),
		"tkhd cut short":      append(bx("ftyp", []byte("avis"), be32(0)), bx("moov", bx("trak", fullBox("tkhd", 0, make([]byte, 2))))...),
		"sample past the end": bytes.Replace(avifSequence(16, 16, false), []byte("stco\x00\x00\x00\x00\x00\x00\x00\x01"), []byte("stco\x00\x00\x00\x00\x00\x00\x00\x01\x7f"), 1)[:len(avifSequence(16, 16, false))],
	} {
		if h, err := ReadHeader(b); err == nil {
			t.Errorf("%s: %+v, want an error", name, h)
		}
	}
}

// tiffFileOf is a little-endian TIFF: IFD0 at 8 with entries (tag, type,
// count, value), next pointing at next.
func tiffFileOf(next uint32, entries ...[4]uint32) []byte {
	le := binary.LittleEndian
	b := []byte("II*\x00\x08\x00\x00\x00")
	b = le.AppendUint16(b, uint16(len(entries)))
	for _, e := range entries {
		b = le.AppendUint16(b, uint16(e[0]))
		b = le.AppendUint16(b, uint16(e[1]))
		b = le.AppendUint32(b, e[2])
		b = le.AppendUint32(b, e[3])
	}
	b = le.AppendUint32(b, next)
	return append(b, make([]byte, 16)...)
}

func TestLookTIFFStructures(t *testing.T) {
	size := [][4]uint32{{256, 3, 1, 64}, {257, 4, 1, 48}}
	with := func(next uint32, more ...[4]uint32) []byte { return tiffFileOf(next, append(size, more...)...) }
	// IFD0 whose next is itself, and one whose next is past the end:
	// one page each.
	for name, b := range map[string][]byte{"loop": with(8), "next past the end": with(1 << 30), "next inside the header": with(2)} {
		if h, err := ReadHeader(b); err != nil || h.Pages != 1 || h.Width != 64 || h.Height != 48 || h.Bands != 1 {
			t.Errorf("%s: %+v, %v", name, h, err)
		}
	}
	// 16-bit RGB with an extra unassociated alpha sample, in 8-row strips
	rgba16 := with(0, [4]uint32{258, 3, 1, 16}, [4]uint32{262, 3, 1, 2}, [4]uint32{277, 3, 1, 4}, [4]uint32{278, 3, 1, 8}, [4]uint32{338, 3, 1, 2})
	if h, err := ReadHeader(rgba16); err != nil || h.Bands != 4 || !h.Alpha || h.BytesPerSample != 2 || h.TileHeight != 8 || h.Tiled {
		t.Errorf("rgba16: %+v, %v", h, err)
	}
	// 32-bit float samples, tiled
	float := with(0, [4]uint32{258, 3, 1, 32}, [4]uint32{322, 3, 1, 256}, [4]uint32{323, 3, 1, 128})
	if h, err := ReadHeader(float); err != nil || h.BytesPerSample != 4 || !h.Tiled || h.TileWidth != 256 || h.TileHeight != 128 {
		t.Errorf("float tiled: %+v, %v", h, err)
	}
	// BitsPerSample's three values at an offset (inside the file)
	b := with(0, [4]uint32{258, 3, 3, 64}, [4]uint32{277, 3, 1, 3})
	binary.LittleEndian.PutUint16(b[64:], 16)
	if h, err := ReadHeader(b); err != nil || h.BitDepth != 16 {
		t.Errorf("bits at an offset: %+v, %v", h, err)
	}
	for name, b := range map[string][]byte{
		"no width":             tiffFileOf(0, [4]uint32{257, 3, 1, 48}),
		"width of type ASCII":  tiffFileOf(0, [4]uint32{256, 2, 1, 64}, [4]uint32{257, 3, 1, 48}),
		"width with no values": tiffFileOf(0, [4]uint32{256, 3, 0, 64}, [4]uint32{257, 3, 1, 48}),
		"bits past the end":    with(0, [4]uint32{258, 3, 3, 1 << 30}),
		"0 samples":            with(0, [4]uint32{277, 3, 1, 0}),
		"tiles of 0":           with(0, [4]uint32{322, 3, 1, 0}, [4]uint32{323, 3, 1, 16}),
		"IFD0 past the end":    []byte("II*\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00\x00"),
		"IFD0 of 65535":        []byte("MM\x00*\x00\x00\x00\x08\xFF\xFF\x00\x00\x00\x00\x00\x00"),
		"BigTIFF offsets of 4": []byte("II+\x00\x04\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00"),
		"cut short":            []byte("II*\x00\x08\x00\x00\x00"),
	} {
		if h, err := ReadHeader(b); err == nil {
			t.Errorf("%s: %+v, want an error", name, h)
		}
	}
	// A chain of many pages is counted up to maxPages, not followed further.
	le := binary.LittleEndian
	chain := []byte("II*\x00\x08\x00\x00\x00")
	for i := range maxPages + 5 {
		chain = le.AppendUint16(chain, 2)
		for _, e := range size {
			chain = le.AppendUint16(chain, uint16(e[0]))
			chain = le.AppendUint16(chain, uint16(e[1]))
			chain = le.AppendUint32(chain, e[2])
			chain = le.AppendUint32(chain, e[3])
		}
		next := uint32(len(chain) + 4)
		if i == maxPages+4 {
			next = 0
		}
		chain = le.AppendUint32(chain, next)
	}
	if h, err := ReadHeader(chain); err != nil || h.Pages != maxPages {
		t.Errorf("a chain of %d pages: %d counted, %v", maxPages+5, h.Pages, err)
	}
}

// bitWriter writes a JPEG XL header's fields, least significant bit first.
type bitWriter struct {
	b []byte
	n int
}

func (w *bitWriter) put(v uint32, n int) *bitWriter {
	for i := range n {
		if w.n%8 == 0 {
			w.b = append(w.b, 0)
		}
		w.b[len(w.b)-1] |= byte(v>>i&1) << (w.n % 8)
		w.n++
	}
	return w
}

func TestLookJXLStructures(t *testing.T) {
	codestream := func(w *bitWriter) []byte { return append([]byte{0xFF, 0x0A}, append(w.b, 0, 0)...) }
	for _, c := range []struct {
		name string
		w    *bitWriter
		wx   int
		wy   int
	}{
		// small: (5+1)*8 high, ratio 0, (2+1)*8 wide; all_default metadata
		{"small", new(bitWriter).put(1, 1).put(5, 5).put(0, 3).put(2, 5).put(1, 1), 24, 48},
		// large: height 1+u(13) = 3000 (selector 1), ratio 4 (3/2)
		{"ratio", new(bitWriter).put(0, 1).put(1, 2).put(2999, 13).put(4, 3).put(1, 1), 4500, 3000},
		// height 1+u(30) (selector 3), width 1+u(18) (selector 2)
		{"large", new(bitWriter).put(0, 1).put(3, 2).put(99999, 30).put(0, 3).put(2, 2).put(70000, 18).put(1, 1), 70001, 100000},
	} {
		h, err := ReadHeader(codestream(c.w))
		if err != nil || h.Width != c.wx || h.Height != c.wy || h.Bands != 3 || h.BitDepth != 8 {
			t.Errorf("%s: %+v, %v; want %dx%d", c.name, h, err, c.wx, c.wy)
		}
	}
	// metadata: 12-bit, one extra channel of type depth (not alpha), then
	// one of all defaults (alpha)
	w := new(bitWriter).put(1, 1).put(0, 5).put(0, 3).put(0, 5) // 8x8
	w.put(0, 1).put(0, 1)                                       // not all_default, no extra fields
	w.put(0, 1).put(2, 2)                                       // integer, 12 bits
	w.put(1, 1)                                                 // modular 16-bit
	w.put(2, 2).put(0, 4)                                       // 2 extra channels
	w.put(0, 1).put(1, 2)                                       // not all_default, type depth (1)
	w.put(0, 1).put(0, 2)                                       // its depth: 8 bits
	w.put(0, 2).put(1, 2).put(3, 4)                             // dim_shift 0, name of 3 bytes
	w.put('a', 8).put('b', 8).put('c', 8)
	w.put(1, 1)           // second channel: all_default (alpha)
	w.put(1, 1).put(1, 1) // xyb, colour encoding all_default
	if h, err := ReadHeader(codestream(w)); err != nil || h.BitDepth != 12 || h.BytesPerSample != 2 || !h.Alpha || h.Bands != 4 {
		t.Errorf("metadata: %+v, %v", h, err)
	}
	// A container whose codestream is split in jxlp boxes.
	small := codestream(new(bitWriter).put(1, 1).put(5, 5).put(0, 3).put(2, 5).put(1, 1))
	sig := []byte(imagefmt.JXLContainer)
	split := append(bytes.Clone(sig), bx("ftyp", []byte("jxl "), be32(0), []byte("jxl "))...)
	split = append(split, bx("jxlp", be32(0), small[:2])...)
	split = append(split, bx("jxlp", be32(0x80000001), small[2:])...)
	if h, err := ReadHeader(split); err != nil || h.Width != 24 || h.Height != 48 {
		t.Errorf("jxlp: %+v, %v", h, err)
	}
	for name, b := range map[string][]byte{
		"signature only":           {0xFF, 0x0A},
		"size cut short":           {0xFF, 0x0A, 0x00},
		"metadata cut short":       codestream(new(bitWriter).put(0, 1).put(3, 2))[:5],
		"container, no boxes":      sig,
		"container, no codestream": append(bytes.Clone(sig), bx("ftyp", []byte("jxl "))...),
		"jxlc not a codestream":    append(bytes.Clone(sig), bx("jxlc", []byte("hello"))...),
	} {
		if h, err := ReadHeader(b); err == nil {
			t.Errorf("%s: %+v, want an error", name, h)
		}
	}
}

// The hostile corpus' formats still refused are no input format; its
// malformed files of the formats read since issue 35 are sniffed as
// theirs (some with a header: their pixel data is what is missing).
func TestLookHostileCorpus(t *testing.T) {
	for name, b := range hostile.Unsupported() {
		if s, err := Look(b); err == nil || s.Format != "" {
			t.Errorf("unsupported %s: sniffed as %q", name, s.Format)
		}
	}
	for name, b := range hostile.Malformed() {
		want, _, _ := strings.Cut(name, "-")
		if s, _ := Look(b); string(s.Format) != want {
			t.Errorf("malformed %s: sniffed as %q", name, s.Format)
		}
	}
}

// Every prefix of every new format's fixture, and garbage after each
// magic, is read or refused without a panic; a header read is sane.
func TestLookCutAndGarbage(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(headers, "*"))
	more, _ := filepath.Glob("../bmp/testdata/*")
	for _, f := range append(files, more...) {
		src, _ := os.ReadFile(f)
		for n := range len(src) {
			if h, err := ReadHeader(src[:n]); err == nil && (h.Width <= 0 || h.Height <= 0 || h.Bands < 1) {
				t.Errorf("%s cut at %d: %+v", f, n, h)
			}
		}
		for i := range min(len(src), 600) {
			b := bytes.Clone(src)
			b[i] ^= 0xFF
			ReadHeader(b)
		}
		garbage := append(bytes.Clone(src[:min(len(src), 16)]), bytes.Repeat([]byte{0xFF, 0x00, 0x7F}, 100)...)
		if h, err := ReadHeader(garbage); err == nil && (h.Width <= 0 || h.Height <= 0) {
			t.Errorf("%s's magic then garbage: %+v", f, h)
		}
	}
}

// An AVIF's nclx colr box is read as written (heif-info says "color
// profile: nclx"); libheif's own (vips copy's AVIFs) says unspecified
// primaries and transfer, BT.601 matrix, full range; a HEIC from x265
// has no colr, a file without one no nclx, and a colr box cut short or
// of another type is no nclx.
func TestLookNCLX(t *testing.T) {
	unspecified := thumbjob.NCLX{Primaries: 2, Transfer: 2, Matrix: 6, FullRange: true}
	want := map[string]thumbjob.NCLX{
		"avif-8.avif":     unspecified,
		"avif-12.avif":    unspecified,
		"avif-alpha.avif": unspecified,
		"avif-p3.avif":    {Primaries: 12, Transfer: 13, Matrix: 6, FullRange: true},
		"avif-pq.avif":    {Primaries: 9, Transfer: 16, Matrix: 9},
	}
	files, _ := filepath.Glob(filepath.Join(headers, "*"))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Look(src)
		if got := s.Header.NCLX; err != nil || got != want[filepath.Base(f)] {
			t.Errorf("%s: %+v (%v), want %+v", f, got, err, want[filepath.Base(f)])
		}
	}
	colr := func(b ...byte) bmffBox { return bmffBox{typ: "colr", body: b} }
	for _, props := range [][]bmffBox{
		{colr('n', 'c', 'l', 'x', 0, 12, 0, 13, 0, 6)},                              // no full-range byte
		{colr('p', 'r', 'o', 'f', 0, 12, 0, 13, 0, 6, 0x80)},                        // an ICC profile
		{colr('n', 'c', 'l', 'x', 0, 0, 0, 13, 0, 6, 0x80)},                         // primaries 0: reserved
		{{typ: "pixi", body: []byte{'n', 'c', 'l', 'x', 0, 12, 0, 13, 0, 6, 0x80}}}, // not a colr
	} {
		if got := nclx(props); got != (thumbjob.NCLX{}) {
			t.Errorf("%q: %+v, want none", props[0].body, got)
		}
	}
	// the first list's nclx (a grid's) wins over the next's (its tile's)
	grid, tile := colr('n', 'c', 'l', 'x', 0, 9, 0, 1, 0, 9, 0), colr('n', 'c', 'l', 'x', 0, 12, 0, 13, 0, 6, 0x80)
	if got := nclx([]bmffBox{grid}, []bmffBox{tile}); got.Primaries != 9 || got.FullRange {
		t.Errorf("grid and tile: %+v, want the grid's", got)
	}
	if got := nclx(nil, []bmffBox{tile}); got.Primaries != 12 || !got.FullRange {
		t.Errorf("tile only: %+v, want the tile's", got)
	}
}

// TestLookReadsAsTheDecodersDo: the readings of the decoders issue (45),
// where the look and the C decoder parsed the same bytes differently.
func TestLookReadsAsTheDecodersDo(t *testing.T) {
	t.Run("TIFF integers of every type libtiff reads", func(t *testing.T) {
		// ImageWidth and ImageLength as SBYTE (6), SSHORT (8), SLONG (9),
		// IFD (13): each is 100x90; a negative one is refused, as libtiff
		// refuses it.
		for _, typ := range []uint32{1, 3, 4, 6, 8, 9, 13} {
			b := tiffFileOf(0, [4]uint32{256, typ, 1, 100}, [4]uint32{257, typ, 1, 90})
			if h, err := ReadHeader(b); err != nil || h.Width != 100 || h.Height != 90 {
				t.Errorf("type %d: %+v, %v", typ, h, err)
			}
		}
		if h, err := ReadHeader(tiffFileOf(0, [4]uint32{256, 9, 1, 0xFFFFFFFF}, [4]uint32{257, 9, 1, 90})); err == nil {
			t.Errorf("a negative SLONG width: %+v, want an error", h)
		}
		// LONG8 and SLONG8 in a BigTIFF.
		for _, typ := range []uint16{16, 17, 18} {
			le := binary.LittleEndian
			b := []byte("II+\x00\x08\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00")
			b = le.AppendUint64(b, 2)
			for _, e := range [][2]uint64{{256, 6000}, {257, 5000}} {
				b = le.AppendUint16(b, uint16(e[0]))
				b = le.AppendUint16(b, typ)
				b = le.AppendUint64(b, 1)
				b = le.AppendUint64(b, e[1])
			}
			b = append(le.AppendUint64(b, 0), make([]byte, 16)...)
			if h, err := ReadHeader(b); err != nil || h.Width != 6000 || h.Height != 5000 {
				t.Errorf("BigTIFF type %d: %+v, %v", typ, h, err)
			}
		}
	})
	t.Run("JPEG: markers found as libjpeg's next_marker finds them", func(t *testing.T) {
		// Bytes before a marker, fill bytes and a stuffed FF 00 are
		// skipped by libjpeg (a warning, "extraneous bytes before
		// marker"): its header is the SOF after them, 12336x12336 here
		// (FuzzLookAgainstLibvips' 74ee0f5ffd250248, refused by the look
		// before, opened by libvips). The sniff wants FF D8 FF, so the
		// junk starts with an FF.
		sof := "\xff\xc0\x00\x11\x08\x30\x30\x30\x30\x03\x01\x11\x00\x02\x11\x00\x03\x11\x00\xff\xda"
		for _, junk := range []string{"\xff\x00\x30", "\xff\x00garbage", "\xff\xff\xff", "\xff\x00\x00\xff\x00\xff\x00"} {
			h, err := ReadHeader([]byte("\xff\xd8" + junk + sof))
			if err != nil || h.Width != 12336 || h.Height != 12336 || h.Bands != 3 {
				t.Errorf("%q before the SOF: %+v, %v", junk, h, err)
			}
		}
		// An APPn, COM or DNL whose length is under 2: libjpeg reads on
		// after the length (042a6458ecf84ed0: APP14 of length 0).
		for _, m := range []string{"\xee", "\xe1", "\xfe", "\xdc"} {
			for _, n := range []string{"\x00\x00", "\x00\x01"} {
				h, err := ReadHeader([]byte("\xff\xd8\xff" + m + n + sof))
				if err != nil || h.Width != 12336 {
					t.Errorf("marker %q of length %q: %+v, %v", m, n, h, err)
				}
			}
		}
		if h, err := ReadHeader([]byte("\xff\xd8\xff\xdb\x00\x00" + sof)); err == nil {
			t.Errorf("a DQT of length 0 (libjpeg's error): %+v, want an error", h)
		}
		if h, err := ReadHeader([]byte("\xff\xd8\xff\x00" + "\x30\x30")); err == nil {
			t.Errorf("no marker after the junk: %+v, want an error", h)
		}
	})
	t.Run("GIF: extensions skipped as libnsgif skips them", func(t *testing.T) {
		// An extension's first sub-block is skipped by its size even when
		// that is 0: the 0 after it ends the extension, and the frame
		// after that is the first (FuzzLookAgainstLibvips' d33acbd5d2d5c58c,
		// which libvips opens at 24672x24672; the look read a 1x1 image
		// before). A comment's sub-blocks start after its label.
		// Each file as vipsheader (libvips 8.14) reads it: 24672x24672,
		// or "no frames in GIF" for the last.
		frame := ",00000000\x30\x0000"
		for ext, want := range map[string]int{
			"\x21\x30\x00\x00":                 24672, // an unknown label, a first block of 0, the terminator
			"\x21\xf9\x04\x00\x00\x00\x00\x00": 24672, // a graphic control
			"\x21\xfe\x01\x41\x00":             24672, // a comment
			"\x21\x30\x00":                     1,     // the frame's separator is the terminator's place: garbage after
		} {
			h, err := ReadHeader([]byte("GIF87a\x30\x30\x30\x30\x30\x00\x00" + ext + frame))
			if err != nil || h.Width != want || h.Height != want {
				t.Errorf("%q: %dx%d, %v; want %d a side", ext, h.Width, h.Height, err, want)
			}
		}
	})
	t.Run("HEIF: ipma's entries stop at its count or its end", func(t *testing.T) {
		// libheif 1.19 reads entries while the box lasts (a count past
		// them is no error) and refuses an entry the box's end cuts;
		// Debian's 1.15 opens that too, which thumbd refuses by its rule
		// (FuzzLookAgainstLibvips' 921c52bea954b781).
		file := func() []byte {
			return heifFile("avif", 1, []testItem{{1, "av01", []int{1}}}, [][]byte{ispe(640, 480)})
		}
		count := func(b []byte) int { return bytes.Index(b, []byte("ipma")) + 8 }
		more := file()
		binary.BigEndian.PutUint32(more[count(more):], 5)
		if h, err := ReadHeader(more); err != nil || h.Width != 640 {
			t.Errorf("a count past the entries: %+v, %v", h, err)
		}
		cut := file()
		cut[count(cut)+6] = 3 // item 1 has 3 associations, the box holds 1
		if h, err := ReadHeader(cut); !errors.Is(err, ErrNotServed) {
			t.Errorf("an entry cut by the box's end: %+v, %v; want ErrNotServed", h, err)
		}
	})
	t.Run("TIFF: a repeated tag is its first", func(t *testing.T) {
		b := tiffFileOf(0, [4]uint32{256, 3, 1, 64}, [4]uint32{256, 4, 1, 60000}, [4]uint32{257, 3, 1, 48})
		if h, err := ReadHeader(b); err != nil || h.Width != 64 {
			t.Errorf("%+v, %v; want the first width, 64", h, err)
		}
	})
	hvcC := bx("hvcC", make([]byte, 23))
	t.Run("iref: a reference whose size swallows the next one", func(t *testing.T) {
		// dimg's declared size also covers the thmb after it: libheif
		// reads both (it ignores a reference's size); a reader by sizes
		// would see one reference and miss a 20000x20000 thumbnail, or a
		// grid's tiles.
		dimg, thmb := ref("dimg", 1, 2, 3), ref("thmb", 4, 1)
		swallowing := append(slices.Clone(dimg), thmb...)
		binary.BigEndian.PutUint32(swallowing, uint32(len(swallowing)))
		items := []testItem{{1, "grid", []int{1}}, {2, "hvc1", []int{2, 3}}, {3, "hvc1", []int{2, 3}}, {4, "hvc1", []int{4, 3}}}
		props := [][]byte{ispe(1024, 512), ispe(512, 512), hvcC, ispe(20000, 20000)}
		for name, refs := range map[string][][]byte{"apart": {dimg, thmb}, "swallowed": {swallowing}} {
			b := heifFile("heic", 1, items, props, refs...)
			if h, err := ReadHeader(b); err != nil || h.ThumbWidth != 20000 || h.Tiles != 2 {
				t.Errorf("%s: %+v, %v; want the thumbnail and 2 tiles", name, h, err)
			}
			if h, err := ReadHeader(WithoutHEIFThumbnails(b)); err != nil || h.ThumbWidth != 0 || h.Tiles != 2 {
				t.Errorf("%s, without thumbnails: %+v, %v; want no thumbnail", name, h, err)
			}
		}
		auxl := ref("auxl", 4, 1)
		hiding := append(slices.Clone(auxl), dimg...)
		binary.BigEndian.PutUint32(hiding, uint32(len(hiding)))
		if h, err := ReadHeader(heifFile("heic", 1, items[:3], props[:3], hiding)); err != nil || h.Tiles != 2 {
			t.Errorf("tiles behind another reference: %+v, %v; want 2 tiles", h, err)
		}
		uuid := bx("uuid", make([]byte, 16), be16(1), be16(2), be16(2), be16(3))
		if h, err := ReadHeader(heifFile("heic", 1, items[:3], props[:3], uuid, dimg)); err != nil || h.Tiles != 2 {
			t.Errorf("after a uuid reference: %+v, %v", h, err)
		}
		for name, r := range map[string][]byte{
			"no target": ref("dimg", 1),
			"cut short": bx("dimg", be16(1), be16(3), be16(2)),
		} {
			if h, err := ReadHeader(heifFile("heic", 1, items[:3], props[:3], ref("dimg", 1, 2, 3), r)); err == nil {
				t.Errorf("%s: %+v, want an error", name, h)
			}
		}
	})
	t.Run("iinf: only its count of entries", func(t *testing.T) {
		b := heifFile("heic", 1, []testItem{{1, "hvc1", []int{1, 2}}, {2, "hvc1", []int{3, 2}}}, [][]byte{ispe(64, 48), hvcC, ispe(9000, 9000)}, ref("thmb", 2, 1))
		// iinf says 1 entry: item 2 (the thumbnail) is not an item to
		// libheif, nor to the look.
		at := bytes.Index(b, []byte("iinf")) + 8
		binary.BigEndian.PutUint16(b[at:], 1)
		if h, err := ReadHeader(b); err != nil || h.ThumbWidth != 0 {
			t.Errorf("%+v, %v; want no thumbnail", h, err)
		}
	})
	t.Run("the format is the items' coding, not the brand", func(t *testing.T) {
		av1C := bx("av1C", []byte{0x81, 0, 0, 0})
		for name, c := range map[string]struct {
			file []byte
			want imagefmt.Format
		}{
			"HEVC branded avif": {heifFile("avif", 1, []testItem{{1, "hvc1", []int{1, 2}}}, [][]byte{ispe(64, 48), hvcC}), imagefmt.HEIC},
			"AV1 branded heic":  {heifFile("heic", 1, []testItem{{1, "av01", []int{1, 2}}}, [][]byte{ispe(64, 48), av1C}), imagefmt.AVIF},
			"an AV1 grid":       {heifFile("heic", 1, []testItem{{1, "grid", []int{1}}, {2, "av01", []int{2, 3}}}, [][]byte{ispe(64, 48), ispe(64, 48), av1C}, ref("dimg", 1, 2)), imagefmt.AVIF},
		} {
			if h, err := ReadHeader(c.file); err != nil || h.Format != c.want {
				t.Errorf("%s: %+v, %v; want %s", name, h, err, c.want)
			}
			if s, _ := Look(c.file); s.Format != c.want {
				t.Errorf("%s: looked as %s, want %s", name, s.Format, c.want)
			}
		}
		for name, b := range map[string][]byte{
			"an AV1 thumbnail in a HEIC": heifFile("heic", 1, []testItem{{1, "hvc1", []int{1, 2}}, {2, "av01", []int{3, 4}}}, [][]byte{ispe(64, 48), hvcC, ispe(32, 24), av1C}, ref("thmb", 2, 1)),
			"an AV1 alpha in a HEIC": heifFile("heic", 1, []testItem{{1, "hvc1", []int{1, 2}}, {2, "av01", []int{1, 3, 4}}}, [][]byte{ispe(64, 48), hvcC, av1C,
				fullBox("auxC", 0, []byte("urn:mpeg:mpegB:cicp:systems:auxiliary:alpha\x00"))}, ref("auxl", 2, 1)),
			"a grid of HEVC and AV1 tiles": heifFile("heic", 1, []testItem{{1, "grid", []int{1}}, {2, "hvc1", []int{2, 3}}, {3, "av01", []int{2, 4}}}, [][]byte{ispe(128, 48), ispe(64, 48), hvcC, av1C}, ref("dimg", 1, 2, 3)),
			"a JPEG-coded primary":         heifFile("heic", 1, []testItem{{1, "jpeg", []int{1}}}, [][]byte{ispe(64, 48)}),
			"an overlay":                   heifFile("heic", 1, []testItem{{1, "iovl", []int{1}}, {2, "hvc1", []int{1, 2}}}, [][]byte{ispe(64, 48), hvcC}, ref("dimg", 1, 2)),
			"a grid of grids":              heifFile("heic", 1, []testItem{{1, "grid", []int{1}}, {2, "grid", []int{1}}}, [][]byte{ispe(64, 48)}, ref("dimg", 1, 2)),
			"tiles of two sizes": heifFile("heic", 1, []testItem{{1, "grid", []int{1}}, {2, "hvc1", []int{2, 4}}, {3, "hvc1", []int{3, 4}}},
				[][]byte{ispe(1024, 512), ispe(512, 512), ispe(16000, 16000), hvcC}, ref("dimg", 1, 2, 3)),
		} {
			if h, err := ReadHeader(b); err == nil {
				t.Errorf("%s: %+v, want an error", name, h)
			}
		}
	})
}

// avifSequence is an AVIF image sequence with no meta box: one 10-bit av01
// track of w x h (its sample entry's size; tkhd says another), with an nclx
// colr, one sample in an mdat; with alpha, a second track (auxv, tref auxl
// to the first).
func avifSequence(w, h int, alpha bool) []byte {
	av1C := bx("av1C", []byte{0x81, 0, 0x40, 0})
	colr := bx("colr", []byte("nclx"), []byte{0, 12, 0, 13, 0, 6, 0x80})
	entry := append(make([]byte, 24), append(be16(w), be16(h)...)...)
	entry = append(entry, make([]byte, 78-len(entry))...)
	ftyp := bx("ftyp", []byte("avis"), be32(0), []byte("avis"))
	track := func(id int, handler string, at int, more ...[]byte) []byte {
		stbl := bx("stbl", fullBox("stsd", 0, be32(1), bx("av01", entry, av1C, colr)),
			fullBox("stsz", 0, be32(0), be32(1), be32(4)), fullBox("stco", 0, be32(1), be32(at)))
		parts := append([][]byte{fullBox("tkhd", 0, make([]byte, 8), be32(id), make([]byte, 64), be32(w<<17), be32(h<<17)),
			bx("mdia", fullBox("hdlr", 0, be32(0), []byte(handler), make([]byte, 13)), bx("minf", stbl))}, more...)
		return bx("trak", parts...)
	}
	moov := func(at int) []byte {
		tracks := [][]byte{bx("mvhd", make([]byte, 100)), track(1, "pict", at)}
		if alpha {
			tracks = append(tracks, track(2, "auxv", at+4, bx("tref", bx("auxl", be32(1)))))
		}
		return bx("moov", tracks...)
	}
	at := len(ftyp) + len(moov(0)) + 8
	return append(append(ftyp, moov(at)...), bx("mdat", []byte("AV1a"), []byte("AV1b"))...)
}

// TestAV1SequenceColour: a sequence whose sample entry has no colr takes
// its colour from the AV1 sequence header, as ffmpeg wrote it (libaom).
func TestAV1SequenceColour(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatalf("ffmpeg (scripts/deps.sh dev installs it): %v", err)
	}
	frame := func() []byte {
		var b bytes.Buffer
		png.Encode(&b, image.NewNRGBA(image.Rect(0, 0, 64, 48)))
		return b.Bytes()
	}()
	for _, c := range []struct {
		args []string
		want thumbjob.NCLX
	}{
		{[]string{"-color_range", "tv", "-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709"}, thumbjob.NCLX{Primaries: 1, Transfer: 1, Matrix: 1}},
		{[]string{"-color_range", "pc", "-color_primaries", "bt2020", "-color_trc", "smpte2084", "-colorspace", "bt2020nc"}, thumbjob.NCLX{Primaries: 9, Transfer: 16, Matrix: 9, FullRange: true}},
	} {
		seq, err := heiftest.EncodeSequence([][]byte{frame, frame}, "yuv420p10le", c.args...)
		if err != nil {
			t.Fatal(err)
		}
		s, err := heiftest.Sequence(seq, nil)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := ReadHeader(s); err != nil || h.NCLX != c.want {
			t.Errorf("%v, its colr: %+v, %v; want %+v", c.args, h.NCLX, err, c.want)
		}
		// the sample entry's colr made a free box: the sequence header's
		s = bytes.ReplaceAll(s, []byte("colr"), []byte("free"))
		if h, err := ReadHeader(s); err != nil || h.NCLX != c.want {
			t.Errorf("%v: %+v, %v; want %+v", c.args, h.NCLX, err, c.want)
		}
	}
}
