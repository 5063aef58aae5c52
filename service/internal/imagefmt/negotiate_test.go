package imagefmt

import "testing"

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct {
		accept        string
		opaque, alpha Format
	}{
		{"", JPEG, PNG},
		{"*/*", JPEG, PNG},
		{"image/*", JPEG, PNG},
		// Browsers: Chrome, Firefox, Safari 17 (what they send for <img>).
		{"image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", WebP, WebP},
		{"image/avif,image/webp,*/*", WebP, WebP},
		{"image/webp,image/avif,image/jxl,image/heic,image/heic-sequence,video/*;q=0.8,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5", WebP, WebP},
		{"IMAGE/WEBP", WebP, WebP},
		// q-values: a client that prefers JPEG gets it; q=0 refuses.
		{"image/webp;q=0.1, image/jpeg", JPEG, WebP},
		{"image/webp;q=0, */*", JPEG, PNG},
		{"image/jpeg;q=0, */*", PNG, PNG},
		{"image/png;q=0, image/jpeg", JPEG, JPEG},
		{"image/*;q=0", JPEG, PNG},           // nothing allowed: the fallback
		{"text/html", JPEG, PNG},             // nothing allowed: the fallback
		{"image/webp;q=abc, */*", JPEG, PNG}, // a bad q-value drops its element
		{"image/webp;level=1;q=0.5", WebP, WebP},
		{"*/webp", JPEG, PNG}, // not a media range
		{"image/webp;Q=0.9,image/png;q=1", PNG, PNG},
	} {
		got := Negotiate(tc.accept)
		if got.Opaque != tc.opaque || got.Alpha != tc.alpha {
			t.Errorf("Accept %q: %+v, want opaque %s alpha %s", tc.accept, got, tc.opaque, tc.alpha)
		}
	}
}
