// Package memcost estimates, before a pixel is decoded, the peak memory
// one thumbnail job will take: from the source's header (read here in pure
// Go, so that the HTTP process sizes jobs in cells mode too, where it has
// no libvips) and the job's output box and format. Admission holds that
// much of the memory budget from the job's admission to its end. The model
// and its calibration against measured peaks are in docs/hardening.md
// ("Memory").
package memcost

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image/color"

	"golang.org/x/image/webp"

	"github.com/thumbd/thumbd/service/internal/bmp"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/video"
)

// ErrNotServed marks a header read whole that thumbd refuses by its own
// rules (a HEIF that mixes codecs, or whose grid's tiles differ in size),
// apart from one it could not read: a decoder may open such a file, and
// thumbd still decodes none of it.
var ErrNotServed = errors.New("not served")

// Header is what sizing a job needs of a source (thumbjob's, so that it
// travels with the source into the engine).
type Header = thumbjob.Header

// ReadHeader reads src's header (Look's, without the source).
func ReadHeader(src []byte) (Header, error) {
	s, err := Look(src)
	return s.Header, err
}

// Look is the one look at a job's source: its format sniffed, and its
// header read (no pixel data: a JPEG up to its frame header, a PNG's IHDR,
// a GIF's and a WebP's blocks, skipped by their lengths to count frames,
// a HEIF's meta box, a TIFF's first directory, a JPEG XL's size and image
// metadata, a BMP's info header, an ICO's directory and largest entry's
// header). Every length is checked against the bytes: a malformed header
// is an error, never a panic or an allocation of its declared size.
// The error is the header's; Format is set whenever the bytes are an input
// format, the Header only when it could be read.
func Look(src []byte) (thumbjob.Source, error) {
	return LookSource(thumbjob.Source{Bytes: src})
}

// LookSource is Look of a source that may be ranged (a video read by
// range: thumbjob.Source.Spans), whose container is read through its
// spans. Only a video is read by range: any other ranged source is not
// an input format.
func LookSource(s thumbjob.Source) (thumbjob.Source, error) {
	src := s.Bytes
	if len(s.Spans) > 0 {
		c, isVideo := video.Sniff(src)
		if err := s.CheckSpans(); err != nil || !isVideo || s.Spans[0].Offset != 0 {
			s.Unread = "a source read by range that is not a video's"
			return s, errors.New(s.Unread)
		}
		return lookVideo(s, c)
	}
	spec, ok := imagefmt.Sniff(src)
	if !ok {
		if c, isVideo := video.Sniff(src); isVideo {
			return lookVideo(s, c)
		}
		s.Unread = "not an input format"
		return s, errors.New(s.Unread)
	}
	s.Format = spec.Format
	var h Header
	var err error
	switch spec.Format {
	case imagefmt.JPEG:
		h, err = jpegHeader(src)
	case imagefmt.PNG:
		h, err = pngHeader(src)
	case imagefmt.GIF:
		h, err = gifHeader(src)
	case imagefmt.WebP:
		h, err = webpHeader(src)
	case imagefmt.AVIF, imagefmt.HEIC:
		h, err = heifHeader(src, spec.Format)
	case imagefmt.TIFF:
		h, err = tiffHeader(src)
	case imagefmt.JXL:
		h, err = jxlHeader(src)
	case imagefmt.BMP, imagefmt.ICO:
		h, err = bmpHeader(src, spec.Format)
	default:
		err = fmt.Errorf("no header reader for %s", spec.Name)
	}
	if err == nil && (h.Width <= 0 || h.Height <= 0) {
		err = fmt.Errorf("%s of %dx%d pixels", spec.Name, h.Width, h.Height)
	}
	if err == nil {
		// A HEIF's format is the coding of its images (heifCodec), which
		// may not be its brand's.
		s.Format, s.Header = h.Format, h
	} else {
		s.Unread = err.Error()
	}
	return s, err
}

