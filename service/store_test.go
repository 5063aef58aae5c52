package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/service/internal/engines"
	"github.com/thumbd/thumbd/service/internal/lifecycle"
	"github.com/thumbd/thumbd/service/internal/resultstore"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// storeConfig is the configuration with THUMBD_RESULT_STORE set to dir, read
// as the service reads it (so the memory plan holds the write queue), with
// env's other settings.
func storeConfig(t *testing.T, dir string, env map[string]string) config {
	t.Helper()
	all := map[string]string{"THUMBD_RESULT_STORE": dir}
	for k, v := range env {
		all[k] = v
	}
	cfg, err := loadConfig(nil, envOf(all), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// storeServer is a service over cfg whose store is closed when t ends.
func storeServer(t *testing.T, cfg config) (string, deps) {
	t.Helper()
	srv, d := newTestServer(t, cfg)
	t.Cleanup(func() { d.store.Close(context.Background()) })
	return srv.URL, d
}

// lessOneSecond is a Cache-Control with max-age=N as it read a second
// before (N+1), to compare answers given a moment apart.
func lessOneSecond(cc string) string {
	head, n, ok := strings.Cut(cc, "max-age=")
	age, err := strconv.Atoi(n)
	if !ok || err != nil {
		return cc
	}
	return head + "max-age=" + strconv.Itoa(age+1)
}

// storeFixture is a source directory holding photo.jpg, an empty store
// directory, and the settings that serve the one.
func storeFixture(t *testing.T, photo []byte) (sources, store string, env map[string]string) {
	t.Helper()
	sources, store = t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(sources, "photo.jpg"), photo, 0o644); err != nil {
		t.Fatal(err)
	}
	return sources, store, map[string]string{"THUMBD_SOURCE_DIR": sources}
}

// waitWrites waits until d's store wrote n results in all.
func waitWrites(t *testing.T, d deps, n float64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); metricSum(t, d, "thumbd_result_store_writes_total") < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%g results written to the store after 10 s, want %g", metricSum(t, d, "thumbd_result_store_writes_total"), n)
		}
	}
}

// sameStoredAnswer is sameAnswer and the source's tags; b, answered
// later, may have a max-age one second lower (an origin's lifetime counts
// down).
func sameStoredAnswer(t *testing.T, what string, a, b answer) {
	t.Helper()
	if a.status != b.status || !bytes.Equal(a.body, b.body) {
		t.Fatalf("%s: status %d (%d bytes), first %d (%d bytes)", what, b.status, len(b.body), a.status, len(a.body))
	}
	for _, h := range []string{"ETag", "Content-Type", "Content-Length", "Vary", "X-Content-Type-Options"} {
		if a.header.Get(h) != b.header.Get(h) {
			t.Errorf("%s: %s %q, first %q", what, h, b.header.Get(h), a.header.Get(h))
		}
	}
	if ca, cb := a.header.Get("Cache-Control"), b.header.Get("Cache-Control"); ca != cb && ca != lessOneSecond(cb) {
		t.Errorf("%s: Cache-Control %q, first %q", what, cb, ca)
	}
	for _, h := range []string{"Surrogate-Key", "Cache-Tag"} {
		if a.header.Get(h) == "" || a.header.Get(h) != b.header.Get(h) {
			t.Errorf("%s: %s %q, first %q", what, h, b.header.Get(h), a.header.Get(h))
		}
	}
}

