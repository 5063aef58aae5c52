package memcost

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// A TIFF is priced by its layout: libvips streams tiles and small strips
// through its caches, while a one-strip TIFF costs its compressed strip
// too, and a YCbCr one (read a strip at a time) the whole image twice;
// large tiles cost two rows of them.
func TestTIFFPricedByLayout(t *testing.T) {
	job := Job{Width: 256, Height: 256, Fit: "cover", Output: imagefmt.WebP, MaxPixels: 40_000_000}
	photo := func(bps int, tiled bool, tw, th, chunk int) Header {
		return Header{Format: imagefmt.TIFF, Width: 4032, Height: 3024, Bands: 3, BytesPerSample: bps, Frames: 1, Pages: 1,
			Tiled: tiled, TileWidth: tw, TileHeight: th, Compression: 5, Photometric: 2, ChunkBytes: chunk}
	}
	wholeImage := float64(4032 * 3024 * 3)
	oneStrip := photo(1, false, 4032, 3024, 6_900_000)
	strips := photo(1, false, 4032, 128, 300_000)
	tiles := photo(1, true, 128, 128, 50_000)
	bigTiles := photo(1, true, 1024, 1024, 3_000_000)
	ycbcr := oneStrip
	ycbcr.Compression, ycbcr.Photometric, ycbcr.ChunkBytes = 7, 6, 600_000
	// (1024x1024 tiles cost more than one LZW strip, which libvips reads a
	// scanline at a time: two rows of them are 24 MiB, as measured)
	for name, h := range map[string]Header{"128-row strips": strips, "128x128 tiles": tiles} {
		if Estimate(h, job) >= Estimate(oneStrip, job) {
			t.Errorf("%s priced %d, not under one strip's %d", name, Estimate(h, job), Estimate(oneStrip, job))
		}
	}
	if Estimate(tiles, job) >= Estimate(bigTiles, job) {
		t.Errorf("128x128 tiles priced %d, 1024x1024 %d", Estimate(tiles, job), Estimate(bigTiles, job))
	}
	// the strip is decoded whole into the line cache and a strip buffer
	if got := Estimate(ycbcr, job); float64(got) < 2*wholeImage {
		t.Errorf("a YCbCr strip of the whole image priced %d, under twice the image's %v bytes", got, 2*wholeImage)
	}
	// so is a strip in separate planes, into the cache and a strip buffer
	planes := oneStrip
	planes.SeparatePlanes = true
	if got := Estimate(planes, job); float64(got) < 2*wholeImage {
		t.Errorf("a strip of the whole image in planes priced %d, under twice the image's %v bytes", got, 2*wholeImage)
	}
	// 16 bits a sample hold twice the bytes of 8 in the same window
	strips16 := photo(2, false, 4032, 128, 300_000)
	if d8, d16 := Estimate(strips, job)-fixedCost, Estimate(strips16, job)-fixedCost; d16 <= d8 {
		t.Errorf("16-bit strips priced %d over the fixed part, 8-bit %d", d16, d8)
	}
	// a crop or trim loads the TIFF whole
	trim := job
	trim.Transforms.Trim = &thumbjob.Trim{Threshold: 10}
	if got := Estimate(tiles, trim); float64(got) < wholeImage {
		t.Errorf("a trimmed tiled TIFF priced %d, under the whole image", got)
	}
}

