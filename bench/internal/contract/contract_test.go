package contract

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
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

// A tiny server that follows the contract, with one deliberate bug switch.
func fake(brokenHash bool) http.Handler {
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
		if brokenHash {
			data = append(data, '!')
		}
		s := sha256.Sum256(data)
		js(w, `{"algorithm":"sha256","hex":"`+hex.EncodeToString(s[:])+`"}`)
	})
	mux.HandleFunc("POST /thumbnail", func(w http.ResponseWriter, r *http.Request) {
		img := image.NewRGBA(image.Rect(0, 0, 256, 256))
		switch r.URL.Query().Get("format") {
		case "jpeg":
			w.Header().Set("Content-Type", "image/jpeg")
			jpeg.Encode(w, img, nil)
		case "webp": // Go has no WebP encoder: a PNG, which must be refused
			w.Header().Set("Content-Type", "image/webp")
			png.Encode(w, img)
		default:
			w.Header().Set("Content-Type", "image/png")
			png.Encode(w, img)
		}
	})
	return mux
}

func TestRun(t *testing.T) {
	in := Inputs{JSONFixture: []byte(`{"a":1}`), Thumbs: []Thumb{
		{Route: "thumb-small", Path: "/thumbnail?format=png", Format: "png", Body: []byte("s")},
		{Route: "thumb-large-jpeg", Path: "/thumbnail?format=jpeg&q=80", Format: "jpeg", Body: []byte("l")},
	}}
	good := httptest.NewServer(fake(false))
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
	bad := httptest.NewServer(fake(true))
	defer bad.Close()
	failed := Failed(Run(context.Background(), bad.URL, in))
	if !failed["hash"] || len(failed) != 1 {
		t.Fatalf("failed routes %v, want only hash", failed)
	}
	// A WebP that does not decode, and a format nothing decodes.
	in.Thumbs = []Thumb{{Route: "thumb-small-webp", Path: "/thumbnail?format=webp", Format: "webp"}, {Route: "thumb-small-avif", Path: "/thumbnail", Format: "avif"}}
	for _, c := range Run(context.Background(), good.URL, in)[6:] {
		if c.OK || !strings.Contains(c.Detail, "webp") && !strings.Contains(c.Detail, "no decoder for avif") {
			t.Errorf("%s: %+v", c.Route, c)
		}
	}
}
