package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/s3test"
)

// Issue 39: the trust review of the result store and bucket sources. Each
// test here failed before its fix.

// unsized is a proxy in front of s that answers every GET without
// Content-Length (chunked), as a gateway that serves objects decompressed
// does; the Host header is kept, so that the signatures still match.
func unsized(t *testing.T, s *s3test.Server) string {
	t.Helper()
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
				resp.Header.Del("Content-Length")
				resp.ContentLength = -1
			}
			return nil
		},
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A bucket GET without Content-Length (finding 7) is read as an upload of
// unknown length is, within the budget and the limit: a source, a stored
// result, and an object over the limit, refused.
func TestBucketGetWithoutContentLength(t *testing.T) {
	src := encodeJPEG(t, scene(200, 100), 90)
	s := imagesBucket(t, src)
	if err := s.MakeBucket(context.Background(), "results"); err != nil {
		t.Fatal(err)
	}
	over := map[string]string{"AWS_ENDPOINT_URL_S3": unsized(t, s)}
	cfg := bucketConfig(t, s, "s3://images/orig", over)
	cfg.MaxBodyBytes = int64(3 * len(src))
	srv, _ := newTestServer(t, cfg)
	status, h, body := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&w=50", nil)
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "image/") {
		t.Fatalf("a source without Content-Length: %d %s", status, body)
	}
	if _, err := s.Put(context.Background(), "images", "orig/big.jpg", make([]byte, cfg.MaxBodyBytes+1)); err != nil {
		t.Fatal(err)
	}
	getError(t, srv.URL+"/thumbnail?src=big.jpg", 422, "source_too_large")

	// The result store read through the same gateway: its hits are hits.
	env := s.Vars(over)
	env["THUMBD_SOURCE"] = "s3://images/orig"
	env["THUMBD_RESULT_STORE"] = "s3://results/thumbs"
	a, da := storeServer(t, storeConfig(t, "s3://results/thumbs", env))
	made := get(t, a+"/thumbnail?src=a.jpg&w=60")
	if made.status != 200 {
		t.Fatalf("%d %s", made.status, made.body)
	}
	waitWrites(t, da, 1)
	b, db := storeServer(t, storeConfig(t, "s3://results/thumbs", env))
	sameStoredAnswer(t, "a stored result without Content-Length", made, get(t, b+"/thumbnail?src=a.jpg&w=60"))
	if hits := metricSum(t, db, "thumbd_result_store_hits_total"); hits != 1 {
		t.Errorf("%g store hits, want 1", hits)
	}
}

