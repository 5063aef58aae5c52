package main

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/params"
)

// The transforms through the one corridor: both engine modes make the
// same bytes (the options cross to a cell in the job), presets carry
// them, and a signed URL covers them.

func TestCellsCarryTransforms(t *testing.T) {
	inproc, _ := newTestServer(t, alike(testConfig(t)))
	cells := newCellsServer(t, alike(cellsConfig(t)), "")
	jpeg := encodeJPEG(t, scene(400, 300), 85)
	for _, c := range []struct {
		query string
		src   []byte
		code  apierr.Code // "" for an image
		w, h  int
	}{
		{"?w=100&h=100&rotate=90&flip=h", jpeg, "", 100, 100},
		{"?w=120&rotate=270", jpeg, "", 120, 160},
		{"?w=100&h=100&gravity=se", jpeg, "", 100, 100},
		{"?w=1000&h=1000&fit=inside&enlarge=false", jpeg, "", 400, 300},
		{"?w=1000&h=1000&fit=cover&enlarge=false", jpeg, "", 300, 300},
		{"?w=100&h=100&fit=contain&bg=ff000080", jpeg, "", 100, 100},
		{"?w=100&h=100&fit=contain&bg=00ff00&format=jpeg", alphaPNG(t, 120, 90), "", 100, 100},
		// pad beyond the max side: the cell's answer may be larger than
		// the box.
		{"?w=4096&h=10&fit=fill&pad=0,3,0,2&format=jpeg", jpeg, "", 4101, 10},
		{"?w=500&h=500&fit=inside&enlarge=false&extend=true&gravity=sw&bg=0000ff", jpeg, "", 500, 500},
		{"?w=80&crop=100,50,200,100", jpeg, "", 80, 40},
		{"?w=80&crop=0.5,0,0.5,1&format=webp", jpeg, "", 80, 120},
		{"?w=64&trim=20", alphaPNG(t, 120, 90), "", 64, 0},
		{"?w=64&h=64&blur=3&sharpen=1&pixelate=8", jpeg, "", 64, 64},
		{"?w=64&h=64&blur=3&sharpen=1&pixelate=8&rotate=90&pad=3&bg=00000000", alphaPNG(t, 120, 90), "", 70, 70},
		{"?w=64&h=64&sharpen=10&format=jpeg&bg=ff0000", alphaPNG(t, 120, 90), "", 64, 64},
		{"?w=64&h=64&fit=inside&extend=true&gravity=ne&format=webp", alphaPNG(t, 120, 90), "", 64, 64},
		{"?w=64&h=64&trim=10,ffffff&flip=hv&format=jpeg", greyPNG(t, 40, 40), "", 64, 64},
		// A crop outside the image is a 400 whichever stage finds it: the
		// pipeline when the header shows it, the engine when only the
		// orientation tells (the header does not read it: 0,350 is inside
		// a 300x400 image on its side).
		{"?crop=400,0,10,10", jpeg, apierr.BadParameter, 0, 0},
		{"?crop=0,350,10,10", jpeg, apierr.BadParameter, 0, 0},
	} {
		s1, h1, b1 := postThumb(t, inproc.URL, c.query, c.src)
		s2, h2, b2 := postThumb(t, cells.URL, c.query, c.src)
		if s1 != s2 || h1.Get("ETag") != h2.Get("ETag") || !bytes.Equal(b1, b2) {
			t.Errorf("%q: in process %d (%d bytes), cells %d (%d bytes): %s", c.query, s1, len(b1), s2, len(b2), b2)
		}
		if c.code != "" {
			var e errorBody
			if json.Unmarshal(b1, &e) != nil || e.Code != string(c.code) || s1 != c.code.Status() {
				t.Errorf("%q: %d %s, want %s", c.query, s1, b1, c.code)
			}
			continue
		}
		if s1 != 200 {
			t.Errorf("%q: %d %s", c.query, s1, b1)
			continue
		}
		cfg, _, err := image.DecodeConfig(bytes.NewReader(b1))
		if err != nil {
			t.Fatalf("%q: %v", c.query, err)
		}
		if cfg.Width != c.w || c.h != 0 && cfg.Height != c.h {
			t.Errorf("%q: %dx%d, want %dx%d", c.query, cfg.Width, cfg.Height, c.w, c.h)
		}
	}
}

