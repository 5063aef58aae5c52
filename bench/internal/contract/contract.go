// Package contract checks, before anything is timed, that a target serves
// the same bodies as the contract says, and decodable 256x256 thumbnails in
// each format the run loads (an animated route: every frame of its source,
// with its delay): a target that differs is flagged, and its differing
// routes are not timed.
package contract

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/gif"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/decode"
)

// Check is one comparison.
type Check struct {
	Route  string `json:"route"` // the load route it guards: health, json, compute, hash, thumb-small, thumb-large-jpeg, ...
	Name   string `json:"name"`  // what was asked, e.g. "GET /compute?n=12345"
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
	// Digest is the SHA-256 of the body, to compare targets with each other.
	Digest string `json:"digest,omitempty"`
	Bytes  int    `json:"bytes,omitempty"` // body size
}

// Inputs are the expected bytes and the thumbnails and /info answers to
// check.
type Inputs struct {
	JSONFixture []byte
	Thumbs      []Thumb
	Infos       []Info
}

// Info is one /info route: Body POSTed to Path must answer JSON naming
// Format and the displayed Width x Height. Its thumbhash is not checked:
// the Node twin has none.
type Info struct {
	Route, Path, Format string
	Width, Height       int
	Body                []byte
}

// Thumb is one thumbnail route: Body POSTed to Path must answer a 256x256
// image in Format (png, jpeg, webp or avif). With Animated, Body is an
// animated GIF and the answer an animated WebP of all its frames.
type Thumb struct {
	Route, Path, Format string
	Animated            bool
	Body                []byte
}

// ComputeResult is the contract's /compute loop, in integer arithmetic.
func ComputeResult(n int64) int64 {
	var r int64
	for i := int64(0); i < n; i++ {
		r = (r + i*31) % 1_000_000_007
	}
	return r
}

// defaultHashPayload is what /hash hashes when data is absent.
func defaultHashPayload() []byte {
	return bytes.Repeat([]byte("0123456789abcdef"), 64)
}

func hashBody(b []byte) string {
	s := sha256.Sum256(b)
	return fmt.Sprintf(`{"algorithm":"sha256","hex":"%s"}`, hex.EncodeToString(s[:]))
}

// Run checks the target at base (e.g. http://127.0.0.1:8080).
func Run(ctx context.Context, base string, in Inputs) []Check {
	c := &http.Client{Timeout: 30 * time.Second}
	const n = 12345
	type check struct {
		route, method, path string
		body                []byte
		want                []byte // exact body; nil: a 256x256 image in format
		format, wantCT      string
		animated            bool
		info                *Info // an /info answer to check
	}
	checks := []check{
		{"health", "GET", "/health", nil, []byte(`{"status":"ok"}`), "", "application/json", false, nil},
		{"json", "GET", "/json", nil, in.JSONFixture, "", "application/json", false, nil},
		{"compute", "GET", "/compute", nil, fmt.Appendf(nil, `{"n":100000,"result":%d}`, ComputeResult(100000)), "", "application/json", false, nil},
		{"compute", "GET", fmt.Sprintf("/compute?n=%d", n), nil, fmt.Appendf(nil, `{"n":%d,"result":%d}`, n, ComputeResult(n)), "", "application/json", false, nil},
		{"hash", "GET", "/hash", nil, []byte(hashBody(defaultHashPayload())), "", "application/json", false, nil},
		{"hash", "GET", "/hash?data=h%C3%A9llo%20w%2Brld+x", nil, []byte(hashBody([]byte("héllo w+rld x"))), "", "application/json", false, nil},
	}
	for _, t := range in.Thumbs {
		checks = append(checks, check{t.Route, "POST", t.Path, t.Body, nil, t.Format, "image/" + t.Format, t.Animated, nil})
	}
	for _, i := range in.Infos {
		checks = append(checks, check{route: i.Route, method: "POST", path: i.Path, body: i.Body, wantCT: "application/json", info: &i})
	}
	var out []Check
	for _, ck := range checks {
		res := Check{Route: ck.route, Name: ck.method + " " + ck.path}
		body, ct, status, err := do(ctx, c, ck.method, base+ck.path, ck.body)
		switch {
		case err != nil:
			res.Detail = err.Error()
		case status != http.StatusOK:
			res.Detail = fmt.Sprintf("status %d: %.120s", status, strings.Join(strings.Fields(string(body)), " "))
		case ck.want != nil && !bytes.Equal(body, ck.want):
			res.Detail = fmt.Sprintf("body differs: got %.80q, want %.80q", body, ck.want)
		case ck.info != nil:
			res.OK, res.Detail = checkInfo(body, *ck.info)
		case ck.want == nil && ck.animated:
			res.OK, res.Detail = checkAnimation(body, ck.body, 256, 256)
		case ck.want == nil:
			res.OK, res.Detail = checkImage(body, ck.format, 256, 256)
		default:
			res.OK = true
		}
		if res.OK && !contentTypeIs(ct, ck.wantCT) {
			res.OK, res.Detail = false, fmt.Sprintf("Content-Type %q, want %s", ct, ck.wantCT)
		}
		if err == nil {
			s := sha256.Sum256(body)
			res.Digest, res.Bytes = hex.EncodeToString(s[:8]), len(body)
		}
		out = append(out, res)
	}
	return out
}

