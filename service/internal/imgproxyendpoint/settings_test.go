package imgproxyendpoint

import "testing"

// No warning where nothing is open: 8 bytes and more, a size without keys
// (nothing signed), the switch where thumbd's URLs are unsigned too, or
// imgproxy off. (The warnings themselves are read from a real process's
// log by package main's TestImgproxyWarnsAtStartUp.)
func TestNoWarningWhereNothingIsOpen(t *testing.T) {
	for _, c := range []struct {
		s      Settings
		signed bool
	}{
		{Settings{On: true, Keys: [][]byte{{1}}, SignatureSize: 8}, false},
		{Settings{On: true, Keys: [][]byte{{1}}, SignatureSize: 32}, false},
		{Settings{On: true, SignatureSize: 1}, false},
		{Settings{On: true, Unsigned: true, SignatureSize: 32}, false},
		{Settings{Unsigned: true, SignatureSize: 1, Keys: [][]byte{{1}}}, true},
	} {
		if w := c.s.Warnings(c.signed); len(w) != 0 {
			t.Errorf("%+v, signed %t: %q", c.s, c.signed, w)
		}
	}
	// The test can fail: the same settings, open, warn.
	if w := (Settings{On: true, Keys: [][]byte{{1}}, SignatureSize: 7}).Warnings(false); len(w) != 1 {
		t.Errorf("a 7-byte signature: %q", w)
	}
	if w := (Settings{On: true, Unsigned: true, SignatureSize: 32}).Warnings(true); len(w) != 1 {
		t.Errorf("unsigned beside signing: %q", w)
	}
}
