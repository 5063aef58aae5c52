package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/params"
)

// hintsGet sends GET u with header lines (a name may repeat).
func hintsGet(t *testing.T, u string, header [][2]string) answer {
	t.Helper()
	var pairs []string
	for _, h := range header {
		pairs = append(pairs, h[0], h[1])
	}
	code, h, b := do(t, "GET", u, nil, pairs...)
	return answer{code, h, b}
}

func varyOf(h http.Header) []string {
	var names []string
	for _, v := range h.Values("Vary") {
		for _, n := range strings.Split(v, ",") {
			names = append(names, strings.TrimSpace(n))
		}
	}
	slices.Sort(names)
	return names
}

func TestClientHints(t *testing.T) {
	photo := encodeJPEG(t, scene(1200, 900), 90)
	presets := "fixed:w=64"
	on := func(c *config) {
		c.ClientHints, c.MaxSide = true, 2000
		p, err := params.ParsePresets(presets)
		if err != nil {
			t.Fatal(err)
		}
		c.Presets = p
	}
	base, _ := dirServer(t, map[string][]byte{"p.jpg": photo}, on)
	off, _ := dirServer(t, map[string][]byte{"p.jpg": photo}, nil)
	for _, c := range []struct {
		name    string
		query   string
		header  [][2]string
		width   int
		vary    []string
		hintsOn bool
	}{
		{"off: hints ignored, no Vary", "w=100", [][2]string{{"Sec-CH-DPR", "2"}, {"Save-Data", "on"}}, 100, nil, false},
		{"DPR scales the query's w", "w=100", [][2]string{{"Sec-CH-DPR", "2"}}, 200, []string{"Sec-CH-DPR"}, true},
		{"DPR with a decimal", "w=100", [][2]string{{"Sec-CH-DPR", "2.625"}}, 263, []string{"Sec-CH-DPR"}, true},
		{"DPR under 1 is 1", "w=100", [][2]string{{"Sec-CH-DPR", "0.75"}}, 100, []string{"Sec-CH-DPR"}, true},
		{"DPR over 4 is 4", "w=100", [][2]string{{"Sec-CH-DPR", "9"}}, 400, []string{"Sec-CH-DPR"}, true},
		{"the query's dpr wins", "w=100&dpr=1.5", [][2]string{{"Sec-CH-DPR", "3"}}, 150, nil, true},
		{"Width gives w, in device pixels", "", [][2]string{{"Sec-CH-Width", "300"}, {"Sec-CH-DPR", "2"}}, 300, []string{"Sec-CH-DPR", "Sec-CH-Width"}, true},
		{"Width over the max side is the max side", "format=jpeg", [][2]string{{"Sec-CH-Width", "99999"}}, 2000, []string{"Save-Data", "Sec-CH-DPR", "Sec-CH-Width"}, true},
		{"no Width: the default box, DPR applied", "", [][2]string{{"Sec-CH-DPR", "2"}}, 512, []string{"Sec-CH-DPR", "Sec-CH-Width"}, true},
		{"h given: Width not used", "h=50&fit=inside", [][2]string{{"Sec-CH-Width", "300"}}, 67, []string{"Sec-CH-DPR"}, true},
		{"a preset's w counts as the query's", "preset=fixed", [][2]string{{"Sec-CH-Width", "300"}}, 64, []string{"Sec-CH-DPR"}, true},
		{"Save-Data on JPEG", "w=100&format=jpeg", [][2]string{{"Save-Data", "on"}}, 100, []string{"Save-Data", "Sec-CH-DPR"}, true},
		{"Save-Data with q given: no change", "w=100&format=jpeg&q=80", [][2]string{{"Save-Data", "on"}}, 100, []string{"Sec-CH-DPR"}, true},
		{"Save-Data on PNG: nothing to lower", "w=100", [][2]string{{"Save-Data", "on"}}, 100, []string{"Sec-CH-DPR"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := base
			if !c.hintsOn {
				srv = off
			}
			a := hintsGet(t, srv+"/thumbnail?src=p.jpg&"+c.query, c.header)
			if a.status != 200 {
				t.Fatalf("status %d %s", a.status, a.body)
			}
			img, _ := decoded(t, a.body)
			if img.Bounds().Dx() != c.width {
				t.Errorf("width %d, want %d", img.Bounds().Dx(), c.width)
			}
			if got := varyOf(a.header); !slices.Equal(got, c.vary) {
				t.Errorf("Vary %v, want %v", got, c.vary)
			}
			if got, want := a.header.Get("Accept-CH"), map[bool]string{true: "Sec-CH-DPR, Sec-CH-Width"}[c.hintsOn]; got != want {
				t.Errorf("Accept-CH %q, want %q", got, want)
			}
		})
	}
	t.Run("Save-Data lowers JPEG quality by 20", func(t *testing.T) {
		lean := hintsGet(t, base+"/thumbnail?src=p.jpg&w=300&format=jpeg", [][2]string{{"Save-Data", "on"}})
		at60 := hintsGet(t, base+"/thumbnail?src=p.jpg&w=300&format=jpeg&q=60", nil)
		full := hintsGet(t, base+"/thumbnail?src=p.jpg&w=300&format=jpeg", nil)
		if string(lean.body) != string(at60.body) || len(lean.body) >= len(full.body) {
			t.Errorf("Save-Data: %d bytes; q=60 %d; default %d", len(lean.body), len(at60.body), len(full.body))
		}
		other := hintsGet(t, base+"/thumbnail?src=p.jpg&w=300&format=jpeg", [][2]string{{"Save-Data", "off"}})
		if string(other.body) != string(full.body) {
			t.Error("Save-Data: off changed the answer")
		}
	})
	for _, c := range []struct{ header [][2]string }{
		{[][2]string{{"Sec-CH-DPR", "abc"}}},
		{[][2]string{{"Sec-CH-DPR", "0"}}},
		{[][2]string{{"Sec-CH-DPR", "-2"}}},
		{[][2]string{{"Sec-CH-DPR", "1e1"}}},
		{[][2]string{{"Sec-CH-DPR", "2"}, {"Sec-CH-DPR", "3"}}},
		{[][2]string{{"Sec-CH-Width", "12.5"}}},
		{[][2]string{{"Sec-CH-Width", "0"}}},
		{[][2]string{{"Sec-CH-Width", "+300"}}},
		{[][2]string{{"Sec-CH-Width", "300"}, {"Sec-CH-Width", "400"}}},
	} {
		t.Run(fmt.Sprint("bad ", c.header), func(t *testing.T) {
			a := hintsGet(t, base+"/thumbnail?src=p.jpg", c.header)
			if a.status != 400 || !strings.Contains(string(a.body), c.header[0][0]) {
				t.Fatalf("status %d %s", a.status, a.body)
			}
			assertError(t, a.body, apierr.BadParameter)
		})
	}
	t.Run("uploads take hints too", func(t *testing.T) {
		req, _ := http.NewRequest("POST", base+"/thumbnail?w=50", strings.NewReader(string(photo)))
		req.Header.Set("Sec-CH-DPR", "2")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if img, _ := decoded(t, b); img.Bounds().Dx() != 100 {
			t.Fatalf("width %d, want 100", img.Bounds().Dx())
		}
	})
}