// A transform added to a signed URL is refused (403) like any other
// parameter; signed, it is taken; and its bad value is not read before
// the signature.
func TestSignedTransforms(t *testing.T) {
	key := hexKey(t, testKeyHex)
	base, _, _, _ := signedServer(t, key)
	signed := signedPath(t, key, "src=a.jpg&w=40&rotate=90&flip=v&bg=ff0000&pad=2&blur=1&crop=0,0,0.5,0.5&trim=5&enlarge=false&extend=true&gravity=n&sharpen=1&pixelate=2")
	if status, _, body := do(t, "GET", base+signed, nil); status != 200 {
		t.Fatalf("signed transforms: %d %s", status, body)
	}
	for _, extra := range []string{"rotate=180", "flip=h", "bg=00ff00", "pad=1", "extend=true", "crop=0,0,5,5", "trim=1", "blur=2", "sharpen=2", "pixelate=4", "enlarge=false", "gravity=s"} {
		p := signedPath(t, key, "src=a.jpg&w=40")
		getError(t, base+p+"&"+extra, 403, apierr.BadSignature)
	}
	getError(t, base+"/thumbnail?src=a.jpg&rotate=45", 403, apierr.SignatureMissing)

	// wm= too, with a watermark configured.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.jpg"), encodeJPEG(t, scene(120, 90), 90), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(nil, envOf(map[string]string{"THUMBD_WATERMARK": markFile(t, 8), "THUMBD_SOURCE_DIR": dir, "THUMBD_SIGNING_KEYS": testKeyHex}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := newTestServer(t, cfg)
	if status, _, body := do(t, "GET", srv.URL+signedPath(t, key, "src=a.jpg&w=40&wm=0.5,soea"), nil); status != 200 {
		t.Fatalf("signed wm=: %d %s", status, body)
	}
	getError(t, srv.URL+signedPath(t, key, "src=a.jpg&w=40")+"&wm=1", 403, apierr.BadSignature)
}

func TestTransformsInPresetsOverHTTP(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.jpg"), encodeJPEG(t, scene(200, 150), 90), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	presets, err := params.ParsePresets("turned:w=60&rotate=90&pad=2&bg=ff0000")
	if err != nil {
		t.Fatal(err)
	}
	cfg.SourceDir, cfg.Presets = dir, presets
	srv, _ := newTestServer(t, cfg)
	status, _, body := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&preset=turned", nil)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	img, err := png.Decode(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	// 200x150 turned is 150x200: 60x80 at w=60, padded by 2 in red.
	if b := img.Bounds(); b.Dx() != 64 || b.Dy() != 84 {
		t.Errorf("%v, want 64x84", b)
	}
	if r, g, b, a := img.At(0, 0).RGBA(); r>>8 != 255 || g != 0 || b != 0 || a>>8 != 255 {
		t.Errorf("the pad's corner is %d,%d,%d,%d, want red", r>>8, g>>8, b>>8, a>>8)
	}
	getError(t, srv.URL+"/thumbnail?src=a.jpg&preset=turned&rotate="+url.QueryEscape("1 80"), 400, apierr.BadParameter)
	if status, _, body := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&preset=turned&flip=x", nil); status != 400 || !strings.Contains(string(body), `\"flip\"`) {
		t.Errorf("a bad flip over a preset: %d %s", status, body)
	}
}

