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
	if (bands != 3 && bands != 4) || w <= 0 || h <= 0 || len(pix) != w*h*bands {
		return nil, fmt.Errorf("raw TIFF of %dx%dx%d from %d bytes", w, h, bands, len(pix))
	}
	if len(pix) > 1<<32-1-1<<20 {
		return nil, fmt.Errorf("raw TIFF of %d bytes: over the 4 GiB a baseline TIFF addresses", len(pix))
	}
	le := binary.LittleEndian
	strips := (h + rowsPerStrip - 1) / rowsPerStrip
	type entry struct{ tag, typ, count, value uint32 }
	const short, long = 3, 4
	entries := []entry{
		{thumbjob.TIFFTagImageWidth, long, 1, uint32(w)},
		{thumbjob.TIFFTagImageLength, long, 1, uint32(h)},
		{thumbjob.TIFFTagBitsPerSample, short, uint32(bands), 0}, // an array
		{thumbjob.TIFFTagCompression, short, 1, 1},               // none
		{thumbjob.TIFFTagPhotometric, short, 1, 2},               // RGB
		{thumbjob.TIFFTagStripOffsets, long, uint32(strips), 0},  // an array
	}
	if orientation != 1 {
		entries = append(entries, entry{thumbjob.TIFFTagOrientation, short, 1, uint32(orientation)}) // the tags stay in order
	}
	entries = append(entries, []entry{
		{thumbjob.TIFFTagSamplesPerPixel, short, 1, uint32(bands)},
		{thumbjob.TIFFTagRowsPerStrip, long, 1, rowsPerStrip},
		{thumbjob.TIFFTagStripByteCounts, long, uint32(strips), 0}, // an array
		{thumbjob.TIFFTagPlanarConfig, short, 1, 1},                // interleaved
	}...)
	if bands == 4 {
		entries = append(entries, entry{thumbjob.TIFFTagExtraSamples, short, 1, 2}) // unassociated alpha
	}
	row := w * bands
	ifd := 8
	bitsAt := ifd + 2 + 12*len(entries) + 4
	offsetsAt := bitsAt + 2*bands
	countsAt := offsetsAt + 4*strips
	pixAt := countsAt + 4*strips
	out := make([]byte, pixAt+len(pix))
	copy(out, "II*\x00")
	le.PutUint32(out[4:], uint32(ifd))
	le.PutUint16(out[ifd:], uint16(len(entries)))
	for i := range bands {
		le.PutUint16(out[bitsAt+2*i:], 8)
	}
	for s := range strips {
		rows := min(rowsPerStrip, h-s*rowsPerStrip)
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
		size := e.count * map[uint32]uint32{short: 2, long: 4}[e.typ]
		at, array := map[uint32]int{thumbjob.TIFFTagBitsPerSample: bitsAt, thumbjob.TIFFTagStripOffsets: offsetsAt, thumbjob.TIFFTagStripByteCounts: countsAt}[e.tag]
		switch {
		case array && size > 4:
			le.PutUint32(p[8:], uint32(at))
		case array:
			copy(p[8:12], out[at:at+int(size)])
		case e.typ == short:
			le.PutUint16(p[8:], uint16(e.value))
		default:
			le.PutUint32(p[8:], e.value)
		}
	}
	copy(out[pixAt:], pix)
	return out, nil
}