// storedFiles are the results a directory store holds (temporary files,
// whose names start with a dot, aside).
func storedFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A directory store on a hung file system (finding 3; FIFOs in place of
// stored results: opening one waits for a writer) costs each request the
// lookup timeout, never its deadline, and opens the store's breaker.
func TestResultStoreHungDirectory(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	_, store, env := storeFixture(t, photo)
	env["THUMBD_RESULT_STORE_TIMEOUT"] = "100ms"
	env["THUMBD_DEADLINE"] = "5s"
	a, da := storeServer(t, storeConfig(t, store, env))
	const n = 7 // the breaker opens after 5 failures
	path := func(i int) string { return "/thumbnail?src=photo.jpg&format=webp&w=" + strconv.Itoa(40+i) }
	for i := range n {
		if made := get(t, a+path(i)); made.status != 200 {
			t.Fatalf("%d %s", made.status, made.body)
		}
	}
	waitWrites(t, da, n)
	files := storedFiles(t, store)
	if len(files) != n {
		t.Fatalf("stored %d files, want %d", len(files), n)
	}
	for _, f := range files {
		os.Remove(f)
		if err := syscall.Mkfifo(f, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { // the opens still blocked return
			if w, err := os.OpenFile(f, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		})
	}
	// b writes nothing (a queue of 0 bytes): a write that replaced a FIFO
	// by a file would answer for the store's health between lookups.
	env["THUMBD_RESULT_STORE_QUEUE"] = "0"
	b, db := storeServer(t, storeConfig(t, store, env))
	for i := range n {
		start := time.Now()
		if got := get(t, b+path(i)); got.status != 200 {
			t.Fatalf("request %d over the hung store: %d %s after %s", i, got.status, got.body, time.Since(start))
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("request %d took %s over a store whose timeout is 100ms", i, d)
		}
	}
	if got := metricSum(t, db, "thumbd_result_store_breaker_opened_total"); got != 1 {
		t.Errorf("breaker opened %g times, want 1", got)
	}
	if got := get(t, b+path(n)); got.status != 200 {
		t.Fatalf("%d %s", got.status, got.body)
	}
	if got := metricSum(t, db, "thumbd_result_store_lookups_skipped_total"); got != n-5+1 {
		t.Errorf("%g lookups skipped with the breaker open, want %d", got, n-5+1)
	}
}

// rewriteStored replaces the directory store's file at path by one a
// writer of the store made: its media type and body, with a body-sha256
// that matches (anyone can compute it) and the rest of the metadata kept.
func rewriteStored(t *testing.T, path, contentType string, body []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	magic, rest, _ := bytes.Cut(data, []byte("\n"))
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	var h struct {
		ContentType string            `json:"content_type"`
		Meta        map[string]string `json:"meta"`
		Size        int64             `json:"size"`
	}
	if err := json.Unmarshal(line, &h); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	h.ContentType, h.Size, h.Meta["body-sha256"] = contentType, int64(len(body)), hex.EncodeToString(sum[:])
	line, _ = json.Marshal(h)
	out := append(append(append(append(magic, '\n'), line...), '\n'), body...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Whoever writes the store does not decide what thumbd serves (finding 1):
// a stored object of a media type thumbd never writes, or whose body is
// not of its type, is a miss, counted, and the thumbnail is computed.
func TestResultStoreServesOnlyImages(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	_, store, env := storeFixture(t, photo)
	a, da := storeServer(t, storeConfig(t, store, env))
	for i, forged := range []struct {
		contentType string
		body        string
	}{
		{"text/html", "<script>alert(document.domain)</script>"},
		{"image/webp", "<script>alert(document.domain)</script>"},
		{"application/json", "<script>alert(document.domain)</script>"},
	} {
		path := "/thumbnail?src=photo.jpg&format=webp&w=" + strconv.Itoa(50+i)
		before := storedFiles(t, store)
		made := get(t, a+path)
		if made.status != 200 {
			t.Fatalf("%d %s", made.status, made.body)
		}
		waitWrites(t, da, float64(i+1))
		var file string
		for _, f := range storedFiles(t, store) {
			if !slices.Contains(before, f) {
				file = f
			}
		}
		rewriteStored(t, file, forged.contentType, []byte(forged.body))
		b, db := storeServer(t, storeConfig(t, store, env))
		got := get(t, b+path)
		if got.status != 200 || got.header.Get("Content-Type") != "image/webp" || !bytes.Equal(got.body, made.body) {
			t.Errorf("a stored %s object: %d %s %q", forged.contentType, got.status, got.header.Get("Content-Type"), got.body)
		}
		if got.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("no nosniff on an image answer")
		}
		if n := metricSum(t, db, "thumbd_result_store_rejected_total"); n != 1 {
			t.Errorf("a stored %s object: %g rejected, want 1", forged.contentType, n)
		}
	}
}

// A result store inside the source directory or bucket prefix (or holding
// it) is refused at start (finding 1): whoever uploads sources there would
// write results.
func TestResultStoreOverlappingTheSource(t *testing.T) {
	sources := t.TempDir()
	elsewhere := t.TempDir()
	for _, c := range []struct {
		env  map[string]string
		want bool // refused
	}{
		{map[string]string{"THUMBD_SOURCE_DIR": sources, "THUMBD_RESULT_STORE": sources}, true},
		{map[string]string{"THUMBD_SOURCE_DIR": sources, "THUMBD_RESULT_STORE": filepath.Join(sources, "thumbs")}, true},
		{map[string]string{"THUMBD_SOURCE_DIR": filepath.Join(sources, "originals"), "THUMBD_RESULT_STORE": sources}, true},
		{map[string]string{"THUMBD_SOURCE": sources + "/", "THUMBD_RESULT_STORE": sources + "/./thumbs"}, true},
		{map[string]string{"THUMBD_SOURCE": "s3://images", "THUMBD_RESULT_STORE": "s3://images/thumbs"}, true},
		{map[string]string{"THUMBD_SOURCE": "s3://images/originals", "THUMBD_RESULT_STORE": "s3://images/originals/thumbs"}, true},
		{map[string]string{"THUMBD_SOURCE": "s3://images/originals/cats", "THUMBD_RESULT_STORE": "s3://images/originals"}, true},
		{map[string]string{"THUMBD_SOURCE_DIR": sources, "THUMBD_RESULT_STORE": elsewhere}, false},
		{map[string]string{"THUMBD_SOURCE_DIR": sources, "THUMBD_RESULT_STORE": sources + "-thumbs"}, false},
		{map[string]string{"THUMBD_SOURCE": "s3://images/originals", "THUMBD_RESULT_STORE": "s3://images/thumbs"}, false},
		{map[string]string{"THUMBD_SOURCE": "s3://images/originals", "THUMBD_RESULT_STORE": "s3://images/originals-thumbs"}, false},
		{map[string]string{"THUMBD_SOURCE": "s3://images", "THUMBD_RESULT_STORE": "s3://thumbs"}, false},
	} {
		_, err := loadConfig(nil, envOf(c.env), io.Discard)
		switch {
		case c.want && (err == nil || !strings.Contains(err.Error(), "THUMBD_RESULT_STORE")):
			t.Errorf("%v: %v, want refused naming THUMBD_RESULT_STORE", c.env, err)
		case !c.want && err != nil:
			t.Errorf("%v: %v", c.env, err)
		}
	}
}

// With THUMBD_RESULT_STORE_KEY (finding 1), thumbd answers only from
// objects it signed with that key: another key's, an unsigned one and one
// a store writer forged are misses, counted; the same key's are hits.
func TestResultStoreSigned(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	_, store, env := storeFixture(t, photo)
	keyed := func(key string) map[string]string {
		e := map[string]string{"THUMBD_RESULT_STORE_KEY": key}
		for k, v := range env {
			e[k] = v
		}
		return e
	}
	one, other := strings.Repeat("ab", 16), strings.Repeat("cd", 16)
	a, da := storeServer(t, storeConfig(t, store, keyed(one)))
	path := "/thumbnail?src=photo.jpg&format=webp&w=64"
	made := get(t, a+path)
	if made.status != 200 {
		t.Fatalf("%d %s", made.status, made.body)
	}
	waitWrites(t, da, 1)
	same, ds := storeServer(t, storeConfig(t, store, keyed(one)))
	sameStoredAnswer(t, "the same key", made, get(t, same+path))
	if n := metricSum(t, ds, "thumbd_result_store_hits_total"); n != 1 {
		t.Errorf("the same key: %g hits, want 1", n)
	}
	wrong, dw := storeServer(t, storeConfig(t, store, keyed(other)))
	if got := get(t, wrong+path); got.status != 200 || metricSum(t, dw, "thumbd_result_store_rejected_total") != 1 || metricSum(t, dw, "thumbd_result_store_hits_total") != 0 {
		t.Errorf("another key: %d, %g rejected, %g hits", got.status, metricSum(t, dw, "thumbd_result_store_rejected_total"), metricSum(t, dw, "thumbd_result_store_hits_total"))
	}
	// The other key's instance wrote its own; a writer of the store then
	// forges one with a digest that matches.
	waitWrites(t, dw, 1)
	files := storedFiles(t, store)
	if len(files) != 1 {
		t.Fatalf("stored %v", files)
	}
	rewriteStored(t, files[0], "image/webp", made.body[:len(made.body)-1])
	forged, df := storeServer(t, storeConfig(t, store, keyed(other)))
	if got := get(t, forged+path); got.status != 200 || !bytes.Equal(got.body, made.body) || metricSum(t, df, "thumbd_result_store_rejected_total") != 1 {
		t.Errorf("a forged object: %d (%d bytes), %g rejected", got.status, len(got.body), metricSum(t, df, "thumbd_result_store_rejected_total"))
	}
	if _, err := loadConfig(nil, envOf(keyed("abcd")), io.Discard); err == nil || !strings.Contains(err.Error(), "THUMBD_RESULT_STORE_KEY") {
		t.Errorf("a 2-byte key: %v, want refused", err)
	}
}

// A store hit's bytes are read within the source budget (finding 4): with
// the budget spent (an upload that declared all of it), a stored thumbnail
// is not read; once the budget is free it is, and given back once answered.
func TestResultStoreHitsWithinTheBudget(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	_, store, env := storeFixture(t, photo)
	a, da := storeServer(t, storeConfig(t, store, env))
	path := "/thumbnail?src=photo.jpg&format=webp&w=200"
	made := get(t, a+path)
	if made.status != 200 {
		t.Fatalf("%d %s", made.status, made.body)
	}
	waitWrites(t, da, 1)

	budget := strconv.Itoa(2 * len(photo))
	env["THUMBD_MAX_BODY_BYTES"], env["THUMBD_SOURCE_BUDGET"] = budget, budget
	b, db := storeServer(t, storeConfig(t, store, env))
	held := slowUpload(t, b, 2*len(photo), nil)
	for deadline := time.Now().Add(5 * time.Second); db.thumbs.Limits.Budget.Used() < int64(2*len(photo)); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the upload took %d bytes of the budget", db.thumbs.Limits.Budget.Used())
		}
	}
	if got := get(t, b+path); got.status == 200 || metricSum(t, db, "thumbd_result_store_hits_total") != 0 {
		t.Errorf("with the budget spent: %d, %g store hits (read outside the budget)", got.status, metricSum(t, db, "thumbd_result_store_hits_total"))
	}
	held.Close()
	for deadline := time.Now().Add(5 * time.Second); db.thumbs.Limits.Budget.Used() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the closed upload still holds %d bytes", db.thumbs.Limits.Budget.Used())
		}
	}
	sameStoredAnswer(t, "with the budget free", made, get(t, b+path))
	if n := metricSum(t, db, "thumbd_result_store_hits_total"); n != 1 {
		t.Errorf("%g store hits, want 1", n)
	}
	if used := db.thumbs.Limits.Budget.Used(); used != 0 {
		t.Errorf("%d bytes of the budget still held after the answer", used)
	}
}

