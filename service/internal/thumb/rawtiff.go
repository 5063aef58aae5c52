package thumb

import (
	"encoding/binary"
	"fmt"

	"github.com/thumbd/thumbd/service/internal/bmp"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// goDecoded turns a source libvips has no loader for into bytes it does
// read, in Go, checked from the header before anything is allocated:
//   - BMP, ICO (libvips 8.16 reads them only through ImageMagick, which
//     thumbd does not link): decoded by service/internal/bmp under the
//     pixel limit and wrapped as an uncompressed TIFF (a header in front
//     of the pixels: libvips' TIFF loader reads it with no codec, strip by
//     strip). An ICO's PNG entry is decoded in Go too: handed to libvips'
//     PNG loader, a broken entry was refused lazily, inside the output's
//     encoder, so the answer depended on the output format (issue 45), and
//     with png left out of THUMBD_INPUTS the entry still reached the PNG
//     decoder. Now every ICO is read or refused here, before libvips sees
//     it;
//   - an AVIF image sequence with no still image: a still AVIF of its
//     first frame's coded samples (memcost.SequenceStill: nothing decoded);
//   - a HEIF file whose ftyp's major brand libvips' loader does not know
//     (avis: a sequence with a still image; isom listing avif): the same
//     bytes with the brand its items' coding names (memcost.WithReadableBrand);
//   - a video (MP4, MOV, WebM, Matroska): the frame the job asks for
//     (thumbjob.Frame), decoded by FFmpeg's decoder from the packets the
//     Go container reader found, as an uncompressed TIFF turned by the
//     display matrix (videoFrame).
//
// Other formats pass through. It runs inside the engine, so in cells mode
// in the sandboxed cell, like every decoder.
func goDecoded(in thumbjob.Source, frame thumbjob.Frame, maxPixels int64) ([]byte, error) {
	if in.Header.Video != nil {
		return videoFrame(in, frame, maxPixels)
	}
	if in.Header.Sequence {
		still, err := memcost.SequenceStill(in.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err)
		}
		return still, nil
	}
	if in.Format == imagefmt.AVIF || in.Format == imagefmt.HEIC {
		return memcost.WithReadableBrand(in.Bytes, in.Format), nil
	}
	if in.Format != imagefmt.BMP && in.Format != imagefmt.ICO {
		return in.Bytes, nil
	}
	img, err := bmp.Decode(in.Bytes, maxPixels)
	if err != nil {
		return nil, err
	}
	return rawTIFF(img.Pix, img.Width, img.Height, img.Bands, 1)
}

// rowsPerStrip keeps the TIFF loader's read buffer small: it reads a
// strip at a time.
const rowsPerStrip = 16

// rawTIFF wraps interleaved 8-bit RGB or RGBA pixels (rows from the top)
// in a little-endian baseline TIFF: one IFD, uncompressed strips of
// rowsPerStrip rows, alpha as an unassociated extra sample, and an
// Orientation tag (EXIF's values: a video's display matrix) unless
// orientation is 1.
func rawTIFF(pix []byte, w, h, bands, orientation int) ([]byte, error) {
	return rawTIFFPages([]tiffPage{{pix: pix, width: w, height: h, bands: bands, orientation: orientation}})
}

// tiffPage is one page of rawTIFFPages.
type tiffPage struct {
	pix                               []byte
	width, height, bands, orientation int
}

// rawTIFFPages is rawTIFF with one IFD a page, chained in order: libvips
// reads the pages as an animation's frames (n=-1) when they share a
// size, as a video preview's do.
func rawTIFFPages(pages []tiffPage) ([]byte, error) {
	total := 8
	for _, pg := range pages {
		w, h, bands := pg.width, pg.height, pg.bands
		if (bands != 3 && bands != 4) || w <= 0 || h <= 0 || len(pg.pix) != w*h*bands {
			return nil, fmt.Errorf("raw TIFF of %dx%dx%d from %d bytes", w, h, bands, len(pg.pix))
		}
		total += pageBytes(pg)
	}
	if len(pages) == 0 || total > 1<<32-1 {
		return nil, fmt.Errorf("raw TIFF of %d pages and %d bytes: none, or over the 4 GiB a baseline TIFF addresses", len(pages), total)
	}
	out := make([]byte, total)
	copy(out, "II*\x00")
	binary.LittleEndian.PutUint32(out[4:], 8)
	at := 8
	for i, pg := range pages {
		next := 0
		if i < len(pages)-1 {
			next = at + pageBytes(pg)
		}
		writePage(out, at, next, pg)
		at += pageBytes(pg)
	}
	return out, nil
}