// jpegHeader walks the markers to the frame header (SOFn), skipping each
// segment by its length: every SOF type (baseline, progressive, lossless,
// arithmetic), which image/jpeg's DecodeConfig does not all accept while
// libjpeg-turbo decodes them. Markers are found as libjpeg's next_marker
// finds them: bytes before a marker, fill bytes (FF) and stuffed zeros
// (FF 00) are skipped, so a file libjpeg reads with "extraneous bytes
// before marker" is read here too (FuzzLookAgainstLibvips found one).
func jpegHeader(src []byte) (Header, error) {
	p := 2
	for {
		m, at, ok := nextJPEGMarker(src, p)
		if !ok {
			return Header{}, errors.New("JPEG without a frame header")
		}
		p = at
		switch {
		case m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7): // no length
			continue
		case m == 0xD9 || m == 0xDA: // end, or scan data before any frame header
			return Header{}, errors.New("JPEG without a frame header")
		}
		if p+2 > len(src) {
			return Header{}, errors.New("JPEG segment past the end")
		}
		n := int(binary.BigEndian.Uint16(src[p:]))
		if n < 2 && (m >= 0xE0 && m <= 0xEF || m == 0xFE || m == 0xDC) {
			// libjpeg skips an APPn's, a COM's or a DNL's length less
			// 2 bytes, nothing when that is negative (skip_variable,
			// save_marker, get_interesting_appn): it reads on after the
			// length. Other markers with such a length are its errors.
			n = 2
		}
		if n < 2 || p+n > len(src) {
			return Header{}, errors.New("JPEG segment past the end")
		}
		if m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC {
			if n < 8 {
				return Header{}, errors.New("JPEG frame header too short")
			}
			seg := src[p+2:]
			h := Header{Format: imagefmt.JPEG, Height: int(binary.BigEndian.Uint16(seg[1:])), Width: int(binary.BigEndian.Uint16(seg[3:])),
				Bands: int(seg[5]), BytesPerSample: 1, Frames: 1}
			if seg[0] > 8 {
				h.BytesPerSample = 2
			}
			h.Progressive = m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE
			if h.Width == 0 || h.Height == 0 || h.Bands < 1 || h.Bands > 4 {
				return Header{}, errors.New("JPEG frame header out of range")
			}
			return h, nil
		}
		p += n
	}
}

// nextJPEGMarker is the marker at or after p and the offset just past it,
// as libjpeg's next_marker reads: anything up to an FF is discarded, then
// the FFs, and an FF 00 (a stuffed zero) is discarded whole.
func nextJPEGMarker(src []byte, p int) (marker byte, after int, ok bool) {
	for p < len(src) {
		for p < len(src) && src[p] != 0xFF {
			p++
		}
		for p < len(src) && src[p] == 0xFF {
			p++
		}
		if p >= len(src) {
			break
		}
		if m := src[p]; m != 0 {
			return m, p + 1, true
		}
		p++
	}
	return 0, 0, false
}

func pngHeader(src []byte) (Header, error) {
	// signature (8), IHDR length (4), "IHDR" (4), width, height, depth, colour type
	if len(src) < 26 || string(src[12:16]) != "IHDR" {
		return Header{}, errors.New("PNG without an IHDR chunk")
	}
	h := Header{Format: imagefmt.PNG, Width: int(binary.BigEndian.Uint32(src[16:])), Height: int(binary.BigEndian.Uint32(src[20:])), BytesPerSample: 1, Frames: 1}
	if src[24] == 16 {
		h.BytesPerSample = 2
	}
	switch src[25] {
	case 0:
		h.Bands = 1
	case 4:
		h.Bands = 2
	case 2:
		h.Bands = 3
	default: // 3 (palette: RGBA when it has a tRNS chunk) and 6 (RGBA)
		h.Bands = 4
	}
	h.Alpha = h.Bands == 2 || h.Bands == 4
	return h, nil
}

// gifHeader counts the image descriptors by skipping every block by its
// length, and sizes the image as libvips' GIF loader (libnsgif) does: the
// logical screen, taken for 1x1 when it is 0, larger than 2048 a side or
// one of the desktop sizes broken encoders write, then grown to hold the
// first frame. Each frame decodes to RGBA at that size.
func gifHeader(src []byte) (Header, error) {
	w, h, ok := imagefmt.GIFScreen(src)
	if !ok || len(src) < 13 {
		return Header{}, errors.New("GIF without a logical screen")
	}
	if w == 0 || h == 0 || w > 2048 || h > 2048 || desktopScreen(w, h) {
		w, h = 1, 1
	}
	hd := Header{Format: imagefmt.GIF, Width: w, Height: h, Bands: 4, BytesPerSample: 1, Alpha: true}
	p := 13
	if src[10]&0x80 != 0 {
		p += 3 << (src[10]&7 + 1)
	}
	subBlocks := func() bool {
		for p < len(src) {
			n := int(src[p])
			p += 1 + n
			if n == 0 {
				return true
			}
		}
		return false
	}
	for p < len(src) {
		switch src[p] {
		case 0x21: // extension: label, then sub-blocks
			// As libnsgif skips it: a comment's sub-blocks from after its
			// label; any other extension's first sub-block skipped by its
			// size even when that is 0 (so a 0 there ends no extension),
			// then sub-blocks to a terminator.
			if p+2 >= len(src) {
				p = len(src)
				continue
			}
			if src[p+1] == 0xFE {
				p += 2
			} else {
				p += 3 + int(src[p+2])
			}
			if !subBlocks() {
				p = len(src)
			}
		case 0x2C: // image descriptor, local colour table, LZW code size, data
			if p+10 > len(src) {
				p = len(src)
				continue
			}
			if hd.Frames == 0 {
				le := binary.LittleEndian
				hd.Width = max(hd.Width, int(le.Uint16(src[p+1:]))+int(le.Uint16(src[p+5:])))
				hd.Height = max(hd.Height, int(le.Uint16(src[p+3:]))+int(le.Uint16(src[p+7:])))
			}
			hd.Frames++
			flags := src[p+9]
			p += 10
			if flags&0x80 != 0 {
				p += 3 << (flags&7 + 1)
			}
			p++
			if !subBlocks() {
				p = len(src)
			}
		default: // trailer or garbage: nothing more to count
			p = len(src)
		}
	}
	hd.Frames = max(hd.Frames, 1)
	return hd, nil
}

