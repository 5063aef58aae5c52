// Package sources makes the bench's test sources: photo-like JPEGs drawn by
// libvips itself from Perlin and Worley noise in CIELAB plus a little grain
// (flat noise compresses unlike a photo), deterministically: the same
// libvips gives the same bytes. small and large are byte for byte what
// scripts/make-sources.sh made with the vips CLI of Debian's libvips 8.14.1
// (and service/internal/thumb/testdata/sources holds); photo12 is the
// 12-megapixel phone photo of issue 11, photo12-exif the same with a
// camera's EXIF thumbnail. animated is an animated GIF drawn
// and encoded in Go (animated.go): the same bytes everywhere.
package sources

// #cgo pkg-config: vips
// #include <stdlib.h>
// #include <glib.h>
// #include "sources.h"
import "C"

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"
)

// Term is one noise layer of a channel: A*noise + B, where noise is
// libvips' perlin (Worley false) or worley of the given cell size and seed.
type Term struct {
	Worley bool
	Cell   int
	Seed   int
	A, B   float64
}

// Recipe is one source: its size, the terms summed (in order) into the L, a
// and b channels, the grain and the JPEG quality; or, with Frames, an
// animated GIF of that many frames.
type Recipe struct {
	Name          string // file name without its extension
	Width, Height int
	Quality       int
	L, A, B       []Term
	Grain         float64 // sigma of the Gaussian grain added to each sRGB band
	// Frames > 0 makes the source an animated GIF (animatedGIF) of Frames
	// frames shown Delay hundredths of a second each, not a photo.
	Frames, Delay int
	// Flat makes the source an opaque PNG of one colour: a small file of
	// many pixels (PNG has no shrink-on-load, so every pixel is decoded).
	Flat bool
	// EXIF gives the photo the EXIF a camera writes: orientation 1 and a
	// 160-pixel JPEG thumbnail in IFD1 (exif.go).
	EXIF bool
}

// File is the recipe's file name.
func (r Recipe) File() string {
	switch {
	case r.Frames > 0:
		return r.Name + ".gif"
	case r.Flat:
		return r.Name + ".png"
	}
	return r.Name + ".jpg"
}

// photoRecipe is facts.md's recipe for a W x H image:
//
//	L = 35*p1+50 + 12*p2 + 5*p3 + 15*(wo/(W/10)) - 7;  a = 40*pa+5;  b = 45*pb+15
//
// with the cell sizes and seeds of scripts/make-sources.sh, and extra, finer
// L terms after p3 (detail, for a photo whose texture reaches the pixel).
func photoRecipe(name string, w, h, q int, grain float64, detail ...Term) Recipe {
	// make-sources.sh formatted the Worley weight with awk's "%.9f": the
	// same digits give the same double, so the same pixels.
	k, _ := strconv.ParseFloat(fmt.Sprintf("%.9f", 15/(float64(w)/10)), 64)
	l := []Term{
		{Cell: w / 4, Seed: 11, A: 35, B: 43}, // 50 - 7
		{Cell: w / 16, Seed: 12, A: 12},
		{Cell: w/64 + 2, Seed: 13, A: 5},
	}
	l = append(l, detail...)
	l = append(l, Term{Worley: true, Cell: w / 10, Seed: 16, A: k})
	return Recipe{
		Name: name, Width: w, Height: h, Quality: q, Grain: grain,
		L: l,
		A: []Term{{Cell: w / 3, Seed: 14, A: 40, B: 5}},
		B: []Term{{Cell: w / 5, Seed: 15, A: 45, B: 15}},
	}
}

// Recipes are the sources this package knows.
func Recipes() []Recipe {
	// A phone's 12 MP photo at quality 90: texture down to a few pixels
	// (foliage, fabric, cell edges) and sensor grain; 3.7 MB, like a real
	// upload.
	photo12 := photoRecipe("photo12", 4032, 3024, 90, 5,
		Term{Cell: 48, Seed: 17, A: 12},
		Term{Cell: 12, Seed: 18, A: 10},
		Term{Cell: 4, Seed: 20, A: 5},
		Term{Worley: true, Cell: 64, Seed: 19, A: 14.0 / 64})
	// The same pixels as a camera's file: with its EXIF thumbnail, which
	// /info's ThumbHash reads instead of the photo.
	photo12EXIF := photo12
	photo12EXIF.Name, photo12EXIF.EXIF = "photo12-exif", true
	return []Recipe{
		photoRecipe("small", 400, 300, 70, 4),
		photoRecipe("large", 1920, 1280, 85, 4),
		photo12,
		photo12EXIF,
		// The old "huge" source of scripts/make-sources.sh (docs/hardening.md).
		photoRecipe("huge", 4000, 3000, 94, 4),
		// A short animated GIF as sites show them: 2 s at 25 frames a second.
		{Name: "animated", Width: 320, Height: 240, Frames: 50, Delay: 4},
		// 7000x5000 RGB in about 115 KB: 105 MB of pixels to decode whole,
		// the memory tests' worst upload per byte.
		{Name: "flat7000", Width: 7000, Height: 5000, Flat: true},
	}
}

