package memcost

import (
	"bytes"
	"testing"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// phoneWithThumbnail is a 4032x3024 HEIC (item 1) with thumbnails: items
// 3 (w x h, its irot rot) and 2 (160x120: the first, by its ID, unless
// only is set).
func phoneWithThumbnail(w, h int, rot byte, only bool) []byte {
	items := []testItem{{1, "hvc1", []int{1}}, {3, "hvc1", []int{2, 3}}}
	refs := [][]byte{ref("thmb", 3, 1)}
	if !only {
		items = append(items, testItem{2, "hvc1", []int{4}})
		refs = append(refs, ref("thmb", 2, 1))
	}
	return heifFile("heic", 1, items, [][]byte{ispe(4032, 3024), ispe(w, h), bx("irot", []byte{rot}), ispe(160, 120)}, refs...)
}

func TestLookHEIFThumbnail(t *testing.T) {
	for _, c := range []struct {
		name  string
		src   []byte
		w, h  int
		coded bool
	}{
		{"none", heifFile("heic", 1, []testItem{{1, "hvc1", []int{1}}}, [][]byte{ispe(4032, 3024)}), 0, 0, false},
		{"320x240", phoneWithThumbnail(320, 240, 0, true), 320, 240, true},
		{"turned by its irot", phoneWithThumbnail(240, 320, 1, true), 320, 240, true},
		{"the lowest item ID first", phoneWithThumbnail(320, 240, 0, false), 160, 120, true},
		{"a grid thumbnail", heifFile("heic", 1, []testItem{{1, "hvc1", []int{1}}, {2, "grid", []int{2}}}, [][]byte{ispe(4032, 3024), ispe(320, 240)}, ref("thmb", 2, 1)), 320, 240, false},
		{"of another item", heifFile("heic", 1, []testItem{{1, "hvc1", []int{1}}, {2, "hvc1", []int{2}}, {3, "hvc1", []int{2}}}, [][]byte{ispe(4032, 3024), ispe(320, 240)}, ref("thmb", 2, 3)), 0, 0, false},
		{"deeper than the primary", heifFile("heic", 1, []testItem{{1, "hvc1", []int{1}}, {2, "hvc1", []int{2, 3}}}, [][]byte{ispe(4032, 3024), ispe(320, 240), fullBox("pixi", 0, []byte{3, 10, 10, 10})}, ref("thmb", 2, 1)), 320, 240, false},
		{"with an alpha of its own", heifFile("heic", 1, []testItem{{1, "hvc1", []int{1}}, {2, "hvc1", []int{2}}, {3, "hvc1", []int{2}}}, [][]byte{ispe(4032, 3024), ispe(320, 240)}, ref("thmb", 2, 1), ref("auxl", 3, 2)), 320, 240, false},
	} {
		h, err := ReadHeader(c.src)
		if err != nil || h.ThumbWidth != c.w || h.ThumbHeight != c.h || h.ThumbCoded != c.coded {
			t.Errorf("%s: %dx%d coded %v, %v; want %dx%d coded %v", c.name, h.ThumbWidth, h.ThumbHeight, h.ThumbCoded, err, c.w, c.h, c.coded)
		}
	}
	noSize := heifFile("heic", 1, []testItem{{1, "hvc1", []int{1}}, {2, "hvc1", nil}}, [][]byte{ispe(4032, 3024)}, ref("thmb", 2, 1))
	if h, err := ReadHeader(noSize); err == nil {
		t.Errorf("a thumbnail without ispe: %+v, want an error", h)
	}
}

func TestWithoutHEIFThumbnails(t *testing.T) {
	src := phoneWithThumbnail(320, 240, 0, false)
	out := WithoutHEIFThumbnails(src)
	if h, err := ReadHeader(out); err != nil || h.ThumbWidth != 0 || h.Width != 4032 {
		t.Errorf("%+v, %v: want the primary and no thumbnail", h, err)
	}
	if !bytes.Equal(out, bytes.ReplaceAll(src, []byte("thmb"), []byte("xthb"))) || bytes.Contains(src, []byte("xthb")) {
		t.Error("not a copy with only the thmb types renamed")
	}
	plain := heifFile("heic", 1, []testItem{{1, "hvc1", []int{1}}}, [][]byte{ispe(4032, 3024)})
	if out := WithoutHEIFThumbnails(plain); &out[0] != &plain[0] {
		t.Error("a file without thumbnails copied")
	}
	for _, b := range [][]byte{nil, []byte("garbage"), plain[:40]} {
		if out := WithoutHEIFThumbnails(b); !bytes.Equal(out, b) {
			t.Errorf("%q changed", b)
		}
	}
}

func TestEstimateHEIFThumbnail(t *testing.T) {
	h, err := ReadHeader(phoneWithThumbnail(512, 384, 0, true))
	if err != nil {
		t.Fatal(err)
	}
	without := h
	without.ThumbWidth, without.ThumbHeight, without.ThumbCoded = 0, 0, false
	notCoded := h
	notCoded.ThumbCoded = false
	for _, c := range []struct {
		name  string
		h     Header
		j     Job
		thumb bool
	}{
		{"256 inside", h, Job{Width: 256, Height: 256, Fit: "inside"}, true},
		{"256 cover", h, Job{Width: 256, Height: 256, Fit: "cover"}, true},
		{"384 cover: 384 rows", h, Job{Width: 384, Height: 384, Fit: "cover"}, false},
		{"width 256", h, Job{Width: 256, Fit: "inside"}, true},
		{"400x300 fill, turned: 400 rows", h, Job{Width: 300, Height: 400, Fit: "fill"}, false},
		{"600 inside", h, Job{Width: 600, Height: 600, Fit: "inside"}, false},
		{"no thumbnail", without, Job{Width: 256, Height: 256, Fit: "inside"}, false},
		{"a grid thumbnail", notCoded, Job{Width: 256, Height: 256, Fit: "inside"}, false},
		{"a crop", h, Job{Width: 256, Height: 256, Fit: "inside", Transforms: thumbjob.Transforms{Crop: &thumbjob.Region{W: 1000, H: 1000}}}, false},
	} {
		c.j.Output = "webp"
		got := Estimate(c.h, c.j)
		primary := Estimate(without, c.j)
		if used := got < primary/4; used != c.thumb || !c.thumb && got != primary {
			t.Errorf("%s: %d bytes, the primary's %d: want the thumbnail's %v", c.name, got, primary, c.thumb)
		}
	}
}