// Every transform is taken by both /thumbnail routes and documented for
// both in openapi.json.
func TestTransformsDocumented(t *testing.T) {
	doc := loadOpenAPI(t)
	for _, method := range []string{"get", "post"} {
		rt, _ := params.RouteOf(strings.ToUpper(method), "/thumbnail")
		documented := map[string]bool{}
		for _, p := range doc.Paths["/thumbnail"][method].Parameters {
			documented[p.Name] = true
		}
		for _, name := range []string{"enlarge", "rotate", "flip", "bg", "pad", "extend", "crop", "trim", "blur", "sharpen", "pixelate"} {
			if _, err := rt.Query(name + "=1"); err != nil {
				t.Errorf("%s /thumbnail does not take %s: %v", method, name, err)
			}
			if !documented[name] {
				t.Errorf("%s /thumbnail does not document %s", method, name)
			}
		}
	}
}

// markFile is a side x side opaque red PNG written to a file.
func markFile(t *testing.T, side int) string {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+3] = 255, 255
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mark.png")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Wrong watermark settings stop the start with a sentence naming them.
func TestWatermarkSettings(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("not an image at all"), 0o644)
	mark := markFile(t, 16)
	// A 200x200 PNG of noise: about 160 KB, over what a cell's settings
	// carry, well within the body limit.
	noise := filepath.Join(dir, "noise.png")
	n := image.NewNRGBA(image.Rect(0, 0, 200, 200))
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range n.Pix {
		n.Pix[i] = byte(rnd.Uint32())
	}
	var nb bytes.Buffer
	png.Encode(&nb, n)
	os.WriteFile(noise, nb.Bytes(), 0o644)
	if _, err := loadConfig(nil, envOf(map[string]string{"THUMBD_WATERMARK": noise}), io.Discard); err != nil || nb.Len() <= 92160 {
		t.Fatalf("the noise watermark in process (%d bytes): %v", nb.Len(), err)
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"THUMBD_WATERMARK": filepath.Join(dir, "missing.png")}, `THUMBD_WATERMARK="` + filepath.Join(dir, "missing.png") + `": no such file or directory`},
		{map[string]string{"THUMBD_WATERMARK": text}, "not a " + imagefmt.InputNames() + " image"},
		{map[string]string{"THUMBD_WATERMARK": mark, "THUMBD_MAX_BODY_BYTES": "50", "THUMBD_SOURCE_BUDGET": "50"}, "THUMBD_WATERMARK=\"" + mark + "\": more than 50 bytes"},
		{map[string]string{"THUMBD_WATERMARK": mark, "THUMBD_MAX_PIXELS": "255"}, "16x16 is more than THUMBD_MAX_PIXELS (255)"},
		{map[string]string{"THUMBD_WATERMARK": dir}, "THUMBD_WATERMARK"},
		{map[string]string{"THUMBD_WATERMARK": noise, "THUMBD_ENGINE": "cells"}, "in cells mode 92160"},
		{map[string]string{"THUMBD_WATERMARK_REQUIRED": "true"}, "THUMBD_WATERMARK names no watermark"},
		{map[string]string{"THUMBD_WATERMARK": mark, "THUMBD_WATERMARK_OPTIONS": "1,middle"}, `THUMBD_WATERMARK_OPTIONS="1,middle"`},
		{map[string]string{"THUMBD_PRESETS": "m:wm=1"}, "none is configured (THUMBD_WATERMARK)"},
	} {
		_, err := loadConfig(nil, envOf(c.env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.env, err, c.want)
		}
	}
	if _, err := loadConfig(nil, envOf(map[string]string{"THUMBD_WATERMARK": mark, "THUMBD_PRESETS": "m:wm=1"}), io.Discard); err != nil {
		t.Errorf("a good watermark: %v", err)
	}
}