// TestResultStoreAnswersAnotherInstance: a thumbnail made by one instance
// is answered by another, whose memory cache is empty, from the store with
// no engine job: the same bytes and headers, its 304 too.
func TestResultStoreAnswersAnotherInstance(t *testing.T) {
	photo := encodeJPEG(t, scene(800, 600), 90)
	_, store, env := storeFixture(t, photo)
	a, da := storeServer(t, storeConfig(t, store, env))
	path := "/thumbnail?src=photo.jpg&w=256&format=auto"
	first := get(t, a+path, "Accept", "image/webp")
	if first.status != 200 || first.header.Get("Content-Type") != "image/webp" {
		t.Fatalf("%d %s", first.status, first.body)
	}
	waitWrites(t, da, 1)

	// /info's answers are kept too.
	info := get(t, a+"/info?src=photo.jpg")
	waitWrites(t, da, 2)

	// Conditional, with no memory cache: the store's entry gives the 304.
	c, dc := storeServer(t, storeConfig(t, store, env))
	sameStoredAnswer(t, "/info from the store", info, get(t, c+"/info?src=photo.jpg"))
	if hits := metricSum(t, dc, "thumbd_result_store_hits_total"); hits != 1 {
		t.Errorf("/info: %g store hits, want 1", hits)
	}
	if a := get(t, c+path, "Accept", "image/webp", "If-None-Match", first.header.Get("ETag")); a.status != 304 || a.header.Get("ETag") != first.header.Get("ETag") || len(a.body) != 0 {
		t.Errorf("If-None-Match from the store: %d, ETag %q, %d bytes", a.status, a.header.Get("ETag"), len(a.body))
	}
	if a := get(t, c+path, "Accept", "image/webp", "If-None-Match", `"other"`); a.status != 200 || !bytes.Equal(a.body, first.body) {
		t.Errorf("another If-None-Match from the store: %d, %d bytes", a.status, len(a.body))
	}
	if jobs := engineJobs(t, dc); jobs != 0 {
		t.Fatalf("conditional requests from the store ran %d engine jobs, want 0", jobs)
	}

	env["THUMBD_CACHE_SIZE"] = "16777216"
	b, db := storeServer(t, storeConfig(t, store, env))
	sameStoredAnswer(t, "from the store", first, get(t, b+path, "Accept", "image/webp"))
	if jobs := engineJobs(t, db); jobs != 0 {
		t.Fatalf("the second instance ran %d engine jobs, want 0", jobs)
	}
	if a := get(t, b+path, "Accept", "image/webp", "If-None-Match", first.header.Get("ETag")); a.status != 304 || a.header.Get("ETag") != first.header.Get("ETag") {
		t.Errorf("If-None-Match from the store: %d, ETag %q", a.status, a.header.Get("ETag"))
	}
	// The store's hit filled the memory cache: asked again, the store is not.
	if hits := metricSum(t, db, "thumbd_result_store_hits_total"); hits != 1 {
		t.Errorf("%g store hits, want 1 (then the memory cache)", hits)
	}
	// Another format is another key: a miss, made and written.
	if c := get(t, b+path, "Accept", "image/avif"); c.header.Get("Content-Type") != "image/avif" || engineJobs(t, db) != 1 {
		t.Errorf("another format: %s, %d jobs", c.header.Get("Content-Type"), engineJobs(t, db))
	}
	waitWrites(t, db, 1)
	if misses := metricSum(t, db, "thumbd_result_store_misses_total"); misses != 1 {
		t.Errorf("%g store misses, want 1", misses)
	}
}

// TestResultStoreNamesTheSource: every thumbnail answer names its source
// (without its version) in Surrogate-Key and Cache-Tag, the store files its
// thumbnails under that name, and deleting that prefix forgets them.
func TestResultStoreNamesTheSource(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	sources, store, env := storeFixture(t, photo)
	base, d := storeServer(t, storeConfig(t, store, env))
	tag := resultstore.Tag("src\x00photo.jpg")
	for _, w := range []string{"64", "128"} {
		a := get(t, base+"/thumbnail?src=photo.jpg&w="+w)
		if a.header.Get("Surrogate-Key") != tag || a.header.Get("Cache-Tag") != tag {
			t.Fatalf("Surrogate-Key %q, Cache-Tag %q; want %s", a.header.Get("Surrogate-Key"), a.header.Get("Cache-Tag"), tag)
		}
	}
	waitWrites(t, d, 2)
	if files, _ := filepath.Glob(filepath.Join(store, tag, "*")); len(files) != 2 {
		t.Fatalf("under the tag: %v, want the 2 thumbnails", files)
	}
	// The file changes: another version, the same name and tag.
	later := time.Now().Add(time.Minute)
	os.Chtimes(filepath.Join(sources, "photo.jpg"), later, later)
	if a := get(t, base+"/thumbnail?src=photo.jpg&w=64"); a.header.Get("Surrogate-Key") != tag {
		t.Errorf("a new version: Surrogate-Key %q, want %s", a.header.Get("Surrogate-Key"), tag)
	}
	// Purged: another instance computes it again.
	waitWrites(t, d, 3)
	if err := os.RemoveAll(filepath.Join(store, tag)); err != nil {
		t.Fatal(err)
	}
	other, od := storeServer(t, storeConfig(t, store, env))
	get(t, other+"/thumbnail?src=photo.jpg&w=128")
	if jobs := engineJobs(t, od); jobs != 1 {
		t.Errorf("after the purge: %d engine jobs, want 1", jobs)
	}
	// Uploads and origins are named too; errors of a named source as well.
	// An upload's name is its keyed hash's: the same for the same bytes,
	// another for other bytes.
	_, h, _ := postThumb(t, base, "?w=32", photo)
	_, again, _ := postThumb(t, base, "?w=64", photo)
	_, others, _ := postThumb(t, base, "?w=32", encodeJPEG(t, scene(400, 300), 80))
	if tag := h.Get("Surrogate-Key"); tag == "" || again.Get("Surrogate-Key") != tag || others.Get("Surrogate-Key") == tag || h.Get("Cache-Tag") != tag {
		t.Errorf("uploads: Surrogate-Key %q, the same bytes %q, others %q", tag, again.Get("Surrogate-Key"), others.Get("Surrogate-Key"))
	}
	if a := get(t, base+"/thumbnail?src=missing.jpg"); a.status != 404 || a.header.Get("Cache-Tag") != resultstore.Tag("src\x00missing.jpg") {
		t.Errorf("a missing source: %d, Cache-Tag %q", a.status, a.header.Get("Cache-Tag"))
	}
}

