package main

import (
	"image"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/params"
)

// The bounded unsigned mode end to end: the settings reach the parse
// stage, the sentence names the nearest allowed values, and a signed URL
// (GET, or a signed upload next to unsigned ones) is not bound.
func TestAllowedListsOverHTTP(t *testing.T) {
	src := encodeJPEG(t, scene(200, 150), 90)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.jpg"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	serve := func(env map[string]string) string {
		t.Helper()
		env["THUMBD_MEMORY_LIMIT"] = "1073741824"
		cfg, err := loadConfig(nil, envOf(env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		cfg.SourceDir, cfg.ClientHints = dir, true
		srv, _ := newTestServer(t, cfg)
		return srv.URL
	}
	lists := map[string]string{"THUMBD_ALLOWED_WIDTHS": "16,32,64,128,640", "THUMBD_ALLOWED_QUALITIES": "50,75"}
	base := serve(lists)
	refused := func(status int, body []byte, words ...string) {
		t.Helper()
		if status != 400 || !strings.Contains(string(body), string(apierr.BadParameter)) {
			t.Fatalf("got %d %s, want a 400 bad_parameter", status, body)
		}
		for _, w := range words {
			if !strings.Contains(string(body), w) {
				t.Errorf("%s does not say %q", body, w)
			}
		}
	}
	if status, _, body := do(t, "GET", base+"/thumbnail?src=a.jpg&w=64&q=75&format=jpeg", nil); status != 200 {
		t.Fatalf("listed: %d %s", status, body)
	}
	status, _, body := do(t, "GET", base+"/thumbnail?src=a.jpg&w=100", nil)
	refused(status, body, `\"w\"`, "width 100", "64 and 128", "THUMBD_ALLOWED_WIDTHS")
	status, _, body = do(t, "GET", base+"/thumbnail?src=a.jpg&w=64&q=80&format=jpeg", nil)
	refused(status, body, `\"q\"`, "quality 80", "75", "THUMBD_ALLOWED_QUALITIES")
	status, _, body = do(t, "GET", base+"/thumbnail?src=a.jpg&w=64&dpr=1.5", nil)
	refused(status, body, "width 96 at dpr 1.5", "64 and 128")
	status, _, body = do(t, "GET", base+"/thumbnail?src=a.jpg", nil, "Sec-CH-Width", "700")
	refused(status, body, "Sec-CH-Width", "the largest allowed size is 640")
	status, _, body = postThumb(t, base, "?w=65", src)
	refused(status, body, "64 and 128")

	// Off: the same requests are served.
	off := serve(map[string]string{})
	for _, q := range []string{"w=100", "w=64&q=80&format=jpeg", "w=64&dpr=1.5"} {
		if status, _, body := do(t, "GET", off+"/thumbnail?src=a.jpg&"+q, nil); status != 200 {
			t.Errorf("off, %s: %d %s", q, status, body)
		}
	}

	// Signed: a GET the signer chose is served off the lists; an unsigned
	// upload next to it (THUMBD_UNSIGNED_UPLOADS) is bound.
	key := hexKey(t, testKeyHex)
	lists["THUMBD_SIGNING_KEYS"], lists["THUMBD_UNSIGNED_UPLOADS"] = testKeyHex, "true"
	signed := serve(lists)
	if status, _, body := do(t, "GET", signed+signedPath(t, key, "src=a.jpg&w=100&q=80&format=jpeg"), nil); status != 200 {
		t.Errorf("signed off the lists: %d %s", status, body)
	}
	status, _, body = postThumb(t, signed, "?w=100", src)
	refused(status, body, "64 and 128")
	if status, _, body := do(t, "POST", signed+signedPath(t, key, "w=100"), strings.NewReader(string(src))); status != 200 {
		t.Errorf("signed upload off the list: %d %s", status, body)
	}
}

func TestAllowedSettings(t *testing.T) {
	for env, want := range map[string]string{
		"THUMBD_ALLOWED_WIDTHS=640,abc":                          "THUMBD_ALLOWED_WIDTHS",
		"THUMBD_ALLOWED_WIDTHS=0,640":                            "THUMBD_ALLOWED_WIDTHS",
		"THUMBD_ALLOWED_WIDTHS=640,5000":                         "THUMBD_ALLOWED_WIDTHS: 5000 is over the max side 4096",
		"THUMBD_ALLOWED_QUALITIES=75,101":                        "THUMBD_ALLOWED_QUALITIES",
		"THUMBD_ALLOWED_QUALITIES=75;80":                         "THUMBD_ALLOWED_QUALITIES",
		"THUMBD_ALLOWED_WIDTHS=3840,16,640":                      "",
		"THUMBD_ALLOWED_QUALITIES=75":                            "",
		"THUMBD_ALLOWED_TRANSFORMS=blur=5;pad=8,0,8,0;bg=ffffff": "",
		"THUMBD_ALLOWED_TRANSFORMS=blur=500":                     "THUMBD_ALLOWED_TRANSFORMS",
		"THUMBD_ALLOWED_TRANSFORMS=w=640":                        "THUMBD_ALLOWED_TRANSFORMS",
		"THUMBD_ALLOWED_TRANSFORMS=wm=0.5":                       "lists wm, which is refused here",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, err := loadConfig(nil, envOf(map[string]string{k: v, "THUMBD_MEMORY_LIMIT": "1073741824"}), io.Discard)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want an error with %q", env, err, want)
		}
	}
	c, err := loadConfig([]string{"-allowed-widths", "640, 16", "-allowed-qualities", "75", "-allowed-transforms", "blur=5; fx=0.5"}, envOf(map[string]string{"THUMBD_MEMORY_LIMIT": "1073741824"}), io.Discard)
	if err != nil || params.FormatInts(c.Allowed.Sides) != "16,640" || params.FormatInts(c.Allowed.Qualities) != "75" || c.Allowed.Transforms.String() != "blur=5;fx=0.5" {
		t.Errorf("flags: %v %v", c.Allowed, err)
	}
}