// wm= puts the watermark on in both engine modes (a cell gets it in its
// settings), and a required one is on every thumbnail.
func TestWatermarkInBothModes(t *testing.T) {
	mark := markFile(t, 16)
	load := func(env map[string]string) config {
		t.Helper()
		cfg, err := loadConfig(nil, envOf(env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	white := encodePNGOf(t, 64, 64)
	redAt := func(body []byte, x, y int) bool {
		img, err := png.Decode(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r, g, b, _ := img.At(x, y).RGBA()
		return r>>8 > 240 && g>>8 < 15 && b>>8 < 15
	}
	for _, required := range []bool{false, true} {
		env := map[string]string{"THUMBD_WATERMARK": mark}
		query := "?w=64&h=64&wm=1,soea,2,2"
		if required {
			env["THUMBD_WATERMARK_REQUIRED"], env["THUMBD_WATERMARK_OPTIONS"] = "true", "1,soea,2,2"
			query = "?w=64&h=64"
		}
		cfg := load(env)
		inproc, _ := newTestServer(t, cfg)
		cells := newCellsServer(t, func() config { c := cfg; c.Concurrency, c.CellSpares = 1, 0; return c }(), "")
		s1, _, b1 := postThumb(t, inproc.URL, query, white)
		s2, _, b2 := postThumb(t, cells.URL, query, white)
		if s1 != 200 || s2 != 200 || !bytes.Equal(b1, b2) {
			t.Fatalf("required=%t: in process %d, cells %d: %s", required, s1, s2, b2)
		}
		// 16x16 at 2 from the bottom right: 46..61.
		if !redAt(b1, 60, 60) || !redAt(b1, 46, 46) || redAt(b1, 44, 60) || redAt(b1, 62, 62) {
			t.Errorf("required=%t: the mark is not where it was put", required)
		}
		if required {
			getErr := func(u string) { postError(t, u+"/thumbnail?wm=1", white, apierr.BadParameter) }
			getErr(inproc.URL)
			getErr(cells.URL)
		}
	}
	// No watermark configured: wm= is a 400 that says so.
	srv, _ := newTestServer(t, testConfig(t))
	status, _, body := postThumb(t, srv.URL, "?wm=1", white)
	if status != 400 || !strings.Contains(string(body), "THUMBD_WATERMARK") {
		t.Errorf("wm= without a watermark: %d %s", status, body)
	}
}

func postError(t *testing.T, u string, body []byte, code apierr.Code) {
	t.Helper()
	status, _, b := do(t, "POST", u, bytes.NewReader(body))
	var e errorBody
	if json.Unmarshal(b, &e) != nil || status != code.Status() || e.Code != string(code) {
		t.Errorf("POST %s: %d %s, want %s", u, status, b, code)
	}
}

// encodePNGOf is a white w x h PNG.
func encodePNGOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// THUMBD_MAX_FILTER_SPAN: by default an unsigned blur whose sigma times
// the answer's side passes 16384 is a 400 naming the setting's remedy;
// 0 lifts the bound; a negative value stops start-up.
func TestMaxFilterSpanSetting(t *testing.T) {
	jpeg := encodeJPEG(t, scene(400, 300), 85)
	bounded, _ := newTestServer(t, testConfig(t))
	if code, _, body := postThumb(t, bounded.URL, "?w=400&blur=50", jpeg); code != 400 || !strings.Contains(string(body), "signed URL") {
		t.Errorf("blur=50 at 400 px by default: %d %s", code, body)
	}
	if code, _, body := postThumb(t, bounded.URL, "?w=400&blur=40", jpeg); code != 200 {
		t.Errorf("blur=40 at 400 px by default: %d %s", code, body)
	}
	cfg := testConfig(t)
	cfg.FilterSpan = 0
	free, _ := newTestServer(t, cfg)
	if code, _, body := postThumb(t, free.URL, "?w=400&blur=50", jpeg); code != 200 {
		t.Errorf("blur=50 at 400 px with no bound: %d %s", code, body)
	}
	if _, err := loadConfig(nil, envOf(map[string]string{"THUMBD_MAX_FILTER_SPAN": "-1"}), io.Discard); err == nil || !strings.Contains(err.Error(), "THUMBD_MAX_FILTER_SPAN") {
		t.Errorf("a negative span: %v", err)
	}
}