// TestResultStoreFollowsCacheRules: url= thumbnails are stored within the
// origin's caching rules, as the result cache keeps them; a stale one is
// revalidated with the origin by the instance that finds it.
func TestResultStoreFollowsCacheRules(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	for _, c := range []struct {
		name           string
		header         []string
		stored         bool
		fetches, jobs  int32 // the second instance's
		revalidatedINM bool
	}{
		{"max-age: stored", []string{"Cache-Control", "public, max-age=600"}, true, 0, 0, false},
		{"no-store: not stored", []string{"Cache-Control", "no-store, max-age=600", "ETag", `"v1"`}, false, 1, 1, false},
		{"private: not stored", []string{"Cache-Control", "private, max-age=600"}, false, 1, 1, false},
		{"no lifetime, no validator: not stored", nil, false, 1, 1, false},
		{"stale with ETag: stored, revalidated by the next", []string{"Cache-Control", "no-cache", "ETag", `"v1"`}, true, 1, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newCachingOrigin(t, photo, c.header...)
			store := t.TempDir()
			// Replicas sharing a store share its key, which keys the
			// identity of an origin's image without validators: the same
			// ETag from either.
			env := map[string]string{"THUMBD_ORIGINS": "http://" + o.hostPort(), "THUMBD_ORIGINS_ALLOW_LOOPBACK": "true", "THUMBD_RESULT_STORE_KEY": strings.Repeat("ab", 16)}
			a, da := storeServer(t, storeConfig(t, store, env))
			u := o.URL + "/a.jpg"
			first := get(t, thumbURL(a, u, "w=100&format=webp"))
			if first.status != 200 {
				t.Fatalf("%d %s", first.status, first.body)
			}
			if c.stored {
				waitWrites(t, da, 1)
			}
			b, db := storeServer(t, storeConfig(t, store, env))
			before := o.fetches.Load()
			sameStoredAnswer(t, "second instance", first, get(t, thumbURL(b, u, "w=100&format=webp")))
			if got := o.fetches.Load() - before; got != c.fetches {
				t.Errorf("second instance: %d origin fetches, want %d", got, c.fetches)
			}
			if jobs := engineJobs(t, db); jobs != uint64(c.jobs) {
				t.Errorf("second instance: %d engine jobs, want %d", jobs, c.jobs)
			}
			if inm, _ := o.lastINM.Load().(string); (inm != "") != c.revalidatedINM {
				t.Errorf("last fetch's If-None-Match %q", inm)
			}
			if c.stored && c.jobs == 0 {
				// Its 304 from the store says the origin's rules too.
				nm := get(t, thumbURL(b, u, "w=100&format=webp"), "If-None-Match", first.header.Get("ETag"))
				if cc := nm.header.Get("Cache-Control"); nm.status != 304 || cc != first.header.Get("Cache-Control") && lessOneSecond(cc) != first.header.Get("Cache-Control") {
					t.Errorf("If-None-Match from the store: %d, Cache-Control %q, first %q", nm.status, cc, first.header.Get("Cache-Control"))
				}
			}
			if !c.stored {
				if n := metricSum(t, da, "thumbd_result_store_writes_total") + metricSum(t, da, "thumbd_result_store_writes_dropped_total"); n != 0 {
					t.Errorf("%g writes tried, want none", n)
				}
			}
		})
	}
}

