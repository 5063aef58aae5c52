// Package exifthumb finds the thumbnail a camera JPEG carries in its EXIF
// (APP1 "Exif", IFD1's JPEGInterchangeFormat and JPEGInterchangeFormatLength)
// and IFD0's orientation, in pure Go, without decoding a pixel. /info's
// ThumbHash uses it to avoid decoding a 12 MP photo for a 100-pixel
// placeholder.
//
// The source is untrusted: every offset and length is checked against the
// bytes it points into, the walk over segments and IFD entries is bounded,
// and the thumbnail is a sub-slice of the source (an APP1 segment holds at
// most 65,533 bytes, so at most that), whose own SOF must declare at most
// MaxSide pixels a side. It reads only two IFDs, never following a chain.
//
// Written here rather than taken from github.com/dsoprea/go-exif/v3, the one
// EXIF package the module proxy serves here: it would add six modules
// (go-logging, go-utility, golang/geo, go-flags, yaml.v2, x/net) to read
// two tags, and it does not walk a JPEG's segments itself.
package exifthumb

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxSide is the largest width or height a thumbnail's SOF may declare.
// Cameras write 160x120 (the DCF standard's size), some phones 320x240 or
// 512x384; a larger side is no camera's and would only cost decode memory
// (1024x1024 is 3 MiB of pixels).
const MaxSide = 1024

// maxSegments bounds the walk over a JPEG's segments before its first scan:
// a real file has a dozen; a crafted one of tiny segments ends here.
const maxSegments = 1024

// ErrNone says the source carries no EXIF thumbnail: not a JPEG, no EXIF,
// or an EXIF without IFD1 or without a JPEG in it. Any other error says
// the EXIF or the thumbnail is malformed.
var ErrNone = errors.New("exifthumb: no EXIF thumbnail")

// Thumbnail is the JPEG thumbnail of a source's EXIF.
type Thumbnail struct {
	// JPEG is the thumbnail's bytes, a sub-slice of the source.
	JPEG []byte
	// Width and Height are the thumbnail's size from its SOF, as stored
	// (before orientation).
	Width, Height int
	// Orientation is IFD0's EXIF orientation, 1..8 (1 when absent): the
	// thumbnail is stored like the main image, so the same turn applies.
	Orientation int
}

// Read returns the EXIF thumbnail of the JPEG src: ErrNone when there is
// none, another error when what is there does not hold together.
func Read(src []byte) (Thumbnail, error) {
	tiff, err := exifPayload(src)
	if err != nil {
		return Thumbnail{}, err
	}
	return readTIFF(tiff)
}

