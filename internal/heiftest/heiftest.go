// Package heiftest makes HEIC and AVIF files like a phone's for the tests,
// from what Debian's heif-enc (libheif 1.15, x265 and aom) can encode: one
// image per file, with no tile grid, no irot or imir transform, no EXIF
// orientation and no ICC profile of our choosing. It reads heif-enc's
// single-image files and writes new ones around their coded data:
//
//   - Grid puts tiles (each a single-image file, encoded alike) into a
//     `grid` derived item, as iPhones store 4032x3024 as 512x512 tiles;
//   - Transform adds to a single-image file;
//   - both take Options: irot, imir, an Exif item holding an orientation
//     (linked by cdsc), a colr property of type prof (DisplayP3 is one)
//     or nclx, an alpha image (auxl), as AVIF with transparency has, and
//     an embedded thumbnail (thmb), which heif-enc -t makes only of the
//     same picture.
//
// Encode runs heif-enc. Only the tests use this package; it needs no cgo,
// and the files it writes are checked by Debian's own decoders (heif-info,
// vips, exiftool), not by its own reader.
package heiftest

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
)

// Mirror is an imir property: a flip, applied after the rotation. Its
// axis field is read as libheif (and libavif) read it, which the tests
// check: 0 flips top to bottom, 1 left to right. (The first edition of
// ISO/IEC 23008-12 called 0 a vertical axis, which reads as the opposite.)
type Mirror int

const (
	NoMirror Mirror = iota
	// MirrorTopBottom is imir axis 0.
	MirrorTopBottom
	// MirrorLeftRight is imir axis 1.
	MirrorLeftRight
)

// Options are what Grid and Transform add to the primary image. The zero
// value adds nothing.
type Options struct {
	// Rotate is irot's angle in quarter turns anticlockwise (0 to 3): 1
	// swaps the displayed width and height.
	Rotate int
	// Mirror adds an imir after the irot.
	Mirror Mirror
	// Orientation, 1 to 8, adds an Exif item whose only tag is this EXIF
	// orientation. Decoders apply irot/imir, not this tag: a phone writes
	// both, and a reader that applies both turns the photo twice.
	Orientation int
	// ICC replaces the primary's colr properties by one of type prof
	// holding this profile (DisplayP3, for an iPhone's).
	ICC []byte
	// NCLX, when its primaries are set, replaces the primary's colr
	// properties by one of type nclx with these H.273 code points
	// (Debian 12's heif-enc takes --colour_primaries and the like but
	// writes 2, 2, 6 whatever they say). Keep heif-enc's matrix (6) and
	// full range: libheif turns YUV into RGB by the box's.
	NCLX NCLX
	// Alpha, a single-image file of the primary's size and bit depth,
	// becomes its alpha plane: an auxiliary item (auxC naming alpha, an
	// auxl reference, the primary's irot and imir) whose luma is the
	// alpha. See EncodeAlpha.
	Alpha []byte
	// Thumbnail, a single-image file of the same kind, becomes the
	// primary's embedded thumbnail: an item with a thmb reference to it,
	// as phones store a 320x240 preview. It may show another picture and
	// have any size or aspect ratio (a hostile file's may): the tests
	// tell which of the two a decoder used by its colour.
	Thumbnail []byte
}

// NCLX is an nclx colr box's code points (ITU-T H.273).
type NCLX struct {
	Primaries, Transfer, Matrix int
	FullRange                   bool
}

func (c NCLX) box() []byte {
	full := byte(0)
	if c.FullRange {
		full = 0x80
	}
	return box("colr", []byte("nclx"), u16(uint16(c.Primaries)), u16(uint16(c.Transfer)), u16(uint16(c.Matrix)), []byte{full})
}

func (o Options) check() error {
	switch {
	case o.Rotate < 0 || o.Rotate > 3:
		return fmt.Errorf("heiftest: Rotate %d: irot takes 0 to 3 quarter turns", o.Rotate)
	case o.Mirror < NoMirror || o.Mirror > MirrorLeftRight:
		return fmt.Errorf("heiftest: Mirror %d: not NoMirror, MirrorTopBottom or MirrorLeftRight", o.Mirror)
	case o.Orientation < 0 || o.Orientation > 8:
		return fmt.Errorf("heiftest: Orientation %d: EXIF's are 1 to 8 (0: no Exif item)", o.Orientation)
	}
	return nil
}

