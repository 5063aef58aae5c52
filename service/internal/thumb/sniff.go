package thumb

import (
	"bytes"
	"encoding/binary"
)

// Source formats thumbd decodes. The format is decided from the first bytes,
// never from a Content-Type or a file name.
const (
	sourceJPEG = "jpeg"
	sourcePNG  = "png"
	sourceWebP = "webp"
	sourceGIF  = "gif"
)

// sniff returns the source format of buf, or "" when it is none of the
// formats thumbd decodes.
func sniff(buf []byte) string {
	switch {
	case len(buf) >= 3 && bytes.Equal(buf[:3], []byte{0xFF, 0xD8, 0xFF}):
		return sourceJPEG
	case len(buf) >= 8 && bytes.Equal(buf[:8], []byte("\x89PNG\r\n\x1a\n")):
		return sourcePNG
	case len(buf) >= 12 && bytes.Equal(buf[:4], []byte("RIFF")) && bytes.Equal(buf[8:12], []byte("WEBP")):
		return sourceWebP
	case len(buf) >= 6 && (bytes.Equal(buf[:6], []byte("GIF87a")) || bytes.Equal(buf[:6], []byte("GIF89a"))):
		return sourceGIF
	}
	return ""
}

// gifScreen reads a GIF's logical screen size (bytes 6-9, little-endian).
func gifScreen(buf []byte) (w, h int, ok bool) {
	if len(buf) < 10 {
		return 0, 0, false
	}
	return int(binary.LittleEndian.Uint16(buf[6:])), int(binary.LittleEndian.Uint16(buf[8:])), true
}