// TestResultStoreUploadsOnlyWhenAllowed: an upload's thumbnail is stored
// only with THUMBD_CACHE_UPLOADS, and without it no lookup is made. Two
// instances with the store's key agree on an upload's identity (a hash
// keyed by it), so the second finds the first's thumbnail.
func TestResultStoreUploadsOnlyWhenAllowed(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	for _, uploads := range []string{"false", "true"} {
		store := t.TempDir()
		env := map[string]string{"THUMBD_CACHE_UPLOADS": uploads, "THUMBD_RESULT_STORE_KEY": strings.Repeat("ab", 16)}
		a, da := storeServer(t, storeConfig(t, store, env))
		s1, h1, b1 := postThumb(t, a, "?w=64", photo)
		if uploads == "true" {
			waitWrites(t, da, 1)
		}
		b, db := storeServer(t, storeConfig(t, store, env))
		s2, h2, b2 := postThumb(t, b, "?w=64", photo)
		sameStoredAnswer(t, "upload", answer{s1, h1, b1}, answer{s2, h2, b2})
		wantJobs, wantLookups := uint64(1), 0.0
		if uploads == "true" {
			wantJobs, wantLookups = 0, 1
		}
		if jobs := engineJobs(t, db); jobs != wantJobs {
			t.Errorf("THUMBD_CACHE_UPLOADS=%s: %d engine jobs, want %d", uploads, jobs, wantJobs)
		}
		if n := metricSum(t, db, "thumbd_result_store_hits_total") + metricSum(t, db, "thumbd_result_store_misses_total"); n != wantLookups {
			t.Errorf("THUMBD_CACHE_UPLOADS=%s: %g lookups, want %g", uploads, n, wantLookups)
		}
		if used := db.thumbs.Limits.Budget.Used(); used != 0 {
			t.Errorf("%d source bytes still held", used)
		}
	}
}

