package sources

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
)

// exifThumbSide is the long side of the thumbnail a camera writes into its
// EXIF: 160 pixels, the DCF standard's 160x120 for a 4:3 photo.
const exifThumbSide = 160

// withEXIFThumbnail returns the JPEG photo with the EXIF a camera writes:
// an APP1 "Exif" segment of little-endian TIFF whose IFD0 holds the
// orientation and whose IFD1 holds a 160-pixel JPEG thumbnail of the photo
// (box-filtered in Go, so the same bytes everywhere). The segment goes
// right after SOI, where EXIF puts it (libvips writes no JFIF APP0).
func withEXIFThumbnail(photo []byte, orientation uint16) ([]byte, error) {
	img, err := jpeg.Decode(bytes.NewReader(photo))
	if err != nil {
		return nil, fmt.Errorf("the photo to give a thumbnail: %w", err)
	}
	var thumb bytes.Buffer
	if err := jpeg.Encode(&thumb, boxShrink(img, exifThumbSide), &jpeg.Options{Quality: 75}); err != nil {
		return nil, err
	}
	app1, err := exifSegment(thumb.Bytes(), orientation)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(photo)+len(app1))
	return append(append(append(out, photo[:2]...), app1...), photo[2:]...), nil
}

// TIFF field types.
const (
	typeShort    = 3
	typeLong     = 4
	typeRational = 5
)

// field is one IFD entry of one value; a RATIONAL is value/1.
type field struct {
	tag, typ uint16
	value    uint32
}

// ifdSize is the bytes of an IFD of these fields, its RATIONALs included.
func ifdSize(fields []field) int {
	n := 2 + 12*len(fields) + 4
	for _, f := range fields {
		if f.typ == typeRational {
			n += 8
		}
	}
	return n
}

// appendIFD appends an IFD of fields (sorted by tag, as TIFF wants) at the
// end of tiff, its RATIONALs right after it; more links it to an IFD that
// follows them.
func appendIFD(tiff []byte, fields []field, more bool) []byte {
	le := binary.LittleEndian
	dataAt := len(tiff) + 2 + 12*len(fields) + 4
	var data []byte
	tiff = le.AppendUint16(tiff, uint16(len(fields)))
	for _, f := range fields {
		tiff = le.AppendUint32(le.AppendUint16(le.AppendUint16(tiff, f.tag), f.typ), 1)
		switch f.typ {
		case typeShort: // left-justified in the 4-byte field
			tiff = le.AppendUint16(le.AppendUint16(tiff, uint16(f.value)), 0)
		case typeRational:
			tiff = le.AppendUint32(tiff, uint32(dataAt+len(data)))
			data = le.AppendUint32(le.AppendUint32(data, f.value), 1)
		default:
			tiff = le.AppendUint32(tiff, f.value)
		}
	}
	next := 0
	if more {
		next = dataAt + len(data)
	}
	return append(le.AppendUint32(tiff, uint32(next)), data...)
}

// exifSegment is the APP1 segment (marker included) of a camera's EXIF:
// little-endian TIFF, IFD0 with the orientation and the tags EXIF requires
// of it (resolution, YCbCr positioning), IFD1 with the JPEG thumb and the
// tags it requires, then thumb itself.
func exifSegment(thumb []byte, orientation uint16) ([]byte, error) {
	ifd0 := []field{
		{0x0112, typeShort, uint32(orientation)}, // Orientation
		{0x011a, typeRational, 72},               // XResolution
		{0x011b, typeRational, 72},               // YResolution
		{0x0128, typeShort, 2},                   // ResolutionUnit: inches
		{0x0213, typeShort, 1},                   // YCbCrPositioning: centred
	}
	const header = 8
	ifd1At := header + ifdSize(ifd0)
	ifd1 := []field{
		{0x0103, typeShort, 6}, // Compression: JPEG
		{0x011a, typeRational, 72},
		{0x011b, typeRational, 72},
		{0x0128, typeShort, 2},
		{0x0201, typeLong, 0},                  // JPEGInterchangeFormat, set below
		{0x0202, typeLong, uint32(len(thumb))}, // JPEGInterchangeFormatLength
	}
	ifd1[4].value = uint32(ifd1At + ifdSize(ifd1))
	tiff := binary.LittleEndian.AppendUint32([]byte{'I', 'I', 42, 0}, header)
	tiff = appendIFD(tiff, ifd0, true)
	tiff = append(appendIFD(tiff, ifd1, false), thumb...)
	length := 2 + len("Exif\x00\x00") + len(tiff)
	if length > 0xffff {
		return nil, fmt.Errorf("an EXIF of %d bytes does not fit a JPEG segment", length)
	}
	seg := binary.BigEndian.AppendUint16([]byte{0xff, 0xe1}, uint16(length))
	return append(append(seg, "Exif\x00\x00"...), tiff...), nil
}

// boxShrink scales img so that its long side is side pixels, each output
// pixel the mean of the source pixels it covers.
func boxShrink(img image.Image, side int) *image.RGBA {
	b := img.Bounds()
	w, h := side, max(1, (b.Dy()*side+b.Dx()/2)/b.Dx())
	if b.Dy() > b.Dx() {
		w, h = max(1, (b.Dx()*side+b.Dy()/2)/b.Dy()), side
	}
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		y0, y1 := b.Min.Y+y*b.Dy()/h, b.Min.Y+(y+1)*b.Dy()/h
		for x := range w {
			x0, x1 := b.Min.X+x*b.Dx()/w, b.Min.X+(x+1)*b.Dx()/w
			var r, g, bl, n uint64
			for sy := y0; sy < y1; sy++ {
				for sx := x0; sx < x1; sx++ {
					cr, cg, cb, _ := img.At(sx, sy).RGBA()
					r, g, bl, n = r+uint64(cr), g+uint64(cg), bl+uint64(cb), n+1
				}
			}
			out.SetRGBA(x, y, color.RGBA{R: uint8(r / n >> 8), G: uint8(g / n >> 8), B: uint8(bl / n >> 8), A: 255})
		}
	}
	return out
}