// Hostile layouts stay bounded: 1x1 tiles, a RowsPerStrip of 0 (read as 1)
// or of 2^32-1, tiles of 2^31: never below the window they declare, never
// an overflow.
func TestTIFFHostileLayoutsBounded(t *testing.T) {
	job := Job{Width: 256, Height: 256, Fit: "cover", Output: imagefmt.WebP, MaxPixels: 40_000_000}
	base := Header{Format: imagefmt.TIFF, Width: 6000, Height: 6000, Bands: 4, BytesPerSample: 2, Frames: 1, Pages: 1, Compression: 7, ChunkBytes: 1 << 20}
	pel := float64(base.Bands * base.BytesPerSample)
	for name, c := range map[string]struct {
		tiled  bool
		tw, th int
	}{
		"1x1 tiles": {true, 1, 1}, "tiles of 2^31": {true, 1 << 31, 1 << 31}, "tiles of 2^40 by 1": {true, 1 << 40, 1},
		"strips of 1 row": {false, 6000, 1}, "one strip": {false, 6000, 6000},
	} {
		h := base
		h.Tiled, h.TileWidth, h.TileHeight = c.tiled, c.tw, c.th
		got := Estimate(h, job)
		// at least two rows of the image, at most the MaxPixels bound,
		// the compressed strip and the resize
		low := fixedCost + 2*float64(h.Width)*pel
		high := fixedCost + float64(job.MaxPixels)*pel + float64(h.ChunkBytes) + 64<<20
		if float64(got) < low || float64(got) > high || got <= 0 {
			t.Errorf("%s: priced %d, want %v..%v", name, got, low, high)
		}
		if w := tiffWindow(h, 256, 256); math.IsInf(w, 0) || math.IsNaN(w) || w < 2*float64(h.Width) {
			t.Errorf("%s: window of %v pixels", name, w)
		}
	}
}

// The header reader finds what the layout's price needs: RowsPerStrip
// (missing: one strip; 0: one row, as libvips clips it), the largest strip
// (at most the file), separate planes and YCbCr.
func TestLookTIFFLayout(t *testing.T) {
	size := [][4]uint32{{256, 3, 1, 64}, {257, 4, 1, 48}}
	with := func(more ...[4]uint32) []byte { return tiffFileOf(0, append(size, more...)...) }
	if h, err := ReadHeader(with()); err != nil || h.Tiled || h.TileWidth != 64 || h.TileHeight != 48 {
		t.Errorf("no RowsPerStrip: %+v, %v", h, err)
	}
	if h, err := ReadHeader(with([4]uint32{278, 3, 1, 0})); err != nil || h.TileHeight != 1 {
		t.Errorf("RowsPerStrip 0: %+v, %v", h, err)
	}
	if h, err := ReadHeader(with([4]uint32{278, 4, 1, 1<<32 - 1}, [4]uint32{284, 3, 1, 2}, [4]uint32{262, 3, 1, 6})); err != nil || h.TileHeight != 48 || !h.SeparatePlanes || h.Photometric != 6 {
		t.Errorf("RowsPerStrip 2^32-1, separate planes, YCbCr: %+v, %v", h, err)
	}
	// three strips' byte counts, LONGs at an offset after the IFD (the
	// file's 16 trailing bytes): the largest is taken
	entries := 2 + 2
	at := uint32(8 + 2 + 12*entries + 4 + 16)
	b := with([4]uint32{278, 3, 1, 16}, [4]uint32{279, 4, 3, at})
	for _, v := range []uint32{700, 9000, 800} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	b = append(b, make([]byte, 10_000)...)
	if h, err := ReadHeader(b); err != nil || h.ChunkBytes != 9000 {
		t.Errorf("strip byte counts: %+v, %v", h, err)
	}
	// counts past the file: at most the file's bytes; a billion values
	// declared are read up to the file's end only
	for name, b := range map[string][]byte{
		"a count past the file":     with([4]uint32{279, 4, 1, 1 << 31}),
		"a billion counts declared": with([4]uint32{279, 4, 1 << 30, 8}),
		"tile counts past the file": with([4]uint32{322, 3, 1, 16}, [4]uint32{323, 3, 1, 16}, [4]uint32{325, 4, 1, 1 << 31}),
	} {
		if h, err := ReadHeader(b); err != nil || h.ChunkBytes > len(b) {
			t.Errorf("%s: %+v, %v", name, h, err)
		}
	}
}
