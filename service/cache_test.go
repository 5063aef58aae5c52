package main

import (
	"bytes"
	"fmt"
	"github.com/thumbd/thumbd/service/internal/memplan"
	"github.com/thumbd/thumbd/service/internal/pipeline"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/memlimit"
)

// sameAnswer fails unless b is a's answer: status, bytes and every header
// a client or a CDN keys on.
func sameAnswer(t *testing.T, what string, a, b answer) {
	t.Helper()
	if a.status != b.status || !bytes.Equal(a.body, b.body) {
		t.Fatalf("%s: status %d (%d bytes), first %d (%d bytes)", what, b.status, len(b.body), a.status, len(a.body))
	}
	for _, h := range []string{"ETag", "Content-Type", "Content-Length", "Cache-Control", "Vary", "X-Content-Type-Options"} {
		if a.header.Get(h) != b.header.Get(h) {
			t.Errorf("%s: %s %q, first %q", what, h, b.header.Get(h), a.header.Get(h))
		}
	}
}

func get(t *testing.T, u string, header ...string) answer {
	t.Helper()
	s, h, b := do(t, "GET", u, nil, header...)
	return answer{s, h, b}
}

func TestCacheServesLocalFilesUntilTheyChange(t *testing.T) {
	photo := encodeJPEG(t, scene(800, 600), 90)
	base, d := dirServer(t, map[string][]byte{"photo.jpg": photo}, func(c *config) { c.CacheSize = 16 << 20 })
	u := base + "/thumbnail?src=photo.jpg&w=100&format=auto"
	first := get(t, u, "Accept", "image/webp")
	again := get(t, u, "Accept", "image/webp")
	sameAnswer(t, "cached", first, again)
	if first.header.Get("Vary") != "Accept" {
		t.Errorf("Vary %q", first.header.Get("Vary"))
	}
	if jobs := engineJobs(t, d); jobs != 1 {
		t.Fatalf("%d engine jobs, want 1", jobs)
	}
	if hits, misses := cacheCount(t, d, "hits"), cacheCount(t, d, "misses"); hits != 1 || misses != 1 {
		t.Errorf("hits %v misses %v, want 1 and 1", hits, misses)
	}
	// A conditional request is answered from the cache too.
	if a := get(t, u, "Accept", "image/webp", "If-None-Match", first.header.Get("ETag")); a.status != 304 {
		t.Errorf("If-None-Match: %d", a.status)
	}
	// Another format is another key.
	if a := get(t, u, "Accept", "image/avif"); a.header.Get("Content-Type") != "image/avif" {
		t.Errorf("Accept avif: %s", a.header.Get("Content-Type"))
	}
	// The file changes (same size, another modification time): never stale.
	changed := encodeJPEG(t, scene(600, 800), 90)
	path := filepath.Join(d.cfg.SourceDir, "photo.jpg")
	if err := os.WriteFile(path, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	os.Chtimes(path, later, later)
	fresh := get(t, u, "Accept", "image/webp")
	if fresh.status != 200 || fresh.header.Get("ETag") == first.header.Get("ETag") || bytes.Equal(fresh.body, first.body) {
		t.Fatalf("after the file changed: %d, ETag %s (was %s)", fresh.status, fresh.header.Get("ETag"), first.header.Get("ETag"))
	}
	// The same bytes, rewritten: another modification time, another
	// version, so another job and another ETag (the file's identity is its
	// version: its bytes are not hashed).
	os.Chtimes(path, later.Add(time.Second), later.Add(time.Second))
	before := engineJobs(t, d)
	touched := get(t, u, "Accept", "image/webp")
	if touched.header.Get("ETag") == fresh.header.Get("ETag") || !bytes.Equal(touched.body, fresh.body) || engineJobs(t, d) != before+1 {
		t.Errorf("touched file: ETag %s (was %s), %d jobs (was %d)", touched.header.Get("ETag"), fresh.header.Get("ETag"), engineJobs(t, d), before)
	}
	// Another size: another ETag.
	if err := os.WriteFile(path, append(changed, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, later.Add(time.Second), later.Add(time.Second))
	if a := get(t, u, "Accept", "image/webp"); a.status != 200 || a.header.Get("ETag") == touched.header.Get("ETag") {
		t.Errorf("a byte longer, the same time: %d, ETag %s", a.status, a.header.Get("ETag"))
	}
}

func TestCacheIsOffByDefault(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	base, d := dirServer(t, map[string][]byte{"photo.jpg": photo}, nil)
	get(t, base+"/thumbnail?src=photo.jpg&w=100")
	get(t, base+"/thumbnail?src=photo.jpg&w=100")
	if jobs := engineJobs(t, d); jobs != 2 {
		t.Errorf("%d engine jobs, want 2", jobs)
	}
	if d.thumbs.Cache != nil || cacheCount(t, d, "misses") != 0 {
		t.Error("the cache is on")
	}
}

func TestCacheUploadsOnlyWhenAsked(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	for _, uploads := range []bool{false, true} {
		cfg := testConfig(t)
		cfg.CacheSize, cfg.CacheUploads = 16<<20, uploads
		srv, d := newTestServer(t, cfg)
		s1, h1, b1 := postThumb(t, srv.URL, "?w=64", photo)
		s2, h2, b2 := postThumb(t, srv.URL, "?w=64", photo)
		sameAnswer(t, "upload", answer{s1, h1, b1}, answer{s2, h2, b2})
		want := uint64(2)
		if uploads {
			want = 1
		}
		if jobs := engineJobs(t, d); jobs != want {
			t.Errorf("THUMBD_CACHE_UPLOADS=%t: %d engine jobs, want %d", uploads, jobs, want)
		}
		if used := d.thumbs.Limits.Budget.Used(); used != 0 {
			t.Errorf("%d source bytes still held", used)
		}
	}
}

// cachingOrigin serves src with the headers set, counts its fetches and
// answers a conditional GET whose validator matches with a 304.
type cachingOrigin struct {
	*testOrigin
	fetches, notModified atomic.Int32
	header               atomic.Value // http.Header for the next answers
	body                 atomic.Value // []byte
	lastINM, lastIMS     atomic.Value // string
}

func newCachingOrigin(t *testing.T, src []byte, header ...string) *cachingOrigin {
	o := &cachingOrigin{}
	o.set(src, header...)
	o.testOrigin = newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		o.fetches.Add(1)
		h := o.header.Load().(http.Header)
		o.lastINM.Store(r.Header.Get("If-None-Match"))
		o.lastIMS.Store(r.Header.Get("If-Modified-Since"))
		for k, v := range h {
			w.Header()[k] = v
		}
		if inm := r.Header.Get("If-None-Match"); inm != "" && inm == h.Get("ETag") ||
			r.Header.Get("If-Modified-Since") != "" && r.Header.Get("If-Modified-Since") == h.Get("Last-Modified") {
			o.notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write(o.body.Load().([]byte))
	})
	return o
}

func (o *cachingOrigin) set(src []byte, header ...string) {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	o.header.Store(h)
	o.body.Store(src)
}

func TestCacheFollowsOriginHeaders(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	lastMod := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	for _, c := range []struct {
		name             string
		header           []string
		fetches, jobs    int32
		sentINM, sentIMS bool
	}{
		{"max-age: reused, origin asked once", []string{"Cache-Control", "public, max-age=600"}, 1, 1, false, false},
		{"s-maxage wins over max-age", []string{"Cache-Control", "max-age=0, s-maxage=600"}, 1, 1, false, false},
		{"Expires: reused", []string{"Expires", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}, 1, 1, false, false},
		{"past max-age (Age), no validator: fetched again", []string{"Cache-Control", "max-age=60", "Age", "60"}, 2, 2, false, false},
		{"no lifetime, no validator: not kept", nil, 2, 2, false, false},
		{"no-store: never kept", []string{"Cache-Control", "no-store, max-age=600", "ETag", `"v1"`}, 2, 2, false, false},
		{"private: never kept by a shared cache", []string{"Cache-Control", "private, max-age=600", "ETag", `"v1"`}, 2, 2, false, false},
		{"Vary *: never kept", []string{"Cache-Control", "max-age=600", "Vary", "*"}, 2, 2, false, false},
		{"stale with ETag: revalidated, 304 keeps the thumbnail", []string{"Cache-Control", "max-age=60", "Age", "61", "ETag", `"v1"`}, 2, 1, true, false},
		{"no-cache with ETag: revalidated every time", []string{"Cache-Control", "no-cache, max-age=600", "ETag", `"v1"`}, 2, 1, true, false},
		{"stale with Last-Modified: If-Modified-Since", []string{"Last-Modified", lastMod}, 2, 1, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newCachingOrigin(t, photo, c.header...)
			cfg := originConfig(t, true, "http://"+o.hostPort())
			cfg.CacheSize = 16 << 20
			srv, d := newTestServer(t, cfg)
			u := thumbURL(srv.URL, o.URL+"/a.jpg", "w=100&format=webp")
			first := get(t, u)
			again := get(t, u)
			sameAnswer(t, "again", first, again)
			if first.status != 200 {
				t.Fatalf("status %d %s", first.status, first.body)
			}
			if got := o.fetches.Load(); got != c.fetches {
				t.Errorf("%d origin fetches, want %d", got, c.fetches)
			}
			if jobs := engineJobs(t, d); jobs != uint64(c.jobs) {
				t.Errorf("%d engine jobs, want %d", jobs, c.jobs)
			}
			inm, _ := o.lastINM.Load().(string)
			ims, _ := o.lastIMS.Load().(string)
			if (inm != "") != c.sentINM || (ims != "") != c.sentIMS {
				t.Errorf("last fetch sent If-None-Match %q, If-Modified-Since %q", inm, ims)
			}
			if c.sentINM || c.sentIMS {
				if got := cacheCount(t, d, "revalidations"); got != 1 {
					t.Errorf("%v revalidations, want 1", got)
				}
			}
		})
	}
}

