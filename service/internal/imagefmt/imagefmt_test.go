package imagefmt

import (
	"slices"
	"testing"
)

func TestSniff(t *testing.T) {
	for in, want := range map[string]Format{
		"\xff\xd8\xff\xe0": JPEG, "\x89PNG\r\n\x1a\nxxxx": PNG, "RIFF\x00\x00\x00\x00WEBPVP8 ": WebP,
		"GIF89a": GIF, "GIF87a": GIF, "": "", "\xff\xd8": "", "<svg": "", "%PDF-1.7": "", "II*\x00": "", "BM": "",
		"\x00\x00\x00\x1cftypheic": "", "\x00\x00\x00\x1cftypavif": "", "RIFF\x00\x00\x00\x00WAVE": "",
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
	if got := Inputs(); !slices.Equal(got, []Format{PNG, JPEG, WebP, GIF}) {
		t.Errorf("inputs %v", got)
	}
	if got := InputNames(); got != "PNG, JPEG, WebP or GIF" {
		t.Errorf("input names %q", got)
	}
	for _, s := range table {
		if s.ContentType == "" || s.Name == "" || s.Magic == nil || !(s.Input || s.Output) {
			t.Errorf("incomplete row %+v", s)
		}
		if got, ok := Lookup(s.Format); !ok || got.Format != s.Format || s.Format.ContentType() != s.ContentType {
			t.Errorf("lookup %s", s.Format)
		}
	}
	if _, ok := Lookup("bmp"); ok || Format("bmp").ContentType() != "" {
		t.Error("unknown format found")
	}
}

// Identify knows output-only formats too; Sniff does not take them as input.
func TestIdentify(t *testing.T) {
	for in, want := range map[string]Format{
		"\x00\x00\x00\x1cftypavif": AVIF, "\x00\x00\x00\x20ftypavis": AVIF, "\x00\x00\x00\x1cftypheic": "",
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
