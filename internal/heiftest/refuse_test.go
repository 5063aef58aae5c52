package heiftest

import (
	"strings"
	"testing"
)

// These tests need no tool: they check what this package refuses, on
// files its own writer makes (an item's data need not decode to be moved).

func fakeTile(t *testing.T, w, h int) []byte {
	t.Helper()
	f := &file{ftyp: []byte("heic\x00\x00\x00\x00mif1heic"), primary: 1, items: []*item{{
		id: 1, typ: "hvc1", data: []byte("coded tile"),
		props: []prop{{box: box("hvcC", []byte{1}), essential: true}, {box: fullBox("ispe", 0, 0, u32(uint32(w)), u32(uint32(h)))}},
	}}}
	b, err := f.encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOptionsRefused(t *testing.T) {
	tile := fakeTile(t, 64, 64)
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Rotate: 4}, "Rotate 4"},
		{Options{Rotate: -1}, "Rotate -1"},
		{Options{Mirror: 3}, "Mirror 3"},
		{Options{Orientation: 9}, "Orientation 9"},
		{Options{Alpha: []byte("not a HEIF")}, "Alpha"},
		{Options{Alpha: fakeTile(t, 32, 64)}, "Alpha is 32x64, the image 64x64"},
	} {
		if _, err := Transform(tile, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Transform %+v: %v, want %q", c.opts, err, c.want)
		}
		if _, err := Grid([][]byte{tile}, 1, 1, 64, 64, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Grid %+v: %v, want %q", c.opts, err, c.want)
		}
	}
}

func TestGridRefusesBadShapes(t *testing.T) {
	tile, small := fakeTile(t, 512, 384), fakeTile(t, 256, 384)
	grid, err := Grid([][]byte{tile}, 1, 1, 500, 384, Options{})
	if err != nil {
		t.Fatal(err)
	}
	noISPE := &file{ftyp: []byte("heic"), primary: 1, items: []*item{{id: 1, typ: "hvc1", data: []byte("x"), props: []prop{{box: box("hvcC", []byte{1})}}}}}
	bare, err := noISPE.encode()
	if err != nil {
		t.Fatal(err)
	}
	four := [][]byte{tile, tile, tile, tile}
	for _, c := range []struct {
		name       string
		tiles      [][]byte
		cols, rows int
		w, h       int
		want       string
	}{
		{"too few tiles", four[:3], 2, 2, 1024, 768, "3 tiles for a grid of 2 x 2"},
		{"no columns", nil, 0, 2, 1024, 768, "grid of 0 x 2"},
		{"no width", four, 2, 2, 0, 768, "grid of 0x768"},
		{"past the tiles", four, 2, 2, 1025, 768, "do not just cover 1025x768"},
		{"a column too many", four, 2, 2, 512, 768, "do not just cover 512x768"},
		{"tiles of two sizes", [][]byte{tile, small, tile, tile}, 2, 2, 1024, 768, "tile 1 is 256x384, tile 0 512x384"},
		{"a tile that is no HEIF", [][]byte{tile, []byte("garbage"), tile, tile}, 2, 2, 1024, 768, "tile 1"},
		{"a tile that is a grid", [][]byte{grid}, 1, 1, 500, 384, "tile 0 has 2 items"},
		{"a tile without ispe", [][]byte{bare}, 1, 1, 500, 384, "tile 0 has no ispe"},
	} {
		if _, err := Grid(c.tiles, c.cols, c.rows, c.w, c.h, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestTransformRefusesMalformedFiles(t *testing.T) {
	whole, err := Transform(fakeTile(t, 64, 64), Options{Rotate: 1, Orientation: 6, ICC: DisplayP3()})
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(whole) {
		if _, err := Transform(whole[:n], Options{}); err == nil {
			t.Fatalf("the first %d of %d bytes: no error", n, len(whole))
		}
	}
	if _, err := Transform(whole, Options{}); err != nil {
		t.Errorf("the whole file: %v", err)
	}
}

// TestWrittenItems reads back, with this package's reader, what the
// writer made of Options: the decoders' tests cannot tell an unused
// property from a missing one.
func TestWrittenItems(t *testing.T) {
	tile := fakeTile(t, 64, 64)
	b, err := Grid([][]byte{tile, tile}, 2, 1, 100, 64, Options{Rotate: 3, Mirror: MirrorLeftRight, Orientation: 6, ICC: DisplayP3(), Alpha: fakeTile(t, 100, 64)})
	if err != nil {
		t.Fatal(err)
	}
	f, err := parse(b)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, it := range f.items {
		var props []string
		for _, p := range it.props {
			props = append(props, p.typ())
		}
		types = append(types, it.typ+"("+strings.Join(props, " ")+")")
	}
	want := "hvc1(hvcC ispe) hvc1(hvcC ispe) grid(ispe colr irot imir) Exif() hvc1(hvcC ispe auxC irot imir)"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("items %s\nwant  %s", got, want)
	}
	var refs []string
	for _, r := range f.refs {
		refs = append(refs, r.typ)
	}
	if got := strings.Join(refs, " "); got != "dimg cdsc auxl" || f.primary != 3 || string(f.items[3].data[4:8]) != "MM\x00*" {
		t.Errorf("refs %s, primary %d, Exif %q", got, f.primary, f.items[3].data)
	}
}
