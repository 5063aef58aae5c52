package thumbjob

import "github.com/thumbd/thumbd/service/internal/imagefmt"

// Source is a job's source as the engine gets it: the bytes, and what the
// pipeline's one look at them found (memcost.Look: the format sniffed,
// the header read in Go). Carried from that look into the engine, in
// process and through a cell, so that no later step sniffs the bytes
// again.
type Source struct {
	Bytes []byte `json:"-"` // a cell's travel as the frame's payload
	// Format is the sniffed input format; "" when the bytes are no input
	// format (the engine refuses them).
	Format imagefmt.Format `json:"format"`
	// Header is what memcost read of the header: zero (Width 0) when it
	// could not, for a format it has no reader for or a broken header.
	Header Header `json:"header"`
	// Unread is why the header could not be read ("" when it was). The
	// engine decodes nothing it could not price: such a source is
	// refused, whatever libvips would make of it.
	Unread string `json:"unread,omitempty"`
	// Spans, for a ranged source (a video read by range: its index and
	// the packets of the frames the job decodes), are the byte ranges of
	// the file of Size bytes that Bytes holds, one after the other
	// (ReaderAt). Empty: Bytes is the whole source.
	Spans []Span `json:"spans,omitempty"`
	Size  int64  `json:"size,omitempty"`
}

// Header is what sizing a job needs of a source (memcost reads it).
type Header struct {
	Format         imagefmt.Format `json:"format"`
	Width          int             `json:"w"` // as stored (before EXIF orientation)
	Height         int             `json:"h"`
	Bands          int             `json:"bands"` // samples per pixel after decoding
	Alpha          bool            `json:"alpha"`
	BytesPerSample int             `json:"bps"`    // decoded: 1, 2 (9 to 16 bits), 4 (32-bit TIFF)
	Frames         int             `json:"frames"` // 1 unless animated
	// BitDepth is the bits a sample as stored, when the format says (a
	// 10-bit AVIF, a 12-bit HEIC, a 1-bit BMP); 0 when not read.
	BitDepth int `json:"depth,omitempty"`
	// Pages: a multi-page TIFF's directories (only the first is decoded,
	// Frames stays 1); 0 for the other formats.
	Pages int `json:"pages,omitempty"`
	// TileWidth x TileHeight is the unit the decoder reads at a time when
	// the format cuts the image: a HEIF grid's tile (Tiles of them, all
	// decoded), a TIFF's tile (Tiled) or strip (the width x RowsPerStrip).
	TileWidth  int  `json:"tile_w,omitempty"`
	TileHeight int  `json:"tile_h,omitempty"`
	Tiles      int  `json:"tiles,omitempty"`
	Tiled      bool `json:"tiled,omitempty"`
	// Compression is the format's own code for how the pixels are
	// stored, where it has several: a TIFF's Compression tag (1 none, 5
	// LZW, 7 JPEG, 8 deflate, 32773 PackBits...), a BMP's (0 none, 1 RLE8,
	// 2 RLE4, 3 bit fields); 0 elsewhere.
	Compression int `json:"compression,omitempty"`
	// A TIFF's Photometric tag (6: YCbCr), its separate planes
	// (PlanarConfiguration 2) and its largest strip or tile as stored
	// (StripByteCounts or TileByteCounts, at most the file): libtiff
	// reads a compressed strip whole before decoding it.
	Photometric    int  `json:"photometric,omitempty"`
	SeparatePlanes bool `json:"planes,omitempty"`
	ChunkBytes     int  `json:"chunk,omitempty"`
	// Rotation is HEIF's irot, in degrees anti-clockwise (0, 90, 180,
	// 270): at 90 and 270 the displayed sides are Height x Width. Width
	// and Height stay as stored (ispe).
	Rotation int `json:"rotation,omitempty"`
	// ThumbWidth x ThumbHeight is a HEIF's first embedded thumbnail (the
	// lowest item ID with a thmb reference to the primary, as libheif
	// lists them), as decoded: its own irot applied; 0 when there is none.
	ThumbWidth  int `json:"thumb_w,omitempty"`
	ThumbHeight int `json:"thumb_h,omitempty"`
	// ThumbCoded: the thumbnail is one coded image (hvc1, av01), not a
	// grid or another derived item, whose decode is its pixels alone.
	ThumbCoded bool `json:"thumb_coded,omitempty"`
	// Sequence: an AVIF image sequence with no still image, priced as its
	// first frame (the engine decodes that frame: memcost.SequenceStill).
	Sequence bool `json:"sequence,omitempty"`
	// Progressive: a progressive JPEG, whose decoder keeps every DCT
	// coefficient of the whole image (2 bytes a sample) whatever the
	// shrink-on-load: a 12 MP one holds 73 MB to make a 256-pixel thumbnail.
	Progressive bool `json:"progressive"`
	// NCLX is a HEIF's (HEIC's or AVIF's) colour as code points of ITU-T
	// H.273, from the primary image's colr box of type nclx; zero when
	// it has none (an ICC profile, colr prof or rICC, is libvips' to read).
	NCLX NCLX `json:"nclx"`
	// Video is what the container says of a video source (Format is then
	// its codec: THUMBD_INPUTS decides by the stream, not the container);
	// nil for images. Width x Height are the frame as decoded (the larger
	// of the container's and the codec's sizes: the decoder never gives
	// more), before the display matrix's rotation.
	Video *Video `json:"video,omitempty"`
}

