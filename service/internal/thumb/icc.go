package thumb

import (
	"bytes"
	"encoding/binary"
	"unicode/utf16"
)

// isSRGB reports whether an embedded ICC profile is an sRGB one, by its
// header (an RGB profile) and its description tag (a v2 "desc" or a v4
// "mluc" text naming sRGB: "sRGB IEC61966-2.1", "sRGB built-in", "sRGB v4
// ICC preference"...). Cameras and web images mostly embed one; converting
// through it to sRGB changes nothing visible, and building the colour
// transform cost 3-5 ms a thumbnail (bench/results/2026-12-03-inputs,
// "Sources with an sRGB profile"). Anything it cannot
// read is not sRGB, so the source is converted, as is safe.
func isSRGB(icc []byte) bool {
	be := binary.BigEndian
	if len(icc) < 132 || string(icc[16:20]) != "RGB " {
		return false
	}
	n := int(be.Uint32(icc[128:]))
	for i := 0; i < n && 132+12*(i+1) <= len(icc); i++ {
		e := icc[132+12*i:]
		if string(e[:4]) != "desc" {
			continue
		}
		off, size := int(be.Uint32(e[4:])), int(be.Uint32(e[8:]))
		if off < 0 || size < 12 || off > len(icc)-size {
			return false
		}
		return bytes.Contains(descText(icc[off:off+size]), []byte("sRGB"))
	}
	return false
}

// descText is a description tag's text: a v2 textDescriptionType's ASCII,
// or a v4 multiLocalizedUnicodeType's first record, UTF-16 made ASCII.
func descText(t []byte) []byte {
	be := binary.BigEndian
	switch string(t[:4]) {
	case "desc":
		if n := int(be.Uint32(t[8:])); n >= 0 && n <= len(t)-12 {
			return t[12 : 12+n]
		}
	case "mluc":
		if len(t) < 28 || be.Uint32(t[8:]) == 0 {
			return nil
		}
		n, off := int(be.Uint32(t[20:])), int(be.Uint32(t[24:]))
		if n < 0 || off < 0 || off > len(t) || n > len(t)-off {
			return nil
		}
		u := make([]uint16, n/2)
		for i := range u {
			u[i] = be.Uint16(t[off+2*i:])
		}
		return []byte(string(utf16.Decode(u)))
	}
	return nil
}