// Uploads whose bodies end after their deadline do not open the breaker of
// a healthy store (finding 6): a lookup with no time left is not tried,
// and is never the store's failure.
func TestResultStoreLateUploadsAreNotStoreFailures(t *testing.T) {
	photo := encodeJPEG(t, scene(200, 150), 90)
	env := map[string]string{"THUMBD_CACHE_UPLOADS": "true", "THUMBD_RESULT_STORE_KEY": strings.Repeat("ab", 16), "THUMBD_DEADLINE": "1s", "THUMBD_READ_TIMEOUT": "10s"}
	base, d := storeServer(t, storeConfig(t, t.TempDir(), env))
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "POST /thumbnail?w=%d HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 20+i, len(photo))
			c.Write(photo[:len(photo)/2])
			time.Sleep(1300 * time.Millisecond)
			c.Write(photo[len(photo)/2:])
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	if n := metricSum(t, d, "thumbd_result_store_lookup_errors_total"); n != 0 {
		t.Errorf("%g lookup errors from uploads past their deadline", n)
	}
	if n := metricSum(t, d, "thumbd_result_store_breaker_opened_total"); n != 0 {
		t.Errorf("the breaker of a healthy store opened %g times", n)
	}
}

// A directory source's names are canonical (finding 8): one file has one
// name, so one Surrogate-Key, and a purge by tag reaches every thumbnail
// of it. Other spellings are a 400, as a bucket's are.
func TestDirectoryNamesAreCanonical(t *testing.T) {
	photo := encodeJPEG(t, scene(64, 48), 90)
	cfg := testConfig(t)
	cfg.SourceDir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(cfg.SourceDir, "photos"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.SourceDir, "photos", "cat.jpg"), photo, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, _ := newTestServer(t, cfg)
	if status, _, body := do(t, "GET", srv.URL+"/thumbnail?src=photos/cat.jpg&w=20", nil); status != 200 {
		t.Fatalf("the canonical name: %d %s", status, body)
	}
	for _, name := range []string{"./photos/cat.jpg", "photos//cat.jpg", "photos/./cat.jpg", "photos/cat.jpg/", "photos/", "."} {
		getError(t, srv.URL+"/thumbnail?src="+url.QueryEscape(name)+"&w=20", 400, "bad_source_name")
	}
}