// The bounded mode bounds the transforms over HTTP too: unsigned, a
// transform comes from a preset or is refused naming the parameter; a
// signed URL takes any; and the answer's size, pad included, is on the
// list.
func TestAllowedTransformsOverHTTP(t *testing.T) {
	src := encodeJPEG(t, scene(200, 150), 90)
	key := hexKey(t, testKeyHex)
	base, _ := dirServer(t, map[string][]byte{"a.jpg": src}, func(c *config) {
		c.Allowed = params.Allowed{Sides: []int{16, 32, 64, 128, 640}}
		c.Presets = params.Presets{"framed": {"pad": "8", "bg": "ff0000"}, "soft": {"w": "64", "blur": "2"}, "boxed": {"fit": "inside", "extend": "true", "pad": "8"}}
		c.SigningKeys = [][]byte{key}
		c.UnsignedUploads = true
	})
	refused := func(status int, body []byte, words ...string) {
		t.Helper()
		if status != 400 || !strings.Contains(string(body), string(apierr.BadParameter)) {
			t.Errorf("got %d (%d bytes), want a 400 bad_parameter", status, len(body))
			return
		}
		for _, w := range words {
			if !strings.Contains(string(body), w) {
				t.Errorf("%s does not say %q", body, w)
			}
		}
	}
	status, _, body := postThumb(t, base, "?w=64&blur=5", src)
	refused(status, body, `\"blur\"`, "THUMBD_ALLOWED_TRANSFORMS")
	status, _, body = postThumb(t, base, "?w=64&pad=8", src)
	refused(status, body, `\"pad\"`, "THUMBD_ALLOWED_TRANSFORMS")
	status, _, body = postThumb(t, base, "?w=64&preset=framed", src)
	refused(status, body, "width 80", "64 and 128")
	// The preset's pad (and extend): the answer, box and pad, is on the
	// list.
	for query, want := range map[string]image.Point{"w=48&h=48&preset=framed": {64, 64}, "w=112&h=624&preset=boxed": {128, 640}} {
		status, _, body = postThumb(t, base, "?format=png&"+query, src)
		if status != 200 {
			t.Errorf("%s: %d %s", query, status, body)
		} else if img, _ := decoded(t, body); img.Bounds().Size() != want {
			t.Errorf("%s: %v, want %v", query, img.Bounds().Size(), want)
		}
	}
	status, _, body = postThumb(t, base, "?w=128&h=640&preset=boxed", src)
	refused(status, body, "width 144", "128 and 640")
	if status, _, body := postThumb(t, base, "?preset=soft", src); status != 200 {
		t.Errorf("preset blur: %d %s", status, body)
	}
	if status, _, body := do(t, "GET", base+signedPath(t, key, "src=a.jpg&w=64&blur=5&pad=8"), nil); status != 200 {
		t.Errorf("signed: %d %s", status, body)
	}
}
