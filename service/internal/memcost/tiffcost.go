package memcost

import (
	"math"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// libvips 8.16.1's TIFF loader (libvips/foreign/tiff2vips.c; 8.14.1
// measures alike) reads a TIFF in the order its thumbnail asks for rows, and
// holds only a window of the decoded image:
//   - tiles: a tile cache of two rows of tiles, 2 x (1 + width/tile
//     width) tiles, and per thread a tile to unpack into (and two more for
//     the compressed tile when libvips decompresses it itself: JPEG,
//     JPEG 2000);
//   - strips: a line cache in front of a strip reader. A strip of more
//     than 128 rows is read a scanline at a time (read height 1), unless
//     it is YCbCr, in separate planes or old-style JPEG (then the strip
//     whole, into one more strip's buffer, and a plane's for separate
//     planes: one LZW strip in 3 planes measured 59 MiB). The
//     cache's tiles are read heights rounded up towards 16 rows, and it
//     keeps max(2, 4 x 128 / tile height) of them: 128 is vips'
//     n_lines for one thread (thumbd runs one libvips thread a job).
//
// Either cache grows to hold the rows the resize asks for at once: its
// vertical shrink (at most the source's long side over the box's short
// one) twice, and an output tile of up to 128 rows. libtiff's own copy
// of the compressed strip or tile (Header.ChunkBytes) is priced apart.
//
// Measured (VmHWM of vips thumbnail 8.16.1 with one thread, less an idle
// run's, 4032x3024 RGB to a 256-px WebP): 128x128 tiles 13.3 MiB,
// 1024x1024 tiles 38.3 MiB (the two tile rows, 24 MiB of them), 128-row
// strips 16.2 MiB, one LZW strip 23.4 (its 6.9 MB compressed), one JPEG
// strip (YCbCr) 82.9 (the strip twice).
//
// tiffWindowFactor: where the window is most of a job (a YCbCr strip of
// the whole image: 69.8 of the 80.7 MiB measured on 8.14.1, which the
// fixed part alone covers only 1.08x), a quarter over it keeps the
// estimate's 1.2x margin, as coefficientBytes does over libjpeg's 2 bytes.
const (
	tiffWindowFactor = 1.25
	tiffCacheLines   = 4 * 128 // the line cache's 4 x n_lines
	tiffScanlineAt   = 128     // strips taller are read by scanline
	tiffOutputRows   = 128     // the most rows of an output tile
	tiffMaxTile      = 8192    // libvips' largest tile side
)

// libvipsDecompresses: the TIFF compressions libvips decodes itself, from
// a buffer of two tiles (JPEG; JPEG 2000's three codes).
func libvipsDecompresses(compression int) bool {
	switch compression {
	case thumbjob.TIFFCompressionJPEG, thumbjob.TIFFCompressionJP2KYCC, thumbjob.TIFFCompressionJP2KLossy, thumbjob.TIFFCompressionJP2KRGB:
		return true
	}
	return false
}

// tiffWindow is the pixels libvips holds at once of a TIFF's first page
// (see above), at most the whole image plus its read buffers. Every term
// is computed in float64 from sides of at most 2^40, so a hostile header
// (1x1 tiles, a RowsPerStrip of 0 or 2^32-1) never overflows.
func tiffWindow(h Header, w, ht int) float64 {
	W, H := float64(max(h.Width, 1)), float64(max(h.Height, 1))
	// libvips refuses tiles of more than 8192 a side
	tw, th := float64(min(max(h.TileWidth, 1), tiffMaxTile)), float64(min(max(h.TileHeight, 1), tiffMaxTile))
	vshrink := math.Ceil(max(W, H) / float64(max(min(w, ht), 1)))
	asked := 2*vshrink + tiffOutputRows
	if h.Tiled {
		across := 1 + math.Floor(W/tw)
		rows := max(2, math.Floor(asked/th)+2)
		buffers := 1.0
		if libvipsDecompresses(h.Compression) {
			buffers += 2
		}
		return tiffWindowFactor * (min(rows*across*tw*th, W*H) + buffers*tw*th)
	}
	read := th // RowsPerStrip, clipped to 1..height by the header reader
	whole := h.Photometric == thumbjob.TIFFPhotometricYCbCr || h.SeparatePlanes || h.Compression == thumbjob.TIFFCompressionOldJPEG
	if read > tiffScanlineAt && !whole {
		read = 1
	}
	tile := max(16-math.Mod(16, read), read)
	lines := max(max(2, math.Floor(tiffCacheLines/tile))*tile, asked+tile)
	buffers := 0.0
	if read > 1 || whole {
		buffers = 1 // the strip, interleaved
		if h.SeparatePlanes {
			buffers += 1 / float64(max(h.Bands, 1)) // and a plane of it
		}
	}
	return tiffWindowFactor * (min(lines*W, W*H) + buffers*read*W)
}
