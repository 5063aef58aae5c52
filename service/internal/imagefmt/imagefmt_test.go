package imagefmt

import (
	"slices"
	"strings"
	"testing"
)

func TestSniff(t *testing.T) {
	for in, want := range map[string]Format{
		"\xff\xd8\xff\xe0": JPEG, "\x89PNG\r\n\x1a\nxxxx": PNG, "RIFF\x00\x00\x00\x00WEBPVP8 ": WebP,
		"GIF89a": GIF, "GIF87a": GIF, "": "", "\xff\xd8": "", "<svg": "", "%PDF-1.7": "", "RIFF\x00\x00\x00\x00WAVE": "",
		"8BPS\x00\x01": "", "P6\n1 1\n255\n": "",
		// ISO BMFF: decided by the brands, AVIF's before HEIF's.
		"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic": HEIC, "\x00\x00\x00\x10ftypmif1\x00\x00\x00\x00": HEIC,
		"\x00\x00\x00\x14ftypmsf1\x00\x00\x00\x00hevc": HEIC, "\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf": AVIF,
		"\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00avifmiaf": AVIF, "\x00\x00\x00\x14ftypavis\x00\x00\x00\x00msf1": AVIF,
		"\x00\x00\x00\x14ftypisom\x00\x00\x00\x00mp41": "", "\x00\x00\x00\x14ftypcrx \x00\x00\x00\x00heic": HEIC,
		// a brand past the ftyp box's own size is not one of its brands
		"\x00\x00\x00\x10ftypisom\x00\x00\x00\x00heic": "",
		"II*\x00\x08\x00\x00\x00":                      TIFF, "MM\x00*\x00\x00\x00\x08": TIFF, "II+\x00\x08\x00\x00\x00": TIFF, "MM\x00+": TIFF, "II*": "", "MM*\x00": "",
		"\xFF\x0A\xFA\x7F": JXL, "\x00\x00\x00\x0cJXL \r\n\x87\n\x00": JXL, "\x00\x00\x00\x0cJXL \r\n": "", "\xFF\x0B": "",
		"BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00\x00\x00": BMP, "BM\x3a\x00\x00\x00\x00\x00\x00\x00\x1a\x00\x00\x00\x0c\x00\x00\x00": BMP,
		"BM": "", "BMP is a format\x00\x00\x00\x00": "",
		"\x00\x00\x01\x00\x01\x00\x10\x10\x00\x00\x01\x00\x20\x00\x68\x04\x00\x00\x16\x00\x00\x00": ICO,
		"\x00\x00\x01\x00\x00\x00\x10\x10\x00\x00\x01\x00\x20\x00\x68\x04\x00\x00\x16\x00\x00\x00": "", // no image
		"\x00\x00\x01\x00\x01\x00\x10\x10\x00\x07\x01\x00\x20\x00\x68\x04\x00\x00\x16\x00\x00\x00": "", // reserved byte set
		"\x00\x00\x01\x00\x01\x00\x10\x10\x00\x00\x01\x00\x20\x00\x68\x04\x00\x00\x06\x00\x00\x00": "", // data inside the directory
		"\x00\x00\x02\x00\x01\x00\x10\x10\x00\x00\x01\x00\x20\x00\x68\x04\x00\x00\x16\x00\x00\x00": "", // a cursor
	} {
		got, ok := Sniff([]byte(in))
		if got.Format != want || ok != (want != "") {
			t.Errorf("Sniff(%q) = %q %v, want %q", in, got.Format, ok, want)
		}
	}
}

func TestTable(t *testing.T) {
	if got := Outputs(); !slices.Equal(got, []Format{PNG, JPEG, WebP, AVIF}) {
		t.Errorf("outputs %v", got)
	}
	if got := Inputs(); !slices.Equal(got, []Format{PNG, JPEG, WebP, AVIF, GIF, HEIC, TIFF, JXL, BMP, ICO, H264, HEVC, VP8, VP9, AV1}) {
		t.Errorf("inputs %v", got)
	}
	if got := Images(); !slices.Equal(got, []Format{PNG, JPEG, WebP, AVIF, GIF, HEIC, TIFF, JXL, BMP, ICO}) {
		t.Errorf("images %v", got)
	}
	if got := VideoNames(); got != "H.264, HEVC, VP8, VP9 or AV1" {
		t.Errorf("video names %q", got)
	}
	if got := InputNames(); got != "PNG, JPEG, WebP, AVIF, GIF, HEIC, TIFF, JPEG XL, BMP or ICO" {
		t.Errorf("input names %q", got)
	}
	for _, s := range table {
		if s.ContentType == "" || s.Name == "" || s.Magic == nil || !(s.Input || s.Output || s.Format == Video) {
			t.Errorf("incomplete row %+v", s)
		}
		if got, ok := Lookup(s.Format); !ok || got.Format != s.Format || s.Format.ContentType() != s.ContentType {
			t.Errorf("lookup %s", s.Format)
		}
	}
	if _, ok := Lookup("svg"); ok || Format("svg").ContentType() != "" {
		t.Error("unknown format found")
	}
}

// Identify knows every row, input or output.
func TestIdentify(t *testing.T) {
	for in, want := range map[string]Format{
		"\x00\x00\x00\x1cftypavif": AVIF, "\x00\x00\x00\x20ftypavis": AVIF, "\x00\x00\x00\x1cftypheic": HEIC, "<svg": "",
		"\xff\xd8\xff\xe0": JPEG, "GIF89a": GIF, "ftypavif": "",
	} {
		got, ok := Identify([]byte(in))
		if got.Format != want || ok != (want != "") {
			t.Errorf("Identify(%q) = %q %v, want %q", in, got.Format, ok, want)
		}
	}
}

func TestGIFScreen(t *testing.T) {
	if w, h, ok := GIFScreen([]byte("GIF89a\x10\x00\x20\x00")); !ok || w != 16 || h != 32 {
		t.Errorf("got %d %d %v", w, h, ok)
	}
	for _, b := range []string{"GIF89a\x10\x00", "\x89PNG\r\n\x1a\n\x10\x00"} {
		if _, _, ok := GIFScreen([]byte(b)); ok {
			t.Errorf("%q read as a GIF screen", b)
		}
	}
}

func TestParseInputs(t *testing.T) {
	for in, want := range map[string]string{"": "", " ": "", "jpeg": "jpeg", "JPEG, heic ,tiff": "jpeg,heic,tiff"} {
		got, err := ParseInputs(in)
		if err != nil || FormatList(got) != want {
			t.Errorf("ParseInputs(%q) = %v, %v; want %q", in, got, err, want)
		}
	}
	for in, wantErr := range map[string]string{"jpeg,svg": `"svg" is not an input format`, "jpeg,,png": `"" is not`, "png,png": "twice", "auto": "not an input"} {
		if _, err := ParseInputs(in); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParseInputs(%q): %v, want an error with %q", in, err, wantErr)
		}
	}
}