// desktopScreen says whether libnsgif takes a w x h logical screen for an
// encoder's desktop rather than the image's (libnsgif's gif.c,
// nsgif_data_scan).
func desktopScreen(w, h int) bool {
	switch [2]int{w, h} {
	case [2]int{640, 480}, [2]int{640, 512}, [2]int{800, 600}, [2]int{1024, 768}, [2]int{1280, 1024}, [2]int{1600, 1200}:
		return true
	}
	return false
}

// bmpHeader reads a BMP's or an ICO's (largest entry's) header with the
// decoder's own reading of it (bmp.DecodeConfig), so that the price is
// of what bmp.Decode makes.
func bmpHeader(src []byte, format imagefmt.Format) (Header, error) {
	c, err := bmp.DecodeConfig(src)
	if err != nil {
		return Header{}, err
	}
	h := Header{Format: format, Width: c.Width, Height: c.Height, Bands: c.Bands, Alpha: c.Alpha(), BytesPerSample: 1, BitDepth: c.BitCount, Compression: c.Compression, Frames: 1}
	if c.PNG && c.BitCount > 8 {
		h.BytesPerSample = 2
	}
	return h, nil
}

// webpHeader reads the canvas size and counts ANMF chunks.
// webpHeader is a WebP's canvas. An extended file's is its VP8X chunk's,
// read as libwebp's demuxer (which libvips reads WebP through) reads it:
// a chunk of 10 bytes or more, the rest skipped (image/webp wants exactly
// 10, and refused a file libvips opens: FuzzLookAgainstLibvips'
// b84f6265c3adf815). A simple file's is its VP8 or VP8L frame header.
func webpHeader(src []byte) (Header, error) {
	h := Header{Format: imagefmt.WebP, Bands: 3, BytesPerSample: 1}
	if len(src) >= 30 && string(src[12:16]) == "VP8X" {
		if binary.LittleEndian.Uint32(src[16:]) < 10 {
			return Header{}, errors.New("WebP's VP8X chunk is too short")
		}
		le24 := func(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 }
		h.Width, h.Height = 1+le24(src[24:]), 1+le24(src[27:])
		if src[20]&0x10 != 0 { // the alpha flag
			h.Bands, h.Alpha = 4, true
		}
	} else {
		c, err := webp.DecodeConfig(bytes.NewReader(src))
		if err != nil {
			return Header{}, err
		}
		h.Width, h.Height = c.Width, c.Height
		if c.ColorModel == color.NYCbCrAModel {
			h.Bands, h.Alpha = 4, true
		}
	}
	h.Frames = max(webpFramesBySize(src), webpFramesAsDemuxed(src), 1)
	return h, nil
}

// webpFramesBySize counts the ANMF chunks, each skipped by its size.
func webpFramesBySize(src []byte) int {
	n := 0
	for p := 12; p+8 <= len(src); {
		size := int(binary.LittleEndian.Uint32(src[p+4:]))
		if string(src[p:p+4]) == "ANMF" {
			n++
		}
		if size < 0 || size > len(src) {
			break
		}
		p += 8 + size + size&1
	}
	return n
}

// webpFramesAsDemuxed counts the frames as libwebp's demuxer (which
// libvips reads a WebP through) finds them: after an ANMF's 16-byte
// header, its first ALPH and first VP8 or VP8L sub-chunks, and the next
// chunk read from where those end, not from the end the ANMF's size
// declares (StoreFrame, ParseAnimationFrame). FuzzLookAgainstLibvips
// found a file whose second frame only that reading sees.
func webpFramesAsDemuxed(src []byte) int {
	n := 0
	for p := 12; p+8 <= len(src); {
		size := int(binary.LittleEndian.Uint32(src[p+4:]))
		padded := size + size&1
		if size < 0 || string(src[p:p+4]) != "ANMF" {
			if size < 0 || padded > len(src)-p-8 {
				break
			}
			p += 8 + padded
			continue
		}
		if padded < 16 {
			break
		}
		q, alpha, image := p+8+16, false, false
		for q+8 <= len(src) {
			sub, subSize := string(src[q:q+4]), int(binary.LittleEndian.Uint32(src[q+4:]))
			switch {
			case sub == "ALPH" && !alpha:
				alpha = true
			case (sub == "VP8 " || sub == "VP8L") && !image:
				image = true
			default:
				subSize = -1
			}
			if subSize < 0 {
				break
			}
			q += 8 + min(subSize+subSize&1, len(src)-q-8)
		}
		if alpha || image {
			n++
		}
		p = q
	}
	return n
}
