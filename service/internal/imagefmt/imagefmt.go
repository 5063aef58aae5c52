// Package imagefmt is thumbd's table of image formats: one row per format
// with its name, media type, how its bytes are recognised, whether thumbd
// reads it, writes it, and its default quality. The query parser, the
// sniffer, the engine's exporters and the OpenAPI test all read this table,
// so a new output format is one row here plus its libvips exporter.
package imagefmt

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
)

// Format is a format's name as the API spells it (`format=webp`).
type Format string

const (
	// Auto is format=auto: the best format the Accept header allows.
	Auto Format = "auto"
	// Source is the source's own format when thumbd writes it, else JPEG:
	// imgproxy's default output (the imgproxy endpoint), resolved once the
	// source is sniffed (thumbjob.Options.FromSource), before the job runs.
	Source Format = "source"

	PNG  Format = "png"
	JPEG Format = "jpeg"
	WebP Format = "webp"
	AVIF Format = "avif"
	GIF  Format = "gif"
	HEIC Format = "heic"
	TIFF Format = "tiff"
	JXL  Format = "jxl"
	BMP  Format = "bmp"
	ICO  Format = "ico"

	// The video codecs thumbd decodes a frame of (issue 47): a video
	// source's format is its stream's codec, whatever its container
	// (MP4, MOV, WebM, Matroska), so that THUMBD_INPUTS decides by what
	// reaches a decoder.
	H264 Format = "h264"
	HEVC Format = "hevc"
	VP8  Format = "vp8"
	VP9  Format = "vp9"
	AV1  Format = "av1"
	// Video is a video container whose header could not be read, or
	// whose codec thumbd does not decode: never accepted, it names what
	// the bytes are in the refusal.
	Video Format = "video"
)

// Spec is one row of the table. Its JSON form is what `thumbd formats
// -json` prints for the bench and the Node twin.
type Spec struct {
	Format      Format `json:"format"`
	Name        string `json:"name"` // as people write it: "JPEG", "WebP"
	ContentType string `json:"content_type"`
	// Input: thumbd accepts the format as a source (decided from Magic);
	// every other format is refused before libvips sees it.
	Input bool `json:"input"`
	// Output: thumbd writes the format.
	Output bool `json:"output"`
	// Quality is the default for `q`; 0 when the encoder takes no quality.
	Quality int `json:"quality"`
	// Alpha: the output keeps transparency (else it is flattened on white).
	Alpha bool `json:"alpha"`
	// Animated: the output can hold every frame of an animation.
	Animated bool `json:"animated"`
	// Auto ranks the format for format=auto when the Accept header allows
	// it as much as another: higher wins; 0 never chosen.
	Auto int `json:"auto"`
	// Listed: format=auto chooses it only when Accept names it exactly
	// ("image/webp"); a wildcard says nothing about newer formats, and
	// every browser sends one.
	Listed bool `json:"listed"`
	// Video: a video codec (or Video), sniffed by its container in
	// memcost's look (service/internal/video), never by Magic.
	Video bool `json:"video,omitempty"`
	// Magic reports whether bytes start like this format.
	Magic func(b []byte) bool `json:"-"`
}

// Table is every row, in the table's order.
func Table() []Spec { return append([]Spec(nil), table[:]...) } // a copy: the table is fixed

