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
		// Browsers: Chrome, Firefox, Safari 17 (what they send for <img>),
		// and an older one without AVIF.
		{"image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", AVIF, AVIF},
		{"image/avif,image/webp,*/*", AVIF, AVIF},
		{"image/webp,image/avif,image/jxl,image/heic,image/heic-sequence,video/*;q=0.8,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5", AVIF, AVIF},
		{"image/webp,image/apng,image/*,*/*;q=0.8", WebP, WebP},
		{"IMAGE/WEBP", WebP, WebP},
		{"image/avif;q=0.5,image/webp", WebP, WebP},
		{"image/avif;q=0,*/*", JPEG, PNG},
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
		got := Negotiate(tc.accept, false)
		if got.Opaque != tc.opaque || got.Alpha != tc.alpha {
			t.Errorf("Accept %q: %+v, want opaque %s alpha %s", tc.accept, got, tc.opaque, tc.alpha)
		}
	}
}

// With animated, a format that animates wins when the header allows one;
// otherwise the still choice stands (the thumbnail is the first frame).
func TestNegotiateAnimated(t *testing.T) {
	for _, tc := range []struct {
		accept        string
		opaque, alpha Format
	}{
		{"image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", WebP, WebP},
		{"image/avif,image/jpeg", AVIF, AVIF},
		{"*/*", JPEG, PNG},
		{"", JPEG, PNG},
		{"image/webp;q=0.1,image/jpeg", WebP, WebP},
	} {
		got := Negotiate(tc.accept, true)
		if got.Opaque != tc.opaque || got.Alpha != tc.alpha {
			t.Errorf("Accept %q: %+v, want opaque %s alpha %s", tc.accept, got, tc.opaque, tc.alpha)
		}
	}
}
