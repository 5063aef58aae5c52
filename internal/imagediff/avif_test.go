package imagediff

import "testing"

func TestAVIFSize(t *testing.T) {
	ispe := "\x00\x00\x00\x14ispe\x00\x00\x00\x00\x00\x00\x01\x40\x00\x00\x00\xf0"
	if w, h, ok := AVIFSize([]byte("\x00\x00\x00\x1cftypavif" + ispe)); !ok || w != 320 || h != 240 {
		t.Errorf("got %dx%d %v", w, h, ok)
	}
	for _, b := range []string{"\x00\x00\x00\x1cftypavif", ispe[:12]} {
		if _, _, ok := AVIFSize([]byte(b)); ok {
			t.Errorf("%q: a size from no ispe box", b)
		}
	}
}

func TestVipsToPNGRefusesWhatIsNotAVIF(t *testing.T) {
	if _, err := VipsToPNG([]byte("not an image")); err == nil {
		t.Error("no error")
	}
}