func TestCacheRevalidationSeesAChangedOrigin(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	o := newCachingOrigin(t, photo, "Cache-Control", "no-cache", "ETag", `"v1"`)
	cfg := originConfig(t, true, "http://"+o.hostPort())
	cfg.CacheSize = 16 << 20
	srv, d := newTestServer(t, cfg)
	u := thumbURL(srv.URL, o.URL+"/a.jpg", "w=100")
	first := get(t, u)
	o.set(encodeJPEG(t, scene(300, 400), 90), "Cache-Control", "no-cache", "ETag", `"v2"`)
	changed := get(t, u)
	if changed.status != 200 || changed.header.Get("ETag") == first.header.Get("ETag") {
		t.Fatalf("after the origin changed: %d, ETag %s (was %s)", changed.status, changed.header.Get("ETag"), first.header.Get("ETag"))
	}
	if jobs := engineJobs(t, d); jobs != 2 {
		t.Errorf("%d engine jobs, want 2", jobs)
	}
	// The new version is kept and revalidated in turn: a 304, no job.
	sameAnswer(t, "revalidated", changed, get(t, u))
	if jobs := engineJobs(t, d); jobs != 2 || o.notModified.Load() != 1 {
		t.Errorf("%d engine jobs, %d 304s; want 2 and 1", jobs, o.notModified.Load())
	}
	// An origin that fails on revalidation: its error, nothing kept stale.
	o.Close()
	if a := get(t, u); a.status != 502 {
		t.Errorf("origin down: %d %s", a.status, a.body)
	}
}