// DefaultNames returns the names made when none is asked for: the photos
// every bench compares formats and engines on.
func DefaultNames() []string { return []string{"small", "large", "photo12"} }

// Lookup returns the recipe called name.
func Lookup(name string) (Recipe, error) {
	var known []string
	for _, r := range Recipes() {
		if r.Name == name {
			return r, nil
		}
		known = append(known, r.Name)
	}
	return Recipe{}, fmt.Errorf("no source named %q (known: %s)", name, strings.Join(known, ", "))
}

// Make encodes the recipe's JPEG, or its GIF.
func Make(r Recipe) ([]byte, error) {
	if r.Frames > 0 {
		return animatedGIF(r)
	}
	if r.Flat {
		return flatPNG(r)
	}
	if r.Width < 1 || r.Height < 1 || len(r.L) == 0 || len(r.A) == 0 || len(r.B) == 0 {
		return nil, fmt.Errorf("source %s: empty recipe", r.Name)
	}
	if r.Quality < 1 || r.Quality > 100 {
		return nil, fmt.Errorf("source %s: quality %d, want 1..100", r.Name, r.Quality)
	}
	terms := append(append(append([]Term(nil), r.L...), r.A...), r.B...)
	ct := (*C.thumbd_term)(C.malloc(C.size_t(len(terms)) * C.size_t(unsafe.Sizeof(C.thumbd_term{}))))
	defer C.free(unsafe.Pointer(ct))
	cts := unsafe.Slice(ct, len(terms))
	for i := range cts {
		x := &cts[i]
		x.worley = 0
		if terms[i].Worley {
			x.worley = 1
		}
		x.cell, x.seed = C.int(terms[i].Cell), C.int(terms[i].Seed)
		x.a, x.b = C.double(terms[i].A), C.double(terms[i].B)
	}
	var buf unsafe.Pointer
	var n C.size_t
	var cerr *C.char
	if C.thumbd_make_source(C.int(r.Width), C.int(r.Height), ct, C.int(len(r.L)), C.int(len(r.A)), C.int(len(r.B)),
		C.double(r.Grain), 21, C.int(r.Quality), &buf, &n, &cerr) != 0 {
		defer C.g_free(C.gpointer(cerr))
		return nil, fmt.Errorf("source %s: libvips: %s", r.Name, strings.TrimSpace(C.GoString(cerr)))
	}
	defer C.g_free(C.gpointer(buf))
	photo := C.GoBytes(buf, C.int(n))
	if r.EXIF {
		return withEXIFThumbnail(photo, 1)
	}
	return photo, nil
}

// Read returns the file at path; when it is missing and named after a
// known source (small.jpg, photo12.jpg, animated.gif, ...), it is made there
// first.
func Read(path string) ([]byte, error) {
	if _, err := os.Stat(path); err != nil {
		base := filepath.Base(path)
		r, lerr := Lookup(strings.TrimSuffix(base, filepath.Ext(base)))
		if lerr != nil || base != r.File() {
			return nil, err
		}
		if _, err := Ensure(filepath.Dir(path), r.Name); err != nil {
			return nil, err
		}
	}
	return os.ReadFile(path)
}

// Ensure writes dir/NAME.jpg (NAME.gif) for each name that has no such file yet
// (existing files are kept: they are what earlier runs measured) and
// returns the paths of all of them, in the order given.
func Ensure(dir string, names ...string) ([]string, error) {
	if len(names) == 0 {
		names = DefaultNames()
	}
	var recipes []Recipe
	for _, n := range names {
		r, err := Lookup(n)
		if err != nil {
			return nil, err
		}
		recipes = append(recipes, r)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, r := range recipes {
		path := filepath.Join(dir, r.File())
		paths = append(paths, path)
		if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
			continue
		}
		b, err := Make(r)
		if err != nil {
			return nil, err
		}
		// Written aside and renamed: a reader never sees half a file.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return nil, errors.Join(err, os.Remove(tmp))
		}
	}
	return paths, nil
}

// flatPNG encodes the recipe as an opaque PNG of one colour (Go's encoder
// writes RGB for an opaque image).
func flatPNG(r Recipe) ([]byte, error) {
	img := image.NewNRGBA(image.Rect(0, 0, r.Width, r.Height))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = 40, 90, 160, 255
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("source %s: %w", r.Name, err)
	}
	return buf.Bytes(), nil
}