// checkInfo reads an /info answer: the source's format and displayed size.
func checkInfo(b []byte, want Info) (bool, string) {
	var got struct {
		Format        string `json:"format"`
		Width, Height int
		ThumbHash     string `json:"thumbhash"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		return false, fmt.Sprintf("not JSON: %v", err)
	}
	if got.Format != want.Format || got.Width != want.Width || got.Height != want.Height {
		return false, fmt.Sprintf("%s %dx%d, want %s %dx%d", got.Format, got.Width, got.Height, want.Format, want.Width, want.Height)
	}
	hash := "no thumbhash"
	if got.ThumbHash != "" {
		hash = "thumbhash " + got.ThumbHash
	}
	return true, fmt.Sprintf("%s %dx%d, %s", got.Format, got.Width, got.Height, hash)
}

func contentTypeIs(got, want string) bool {
	return len(got) >= len(want) && got[:len(want)] == want
}

// checkImage decodes b as format (png, jpeg, webp, avif) and checks its size.
func checkImage(b []byte, format string, w, h int) (bool, string) {
	img, err := decode.Still(format, b)
	if err != nil {
		return false, fmt.Sprintf("not a decodable %s: %v", format, err)
	}
	if r := img.Bounds(); r.Dx() != w || r.Dy() != h {
		return false, fmt.Sprintf("%s is %dx%d, want %dx%d", format, r.Dx(), r.Dy(), w, h)
	}
	return true, fmt.Sprintf("%dx%d %s, %d bytes", w, h, format, len(b))
}

// checkAnimation decodes b as an animated WebP on a w x h canvas and checks
// that it has every frame of src, a GIF, each frame decodable and shown as
// long as src's, and src's loop count.
func checkAnimation(b, src []byte, w, h int) (bool, string) {
	g, err := gif.DecodeAll(bytes.NewReader(src))
	if err != nil {
		return false, fmt.Sprintf("the route's source is not a GIF: %v", err)
	}
	a, err := decode.WebPAnimation(b)
	switch {
	case err != nil:
		return false, fmt.Sprintf("not an animated WebP: %v", err)
	case a.Width != w || a.Height != h:
		return false, fmt.Sprintf("animated webp is %dx%d, want %dx%d", a.Width, a.Height, w, h)
	case len(a.Frames) != len(g.Image):
		return false, fmt.Sprintf("%d frames, want the source's %d", len(a.Frames), len(g.Image))
	case a.Loop != plays(g):
		return false, fmt.Sprintf("loop count %d, want the source's %d", a.Loop, plays(g))
	}
	for i, f := range a.Frames {
		// GIF delays are in hundredths of a second; libvips' WebP writer,
		// like browsers, shows 10 ms or less as 100 ms.
		want := 10 * g.Delay[i]
		if want <= 10 {
			want = 100
		}
		if f.Duration != want {
			return false, fmt.Sprintf("frame %d shows %d ms, want the source's %d ms", i, f.Duration, want)
		}
	}
	return true, fmt.Sprintf("%dx%d animated webp, %d frames, %d bytes", w, h, len(a.Frames), len(b))
}

// plays is how many times a GIF plays, as libvips and WebP count it (0:
// forever). Go's LoopCount is the NETSCAPE extension's repeat count: 0
// forever, -1 (no extension) once, n > 0 n+1 times.
func plays(g *gif.GIF) int {
	switch {
	case g.LoopCount == 0:
		return 0
	case g.LoopCount < 0:
		return 1
	}
	return g.LoopCount + 1
}

func do(ctx context.Context, c *http.Client, method, url string, body []byte) ([]byte, string, int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, "", 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return b, resp.Header.Get("Content-Type"), resp.StatusCode, err
}

var buildInfoLibvips = regexp.MustCompile(`thumbd_build_info\{[^}]*libvips="([^"]+)"`)

// Libvips returns the libvips version a thumbd target reports in the
// thumbd_build_info metric, or "" when it has none.
func Libvips(ctx context.Context, base string) string {
	c := &http.Client{Timeout: 10 * time.Second}
	body, _, status, err := do(ctx, c, "GET", base+"/metrics", nil)
	if err != nil || status != http.StatusOK {
		return ""
	}
	if m := buildInfoLibvips.FindSubmatch(body); m != nil {
		return string(m[1])
	}
	return ""
}

// Failed returns the routes for which some check failed.
func Failed(checks []Check) map[string]bool {
	bad := map[string]bool{}
	for _, c := range checks {
		if !c.OK {
			bad[c.Route] = true
		}
	}
	return bad
}
