package originload

import (
	"bytes"
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/bench/internal/load"
)

// A real thumbd (built here) against the loopback origin: a short run
// whose table has a row per source, with answers and no errors.
func TestOriginAgainstPost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs thumbd")
	}
	if raceDetector {
		t.Skip("hey's requester races with itself under load (race_test.go)")
	}
	bin := filepath.Join(t.TempDir(), "thumbd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/thumbd/thumbd/service").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var out, errs bytes.Buffer
	err := Run(context.Background(), []string{"-lock", "", "-source-dir", t.TempDir(), "-sources", "small", "-rounds", "2",
		"-duration", "500ms", "-warmup", "0", "-clients", "2", "-server-cpus", "", "-client-cpus", "", "--", bin}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	row := regexp.MustCompile(`(?m)^\| small\.jpg \| \d+ \| [\d.]+ \([\d.]+-[\d.]+\) \| [\d.]+ \([\d.]+-[\d.]+\) \| [\d.]+ \| .* \| 0 / 0 \|$`)
	signed := regexp.MustCompile(`(?m)^\| small\.jpg \| (200|304) \| [\d.]+ \([\d.]+-[\d.]+\) \| [\d.]+ \([\d.]+-[\d.]+\) \| [\d.]+ \| \d+ / \d+ \| [\d.]+ \| 0 / 0 \|$`)
	if !row.MatchString(out.String()) || len(signed.FindAllString(out.String(), -1)) != 2 || !strings.Contains(out.String(), "2 clients, 2 rounds") {
		t.Errorf("output:\n%s\nlog:\n%s", out.String(), errs.String())
	}
}

// signPath follows docs/signing.md's recipe: it gives that page's worked
// example, made there by `thumbd sign`.
func TestSignPathIsTheDocsRecipe(t *testing.T) {
	key, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	q := url.Values{"url": {"https://images.example.com/photos/cat.jpg"}, "w": {"200"}, "h": {"200"}, "exp": {"1893456000"}}
	const want = "/thumbnail?exp=1893456000&h=200&url=https%3A%2F%2Fimages.example.com%2Fphotos%2Fcat.jpg&w=200&sig=3FLtVtAzfEw4x6V4qGtEIDdN-cia_ueNOzQw12DwUas"
	if got := signPath(key, "/thumbnail", q); got != want {
		t.Errorf("%s\nwant\n%s", got, want)
	}
	doc, err := os.ReadFile("../../../docs/signing.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte("# "+want+"\n")) {
		t.Error("docs/signing.md's example has changed: update this test")
	}
	// A space is %20 (not +), and every byte outside the unreserved set is
	// escaped, in uppercase hex.
	if got := signPath(key, "/thumbnail", url.Values{"src": {"a b+c*~é.jpg"}}); !strings.HasPrefix(got, "/thumbnail?src=a%20b%2Bc%2A~%C3%A9.jpg&sig=") {
		t.Errorf("escaping: %s", got)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-image", "x", "--", "y"},
		{"-clients", "0", "--", "y"},
		{"-rounds", "0", "--", "y"},
		{"-duration", "0s", "--", "y"},
		{"-server-cpus", "x", "--", "y"},
	} {
		if _, err := parse(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	c, err := parse([]string{"-sources", "small,photo12", "--", "bin/thumbd", "-queue", "4"}, &bytes.Buffer{})
	if err != nil || len(c.sources) != 2 || len(c.Command) != 3 || c.cpus.Server[0] != 1 || c.cpus.Client[0] != 0 {
		t.Errorf("%+v %v", c, err)
	}
}

func TestServeDirAndSameAnswer(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.jpg"), []byte("bytes"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	origin, err := serveDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(origin + "/a.jpg")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()

	tag := "\"x\""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("bad") != "" {
			w.WriteHeader(502)
			return
		}
		if r.URL.Query().Get("notag") == "" {
			w.Header().Set("ETag", tag+r.URL.Query().Get("tag"))
		}
		w.Write([]byte("thumbnail" + r.URL.Query().Get("body")))
	}))
	defer srv.Close()
	post := arm{"POST", 0, load.Request{Method: "POST", URL: srv.URL + "/thumbnail", Body: []byte("b")}}
	get := func(q string) arm {
		return arm{"GET", 0, load.Request{Method: "GET", URL: srv.URL + "/thumbnail?" + q}}
	}
	if err := sameAnswer(ctx, []arm{post, get("url=x")}); err != nil {
		t.Error(err)
	}
	// An upload's ETag and an origin's differ for the same picture (their
	// identities differ): the bytes decide.
	if err := sameAnswer(ctx, []arm{post, get("tag=2")}); err != nil {
		t.Errorf("the same thumbnail under two ETags: %v", err)
	}
	if err := sameAnswer(ctx, []arm{post, get("body=2")}); err == nil {
		t.Error("different thumbnails passed")
	}
	if err := sameAnswer(ctx, []arm{post, get("notag=1")}); err == nil {
		t.Error("an answer without an ETag passed")
	}
	if err := sameAnswer(ctx, []arm{post, get("bad=1")}); err == nil {
		t.Error("a 502 passed")
	}
	if tag, err := etagOf(ctx, get("url=x").req); err != nil || tag != `"x"` {
		t.Errorf("etagOf: %q %v", tag, err)
	}
	if _, err := etagOf(ctx, get("bad=1").req); err == nil {
		t.Error("etagOf a 502 passed")
	}
}