// With signing on, hints apply only where the signed URL allows them: it
// signs hints=on. A signed URL without it is answered exactly as signed
// (no hint widens it, none is a new job or cache key, no Vary names them):
// a 64x48 source with no w and Sec-CH-Width: 4096 was a 4096x3072 PNG.
// hints=on lets them fill in what the signed query left open, within the
// max side; hints=off turns them off for an unsigned URL too.
func TestClientHintsWithSignedURLs(t *testing.T) {
	key := hexKey(t, "000102030405060708090a0b0c0d0e0f")
	photo := encodeJPEG(t, scene(600, 400), 90)
	small := encodeJPEG(t, scene(64, 48), 90)
	files := map[string][]byte{"a.jpg": photo, "s.jpg": small}
	base, _ := dirServer(t, files, func(c *config) {
		c.ClientHints, c.SigningKeys, c.MaxSide = true, [][]byte{key}, 1000
	})
	unsigned, _ := dirServer(t, files, func(c *config) { c.ClientHints, c.MaxSide = true, 1000 })
	hints := [][2]string{{"Sec-CH-Width", "5000"}, {"Sec-CH-DPR", "2"}, {"Save-Data", "on"}}
	for _, c := range []struct {
		srv, path string
		width     int
		vary      []string
	}{
		{base, signedPath(t, key, "src=s.jpg"), 256, nil},                 // the review's case: the default box, not 1000 wide
		{base, signedPath(t, key, "src=a.jpg&format=jpeg"), 256, nil},     // no hint, Save-Data included
		{base, signedPath(t, key, "src=a.jpg&format=jpeg&w=80"), 80, nil}, // the DPR hint does not scale a signed w
		{base, signedPath(t, key, "src=a.jpg&format=jpeg&hints=off"), 256, nil},
		{base, signedPath(t, key, "src=a.jpg&format=jpeg&hints=on"), 1000, []string{"Save-Data", "Sec-CH-DPR", "Sec-CH-Width"}},
		{base, signedPath(t, key, "src=a.jpg&format=jpeg&w=80&hints=on"), 160, []string{"Save-Data", "Sec-CH-DPR"}},
		{unsigned, "/thumbnail?src=a.jpg&format=jpeg", 1000, []string{"Save-Data", "Sec-CH-DPR", "Sec-CH-Width"}},
		{unsigned, "/thumbnail?src=a.jpg&format=jpeg&hints=on", 1000, []string{"Save-Data", "Sec-CH-DPR", "Sec-CH-Width"}},
		{unsigned, "/thumbnail?src=a.jpg&format=jpeg&hints=off", 256, nil},
	} {
		a := hintsGet(t, c.srv+c.path, hints)
		if a.status != 200 {
			t.Fatalf("%s: %d %s", c.path, a.status, a.body)
		}
		if img, _ := decoded(t, a.body); img.Bounds().Dx() != c.width {
			t.Errorf("%s: width %d, want %d", c.path, img.Bounds().Dx(), c.width)
		}
		if got := varyOf(a.header); !slices.Equal(got, c.vary) {
			t.Errorf("%s: Vary %v, want %v", c.path, got, c.vary)
		}
	}
	// Without hints=on a signed URL is the same answer with or without
	// hints: one job, one cache key.
	p := signedPath(t, key, "src=a.jpg&format=jpeg")
	sameAnswer(t, "a signed URL with hints", hintsGet(t, base+p, nil), hintsGet(t, base+p, hints))
	// hints= is signed like any parameter, and read strictly.
	if a := hintsGet(t, base+signedPath(t, key, "src=a.jpg")+"&hints=on", hints); a.status != 400 && a.status != 401 && a.status != 403 {
		t.Errorf("hints=on added to a signed URL: %d", a.status)
	}
	for _, bad := range []string{"hints=yes", "hints=", "hints=on&hints=on"} {
		a := hintsGet(t, unsigned+"/thumbnail?src=a.jpg&"+bad, nil)
		if a.status != 400 || !strings.Contains(string(a.body), "hints") {
			t.Errorf("%s: %d %s", bad, a.status, a.body)
		}
	}
}