// An upload's identity, and that of an origin's image without validators,
// is a hash under a key of the process's own unless the result store's
// key keys it: two instances without it name the same upload apart, and
// give an image without validators another ETag (so THUMBD_CACHE_UPLOADS
// with a store and no key does not start: no instance would find
// another's, nor its own after a restart); two with the same key alike.
// An image with a validator has the same ETag from any instance.
func TestUploadIdentityAcrossInstances(t *testing.T) {
	photo := encodeJPEG(t, scene(200, 150), 90)
	bare := newCachingOrigin(t, photo)
	validated := newCachingOrigin(t, photo, "Last-Modified", "Mon, 02 Jan 2026 15:04:05 GMT")
	type names struct{ upload, uploadETag, bareETag, validatedETag string }
	instance := func(env map[string]string) names {
		t.Helper()
		all := map[string]string{"THUMBD_ORIGINS": "http://" + bare.hostPort() + ",http://" + validated.hostPort(), "THUMBD_ORIGINS_ALLOW_LOOPBACK": "true"}
		maps.Copy(all, env)
		cfg, err := loadConfig(nil, envOf(all), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		srv, _ := newTestServer(t, cfg)
		status, h, body := postThumb(t, srv.URL, "?w=32", photo)
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		return names{h.Get("Surrogate-Key"), h.Get("ETag"),
			get(t, thumbURL(srv.URL, bare.URL+"/a.jpg", "w=32")).header.Get("ETag"),
			get(t, thumbURL(srv.URL, validated.URL+"/a.jpg", "w=32")).header.Get("ETag")}
	}
	a, b := instance(nil), instance(nil)
	if a.upload == b.upload || a.uploadETag == b.uploadETag || a.bareETag == b.bareETag {
		t.Errorf("two instances without a shared key: the same names %+v", a)
	}
	if a.validatedETag == "" || a.validatedETag != b.validatedETag {
		t.Errorf("an image with a validator: ETags %q and %q", a.validatedETag, b.validatedETag)
	}
	keyed := map[string]string{"THUMBD_RESULT_STORE": t.TempDir(), "THUMBD_RESULT_STORE_KEY": strings.Repeat("cd", 16)}
	if a, b := instance(keyed), instance(keyed); a != b || a.upload == "" || a.bareETag == "" {
		t.Errorf("two instances with the store's key: %+v and %+v", a, b)
	}
	delete(keyed, "THUMBD_RESULT_STORE_KEY")
	keyed["THUMBD_CACHE_UPLOADS"] = "true"
	if _, err := loadConfig(nil, envOf(keyed), io.Discard); err == nil || !strings.Contains(err.Error(), "THUMBD_CACHE_UPLOADS=true with THUMBD_RESULT_STORE: set THUMBD_RESULT_STORE_KEY") {
		t.Errorf("uploads stored without the store's key: %v", err)
	}
}

func TestResultStoreQueueIsCountedInTheMemoryPlan(t *testing.T) {
	none := func(string) bool { return false }
	c := testConfig(t)
	l := limitOf(512)
	without, err := planMemory(c, l, none, "")
	if err != nil {
		t.Fatal(err)
	}
	c.ResultStore, c.ResultStoreQueue = resultstore.Location{Dir: "/store"}, 16<<20
	with, err := planMemory(c, l, none, "")
	if err != nil {
		t.Fatal(err)
	}
	if with.StoreQueue != 16<<20 || with.Jobs >= without.Jobs {
		t.Errorf("with the store on: queue %d, jobs %d (was %d)", with.StoreQueue, with.Jobs, without.Jobs)
	}
	if with.GoLimit != without.GoLimit+16<<20-(without.Sources-with.Sources)-(without.Outputs-with.Outputs) {
		t.Errorf("Go limit %d, was %d: the queue is Go heap", with.GoLimit, without.GoLimit)
	}
	if off := testConfig(t); off.memory.StoreQueue != 0 {
		t.Errorf("store off: queue %d in the plan", off.memory.StoreQueue)
	}
	_, err = loadConfig(nil, envOf(map[string]string{"THUMBD_MEMORY_LIMIT": "268435456", "THUMBD_RESULT_STORE": t.TempDir(), "THUMBD_RESULT_STORE_QUEUE": "100000000"}), nil)
	if err == nil || !strings.Contains(err.Error(), "THUMBD_RESULT_STORE_QUEUE=100000000 does not fit") {
		t.Errorf("a queue larger than the limit allows: %v", err)
	}
}

func TestResultStoreSettings(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string // in the error; "" for none
	}{
		{map[string]string{"THUMBD_RESULT_STORE": "s3://"}, "THUMBD_RESULT_STORE"},
		{map[string]string{"THUMBD_RESULT_STORE": "s3://bucket/a/../b"}, "THUMBD_RESULT_STORE"},
		{map[string]string{"THUMBD_RESULT_STORE": "gs://bucket"}, "THUMBD_RESULT_STORE"},
		{map[string]string{"THUMBD_RESULT_STORE_TIMEOUT": "0s"}, "result store timeout"},
		{map[string]string{"THUMBD_RESULT_STORE_TIMEOUT": "20s"}, "result store timeout"},
		{map[string]string{"THUMBD_RESULT_STORE": "s3://bucket/thumbs/", "THUMBD_RESULT_STORE_TIMEOUT": "50ms"}, ""},
		{map[string]string{"THUMBD_RESULT_STORE": "s3://bucket", "AWS_ACCESS_KEY_ID": "k"}, "THUMBD_RESULT_STORE"},
		{map[string]string{"THUMBD_RESULT_STORE": "s3://bucket", "AWS_ENDPOINT_URL_S3": "ftp://host"}, "THUMBD_RESULT_STORE"},
	} {
		cfg, err := loadConfig(nil, envOf(c.env), io.Discard)
		if c.want == "" {
			if err != nil || cfg.ResultStore.String() != "s3://bucket/thumbs/" || cfg.ResultStoreTimeout != 50*time.Millisecond {
				t.Errorf("%v: %+v, %v", c.env, cfg.ResultStore, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.env, err, c.want)
		}
	}
}

// TestResultStoreRefusedAtStart: a store the operator must fix (here a
// directory that is not there) stops thumbd at start, naming the setting.
func TestResultStoreRefusedAtStart(t *testing.T) {
	logs := &launch.Log{}
	missing := filepath.Join(t.TempDir(), "missing")
	srv, err := launch.Start(context.Background(), launch.Spec{Command: []string{os.Args[0]},
		Env: []string{"THUMBD_TEST_MAIN=1", "THUMBD_RESULT_STORE=" + missing}, Stderr: logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(0) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, err := srv.Wait(ctx)
	if err != nil || code == 0 || !strings.Contains(logs.String(), "THUMBD_RESULT_STORE="+missing) {
		t.Fatalf("exit %d, %v; logs:\n%s", code, err, logs)
	}
}

var metricLine = regexp.MustCompile(`(?m)^([a-z_]+)(?:\{[^}]*\})? ([0-9.e+-]+)$`)

// processMetric sums a series read from a process's /metrics.
func processMetric(t *testing.T, base, name string) float64 {
	t.Helper()
	var sum float64
	for _, m := range metricLine.FindAllStringSubmatch(scrape(t, base), -1) {
		if m[1] == name {
			v, _ := strconv.ParseFloat(m[2], 64)
			sum += v
		}
	}
	return sum
}

// waitProcessMetric waits until a process's series reaches want.
func waitProcessMetric(t *testing.T, base, name string, want float64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); processMetric(t, base, name) < want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %g after 10 s, want %g", name, processMetric(t, base, name), want)
		}
	}
}

