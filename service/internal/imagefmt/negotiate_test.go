package imagefmt

import "testing"

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct {
		accept        string
		opaque, alpha Format
		animated      bool
	}{
		{"", JPEG, PNG, false},
		{"*/*", JPEG, PNG, false},
		{"image/*", JPEG, PNG, false},
		// Browsers: Chrome, Firefox, Safari 17 (what they send for <img>),
		// and an older one without AVIF.
		{"image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", AVIF, AVIF, false},
		{"image/avif,image/webp,*/*", AVIF, AVIF, false},
		{"image/webp,image/avif,image/jxl,image/heic,image/heic-sequence,video/*;q=0.8,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5", AVIF, AVIF, false},
		{"image/webp,image/apng,image/*,*/*;q=0.8", WebP, WebP, false},
		{"IMAGE/WEBP", WebP, WebP, false},
		{"image/avif;q=0.5,image/webp", WebP, WebP, false},
		{"image/avif;q=0,*/*", JPEG, PNG, false},
		// q-values: a client that prefers JPEG gets it; q=0 refuses.
		{"image/webp;q=0.1, image/jpeg", JPEG, WebP, false},
		{"image/webp;q=0, */*", JPEG, PNG, false},
		{"image/jpeg;q=0, */*", PNG, PNG, false},
		{"image/png;q=0, image/jpeg", JPEG, JPEG, false},
		{"image/*;q=0", JPEG, PNG, false},           // nothing allowed: the fallback
		{"text/html", JPEG, PNG, false},             // nothing allowed: the fallback
		{"image/webp;q=abc, */*", JPEG, PNG, false}, // a bad q-value drops its element
		{"image/webp;level=1;q=0.5", WebP, WebP, false},
		{"*/webp", JPEG, PNG, false}, // not a media range
		{"image/webp;Q=0.9,image/png;q=1", PNG, PNG, false},
		// With animated, a format that animates wins when the header allows
		// one; otherwise the still choice stands (the first frame).
		{"image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", WebP, WebP, true},
		{"image/avif,image/jpeg", AVIF, AVIF, true},
		{"*/*", JPEG, PNG, true},
		{"", JPEG, PNG, true},
		{"image/webp;q=0.1,image/jpeg", WebP, WebP, true},
	} {
		got := Negotiate(tc.accept, tc.animated)
		if got.Opaque != tc.opaque || got.Alpha != tc.alpha {
			t.Errorf("Accept %q (animated %v): %+v, want opaque %s alpha %s", tc.accept, tc.animated, got, tc.opaque, tc.alpha)
		}
	}
}
