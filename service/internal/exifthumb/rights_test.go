package exifthumb

import (
	"encoding/binary"
	"testing"
)

// rightsTIFF is a TIFF structure in order with IFD0's entries, each ASCII
// with its bytes after the IFD (inline when they fit in 4).
func rightsTIFF(order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}, entries map[uint16]string) []byte {
	magic := "II*\x00"
	if order.String() == binary.BigEndian.String() {
		magic = "MM\x00*"
	}
	tiff := append([]byte(magic), order.AppendUint32(nil, 8)...)
	tiff = order.AppendUint16(tiff, uint16(len(entries)))
	valuesAt := uint32(8 + 2 + 12*len(entries) + 4)
	var values []byte
	for _, tag := range []uint16{tagArtist, tagCopyright} {
		v, ok := entries[tag]
		if !ok {
			continue
		}
		tiff = order.AppendUint16(tiff, tag)
		tiff = order.AppendUint16(tiff, typeASCII)
		tiff = order.AppendUint32(tiff, uint32(len(v)))
		if len(v) <= 4 {
			tiff = append(tiff, (v + "\x00\x00\x00\x00")[:4]...)
			continue
		}
		tiff = order.AppendUint32(tiff, valuesAt+uint32(len(values)))
		values = append(values, v...)
	}
	tiff = append(tiff, 0, 0, 0, 0)
	return append(tiff, values...)
}

func TestRights(t *testing.T) {
	for _, c := range []struct {
		name              string
		exif              []byte
		copyright, artist string
	}{
		{"both, little-endian, with the APP1 prefix", append([]byte("Exif\x00\x00"), rightsTIFF(binary.LittleEndian, map[uint16]string{tagCopyright: "(c) 2026 A. Photographer\x00", tagArtist: "A. Photographer\x00"})...), "(c) 2026 A. Photographer", "A. Photographer"},
		{"big-endian, no prefix", rightsTIFF(binary.BigEndian, map[uint16]string{tagCopyright: "(c) Someone (Studio)\x00"}), "(c) Someone (Studio)", ""},
		{"photographer and editor", rightsTIFF(binary.LittleEndian, map[uint16]string{tagCopyright: "Photo Co\x00Edit Co\x00"}), "Photo Co; Edit Co", ""},
		{"editor only (a space for the photographer)", rightsTIFF(binary.LittleEndian, map[uint16]string{tagCopyright: " \x00Edit Co\x00"}), "Edit Co", ""},
		{"inline", rightsTIFF(binary.LittleEndian, map[uint16]string{tagArtist: "Al\x00"}), "", "Al"},
		{"none", rightsTIFF(binary.LittleEndian, nil), "", ""},
		{"not a TIFF", []byte("Exif\x00\x00XX*\x00\x08\x00\x00\x00"), "", ""},
		{"short", []byte("II*"), "", ""},
	} {
		copyright, artist := Rights(c.exif)
		if copyright != c.copyright || artist != c.artist {
			t.Errorf("%s: %q, %q; want %q, %q", c.name, copyright, artist, c.copyright, c.artist)
		}
	}
	// A value whose bytes run past the block is not read.
	past := rightsTIFF(binary.LittleEndian, map[uint16]string{tagCopyright: "(c) cut short here\x00"})
	if copyright, _ := Rights(past[:len(past)-5]); copyright != "" {
		t.Errorf("a value past the block's end: %q", copyright)
	}
}

// FuzzRights: any block, no panic, and values within the bound.
func FuzzRights(f *testing.F) {
	f.Add(rightsTIFF(binary.LittleEndian, map[uint16]string{tagCopyright: "(c) x\x00", tagArtist: "y\x00"}))
	f.Add(rightsTIFF(binary.BigEndian, map[uint16]string{tagCopyright: "a\x00b\x00"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		copyright, artist := Rights(b)
		if len(copyright) > 2*maxRightsBytes || len(artist) > maxRightsBytes {
			t.Fatalf("%d and %d bytes", len(copyright), len(artist))
		}
	})
}