// table is fixed at compile time; its order is the order formats are
// listed in (errors, docs).
var table = [...]Spec{
	{Format: PNG, Name: "PNG", ContentType: "image/png", Input: true, Output: true, Alpha: true, Auto: 1, Magic: prefix("\x89PNG\r\n\x1a\n")},
	{Format: JPEG, Name: "JPEG", ContentType: "image/jpeg", Input: true, Output: true, Quality: 80, Auto: 2, Magic: prefix("\xFF\xD8\xFF")},
	{Format: WebP, Name: "WebP", ContentType: "image/webp", Input: true, Output: true, Quality: 80, Alpha: true, Animated: true, Auto: 3, Listed: true, Magic: isWebP},
	// AVIF comes before HEIC: an AVIF's ftyp lists mif1 too.
	{Format: AVIF, Name: "AVIF", ContentType: "image/avif", Input: true, Output: true, Quality: 58, Alpha: true, Auto: 4, Listed: true, Magic: isAVIF},
	{Format: GIF, Name: "GIF", ContentType: "image/gif", Input: true, Magic: isGIF},
	{Format: HEIC, Name: "HEIC", ContentType: "image/heic", Input: true, Magic: isHEIC},
	{Format: TIFF, Name: "TIFF", ContentType: "image/tiff", Input: true, Magic: isTIFF},
	// JPEG XL is read; whether thumbd writes it is decided with its encoder.
	// JPEG XL is read, not written: libjxl's encoder would have added
	// 3.6 MB to the scratch image, past its budget (docs/adr/0007-input-formats.md).
	{Format: JXL, Name: "JPEG XL", ContentType: "image/jxl", Input: true, Magic: isJXL},
	{Format: BMP, Name: "BMP", ContentType: "image/bmp", Input: true, Magic: isBMP},
	{Format: ICO, Name: "ICO", ContentType: "image/x-icon", Input: true, Magic: isICO},
	// Video sources: their media type is their container's (an origin is
	// sent video/* in its Accept header).
	{Format: H264, Name: "H.264", ContentType: "video/*", Input: true, Video: true, Magic: never},
	{Format: HEVC, Name: "HEVC", ContentType: "video/*", Input: true, Video: true, Magic: never},
	{Format: VP8, Name: "VP8", ContentType: "video/*", Input: true, Video: true, Magic: never},
	{Format: VP9, Name: "VP9", ContentType: "video/*", Input: true, Video: true, Magic: never},
	{Format: AV1, Name: "AV1", ContentType: "video/*", Input: true, Video: true, Magic: never},
	{Format: Video, Name: "video", ContentType: "video/*", Video: true, Magic: never},
}

// never is a video row's Magic: the container is the look's to sniff.
func never([]byte) bool { return false }

func prefix(p string) func([]byte) bool {
	return func(b []byte) bool { return bytes.HasPrefix(b, []byte(p)) }
}

func isWebP(b []byte) bool {
	return len(b) >= 12 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WEBP"))
}

// ftypBrands returns the brands of an ISO BMFF file's first box when it
// is ftyp: the major brand, then the compatible ones (as far as the box
// and the bytes go).
func ftypBrands(b []byte) []string {
	if len(b) < 12 || string(b[4:8]) != "ftyp" {
		return nil
	}
	end := min(uint64(binary.BigEndian.Uint32(b)), uint64(len(b)))
	brands := []string{string(b[8:12])}
	for p := uint64(16); p+4 <= end; p += 4 {
		brands = append(brands, string(b[p:p+4]))
	}
	return brands
}

// isAVIF: an ISO BMFF file whose brands name AVIF (an image or a
// sequence), major or compatible.
func isAVIF(b []byte) bool {
	brands := ftypBrands(b)
	return slices.Contains(brands, "avif") || slices.Contains(brands, "avis")
}

// heifBrands are the HEIF brands of HEVC images and sequences (heic, heix:
// 8- and 10-bit; hevc, hevx: sequences; heim, heis, hevm, hevs: multilayer
// and scalable) and the generic image (mif1) and sequence (msf1) brands.
var heifBrands = []string{"heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs", "mif1", "msf1"}

// isHEIC: an ISO BMFF file whose brands are HEIF's and not AVIF's (an
// AVIF lists mif1 too).
func isHEIC(b []byte) bool {
	brands := ftypBrands(b)
	return !isAVIF(b) && slices.ContainsFunc(brands, func(s string) bool { return slices.Contains(heifBrands, s) })
}

// isTIFF: classic TIFF (42) and BigTIFF (43), either byte order.
func isTIFF(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	switch string(b[:4]) {
	case "II*\x00", "MM\x00*", "II+\x00", "MM\x00+":
		return true
	}
	return false
}

