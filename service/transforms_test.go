package main

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/params"
)

// The transforms through the one corridor: both engine modes make the
// same bytes (the options cross to a cell in the job), presets carry
// them, and a signed URL covers them.

func TestCellsCarryTransforms(t *testing.T) {
	inproc, _ := newTestServer(t, testConfig(t))
	cells := newCellsServer(t, cellsConfig(t), "")
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
		// A crop the header shows outside is a 400; one only the
		// orientation could tell (the header does not read it: 0,350 is
		// inside a 300x400 image on its side) is the engine's 422.
		{"?crop=400,0,10,10", jpeg, apierr.BadParameter, 0, 0},
		{"?crop=0,350,10,10", jpeg, apierr.UnprocessableImage, 0, 0},
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