// exifPayload is the TIFF structure of the first APP1 Exif segment before
// the first scan.
func exifPayload(src []byte) ([]byte, error) {
	if len(src) < 4 || src[0] != 0xff || src[1] != 0xd8 {
		return nil, ErrNone
	}
	var found []byte
	err := segments(src, func(marker byte, payload []byte) bool {
		if marker == 0xe1 && len(payload) >= 6 && string(payload[:6]) == "Exif\x00\x00" {
			found = payload[6:]
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, ErrNone
	}
	return found, nil
}

// segments calls f with each marker segment of the JPEG jpg (which starts
// with SOI) up to its first scan or end, until f returns false.
func segments(jpg []byte, f func(marker byte, payload []byte) bool) error {
	pos := 2
	for n := 0; n < maxSegments; n++ {
		// Markers may be preceded by any number of 0xff fill bytes.
		for pos+1 < len(jpg) && jpg[pos] == 0xff && jpg[pos+1] == 0xff {
			pos++
		}
		if pos+2 > len(jpg) {
			return errors.New("exifthumb: the JPEG ends before its first scan")
		}
		if jpg[pos] != 0xff {
			return fmt.Errorf("exifthumb: no marker at byte %d", pos)
		}
		marker := jpg[pos+1]
		pos += 2
		switch {
		case marker == 0xda || marker == 0xd9: // SOS, EOI: no more headers
			return nil
		case marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7): // TEM, RSTn: no length
			continue
		}
		if pos+2 > len(jpg) {
			return errors.New("exifthumb: a segment's length is cut off")
		}
		length := int(binary.BigEndian.Uint16(jpg[pos:]))
		if length < 2 || pos+length > len(jpg) {
			return fmt.Errorf("exifthumb: a segment of %d bytes at byte %d, past the end of the JPEG", length, pos)
		}
		if !f(marker, jpg[pos+2:pos+length]) {
			return nil
		}
		pos += length
	}
	return fmt.Errorf("exifthumb: more than %d segments before the first scan", maxSegments)
}

// EXIF's tags and TIFF's field types used here.
const (
	tagOrientation   = 0x0112
	tagCompression   = 0x0103
	tagJPEGOffset    = 0x0201 // JPEGInterchangeFormat
	tagJPEGLength    = 0x0202 // JPEGInterchangeFormatLength
	typeShort        = 3
	typeLong         = 4
	compressionJPEG  = 6
	maxEntries       = 1024 // a real IFD0 has a few dozen
	ifdEntryBytes    = 12
	tiffHeaderLength = 8
)

// readTIFF reads IFD0's orientation and IFD1's thumbnail from EXIF's TIFF
// structure; every offset in it counts from its first byte.
func readTIFF(tiff []byte) (Thumbnail, error) {
	if len(tiff) < tiffHeaderLength {
		return Thumbnail{}, errors.New("exifthumb: the EXIF is shorter than its TIFF header")
	}
	order, err := byteOrder(tiff)
	if err != nil {
		return Thumbnail{}, err
	}
	ifd0 := order.Uint32(tiff[4:])
	t := Thumbnail{Orientation: 1}
	next, err := readIFD(tiff, order, ifd0, func(tag, typ uint16, count uint32, value []byte) error {
		if tag != tagOrientation {
			return nil
		}
		v, ok := scalar(order, typ, count, value)
		if !ok || v < 1 || v > 8 {
			return fmt.Errorf("exifthumb: orientation %d (type %d, count %d)", v, typ, count)
		}
		t.Orientation = int(v)
		return nil
	})
	if err != nil {
		return Thumbnail{}, err
	}
	if next == 0 {
		return Thumbnail{}, ErrNone
	}
	if next == ifd0 {
		return Thumbnail{}, errors.New("exifthumb: IFD1 is IFD0")
	}
	var off, length uint32
	var haveOff, haveLength bool
	compression := uint32(compressionJPEG) // EXIF's IFD1 is a JPEG unless it says otherwise
	_, err = readIFD(tiff, order, next, func(tag, typ uint16, count uint32, value []byte) error {
		var dst *uint32
		switch tag {
		case tagJPEGOffset:
			dst, haveOff = &off, true
		case tagJPEGLength:
			dst, haveLength = &length, true
		case tagCompression:
			dst = &compression
		default:
			return nil
		}
		v, ok := scalar(order, typ, count, value)
		if !ok {
			return fmt.Errorf("exifthumb: IFD1 tag %#04x of type %d, count %d", tag, typ, count)
		}
		*dst = v
		return nil
	})
	if err != nil {
		return Thumbnail{}, err
	}
	if !haveOff || !haveLength || compression != compressionJPEG {
		return Thumbnail{}, ErrNone // an uncompressed (TIFF) thumbnail, or none
	}
	if uint64(off)+uint64(length) > uint64(len(tiff)) || length < 4 {
		return Thumbnail{}, fmt.Errorf("exifthumb: a thumbnail of %d bytes at %d, in an EXIF of %d bytes", length, off, len(tiff))
	}
	t.JPEG = tiff[off : off+length]
	if t.Width, t.Height, err = jpegSize(t.JPEG); err != nil {
		return Thumbnail{}, err
	}
	return t, nil
}

// byteOrder is the byte order a TIFF header (at least tiffHeaderLength
// bytes) declares, once its magic number is checked.
func byteOrder(tiff []byte) (binary.ByteOrder, error) {
	var order binary.ByteOrder
	switch string(tiff[:2]) {
	case "II":
		order = binary.LittleEndian
	case "MM":
		order = binary.BigEndian
	default:
		return nil, fmt.Errorf("exifthumb: byte order %q", tiff[:2])
	}
	if order.Uint16(tiff[2:]) != 42 {
		return nil, errors.New("exifthumb: no TIFF magic number")
	}
	return order, nil
}

// readIFD calls f with each entry of the IFD at off (its value field: the
// 4 bytes that hold a value that fits) and returns the next IFD's offset.
func readIFD(tiff []byte, order binary.ByteOrder, off uint32, f func(tag, typ uint16, count uint32, value []byte) error) (uint32, error) {
	if uint64(off)+2 > uint64(len(tiff)) || off < tiffHeaderLength {
		return 0, fmt.Errorf("exifthumb: an IFD at %d, outside the EXIF's %d bytes", off, len(tiff))
	}
	n := int(order.Uint16(tiff[off:]))
	end := uint64(off) + 2 + uint64(n)*ifdEntryBytes + 4
	if n > maxEntries || end > uint64(len(tiff)) {
		return 0, fmt.Errorf("exifthumb: an IFD of %d entries at %d, past the EXIF's %d bytes", n, off, len(tiff))
	}
	for i := range n {
		e := tiff[int(off)+2+i*ifdEntryBytes:][:ifdEntryBytes]
		if err := f(order.Uint16(e), order.Uint16(e[2:]), order.Uint32(e[4:]), e[8:12]); err != nil {
			return 0, err
		}
	}
	return order.Uint32(tiff[end-4:]), nil
}

// scalar is the value of a one-element SHORT or LONG entry.
func scalar(order binary.ByteOrder, typ uint16, count uint32, value []byte) (uint32, bool) {
	switch {
	case count != 1:
		return 0, false
	case typ == typeShort:
		return uint32(order.Uint16(value)), true
	case typ == typeLong:
		return order.Uint32(value), true
	}
	return 0, false
}

// jpegSize is the size a JPEG's frame header (SOF) declares.
func jpegSize(jpg []byte) (w, h int, err error) {
	if len(jpg) < 4 || jpg[0] != 0xff || jpg[1] != 0xd8 {
		return 0, 0, errors.New("exifthumb: the thumbnail is not a JPEG")
	}
	found := false
	err = segments(jpg, func(marker byte, payload []byte) bool {
		// SOF0..SOF15 but DHT (c4), JPG (c8) and DAC (cc).
		if marker < 0xc0 || marker > 0xcf || marker == 0xc4 || marker == 0xc8 || marker == 0xcc {
			return true
		}
		if len(payload) >= 5 {
			h, w = int(binary.BigEndian.Uint16(payload[1:])), int(binary.BigEndian.Uint16(payload[3:]))
			found = true
		}
		return false
	})
	switch {
	case err != nil:
		return 0, 0, err
	case !found:
		return 0, 0, errors.New("exifthumb: the thumbnail has no frame header")
	case w < 1 || h < 1 || w > MaxSide || h > MaxSide:
		return 0, 0, fmt.Errorf("exifthumb: a %dx%d thumbnail; each side must be 1..%d", w, h, MaxSide)
	}
	return w, h, nil
}
