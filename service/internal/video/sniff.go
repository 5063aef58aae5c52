package video

import (
	"encoding/binary"
	"slices"
	"strings"
)

// imageBrands are the ISO BMFF brands of HEIF and AVIF images and image
// sequences (and of the HEIF-based CR3's companions): a file that lists
// one is an image (imagefmt's AVIF or HEIC row), never a video, even when
// it lists a video brand as well.
var imageBrands = []string{"avif", "avis", "avio", "heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs", "mif1", "mif2", "msf1", "miaf", "MiHE", "MiHA", "MiHB", "jpeg", "jpgs"}

// videoBrand: the brands of MP4 and QuickTime video files (ISO/IEC
// 14496-12 and 14496-14's isom, iso2 to iso9, mp41, mp42; avc1; DASH's
// dash and its segment brands msdh and msix; Apple's M4V and M4VP;
// QuickTime's "qt  "; 3GPP's and 3GPP2's 3gp* and 3g2*; Sony's XAVC;
// Adobe's f4v).
func videoBrand(b string) bool {
	switch b {
	case "isom", "iso2", "iso3", "iso4", "iso5", "iso6", "iso7", "iso8", "iso9",
		"mp41", "mp42", "avc1", "dash", "msdh", "msix", "M4V ", "M4VP", "M4VH",
		"qt  ", "XAVC", "f4v ", "mmp4", "MSNV", "hvc1", "cmfc", "cmf2":
		return true
	}
	return strings.HasPrefix(b, "3gp") || strings.HasPrefix(b, "3g2")
}

// brands are an ftyp box's major brand and compatible brands, as far as
// the box and b go; nil when b does not start with an ftyp box.
func brands(b []byte) []string {
	if len(b) < 16 || string(b[4:8]) != "ftyp" {
		return nil
	}
	end := min(uint64(binary.BigEndian.Uint32(b)), uint64(len(b)))
	if end < 16 {
		return nil
	}
	out := []string{string(b[8:12])}
	for p := uint64(16); p+4 <= end; p += 4 {
		out = append(out, string(b[p:p+4]))
	}
	return out
}

// ebmlMagic is the EBML header's element ID, every Matroska file's first
// four bytes.
const ebmlMagic = "\x1A\x45\xDF\xA3"

// Sniff says which container b (a file's first bytes: 4 KiB is plenty)
// starts like. An ISO BMFF file is a video when its ftyp lists a video
// brand and no image brand (HEIF and AVIF stay images), or when it is an
// old QuickTime file without ftyp that starts with a moov, mdat or wide
// atom; MOV when its major brand is QuickTime's. A Matroska file is an
// EBML header whose DocType is "matroska" or "webm".
func Sniff(b []byte) (Container, bool) {
	if bs := brands(b); bs != nil {
		if slices.ContainsFunc(bs, func(s string) bool { return slices.Contains(imageBrands, s) }) ||
			!slices.ContainsFunc(bs, videoBrand) {
			return "", false
		}
		if bs[0] == "qt  " {
			return MOV, true
		}
		return MP4, true
	}
	if len(b) >= 8 {
		size := binary.BigEndian.Uint32(b)
		switch string(b[4:8]) {
		case "moov", "mdat", "wide":
			if size == 1 || size >= 8 {
				return MOV, true
			}
		}
	}
	if len(b) < 4 || string(b[:4]) != ebmlMagic {
		return "", false
	}
	switch docType(b) {
	case "webm":
		return WebM, true
	case "matroska":
		return Matroska, true
	}
	return "", false
}

// docType is the DocType of the EBML header b starts with, "" when b
// holds no header or the header no DocType.
func docType(b []byte) string {
	h, err := parseElement(b, 0)
	if err != nil || h.id != idEBML || h.size < 0 || h.dataAt+h.size > int64(len(b)) {
		return ""
	}
	children, err := elements(b[h.dataAt : h.dataAt+h.size])
	if err != nil {
		return ""
	}
	for _, c := range children {
		if c.id == idDocType {
			return ebmlString(c.data)
		}
	}
	return ""
}
