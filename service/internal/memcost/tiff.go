package memcost

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// maxPages bounds the directories counted: the walk follows each IFD's
// next offset, which a hostile file can point anywhere, even back.
const maxPages = 10_000

// tiffFile is a TIFF's (or BigTIFF's) byte order and offset sizes.
type tiffFile struct {
	b     []byte
	order binary.ByteOrder
	big   bool
}

func (f tiffFile) offset(at uint64) uint64 {
	if f.big {
		return f.order.Uint64(f.b[at:])
	}
	return uint64(f.order.Uint32(f.b[at:]))
}

// tiffEntry is an IFD entry: its type, count and where its values are.
type tiffEntry struct {
	typ   uint16
	count uint64
	at    uint64 // the values' offset in the file
}

// typeSize is the bytes of one value of a TIFF type (0: unknown).
func typeSize(typ uint16) uint64 {
	sizes := [...]uint64{1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4, 16: 8, 17: 8, 18: 8}
	if int(typ) >= len(sizes) {
		return 0
	}
	return sizes[typ]
}

// TIFF field types that hold integers: libtiff reads an integer tag
// (a size, a count, an offset) from any of them, a signed one when it is
// not negative (tif_dirread.c, TIFFReadDirEntryLong and its siblings).
const (
	tiffByte   = 1
	tiffShort  = 3
	tiffLong   = 4
	tiffSByte  = 6
	tiffSShort = 8
	tiffSLong  = 9
	tiffIFD    = 13
	tiffLong8  = 16
	tiffSLong8 = 17
	tiffIFD8   = 18
)

// value is the entry's i-th value as an integer, of any of libtiff's
// integer types; an error for another type, a negative value (libtiff
// refuses it too) or one past the file.
func (f tiffFile) value(e tiffEntry, i uint64) (uint64, error) {
	if i >= e.count {
		return 0, fmt.Errorf("value %d of %d", i, e.count)
	}
	size := typeSize(e.typ)
	at := e.at + i*size
	if size == 0 || at+size > uint64(len(f.b)) || at < e.at {
		return 0, errors.New("a value past the end")
	}
	var signed int64
	switch e.typ {
	case tiffByte:
		return uint64(f.b[at]), nil
	case tiffShort:
		return uint64(f.order.Uint16(f.b[at:])), nil
	case tiffLong, tiffIFD:
		return uint64(f.order.Uint32(f.b[at:])), nil
	case tiffLong8, tiffIFD8:
		return f.order.Uint64(f.b[at:]), nil
	case tiffSByte:
		signed = int64(int8(f.b[at]))
	case tiffSShort:
		signed = int64(int16(f.order.Uint16(f.b[at:])))
	case tiffSLong:
		signed = int64(int32(f.order.Uint32(f.b[at:])))
	case tiffSLong8:
		signed = int64(f.order.Uint64(f.b[at:]))
	default:
		return 0, fmt.Errorf("an integer tag of type %d", e.typ)
	}
	if signed < 0 {
		return 0, fmt.Errorf("a negative value (%d)", signed)
	}
	return uint64(signed), nil
}

// ifd reads the directory at off: its entries by tag, and the next
// directory's offset.
func (f tiffFile) ifd(off uint64) (map[uint16]tiffEntry, uint64, error) {
	countBytes, entryBytes, inline := uint64(2), uint64(12), uint64(4)
	if f.big {
		countBytes, entryBytes, inline = 8, 20, 8
	}
	if off < 8 || off > uint64(len(f.b)) || countBytes > uint64(len(f.b))-off {
		return nil, 0, fmt.Errorf("an IFD at %d, past the file's %d bytes", off, len(f.b))
	}
	var n uint64
	if f.big {
		n = f.order.Uint64(f.b[off:])
	} else {
		n = uint64(f.order.Uint16(f.b[off:]))
	}
	end := off + countBytes + n*entryBytes
	if n > 0xFFFF || end+inline > uint64(len(f.b)) {
		return nil, 0, fmt.Errorf("an IFD of %d entries at %d, past the file's %d bytes", n, off, len(f.b))
	}
	entries := make(map[uint16]tiffEntry, n)
	for i := range n {
		p := off + countBytes + i*entryBytes
		// the value field (after tag, type and count) holds the values
		// when they fit, else their offset
		e := tiffEntry{typ: f.order.Uint16(f.b[p+2:]), at: p + 4 + inline}
		if f.big {
			e.count = f.order.Uint64(f.b[p+4:])
		} else {
			e.count = uint64(f.order.Uint32(f.b[p+4:]))
		}
		if size := typeSize(e.typ); size > 0 && e.count > inline/size {
			e.at = f.offset(e.at)
		}
		// libtiff ignores every repeat of a tag after its first.
		if tag := f.order.Uint16(f.b[p:]); !seen(entries, tag) {
			entries[tag] = e
		}
	}
	return entries, f.offset(end), nil
}

func seen(entries map[uint16]tiffEntry, tag uint16) bool {
	_, ok := entries[tag]
	return ok
}

// largest is the largest of e's values (a strip's or tile's bytes),
// at most the file's length: a count past the file cannot be read whole.
// The values are read up to the file's end, so a count of billions costs
// no more than the file's bytes.
func (f tiffFile) largest(e tiffEntry) int {
	most := uint64(0)
	for i := range e.count {
		v, err := f.value(e, i)
		if err != nil {
			break
		}
		most = max(most, v)
	}
	return int(min(most, uint64(len(f.b))))
}

