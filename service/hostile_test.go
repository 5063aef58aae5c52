package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"image"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/internal/hostile"
)

// The hostile-input suite: every answer is the documented 4xx (or a 200
// with a valid image), never a 5xx, never slow, and the service keeps
// serving afterwards. Time bounds are generous (about 10x what each takes
// on a loaded 2-core machine); the soak script reports the real slowest.

// hostileCase is one request and what may answer it.
type hostileCase struct {
	name   string
	method string
	query  string
	body   []byte
	status []int       // any of these
	code   apierr.Code // the error code when the status is an error
	within time.Duration
}

func runHostile(t *testing.T, base string, cases []hostileCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = "POST"
			}
			within := tc.within
			if within == 0 {
				within = 5 * time.Second
			}
			req, err := http.NewRequest(method, base+"/thumbnail"+tc.query, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			client := &http.Client{Timeout: 2 * within}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			var body bytes.Buffer
			body.ReadFrom(resp.Body)
			resp.Body.Close()
			el := time.Since(start)
			if resp.StatusCode >= 500 {
				t.Fatalf("status %d (%.300s)", resp.StatusCode, body.Bytes())
			}
			if el > within {
				t.Fatalf("answered %d after %s, bound %s", resp.StatusCode, el, within)
			}
			ok := false
			for _, s := range tc.status {
				ok = ok || s == resp.StatusCode
			}
			if !ok {
				t.Fatalf("status %d, want one of %v (%.300s)", resp.StatusCode, tc.status, body.Bytes())
			}
			if resp.StatusCode == 200 {
				if _, err := decodedOrErr(body.Bytes()); err != nil {
					t.Fatalf("200 with an image that does not decode: %v", err)
				}
				return
			}
			var e errorBody
			if err := json.Unmarshal(body.Bytes(), &e); err != nil || e.Error == "" || e.Code == "" {
				t.Fatalf("error body %q is not the API's error shape", body.Bytes())
			}
			if strings.Contains(e.Error, "goroutine") || strings.Contains(e.Error, "Stack:") || strings.Contains(e.Error, ".go:") {
				t.Fatalf("error message leaks a stack trace: %.300s", e.Error)
			}
			if tc.code != "" && resp.StatusCode != 304 && e.Code != string(tc.code) {
				t.Fatalf("code %q, want %q", e.Code, tc.code)
			}
		})
	}
}

func decodedOrErr(b []byte) (string, error) {
	_, format, err := image.Decode(bytes.NewReader(b))
	return format, err
}

// validSources is one small valid image of every supported format.
func validSources(t *testing.T) map[string][]byte {
	jpg := encodeJPEG(t, scene(120, 80), 85)
	return map[string][]byte{
		"jpeg": jpg,
		"png":  alphaPNG(t, 120, 80),
		"gif":  animatedGIF(t, 60, 40, 3),
		"webp": webpOf(t, jpg),
	}
}

func progressiveJPEG(t *testing.T, src []byte) []byte {
	return viaLibvips(t, src, nil, func(i *vips.ImageRef) ([]byte, *vips.ImageMetadata, error) {
		return i.ExportJpeg(&vips.JpegExportParams{Quality: 80, Interlace: true})
	})
}

