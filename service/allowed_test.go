package main

import (
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
		"THUMBD_ALLOWED_WIDTHS=640,abc":     "THUMBD_ALLOWED_WIDTHS",
		"THUMBD_ALLOWED_WIDTHS=0,640":       "THUMBD_ALLOWED_WIDTHS",
		"THUMBD_ALLOWED_WIDTHS=640,5000":    "THUMBD_ALLOWED_WIDTHS: 5000 is over the max side 4096",
		"THUMBD_ALLOWED_QUALITIES=75,101":   "THUMBD_ALLOWED_QUALITIES",
		"THUMBD_ALLOWED_QUALITIES=75;80":    "THUMBD_ALLOWED_QUALITIES",
		"THUMBD_ALLOWED_WIDTHS=3840,16,640": "",
		"THUMBD_ALLOWED_QUALITIES=75":       "",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, err := loadConfig(nil, envOf(map[string]string{k: v, "THUMBD_MEMORY_LIMIT": "1073741824"}), io.Discard)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want an error with %q", env, err, want)
		}
	}
	c, err := loadConfig([]string{"-allowed-widths", "640, 16", "-allowed-qualities", "75"}, envOf(map[string]string{"THUMBD_MEMORY_LIMIT": "1073741824"}), io.Discard)
	if err != nil || params.FormatInts(c.Allowed.Sides) != "16,640" || params.FormatInts(c.Allowed.Qualities) != "75" {
		t.Errorf("flags: %v %v", c.Allowed, err)
	}
}
