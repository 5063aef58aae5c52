package contract

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestComputeResult(t *testing.T) {
	if got := ComputeResult(0); got != 0 {
		t.Fatal(got)
	}
	// 31 * (0+1+2+3) = 186
	if got := ComputeResult(4); got != 186 {
		t.Fatal(got)
	}
}

// vips runs Debian's vips command's op on in (written as inName, which may
// carry [OPTIONS] for the loader) into outName, and returns that file: real
// encoders for the fake's AVIF and animated WebP, which Go cannot write.
func vips(op string, in []byte, inName, outName string, args ...string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "contract-test")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file, options, _ := strings.Cut(inName, "[")
	if err := os.WriteFile(filepath.Join(dir, file), in, 0o600); err != nil {
		return nil, err
	}
	if options != "" {
		options = "[" + options
	}
	argv := append([]string{op, filepath.Join(dir, file) + options, filepath.Join(dir, outName)}, args...)
	if msg, err := exec.Command("vips", argv...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("vips %q: %v: %s", argv, err, msg)
	}
	return os.ReadFile(filepath.Join(dir, outName))
}

// animation is a GIF of frames 8x8 frames, each shown delay hundredths of
// a second, with Go's LoopCount loop.
func animation(t *testing.T, frames, delay, loop int) []byte {
	t.Helper()
	g := &gif.GIF{LoopCount: loop}
	for i := 0; i < frames; i++ {
		img := image.NewPaletted(image.Rect(0, 0, 8, 8), color.Palette{color.Black, color.White})
		img.Pix[i] = 1 // no two frames alike: no encoder merges them
		g.Image, g.Delay = append(g.Image, img), append(g.Delay, delay)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A tiny server that follows the contract, with one deliberate bug (none
// when bug is ""): "hash" (a wrong digest), "first-frame" (a still WebP for
// animated=true), "fewer-frames" (the first two), "other-loop" and
// "other-delays" (another GIF's loop count or delays), "avif-size" (a
// 255x256 AVIF).
func fake(t *testing.T, bug string) http.Handler {
	mux := http.NewServeMux()
	js := func(w http.ResponseWriter, s string) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, s)
	}
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { js(w, `{"status":"ok"}`) })
	mux.HandleFunc("GET /json", func(w http.ResponseWriter, r *http.Request) { js(w, `{"a":1}`) })
	mux.HandleFunc("GET /compute", func(w http.ResponseWriter, r *http.Request) {
		n := int64(100000)
		if s := r.URL.Query().Get("n"); s != "" {
			n, _ = strconv.ParseInt(s, 10, 64)
		}
		js(w, fmt.Sprintf(`{"n":%d,"result":%d}`, n, ComputeResult(n)))
	})
	mux.HandleFunc("GET /hash", func(w http.ResponseWriter, r *http.Request) {
		data := bytes.Repeat([]byte("0123456789abcdef"), 64)
		if r.URL.Query().Has("data") {
			data = []byte(r.URL.Query().Get("data"))
		}
		if bug == "hash" {
			data = append(data, '!')
		}
		s := sha256.Sum256(data)
		js(w, `{"algorithm":"sha256","hex":"`+hex.EncodeToString(s[:])+`"}`)
	})
	mux.HandleFunc("POST /info", func(w http.ResponseWriter, r *http.Request) {
		switch bug {
		case "info-size":
			js(w, `{"format":"jpeg","width":300,"height":400}`)
		case "info-not-json":
			js(w, `format=jpeg`)
		default:
			js(w, `{"format":"jpeg","width":400,"height":300,"thumbhash":"AAgCBwAAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
		}
	})
	mux.HandleFunc("POST /thumbnail", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		format := cmp.Or(r.URL.Query().Get("format"), "png")
		side := 256
		if bug == "avif-size" && format == "avif" {
			side = 255
		}
		var p bytes.Buffer
		png.Encode(&p, image.NewRGBA(image.Rect(0, 0, side, 256)))
		out, err := p.Bytes(), error(nil)
		switch {
		case r.URL.Query().Get("animated") == "true":
			frames := "[n=-1]"
			switch bug {
			case "first-frame":
				frames = ""
			case "fewer-frames":
				frames = "[n=2]"
			case "other-loop":
				body = animation(t, 3, 4, 5)
			case "other-delays":
				body = animation(t, 3, 7, 0)
			}
			// Stretched (--size force): Debian's libvips 8.14 crops an
			// animation as one tall image.
			out, err = vips("thumbnail", body, "in.gif"+frames, "out.webp", "256", "--height", "256", "--size", "force")
		case format == "jpeg":
			p.Reset()
			err = jpeg.Encode(&p, image.NewRGBA(image.Rect(0, 0, 256, 256)), nil)
			out = p.Bytes()
		case format == "avif":
			out, err = vips("copy", p.Bytes(), "in.png", "out.avif")
		}
		// webp: Go has no WebP encoder, so a PNG, which must be refused.
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "image/"+format)
		w.Write(out)
	})
	return mux
}

func TestRun(t *testing.T) {
	in := Inputs{JSONFixture: []byte(`{"a":1}`), Thumbs: []Thumb{
		{Route: "thumb-small", Path: "/thumbnail?format=png", Format: "png", Body: []byte("s")},
		{Route: "thumb-large-jpeg", Path: "/thumbnail?format=jpeg&q=80", Format: "jpeg", Body: []byte("l")},
		{Route: "thumb-large-avif", Path: "/thumbnail?format=avif&q=58", Format: "avif", Body: []byte("l")},
		{Route: "thumb-animated-webp", Path: "/thumbnail?format=webp&animated=true", Format: "webp", Animated: true, Body: animation(t, 3, 4, 0)},
	}, Infos: []Info{{Route: "info-small", Path: "/info", Format: "jpeg", Width: 400, Height: 300, Body: []byte("s")}}}
	good := httptest.NewServer(fake(t, ""))
	defer good.Close()
	for _, c := range Run(context.Background(), good.URL, in) {
		if !c.OK {
			t.Errorf("good server failed %s: %s", c.Name, c.Detail)
		}
	}
	if v := Libvips(context.Background(), good.URL); v != "" {
		t.Fatalf("no /metrics, yet libvips %q", v)
	}
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# HELP x\nthumbd_build_info{goversion=\"go1.26.8\",libvips=\"8.16.1\",version=\"dev\"} 1\n")
	}))
	defer metrics.Close()
	if v := Libvips(context.Background(), metrics.URL); v != "8.16.1" {
		t.Fatalf("libvips %q", v)
	}
	for bug, want := range map[string]string{
		"hash":          "body differs",
		"avif-size":     "avif is 255x256, want 256x256",
		"first-frame":   "not an animated WebP: webp: not animated",
		"fewer-frames":  "2 frames, want the source's 3",
		"other-loop":    "loop count 6, want the source's 0",
		"other-delays":  "frame 0 shows 70 ms, want the source's 40 ms",
		"info-size":     "jpeg 300x400, want jpeg 400x300",
		"info-not-json": "not JSON",
	} {
		bad := httptest.NewServer(fake(t, bug))
		checks := Run(context.Background(), bad.URL, in)
		bad.Close()
		failed := Failed(checks)
		if len(failed) != 1 {
			t.Errorf("%s: failed routes %v, want one", bug, failed)
		}
		for _, c := range checks {
			if !c.OK && !strings.Contains(c.Detail, want) {
				t.Errorf("%s: %s: %q, want it to say %q", bug, c.Route, c.Detail, want)
			}
		}
	}
	// A WebP that does not decode, a format nothing decodes.
	in.Infos = nil
	in.Thumbs = []Thumb{
		{Route: "thumb-small-webp", Path: "/thumbnail?format=webp", Format: "webp"},
		{Route: "thumb-small-gif", Path: "/thumbnail?format=gif", Format: "gif"},
	}
	for i, c := range Run(context.Background(), good.URL, in)[6:] {
		want := []string{"not a decodable webp", `no decoder for "gif"`}[i]
		if c.OK || !strings.Contains(c.Detail, want) {
			t.Errorf("%s: %+v, want it to say %q", c.Route, c, want)
		}
	}
	// The bench's own mistake: an animated route whose source is no GIF.
	if ok, detail := checkAnimation(nil, []byte("GIF89a"), 256, 256); ok || !strings.Contains(detail, "the route's source is not a GIF") {
		t.Errorf("%v %q", ok, detail)
	}
}

// GIF repeat counts as libvips and WebP count plays (Debian's vips reads
// Go's GIFs so: -1 once, 0 forever, 3 four times).
func TestPlays(t *testing.T) {
	for loop, want := range map[int]int{-1: 1, 0: 0, 3: 4} {
		if got := plays(&gif.GIF{LoopCount: loop}); got != want {
			t.Errorf("LoopCount %d: %d plays, want %d", loop, got, want)
		}
	}
}