func TestHostileBombs(t *testing.T) {
	srv, _ := newTestServer(t, testConfig(t))
	prog := progressiveJPEG(t, encodeJPEG(t, scene(64, 48), 80))
	pixels := func(name string, b []byte) hostileCase {
		if len(b) > 4096 {
			t.Fatalf("%s: a bomb of %d bytes is no bomb", name, len(b))
		}
		return hostileCase{name: name, body: b, status: []int{422}, code: apierr.TooManyPixels, within: 2 * time.Second}
	}
	beyond := func(name string, b []byte) hostileCase {
		return hostileCase{name: name, body: b, status: []int{422}, within: 2 * time.Second}
	}
	runHostile(t, srv.URL, []hostileCase{
		pixels("png 100000x100000", hostile.PNGBomb(100000, 100000)),
		pixels("jpeg SOF0 65000x65000", hostile.JPEGBomb(65000, 65000)),
		pixels("progressive jpeg SOF2 65000x65000", hostile.JPEGWithSize(prog, 65000, 65000)),
		pixels("gif logical screen 65535x65535", hostile.GIFBomb(65535, 65535)),
		pixels("gif frame 65535x65535", hostile.GIFFrameBomb(65535, 65535)),
		pixels("webp VP8X+VP8L 16383x16383", hostile.WebPBomb(16383, 16383)),
		pixels("webp animated canvas 16383x16383", hostile.WebPCanvasBomb(16383, 16383)),
		// A thin strip is few pixels, but a cover scales it whole first.
		{name: "jpeg 1x40000 strip covered to 256x256", query: "?w=256&h=256&fit=cover", body: hostile.JPEG(hostile.Pattern(1, 40000), 80),
			status: []int{422}, code: apierr.TooManyPixels, within: 2 * time.Second},
		{name: "png 40000x1 strip inside 256x256", query: "?w=256&h=256&fit=inside", body: hostile.PNG(hostile.Pattern(40000, 1)), status: []int{200}},
		// Beyond the format's own limits (libpng 1,000,000 per side,
		// libjpeg 65500): the loader refuses them itself.
		beyond("png 2^31-1 square", hostile.PNGBomb(1<<31-1, 1<<31-1)),
		beyond("png 1 x 2^31-1", hostile.PNGBomb(1, 1<<31-1)),
		beyond("jpeg SOF0 65535x1000", hostile.JPEGBomb(65535, 1000)),
		{name: "gif 5000 frames", body: hostile.AnimatedGIF(1, 1, 5000), status: []int{422}, code: apierr.TooManyFrames, within: 5 * time.Second},
		{name: "gif 257 frames", body: hostile.AnimatedGIF(2, 2, 257), status: []int{422}, code: apierr.TooManyFrames},
	})
	assertStillServing(t, srv.URL)
}