// TestResultStoreDirectorySharedByTwoProcesses: two thumbd processes on one
// store directory (a volume shared by pods); the second answers the
// first's thumbnails with no engine job, and the first the second's.
func TestResultStoreDirectorySharedByTwoProcesses(t *testing.T) {
	sources, store := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(sources, "photo.jpg"), encodeJPEG(t, scene(800, 600), 90), 0o644)
	env := []string{"THUMBD_SOURCE_DIR=" + sources, "THUMBD_RESULT_STORE=" + store}
	one, two := startChild(t, env...), startChild(t, env...)
	for i, pair := range [][2]*child{{one, two}, {two, one}} {
		path := fmt.Sprintf("/thumbnail?src=photo.jpg&w=%d&format=webp", 100+i)
		made := get(t, pair[0].addr+path)
		waitProcessMetric(t, pair[0].addr, "thumbd_result_store_writes_total", 1)
		jobs := processMetric(t, pair[1].addr, "thumbd_thumbnail_processing_seconds_count")
		sameStoredAnswer(t, "the other process", made, get(t, pair[1].addr+path))
		if after := processMetric(t, pair[1].addr, "thumbd_thumbnail_processing_seconds_count"); after != jobs {
			t.Errorf("the other process ran %g engine jobs for a stored thumbnail", after-jobs)
		}
		if !bytes.Equal(made.body[:4], []byte("RIFF")) {
			t.Errorf("not a WebP: % x", made.body[:4])
		}
	}
}

// TestTraceOfTheResultStore: a lookup is a span of the request, a write a
// span in its trace (ending after the answer); a hit's trace has no
// engine stage.
func TestTraceOfTheResultStore(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	sources, store, env := storeFixture(t, photo)
	traced := func() (string, *tracetest.SpanRecorder) {
		cfg := storeConfig(t, store, env)
		root, err := os.OpenRoot(sources)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { root.Close() })
		tr, rec := recorded()
		life := lifecycle.New()
		life.EngineStarted()
		logger := slog.New(slog.DiscardHandler)
		d := newDeps(cfg, logger, engines.InProcess{Engine: thumb.New(engineConfig(cfg, logger))}, life, root, tr)
		t.Cleanup(func() { d.store.Close(context.Background()) })
		return newTestServerFrom(t, d).URL, rec
	}
	span := func(rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			for _, s := range rec.Ended() {
				if s.Name() == name {
					return s
				}
			}
		}
		t.Fatalf("no span %s", name)
		return nil
	}
	path := "/thumbnail?src=photo.jpg&w=64"
	a, rec := traced()
	get(t, a+path)
	tree := waitSpans(t, rec, "GET /thumbnail")
	tree.childOf(t, "result_store.get", "GET /thumbnail")
	if v, _ := attr(tree["result_store.get"], "thumbd.result_store"); v.AsString() != "miss" {
		t.Errorf("lookup of a new thumbnail: %q, want miss", v.AsString())
	}
	put := span(rec, "result_store.put")
	if put.Parent().SpanID() != tree["GET /thumbnail"].SpanContext().SpanID() || put.SpanContext().TraceID() != tree["GET /thumbnail"].SpanContext().TraceID() {
		t.Errorf("the write's span is not in the request's trace")
	}

	b, rec := traced()
	get(t, b+path)
	tree = waitSpans(t, rec, "GET /thumbnail")
	if v, _ := attr(tree["result_store.get"], "thumbd.result_store"); v.AsString() != "hit" {
		t.Errorf("lookup of a stored thumbnail: %q, want hit", v.AsString())
	}
	if _, ok := tree["engine"]; ok {
		t.Errorf("a store hit ran the engine: %v", tree.names())
	}
}