// Store keys name the deployment and the settings that change bytes
// (finding 2): two deployments sharing one store, whose directories hold
// different photos of the same name, size and modification time (cp -p,
// rsync -a), answer each its own; so do two with different AVIF efforts.
// An operator who means to share names one namespace for both.
func TestResultStoreKeysNameTheDeployment(t *testing.T) {
	store := t.TempDir()
	one, two := encodeJPEG(t, scene(400, 300), 90), encodeJPEG(t, scene(300, 400), 90)
	if len(one) != len(two) {
		// Same size: pad the shorter JPEG after its end marker.
		n := max(len(one), len(two))
		one, two = append(one, make([]byte, n-len(one))...), append(two, make([]byte, n-len(two))...)
	}
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dirs := make([]string, 2)
	for i, photo := range [][]byte{one, two} {
		dirs[i] = t.TempDir()
		f := filepath.Join(dirs[i], "photo.jpg")
		if err := os.WriteFile(f, photo, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	path := "/thumbnail?src=photo.jpg&w=100&format=webp"
	a, da := storeServer(t, storeConfig(t, store, map[string]string{"THUMBD_SOURCE_DIR": dirs[0]}))
	made := get(t, a+path)
	if made.status != 200 {
		t.Fatalf("%d %s", made.status, made.body)
	}
	waitWrites(t, da, 1)
	b, db := storeServer(t, storeConfig(t, store, map[string]string{"THUMBD_SOURCE_DIR": dirs[1]}))
	if got := get(t, b+path); got.status != 200 || bytes.Equal(got.body, made.body) || metricSum(t, db, "thumbd_result_store_hits_total") != 0 {
		t.Errorf("another directory's photo of the same name, size and time: %d, the first's bytes %v, %g hits",
			got.status, bytes.Equal(got.body, made.body), metricSum(t, db, "thumbd_result_store_hits_total"))
	}
	avif := "/thumbnail?src=photo.jpg&w=100&format=avif"
	if got := get(t, a+avif); got.status != 200 {
		t.Fatalf("%d %s", got.status, got.body)
	}
	waitWrites(t, da, 2)
	c, dc := storeServer(t, storeConfig(t, store, map[string]string{"THUMBD_SOURCE_DIR": dirs[0], "THUMBD_AVIF_EFFORT": "1"}))
	if get(t, c+avif); metricSum(t, dc, "thumbd_result_store_hits_total") != 0 {
		t.Error("another AVIF effort answered from the first's store")
	}
	shared := map[string]string{"THUMBD_RESULT_STORE_NAMESPACE": "photos"}
	for i, d := range dirs {
		env := map[string]string{"THUMBD_SOURCE_DIR": d}
		maps.Copy(env, shared)
		srv, ds := storeServer(t, storeConfig(t, store, env))
		if got := get(t, srv+path+"&q=70"); got.status != 200 {
			t.Fatalf("%d %s", got.status, got.body)
		}
		if i == 0 {
			waitWrites(t, ds, 1)
		} else if n := metricSum(t, ds, "thumbd_result_store_hits_total"); n != 1 {
			t.Errorf("one namespace named by both: %g hits, want 1", n)
		}
	}
}

// An http:// endpoint on a host other than loopback is a warning at start
// (Info): keys, objects and the web identity's answers travel unencrypted.
func TestPlaintextEndpointWarned(t *testing.T) {
	c := startChild(t, "THUMBD_RESULT_STORE=s3://results/thumbs", "AWS_ENDPOINT_URL_S3=http://192.0.2.1:9000",
		"AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s")
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(c.logs.String(), "not encrypted"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no warning about http://192.0.2.1:9000; logs:\n%s", c.logs)
		}
	}
	local := startChild(t, "THUMBD_RESULT_STORE=s3://results/thumbs", "AWS_ENDPOINT_URL_S3=http://127.0.0.1:1",
		"AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s")
	time.Sleep(200 * time.Millisecond)
	if strings.Contains(local.logs.String(), "not encrypted") {
		t.Errorf("a loopback endpoint warned:\n%s", local.logs)
	}
}