// A progressive JPEG under the pixel limit must be decoded whole (no
// shrink-on-load for progressive scans in libjpeg): allowed, but bounded
// by the pixel limit in memory and time.
func TestHostileHugeProgressiveJPEG(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 36 MP")
	}
	img, err := vips.Black(6000, 6000)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	big, _, err := img.ExportJpeg(&vips.JpegExportParams{Quality: 50, Interlace: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := newTestServer(t, testConfig(t))
	runHostile(t, srv.URL, []hostileCase{
		{name: "progressive 6000x6000", body: big, status: []int{200, 422}, within: 30 * time.Second},
		{name: "progressive 6000x6000 declared 6400x6400", body: hostile.JPEGWithSize(big, 6400, 6400), status: []int{422}, code: apierr.TooManyPixels},
	})
	assertStillServing(t, srv.URL)
}

func TestHostileDamagedAndForeignBytes(t *testing.T) {
	srv, _ := newTestServer(t, testConfig(t))
	var cases []hostileCase
	add := func(name string, b []byte, code apierr.Code, status ...int) {
		cases = append(cases, hostileCase{name: name, body: b, status: status, code: code})
	}
	add("zero bytes", nil, apierr.UnsupportedFormat, 415)
	for i, n := range []int{1, 3, 100, 4096, 200_000} {
		add(fmt.Sprintf("random %d bytes", n), hostile.Random(n, uint64(i)), apierr.UnsupportedFormat, 415)
	}
	for name, src := range validSources(t) {
		magic := map[string]int{"jpeg": 3, "png": 8, "gif": 6, "webp": 12}[name]
		add(name+" valid", src, "", 200)
		// The random header may declare any size: either 422.
		add(name+" magic then random", append(bytes.Clone(src[:magic]), hostile.Random(3000, 7)...), "", 422)
		for cut, b := range hostile.Truncations(src) {
			if len(b) < magic {
				add(name+" "+cut, b, apierr.UnsupportedFormat, 415)
			} else {
				// A cut in the pixel data of an interlaced or animated
				// format may still give a complete first frame.
				add(name+" "+cut, b, apierr.UnprocessableImage, 422, 200)
			}
		}
		for i, b := range hostile.BitFlips(src, uint64(len(name)), 8, 1+len(src)/500) {
			add(fmt.Sprintf("%s bit-flipped %d", name, i), b, "", 200, 422)
		}
	}
	for name, b := range hostile.Unsupported() {
		add("unsupported "+name, b, apierr.UnsupportedFormat, 415)
	}
	// The formats read since issue 35, broken: sniffed as theirs, then
	// refused by their decoder.
	for name, b := range hostile.Malformed() {
		add("malformed "+name, b, apierr.UnprocessableImage, 422)
	}
	runHostile(t, srv.URL, cases)
	assertStillServing(t, srv.URL)
}

func TestHostileParameters(t *testing.T) {
	srv, _ := newTestServer(t, testConfig(t))
	good := encodeJPEG(t, scene(64, 48), 85)
	bad := func(q string) hostileCase {
		return hostileCase{name: q, query: q, body: good, status: []int{400}, code: apierr.BadParameter}
	}
	fine := func(q string) hostileCase { return hostileCase{name: q, query: q, body: good, status: []int{200}} }
	cases := []hostileCase{}
	for _, q := range []string{
		"?w=0", "?h=0", "?w=-1", "?h=-4096", "?w=4097", "?w=2147483648", "?w=9223372036854775808",
		"?w=-9223372036854775809", "?h=1e3", "?w=0x10", "?w=+5", "?w=5.0", "?w=5%20", "?w=%205", "?w=",
		"?w=abc&w=5", "?w=%EF%BC%95", "?w=%D9%A5", "?fit=c%C3%B6ver", "?fit=COVER", "?fit=cover%00",
		"?format=jpg", "?format=gif", "?format=PNG", "?format=png%0a", "?gravity=center", "?gravity=",
		"?q=0", "?format=jpeg&q=101", "?format=jpeg&q=-1", "?q=50%25", "?w=%zz", "?w=%", "?%zz=1",
		"?w=32;h=5", "?q=" + strings.Repeat("9", 10000), "?w=" + strings.Repeat("1", 100000),
		// Strict queries: a parameter given twice or not known is refused.
		"?w=5&w=abc", "?w=5&w=5", "?w=64&x=%FF%FE", "?unknown=1&w=32", "?widht=100", "?" + strings.Repeat("a=1&", 2000) + "w=8",
	} {
		cases = append(cases, bad(q))
	}
	for _, q := range []string{
		"?w=1&h=1", "?w=007", "?w=4096&h=1&fit=inside",
	} {
		cases = append(cases, fine(q))
	}
	// q is checked even for png, which ignores it.
	cases = append(cases, bad("?format=png&q=0x"))
	runHostile(t, srv.URL, cases)
	assertStillServing(t, srv.URL)
}

func TestHostileSourceNames(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "sources")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	src := encodeJPEG(t, scene(64, 48), 85)
	os.WriteFile(filepath.Join(dir, "sub", "b.jpg"), src, 0o644)
	os.WriteFile(filepath.Join(parent, "secret.jpg"), src, 0o644)
	os.Symlink(parent, filepath.Join(dir, "up"))
	os.Symlink("/", filepath.Join(dir, "root"))
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	cfg := testConfig(t)
	cfg.SourceDir = dir
	srv, _ := newTestServer(t, cfg)
	var cases []hostileCase
	for _, name := range []string{
		"..", "../secret.jpg", "./../secret.jpg", "sub/../../secret.jpg", "sub//../../secret.jpg",
		"/etc/passwd", "//etc/passwd", `..\secret.jpg`, `sub\..\..\secret.jpg`, "sub/b.jpg\x00.png",
		"up/secret.jpg", "root/etc/passwd", "up/sources/sub/b.jpg", "sub/..",
	} {
		q := "?src=" + url.QueryEscape(name)
		cases = append(cases, hostileCase{name: q, method: "GET", query: q, status: []int{400}, code: apierr.BadSourceName})
	}
	for _, q := range []string{"?src=%2e%2e/secret.jpg", "?src=..%2fsecret.jpg", "?src=%2E%2E%2Fsecret.jpg",
		"?src=%00"} {
		cases = append(cases, hostileCase{name: q, method: "GET", query: q, status: []int{400}, code: apierr.BadSourceName})
	}
	for _, q := range []string{"?src=%EF%BC%8E%EF%BC%8E/secret.jpg", "?src=sub/b.jpg/", "?src=fifo", "?src=sub/"} {
		cases = append(cases, hostileCase{name: q, method: "GET", query: q, status: []int{404, 400}})
	}
	// A name given twice is refused whichever comes first (queries are strict).
	for _, q := range []string{"?src=sub/b.jpg&src=../secret.jpg", "?src=../secret.jpg&src=sub/b.jpg"} {
		cases = append(cases, hostileCase{name: q, method: "GET", query: q, status: []int{400}, code: apierr.BadParameter})
	}
	runHostile(t, srv.URL, cases)
	assertStillServing(t, srv.URL)
}

// assertStillServing checks /health and a real thumbnail after the abuse.
func assertStillServing(t *testing.T, base string) {
	t.Helper()
	if status, _, _ := do(t, "GET", base+"/health", nil); status != 200 {
		t.Fatalf("/health: %d", status)
	}
	if status, _, body := postThumb(t, base, "?w=32&h=32", encodeJPEG(t, scene(64, 48), 85)); status != 200 {
		t.Fatalf("thumbnail after hostile inputs: %d %.200s", status, body)
	}
}