// pageEntry is one IFD entry of a raw TIFF page.
type pageEntry struct{ tag, typ, count, value uint32 }

const tiffShort, tiffLong = 3, 4

// pageEntries are a page's IFD entries, in tag order.
func pageEntries(pg tiffPage) []pageEntry {
	strips := (pg.height + rowsPerStrip - 1) / rowsPerStrip
	entries := []pageEntry{
		{thumbjob.TIFFTagImageWidth, tiffLong, 1, uint32(pg.width)},
		{thumbjob.TIFFTagImageLength, tiffLong, 1, uint32(pg.height)},
		{thumbjob.TIFFTagBitsPerSample, tiffShort, uint32(pg.bands), 0}, // an array
		{thumbjob.TIFFTagCompression, tiffShort, 1, 1},                  // none
		{thumbjob.TIFFTagPhotometric, tiffShort, 1, 2},                  // RGB
		{thumbjob.TIFFTagStripOffsets, tiffLong, uint32(strips), 0},     // an array
	}
	if pg.orientation != 1 {
		entries = append(entries, pageEntry{thumbjob.TIFFTagOrientation, tiffShort, 1, uint32(pg.orientation)}) // the tags stay in order
	}
	entries = append(entries, []pageEntry{
		{thumbjob.TIFFTagSamplesPerPixel, tiffShort, 1, uint32(pg.bands)},
		{thumbjob.TIFFTagRowsPerStrip, tiffLong, 1, rowsPerStrip},
		{thumbjob.TIFFTagStripByteCounts, tiffLong, uint32(strips), 0}, // an array
		{thumbjob.TIFFTagPlanarConfig, tiffShort, 1, 1},                // interleaved
	}...)
	if pg.bands == 4 {
		entries = append(entries, pageEntry{thumbjob.TIFFTagExtraSamples, tiffShort, 1, 2}) // unassociated alpha
	}
	return entries
}

// pageBytes is a page's IFD, its arrays and its pixels.
func pageBytes(pg tiffPage) int {
	strips := (pg.height + rowsPerStrip - 1) / rowsPerStrip
	return 2 + 12*len(pageEntries(pg)) + 4 + 2*pg.bands + 8*strips + len(pg.pix)
}

// writePage lays out pg's IFD at ifd (its next IFD at next, 0 for the
// last page), then its arrays and its pixels.
func writePage(out []byte, ifd, next int, pg tiffPage) {
	le := binary.LittleEndian
	entries := pageEntries(pg)
	strips := (pg.height + rowsPerStrip - 1) / rowsPerStrip
	row := pg.width * pg.bands
	bitsAt := ifd + 2 + 12*len(entries) + 4
	offsetsAt := bitsAt + 2*pg.bands
	countsAt := offsetsAt + 4*strips
	pixAt := countsAt + 4*strips
	le.PutUint16(out[ifd:], uint16(len(entries)))
	le.PutUint32(out[bitsAt-4:], uint32(next))
	for i := range pg.bands {
		le.PutUint16(out[bitsAt+2*i:], 8)
	}
	for s := range strips {
		rows := min(rowsPerStrip, pg.height-s*rowsPerStrip)
		le.PutUint32(out[offsetsAt+4*s:], uint32(pixAt+s*rowsPerStrip*row))
		le.PutUint32(out[countsAt+4*s:], uint32(rows*row))
	}
	for i, e := range entries {
		p := out[ifd+2+12*i:]
		le.PutUint16(p, uint16(e.tag))
		le.PutUint16(p[2:], uint16(e.typ))
		le.PutUint32(p[4:], e.count)
		// An array's values lie at its offset; values that fit in 4 bytes
		// (a single strip's offset or count) lie in the entry itself.
		size := e.count * map[uint32]uint32{tiffShort: 2, tiffLong: 4}[e.typ]
		at, array := map[uint32]int{thumbjob.TIFFTagBitsPerSample: bitsAt, thumbjob.TIFFTagStripOffsets: offsetsAt, thumbjob.TIFFTagStripByteCounts: countsAt}[e.tag]
		switch {
		case array && size > 4:
			le.PutUint32(p[8:], uint32(at))
		case array:
			copy(p[8:12], out[at:at+int(size)])
		case e.typ == tiffShort:
			le.PutUint16(p[8:], uint16(e.value))
		default:
			le.PutUint32(p[8:], e.value)
		}
	}
	copy(out[pixAt:], pg.pix)
}
