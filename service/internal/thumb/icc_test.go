package thumb

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf16"

	"github.com/davidbyttow/govips/v2/vips"
	"github.com/thumbd/thumbd/internal/heiftest"
)

func utf16BE(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u>>8), byte(u))
	}
	return b
}

// isSRGB tells sRGB profiles (libvips' own, as a JPEG embeds it: a v2
// "desc"; a v4 "mluc" naming sRGB) from others (Display P3), and reads any
// cut or garbled profile as not sRGB without a panic.
func TestIsSRGB(t *testing.T) {
	needTools(t, "vips")
	dir := t.TempDir()
	large, err := filepath.Abs(filepath.Join("testdata", "sources", "large.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, "vips", "copy", large, "icc.jpg[profile=srgb]")
	b, err := os.ReadFile(filepath.Join(dir, "icc.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := vips.NewImageFromBuffer(b)
	if err != nil {
		t.Fatal(err)
	}
	srgb := img.GetICCProfile()
	img.Close()
	p3 := heiftest.DisplayP3()
	v4srgb := bytes.Replace(p3, utf16BE("Display P3"), utf16BE("sRGB curve"), 1)
	if bytes.Equal(v4srgb, p3) {
		t.Fatal("the P3 profile's description is not UTF-16 \"Display P3\"")
	}
	for name, c := range map[string]struct {
		icc  []byte
		want bool
	}{
		"libvips' sRGB (v2 desc)": {srgb, true},
		"Display P3 (v4 mluc)":    {p3, false},
		"sRGB in a v4 mluc":       {v4srgb, true},
		"empty":                   {nil, false},
	} {
		if got := isSRGB(c.icc); got != c.want {
			t.Errorf("%s (%d bytes): isSRGB %v, want %v", name, len(c.icc), got, c.want)
		}
	}
	for _, icc := range [][]byte{srgb, p3} {
		for n := range len(icc) {
			isSRGB(icc[:n]) // cut anywhere: no panic
		}
		bad := bytes.Clone(icc)
		for i := 128; i < len(bad); i += 7 {
			bad[i] = 0xff
		}
		isSRGB(bad)
	}
}