// tiffHeader reads IFD0 (the page libvips decodes): its size, samples,
// bits, photometric interpretation, extra samples (alpha) and tiles or
// strips; and counts the pages, following next offsets at most maxPages
// times and never to one seen.
func tiffHeader(src []byte) (Header, error) {
	if len(src) < 16 {
		return Header{}, errors.New("TIFF header cut short")
	}
	f := tiffFile{b: src, order: binary.LittleEndian}
	if src[0] == 'M' {
		f.order = binary.BigEndian
	}
	first := uint64(4)
	if f.order.Uint16(src[2:]) == 43 {
		if f.order.Uint16(src[4:]) != 8 || f.order.Uint16(src[6:]) != 0 {
			return Header{}, errors.New("BigTIFF with offsets not of 8 bytes")
		}
		f.big, first = true, 8
	}
	tags, next, err := f.ifd(f.offset(first))
	if err != nil {
		return Header{}, fmt.Errorf("TIFF: %w", err)
	}
	get := func(tag uint16, i uint64, def uint64) (uint64, error) {
		e, ok := tags[tag]
		if !ok {
			return def, nil
		}
		v, err := f.value(e, i)
		if err != nil {
			return 0, fmt.Errorf("TIFF tag %d: %w", tag, err)
		}
		return v, nil
	}
	var errs []error
	must := func(tag uint16, i, def uint64) int {
		v, err := get(tag, i, def)
		errs = append(errs, err)
		return int(min(v, 1<<40))
	}
	h := Header{Format: imagefmt.TIFF, Width: must(thumbjob.TIFFTagImageWidth, 0, 0), Height: must(thumbjob.TIFFTagImageLength, 0, 0), Frames: 1}
	spp := must(thumbjob.TIFFTagSamplesPerPixel, 0, 1)
	h.BitDepth = must(thumbjob.TIFFTagBitsPerSample, 0, 1)
	photometric := must(thumbjob.TIFFTagPhotometric, 0, 1)
	h.Compression = must(thumbjob.TIFFTagCompression, 0, 1)
	if err := errors.Join(errs...); err != nil {
		return Header{}, err
	}
	if spp < 1 || spp > 64 || h.BitDepth < 1 || h.BitDepth > 64 {
		return Header{}, fmt.Errorf("TIFF of %d samples of %d bits", spp, h.BitDepth)
	}
	switch {
	case h.BitDepth <= 8:
		h.BytesPerSample = 1
	case h.BitDepth <= 16:
		h.BytesPerSample = 2
	case h.BitDepth <= 32:
		h.BytesPerSample = 4
	default:
		h.BytesPerSample = 8
	}
	colour := map[int]int{0: 1, 1: 1, 2: 3, 3: 1, 4: 1, 5: 4, 6: 3, 8: 3, 9: 3, 10: 3}[photometric]
	if photometric == 5 && spp < 4 {
		colour = spp // separated with fewer inks
	}
	extra := tags[thumbjob.TIFFTagExtraSamples]
	h.Bands = spp
	if photometric == 3 { // palette: RGB(A) after decoding
		h.Bands = 3 + max(spp-1, 0)
		h.BytesPerSample = max(h.BytesPerSample, 1)
	}
	if extra.count > 0 {
		v, err := f.value(extra, 0)
		if err != nil {
			return Header{}, fmt.Errorf("TIFF ExtraSamples: %w", err)
		}
		h.Alpha = v == 1 || v == 2
	} else if colour > 0 && spp > colour {
		h.Alpha = true // an extra sample not described: libvips takes it for alpha
	}
	h.Photometric = photometric
	h.SeparatePlanes = must(thumbjob.TIFFTagPlanarConfig, 0, 1) == 2
	counts := uint16(thumbjob.TIFFTagStripByteCounts)
	if _, ok := tags[thumbjob.TIFFTagTileWidth]; ok {
		h.Tiled = true
		h.TileWidth = must(thumbjob.TIFFTagTileWidth, 0, 0)
		h.TileHeight = must(thumbjob.TIFFTagTileLength, 0, 0)
		counts = thumbjob.TIFFTagTileByteCounts
	} else {
		// no RowsPerStrip: one strip of the whole image; 0 is taken as 1
		// row, as libvips clips it to 1..height
		h.TileWidth, h.TileHeight = h.Width, min(max(must(thumbjob.TIFFTagRowsPerStrip, 0, 1<<32-1), 1), h.Height)
	}
	h.ChunkBytes = f.largest(tags[counts])
	if err := errors.Join(errs...); err != nil {
		return Header{}, err
	}
	if h.Tiled && (h.TileWidth < 1 || h.TileHeight < 1) {
		return Header{}, fmt.Errorf("TIFF tiles of %dx%d", h.TileWidth, h.TileHeight)
	}
	h.Pages = 1
	seen := map[uint64]bool{f.offset(first): true}
	for next != 0 && h.Pages < maxPages && !seen[next] {
		seen[next] = true
		_, n, err := f.ifd(next)
		if err != nil {
			break // a broken later page: libvips reads the first only
		}
		h.Pages++
		next = n
	}
	return h, nil
}
