package exifthumb

import (
	"bytes"
	"strings"
)

// IFD0's rights tags (EXIF 2.3, table 4): ASCII, the copyright holding the
// photographer's notice and the editor's, each ended by a NUL.
const (
	tagArtist    = 0x013b
	tagCopyright = 0x8298
	typeASCII    = 2
)

// maxRightsBytes bounds a rights value: an APP1 segment holds at most
// 65,533 bytes, a HEIF's or PNG's EXIF more; a notice is a line.
const maxRightsBytes = 4096

// Rights are the copyright and the artist of exif, an EXIF block as
// libvips holds it (its "exif-data": "Exif\0\0" and a TIFF structure, or
// the TIFF structure alone), as text: the copyright's photographer and
// editor parts joined by "; ", each value cut at maxRightsBytes. Empty
// when the block has none, or cannot be read: then none is kept.
func Rights(exif []byte) (copyright, artist string) {
	tiff := bytes.TrimPrefix(exif, []byte("Exif\x00\x00"))
	if len(tiff) < tiffHeaderLength {
		return "", ""
	}
	order, err := byteOrder(tiff)
	if err != nil {
		return "", ""
	}
	_, _ = readIFD(tiff, order, order.Uint32(tiff[4:]), func(tag, typ uint16, count uint32, value []byte) error {
		if (tag != tagCopyright && tag != tagArtist) || typ != typeASCII || count == 0 {
			return nil
		}
		text := value
		if count > 4 {
			off := order.Uint32(value)
			if uint64(off)+uint64(count) > uint64(len(tiff)) {
				return nil
			}
			text = tiff[off : off+count]
		}
		text = text[:min(int(count), len(text), maxRightsBytes)]
		var parts []string
		for p := range strings.SplitSeq(string(text), "\x00") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		if tag == tagCopyright {
			copyright = strings.Join(parts, "; ")
		} else {
			artist = strings.Join(parts, "; ")
		}
		return nil
	})
	return copyright, artist
}