// Transform returns heif (a file with a primary image, such as heif-enc
// writes) with opts added to its primary image. Its other items (an alpha
// heif-enc made, say) are kept.
func Transform(heif []byte, opts Options) ([]byte, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	f, err := parse(heif)
	if err != nil {
		return nil, fmt.Errorf("heiftest: %w", err)
	}
	if err := f.apply(opts); err != nil {
		return nil, err
	}
	return f.encode()
}

// Grid returns a file whose primary image is a grid of cols x rows tiles,
// width x height pixels. tiles are single-image files (HEIC or AVIF, all
// one kind), in rows from the top left, all of one size; the right column
// and the bottom row may reach past the grid's edges, which crop them.
// Each tile's coded data and properties are kept (equal ones, such as the
// hvcC of tiles encoded with the same settings, are stored once). The grid
// takes the first tile's pixi and colr, and then opts.
func Grid(tiles [][]byte, cols, rows, width, height int, opts Options) ([]byte, error) {
	if cols < 1 || rows < 1 || cols > 256 || rows > 256 || len(tiles) != cols*rows {
		return nil, fmt.Errorf("heiftest: %d tiles for a grid of %d x %d (1 to 256 each way)", len(tiles), cols, rows)
	}
	if width < 1 || height < 1 || width > 0xffff || height > 0xffff {
		return nil, fmt.Errorf("heiftest: grid of %dx%d: 1 to 65535 each way", width, height)
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	grid := &file{primary: uint32(len(tiles) + 1)}
	dimg := ref{typ: "dimg", from: grid.primary}
	var tw, th int
	for i, t := range tiles {
		tf, err := parse(t)
		if err != nil {
			return nil, fmt.Errorf("heiftest: tile %d: %w", i, err)
		}
		if len(tf.items) != 1 {
			return nil, fmt.Errorf("heiftest: tile %d has %d items: a tile is a single image", i, len(tf.items))
		}
		tile := tf.items[0]
		w, h, ok := tile.size()
		if !ok {
			return nil, fmt.Errorf("heiftest: tile %d has no ispe", i)
		}
		if i == 0 {
			grid.ftyp, tw, th = tf.ftyp, w, h
		} else if w != tw || h != th {
			return nil, fmt.Errorf("heiftest: tile %d is %dx%d, tile 0 %dx%d", i, w, h, tw, th)
		}
		tile.id, tile.hidden = uint32(i+1), true
		grid.items = append(grid.items, tile)
		dimg.to = append(dimg.to, tile.id)
	}
	if cols*tw < width || rows*th < height || (cols-1)*tw >= width || (rows-1)*th >= height {
		return nil, fmt.Errorf("heiftest: %d x %d tiles of %dx%d do not just cover %dx%d", cols, rows, tw, th, width, height)
	}
	g := &item{
		id:   grid.primary,
		typ:  "grid",
		data: []byte{0, 0, byte(rows - 1), byte(cols - 1), byte(width >> 8), byte(width), byte(height >> 8), byte(height)},
		// version 0, flags 0 (16-bit sizes), rows and columns less one, the output size
		props: []prop{{box: fullBox("ispe", 0, 0, u32(uint32(width)), u32(uint32(height)))}},
	}
	for _, p := range grid.items[0].props {
		if t := p.typ(); t == "pixi" || t == "colr" {
			g.props = append(g.props, p)
		}
	}
	grid.items = append(grid.items, g)
	grid.refs = []ref{dimg}
	if err := grid.apply(opts); err != nil {
		return nil, err
	}
	return grid.encode()
}

// size is the item's ispe.
func (it *item) size() (w, h int, ok bool) {
	for _, p := range it.props {
		if p.typ() == "ispe" && len(p.box) >= 20 {
			r := reader{b: p.box[12:]}
			return int(r.u32()), int(r.u32()), true
		}
	}
	return 0, 0, false
}

func (f *file) apply(opts Options) error {
	p := f.item(f.primary)
	if opts.ICC != nil || opts.NCLX.Primaries != 0 {
		kept := p.props[:0]
		for _, pr := range p.props {
			if pr.typ() != "colr" {
				kept = append(kept, pr)
			}
		}
		p.props = kept
		if opts.ICC != nil {
			p.props = append(p.props, prop{box: box("colr", []byte("prof"), opts.ICC)})
		}
		if opts.NCLX.Primaries != 0 {
			p.props = append(p.props, prop{box: opts.NCLX.box()})
		}
	}
	// Transformative properties come after the descriptive ones (MIAF),
	// and apply in their order: irot, then imir.
	var transforms []prop
	if opts.Rotate != 0 {
		transforms = append(transforms, prop{box: box("irot", []byte{byte(opts.Rotate)}), essential: true})
	}
	if opts.Mirror != NoMirror {
		transforms = append(transforms, prop{box: box("imir", []byte{byte(opts.Mirror - MirrorTopBottom)}), essential: true})
	}
	p.props = append(p.props, transforms...)
	if opts.Orientation != 0 {
		exif := &item{id: f.nextID(), typ: "Exif", data: exifOrientation(opts.Orientation)}
		f.items = append(f.items, exif)
		f.refs = append(f.refs, ref{typ: "cdsc", from: exif.id, to: []uint32{p.id}})
	}
	if opts.Alpha != nil {
		af, err := parse(opts.Alpha)
		if err != nil {
			return fmt.Errorf("heiftest: Alpha: %w", err)
		}
		a := af.item(af.primary)
		aw, ah, _ := a.size()
		if w, h, _ := p.size(); aw != w || ah != h { // both before their transforms
			return fmt.Errorf("heiftest: Alpha is %dx%d, the image %dx%d", aw, ah, w, h)
		}
		a.id, a.hidden = f.nextID(), false
		// The alpha is turned with its image: libheif drops an alpha whose
		// displayed size is not the image's.
		a.props = append(a.props, prop{box: fullBox("auxC", 0, 0, []byte("urn:mpeg:mpegB:cicp:systems:auxiliary:alpha\x00")), essential: true})
		a.props = append(a.props, transforms...)
		f.items = append(f.items, a)
		f.refs = append(f.refs, ref{typ: "auxl", from: a.id, to: []uint32{p.id}})
	}
	if opts.Thumbnail != nil {
		tf, err := parse(opts.Thumbnail)
		if err != nil {
			return fmt.Errorf("heiftest: Thumbnail: %w", err)
		}
		if len(tf.items) != 1 {
			return fmt.Errorf("heiftest: Thumbnail has %d items: a thumbnail is a single image", len(tf.items))
		}
		t := tf.items[0]
		t.id, t.hidden = f.nextID(), false
		f.items = append(f.items, t)
		f.refs = append(f.refs, ref{typ: "thmb", from: t.id, to: []uint32{p.id}})
	}
	return nil
}

// exifOrientation is an Exif item's payload: the offset of the TIFF header
// (0, right after it), then a big-endian TIFF whose IFD0 holds one tag,
// Orientation (0x0112, SHORT, count 1).
func exifOrientation(o int) []byte {
	return []byte{
		0, 0, 0, 0,
		'M', 'M', 0, 42, 0, 0, 0, 8, // byte order, magic, IFD0 at 8
		0, 1, // one entry
		0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, byte(o), 0, 0,
		0, 0, 0, 0, // no next IFD
	}
}

// Encode writes img as a PNG (16-bit when img is an RGBA64 or NRGBA64
// image) and runs heif-enc on it with args, such as -q 50, or -A -b 10 for
// a 10-bit AVIF. It returns the file heif-enc wrote. heif-enc is in
// Debian's libheif-examples; without it the error says so.
//
// Debian 12's heif-enc aborts on 10-bit AVIF in aom's default 4:2:0
// (libheif 1.15 and aom 3.6 disagree on the profile): add -p chroma=422.
// It fails on a 10-bit alpha too: add --no-alpha, and give the alpha as
// Options.Alpha, from EncodeAlpha.
func Encode(img image.Image, args ...string) ([]byte, error) {
	bin, err := exec.LookPath("heif-enc")
	if err != nil {
		return nil, fmt.Errorf("heiftest: heif-enc (Debian's libheif-examples): %w", err)
	}
	dir, err := os.MkdirTemp("", "heiftest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "in.png"), filepath.Join(dir, "out.heif")
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, err
	}
	if err := os.WriteFile(in, b.Bytes(), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append(append([]string{}, args...), "-o", out, in)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("heiftest: heif-enc %q: %v: %s", args, err, msg)
	}
	return os.ReadFile(out)
}

// EncodeAlpha encodes img's alpha channel for Options.Alpha: as a grey RGB
// image (its luma is the alpha), since Debian 12's heif-enc fails on a
// 10-bit monochrome AVIF. The PNG is 16-bit: pass the main image's args,
// with its bit depth (-b 8 for an 8-bit image).
func EncodeAlpha(img image.Image, args ...string) ([]byte, error) {
	grey := image.NewNRGBA64(img.Bounds())
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			a := color.NRGBA64Model.Convert(img.At(x, y)).(color.NRGBA64).A
			grey.SetNRGBA64(x, y, color.NRGBA64{R: a, G: a, B: a, A: 0xffff})
		}
	}
	return Encode(grey, args...)
}