// JXLContainer is the signature box a JPEG XL container starts with.
const JXLContainer = "\x00\x00\x00\x0cJXL \r\n\x87\n"

// isJXL: a bare codestream (FF 0A) or the container's signature box.
func isJXL(b []byte) bool {
	return bytes.HasPrefix(b, []byte("\xFF\x0A")) || bytes.HasPrefix(b, []byte(JXLContainer))
}

// isBMP: "BM" and a DIB header size that some BMP version uses (OS/2's
// 12 and 16 to 64, Windows' 40, 52, 56, 108 and 124): two letters alone
// start many files.
func isBMP(b []byte) bool {
	if len(b) < 18 || string(b[:2]) != "BM" {
		return false
	}
	switch binary.LittleEndian.Uint32(b[14:]) {
	case 12, 16, 40, 52, 56, 64, 108, 124:
		return true
	}
	return false
}

// isICO: the icon directory's header (reserved 0, type 1, at least one
// image) and its first entry (reserved byte 0, its data after the
// directory).
func isICO(b []byte) bool {
	if len(b) < 22 || string(b[:4]) != "\x00\x00\x01\x00" {
		return false
	}
	n := uint32(binary.LittleEndian.Uint16(b[4:]))
	e := b[6:22]
	return n > 0 && e[3] == 0 && binary.LittleEndian.Uint32(e[8:]) > 0 && binary.LittleEndian.Uint32(e[12:]) >= 6+16*n
}

func isGIF(b []byte) bool {
	return bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a"))
}

// Lookup returns the row of a format name.
func Lookup(f Format) (Spec, bool) {
	for _, s := range table {
		if s.Format == f {
			return s, true
		}
	}
	return Spec{}, false
}

// Sniff returns the input format buf starts with; ok is false when buf is
// no format thumbd reads (the caller answers 415).
func Sniff(buf []byte) (Spec, bool) {
	if s, ok := Identify(buf); ok && s.Input {
		return s, true
	}
	return Spec{}, false
}

// Outputs lists the formats thumbd writes, in table order.
func Outputs() []Format { return list(func(s Spec) bool { return s.Output }) }

// Inputs lists the formats thumbd reads, in table order: the images',
// then the video codecs'.
func Inputs() []Format { return list(func(s Spec) bool { return s.Input }) }

// Images lists the image formats thumbd reads (Inputs without the video
// codecs): what a source answered as it is may be.
func Images() []Format { return list(func(s Spec) bool { return s.Input && !s.Video }) }

func list(keep func(Spec) bool) []Format {
	var out []Format
	for _, s := range table {
		if keep(s) {
			out = append(out, s.Format)
		}
	}
	return out
}

// InputNames lists the readable image formats for a person: "PNG, JPEG,
// ... or ICO".
func InputNames() string { return names(func(s Spec) bool { return s.Input && !s.Video }) }

// VideoNames lists the video codecs thumbd decodes: "H.264, HEVC, ... or AV1".
func VideoNames() string { return names(func(s Spec) bool { return s.Input && s.Video }) }

func names(keep func(Spec) bool) string {
	var names []string
	for _, s := range table {
		if keep(s) {
			names = append(names, s.Name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ContentType is the format's media type ("" for a name not in the table).
func (f Format) ContentType() string {
	s, _ := Lookup(f)
	return s.ContentType
}

// GIFScreen reads a GIF's logical screen size (bytes 6-9, little-endian):
// what the header declares, whatever the frames say.
func GIFScreen(buf []byte) (w, h int, ok bool) {
	if !isGIF(buf) || len(buf) < 10 {
		return 0, 0, false
	}
	return int(binary.LittleEndian.Uint16(buf[6:])), int(binary.LittleEndian.Uint16(buf[8:])), true
}

// Identify returns the format of any row, input or output, that buf starts
// with: what a thumbnail's bytes are.
func Identify(buf []byte) (Spec, bool) {
	for _, s := range table {
		if s.Magic(buf) {
			return s, true
		}
	}
	return Spec{}, false
}