func TestCacheKeyExcludesSignature(t *testing.T) {
	k1 := hexKey(t, "000102030405060708090a0b0c0d0e0f")
	k2 := hexKey(t, "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
	photo := encodeJPEG(t, scene(400, 300), 90)
	o := newCachingOrigin(t, photo, "Cache-Control", "max-age=600")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.jpg"), photo, 0o644)
	cfg := originConfig(t, true, "http://"+o.hostPort())
	cfg.SourceDir, cfg.SigningKeys, cfg.CacheSize = dir, [][]byte{k1, k2}, 16<<20
	srv, d := newTestServer(t, cfg)
	for _, q := range []string{"src=a.jpg&w=50", "url=" + o.URL + "/a.jpg&w=50"} {
		exp := fmt.Sprint(time.Now().Add(time.Hour).Unix())
		a := get(t, srv.URL+signedPath(t, k1, q))
		b := get(t, srv.URL+signedPath(t, k2, q+"&exp="+exp))
		sameAnswer(t, q, a, b)
		if a.status != 200 {
			t.Fatalf("%s: %d %s", q, a.status, a.body)
		}
		// The signature is still checked on a cached answer.
		if c := get(t, srv.URL+"/thumbnail?"+q); c.status != 401 && c.status != 403 && c.status != 400 {
			t.Errorf("unsigned %s: %d", q, c.status)
		}
	}
	if jobs := engineJobs(t, d); jobs != 2 {
		t.Errorf("%d engine jobs, want 2 (one per source)", jobs)
	}
}

func TestCacheStaysWithinItsBound(t *testing.T) {
	const bound = 256 << 10
	photo := encodeJPEG(t, scene(400, 300), 90)
	base, d := dirServer(t, map[string][]byte{"photo.jpg": photo}, func(c *config) { c.CacheSize = bound })
	for w := 100; w < 160; w++ {
		if a := get(t, fmt.Sprintf("%s/thumbnail?src=photo.jpg&w=%d", base, w)); a.status != 200 {
			t.Fatalf("w=%d: %d", w, a.status)
		}
		d.thumbs.Cache.CleanUp()
		if size := d.thumbs.Cache.Bytes(); size > bound {
			t.Fatalf("after w=%d the cache holds %d bytes, bound %d", w, size, bound)
		}
	}
	body := scrape(t, base)
	for _, m := range []string{"thumbd_cache_evictions_total ", "thumbd_cache_bytes ", "thumbd_cache_max_bytes 262144", "thumbd_cache_hits_total 0", "thumbd_cache_misses_total 60"} {
		if !strings.Contains(body, m) {
			t.Errorf("metrics lack %q", m)
		}
	}
	if strings.Contains(body, "thumbd_cache_evictions_total 0\n") {
		t.Error("no eviction counted")
	}
}

func scrape(t *testing.T, base string) string {
	t.Helper()
	_, _, b := do(t, "GET", base+"/metrics", nil)
	return string(b)
}

func TestCacheSizeIsCountedInTheMemoryBudget(t *testing.T) {
	none := func(string) bool { return false }
	c := testConfig(t)
	l := memlimit.Limit{Bytes: 512 << 20, Source: "test"}
	without, err := planMemory(c, l, none, "")
	if err != nil {
		t.Fatal(err)
	}
	c.CacheSize = 64 << 20
	with, err := planMemory(c, l, none, "")
	if err != nil {
		t.Fatal(err)
	}
	if sum := func(p memplan.Plan) int64 { return p.Cache + p.Sources + p.Outputs + p.Jobs }; sum(with) > sum(without) || with.Jobs >= without.Jobs {
		t.Errorf("with a 64 MiB cache: jobs %d (was %d), total %d (was %d)", with.Jobs, without.Jobs, sum(with), sum(without))
	}
	if with.GoLimit != without.GoLimit+64<<20-(without.Sources-with.Sources)-(without.Outputs-with.Outputs) {
		t.Errorf("Go limit %d, was %d: the cache is Go heap", with.GoLimit, without.GoLimit)
	}
	_, err = loadConfig(nil, envOf(map[string]string{"THUMBD_MEMORY_LIMIT": "268435456", "THUMBD_CACHE_SIZE": "200000000"}), nil)
	if err == nil || !strings.Contains(err.Error(), "THUMBD_CACHE_SIZE=200000000 does not fit") {
		t.Errorf("a cache larger than the limit allows: %v", err)
	}
}

// A url= thumbnail's Cache-Control carries the origin's: a CDN in front
// keeps no more than the origin allowed (the result cache already obeys
// it). The same on a 200, a cached 200 and a 304, with the cache on or
// off; files keep thumbd's own day.
func TestOriginCacheControlReachesTheAnswer(t *testing.T) {
	photo := encodeJPEG(t, scene(80, 60), 90)
	maxAge := regexp.MustCompile(`^public, max-age=(59[0-9]|600)$`)
	for _, c := range []struct {
		header []string
		want   func(string) bool
	}{
		{[]string{"Cache-Control", "no-store"}, func(s string) bool { return s == "no-store" }},
		{[]string{"Cache-Control", "private"}, func(s string) bool { return s == "private, no-cache" }},
		{[]string{"Cache-Control", "max-age=5"}, func(s string) bool { return s == "public, max-age=5" || s == "public, max-age=4" }},
		{[]string{"Cache-Control", "max-age=600", "ETag", `"v1"`}, maxAge.MatchString},
		{[]string{"Cache-Control", "no-cache", "ETag", `"v1"`}, func(s string) bool { return s == "public, no-cache" }},
	} {
		for _, size := range []int64{0, 16 << 20} {
			name := fmt.Sprintf("%s cache %d", c.header[1], size)
			o := newCachingOrigin(t, photo, c.header...)
			cfg := originConfig(t, true, "http://"+o.hostPort())
			cfg.CacheSize = size
			srv, _ := newTestServer(t, cfg)
			u := thumbURL(srv.URL, o.URL+"/a.jpg", "w=20")
			first := get(t, u)
			if first.status != 200 || !c.want(first.header.Get("Cache-Control")) {
				t.Errorf("%s: %d, Cache-Control %q", name, first.status, first.header.Get("Cache-Control"))
			}
			if again := get(t, u); !c.want(again.header.Get("Cache-Control")) {
				t.Errorf("%s, again: Cache-Control %q", name, again.header.Get("Cache-Control"))
			}
			status, h, _ := do(t, "GET", u, nil, "If-None-Match", first.header.Get("ETag"))
			if status != 304 || !c.want(h.Get("Cache-Control")) {
				t.Errorf("%s, 304: %d, Cache-Control %q", name, status, h.Get("Cache-Control"))
			}
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.jpg"), photo, 0o644)
	cfg := testConfig(t)
	cfg.SourceDir = dir
	srv, _ := newTestServer(t, cfg)
	if a := get(t, srv.URL+"/thumbnail?src=a.jpg&w=20"); a.header.Get("Cache-Control") != pipeline.CacheControl {
		t.Errorf("a file: Cache-Control %q", a.header.Get("Cache-Control"))
	}
}