// Video is a video source's header, read in Go (service/internal/video)
// before any decoder runs.
type Video struct {
	Container string `json:"container"` // mp4, mov, webm, mkv
	// Duration is seconds; FrameRate frames a second (0: unknown).
	Duration  float64 `json:"duration"`
	FrameRate float64 `json:"fps,omitempty"`
	// Rotation (clockwise degrees) and Mirror are the display matrix's
	// (the engine reads them again from the container).
	Rotation int  `json:"rotation,omitempty"`
	Mirror   bool `json:"mirror,omitempty"`
	// Refs are the frames the decoder may hold at once: what pricing its
	// decode needs (at the header's size, which is the coded one when it
	// is larger).
	Refs int `json:"refs"`
	// HDR is "pq" or "hlg" for an HDR stream, "" otherwise.
	HDR   string `json:"hdr,omitempty"`
	Audio bool   `json:"audio,omitempty"`
	// Bytes is the file's length.
	Bytes int64 `json:"bytes"`
}

// NCLX is an nclx colr box: ITU-T H.273's colour primaries (1 BT.709 and
// sRGB, 2 unspecified, 9 BT.2020, 11 DCI-P3, 12 Display P3...), transfer
// characteristics (16 PQ and 18 HLG are HDR), matrix coefficients and
// full-range flag. Primaries 0 (reserved) is "no nclx box".
type NCLX struct {
	Primaries int  `json:"primaries,omitempty"`
	Transfer  int  `json:"transfer,omitempty"`
	Matrix    int  `json:"matrix,omitempty"`
	FullRange bool `json:"full_range,omitempty"`
}

// Pixels is the first frame's width x height.
func (h Header) Pixels() int64 { return int64(h.Width) * int64(h.Height) }

// TIFF's tag values that thumb and memcost read (TIFF 6.0; the JPEG 2000
// codes are Aperio's and Bio-Formats', which libvips decodes itself, as
// libvips' tiff2vips.c names them).
const (
	TIFFCompressionOldJPEG   = 6 // libtiff hands its strips to libjpeg
	TIFFCompressionJPEG      = 7
	TIFFCompressionJP2KYCC   = 33003
	TIFFCompressionJP2KLossy = 33004
	TIFFCompressionJP2KRGB   = 33005
	TIFFPhotometricYCbCr     = 6
)

// TIFF's tags that memcost reads and thumb writes (TIFF 6.0).
const (
	TIFFTagImageWidth      = 256
	TIFFTagImageLength     = 257
	TIFFTagBitsPerSample   = 258
	TIFFTagCompression     = 259
	TIFFTagPhotometric     = 262
	TIFFTagStripOffsets    = 273
	TIFFTagOrientation     = 274
	TIFFTagSamplesPerPixel = 277
	TIFFTagRowsPerStrip    = 278
	TIFFTagStripByteCounts = 279
	TIFFTagPlanarConfig    = 284
	TIFFTagTileWidth       = 322
	TIFFTagTileLength      = 323
	TIFFTagTileByteCounts  = 325
	TIFFTagExtraSamples    = 338
)
