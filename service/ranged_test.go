package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/s3test"
	"github.com/thumbd/thumbd/service/internal/apierr"
)

// TestVideoReadByRange: a video file of the source directory is read by
// range: its index and the packets of the frames the job decodes, within
// THUMBD_MAX_BODY_BYTES read, whatever the file's length. The answer is
// the one the whole file gives (uploaded), in both engine modes; the
// bytes read are counted (thumbd_source_read_bytes_total{ranged="true"})
// and are a small part of the file; a job whose ranges are more than the
// limit is a 422 source_too_large that says so.
func TestVideoReadByRange(t *testing.T) {
	// 6 s of 640x360 at 4 Mb/s, a keyframe a second, its index at the end:
	// about 3 MB, three times the limit below.
	clip := videoOf("640x360", 6, "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-b:v", "4M", "-pix_fmt", "yuv420p")(t)
	const limit = 1 << 20
	if len(clip) < 2*limit {
		t.Fatalf("the clip is %d bytes, not over twice the %d-byte limit", len(clip), limit)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "clip.mp4"), clip, 0o644); err != nil {
		t.Fatal(err)
	}
	small := func(cfg config) config {
		cfg.SourceDir, cfg.MaxBodyBytes = dir, limit
		return cfg
	}
	whole, _ := newTestServer(t, testConfig(t)) // uploads of the whole file
	inproc, d := newTestServer(t, small(testConfig(t)))
	cells := newCellsServer(t, small(cellsConfig(t)), "")
	queries := []string{"w=96", "w=96&t=4.5&keyframe=true", "w=96&t=3.3", "w=96&frames=3&keyframe=true", "w=96&every=2&keyframe=true"}
	for _, q := range queries {
		s0, _, want := postThumb(t, whole.URL, "?"+q, clip)
		if s0 != 200 {
			t.Fatalf("%s, uploaded whole: %d %s", q, s0, want)
		}
		for _, base := range []string{inproc.URL, cells.URL} {
			s, _, got := do(t, "GET", base+"/thumbnail?src=clip.mp4&"+q, nil)
			if s != 200 || !bytes.Equal(got, want) {
				t.Errorf("%s at %s: %d (%d bytes; %.200s), want the whole file's %d bytes", q, base, s, len(got), got, len(want))
			}
		}
	}
	read := metricSum(t, d, "thumbd_source_read_bytes_total")
	if read <= 0 || read > float64(len(queries)*len(clip))/4 {
		t.Errorf("%.0f bytes read by range for %d jobs of a %d-byte file: want a small part of it", read, len(queries), len(clip))
	}
	t.Logf("%d jobs read %.0f bytes of a %d-byte file by range", len(queries), read, len(clip))

	// Every frame exact and spread over the video: its groups of pictures
	// are most of the file, more than the limit.
	s, _, b := do(t, "GET", inproc.URL+"/thumbnail?src=clip.mp4&w=96&frames=12", nil)
	var e errorBody
	if json.Unmarshal(b, &e) != nil || s != 422 || e.Code != string(apierr.SourceTooLarge) || !strings.Contains(e.Error, "the packets of the frames it decodes") {
		t.Errorf("12 exact frames: %d %s, want a 422 source_too_large about the bytes the frames need", s, b)
	}

	// Finding the ranges holds what it reads (the index) in the source
	// budget: with no room for it, the job is the budget's 503, not a
	// "too large" for the whole file, and the budget is whole again after.
	tight, td := newTestServer(t, func(cfg config) config {
		cfg = small(cfg)
		cfg.SourceBudget = 2 << 10
		return cfg
	}(testConfig(t)))
	s, _, b = do(t, "GET", tight.URL+"/thumbnail?src=clip.mp4&w=96", nil)
	e = errorBody{}
	if json.Unmarshal(b, &e) != nil || s != 503 || e.Code != string(apierr.QueueFull) {
		t.Errorf("ranges found beyond the source budget: %d %s, want a 503 queue_full", s, b)
	}
	if used := metricSum(t, td, "thumbd_memory_budget_used_bytes"); used != 0 {
		t.Errorf("%.0f bytes of the budgets still taken after the refusal", used)
	}
}

// TestVideoReadByRangeFromBucket: a video object of a gigabyte in a real
// S3 server (versitygw) is read by range, each range a GET of the
// version identified (Range, If-Match): its thumbnail is the clip's, and
// the bytes read are a few hundred kilobytes of it, within a 1 MiB
// THUMBD_MAX_BODY_BYTES.
func TestVideoReadByRangeFromBucket(t *testing.T) {
	clip := videoOf("640x360", 6, "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-b:v", "4M", "-pix_fmt", "yuv420p", "-movflags", "+faststart")(t)
	const size = 1 << 30
	// The clip, then a free box to a gigabyte: a file every reader skips
	// to its end (ffmpeg's reads as the clip).
	free := make([]byte, 8)
	binary.BigEndian.PutUint32(free, uint32(size-len(clip)))
	copy(free[4:], "free")
	s := s3test.ForTest(t)
	ctx := context.Background()
	if err := s.MakeBucket(ctx, "videos"); err != nil {
		t.Fatal(err)
	}
	body := io.MultiReader(bytes.NewReader(clip), bytes.NewReader(free), io.LimitReader(zeros{}, int64(size-len(clip)-len(free))))
	if _, err := s.PutReader(ctx, "videos", "big.mp4", body, size); err != nil {
		t.Fatal(err)
	}
	cfg := bucketConfig(t, s, "s3://videos", nil)
	cfg.MaxBodyBytes = 1 << 20
	srv, d := newTestServer(t, cfg)
	whole, _ := newTestServer(t, testConfig(t))
	for _, q := range []string{"w=96&t=4.5&keyframe=true", "w=96"} {
		_, _, want := postThumb(t, whole.URL, "?"+q, clip)
		s, _, got := do(t, "GET", srv.URL+"/thumbnail?src=big.mp4&"+q, nil)
		if s != 200 || !bytes.Equal(got, want) {
			t.Errorf("%s: %d (%d bytes; %.200s), want the clip's %d bytes", q, s, len(got), got, len(want))
		}
	}
	read := metricSum(t, d, "thumbd_source_read_bytes_total")
	fromBucket := metricSum(t, d, "thumbd_bucket_bytes_total")
	if read <= 0 || read > 2<<20 || fromBucket <= 0 || fromBucket > 2<<20 {
		t.Errorf("%.0f bytes read (%.0f from the bucket) for 2 thumbnails of a %d-byte object", read, fromBucket, size)
	}
	t.Logf("2 thumbnails read %.0f bytes (%.0f from the bucket, %d GETs) of a %d-byte object by range", read, fromBucket, bucketGets(t, d), size)

	// An image is read in one GET, as before ranges: its first bytes
	// sniffed, the rest read from the same answer.
	if _, err := s.Put(ctx, "videos", "photo.jpg", encodeJPEG(t, scene(400, 300), 90)); err != nil {
		t.Fatal(err)
	}
	before := bucketGets(t, d)
	if s, _, b := do(t, "GET", srv.URL+"/thumbnail?src=photo.jpg&w=64", nil); s != 200 || bucketGets(t, d) != before+1 {
		t.Errorf("an image: %d %.100s in %d GETs, want a thumbnail in one", s, b, bucketGets(t, d)-before)
	}
	if s, _, b := do(t, "GET", srv.URL+"/info?src=big.mp4", nil); s != 200 || !bytes.Contains(b, []byte(`"bytes":1073741824`)) {
		t.Errorf("/info: %d %s, want the object's length", s, b)
	}
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestVideoReadByRangeFromOrigin: an origin that serves ranges (a 206 with
// the length and a strong ETag: Go's http.ServeContent) is read by range,
// each range held to that ETag: the clip's thumbnail, a part of it read.
// One that ignores ranges (a 200 whatever is asked), or gives only a weak
// ETag, is read whole within THUMBD_MAX_BODY_BYTES: over it, a 422.
func TestVideoReadByRangeFromOrigin(t *testing.T) {
	clip := videoOf("640x360", 6, "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-b:v", "4M", "-pix_fmt", "yuv420p")(t)
	photo := encodeJPEG(t, scene(400, 300), 90)
	var served, gets atomic.Int64
	serve := func(etag string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			gets.Add(1)
			w.Header().Set("ETag", etag)
			// The bytes of ranges asked: the first GET's answer is the
			// whole file, its rest left unread by thumbd (what the kernel
			// buffered of it before the connection closed is not).
			var cw http.ResponseWriter = w
			if r.Header.Get("Range") != "" {
				cw = &countingWriter{ResponseWriter: w, n: &served}
			}
			b := clip
			if strings.HasSuffix(r.URL.Path, ".jpg") {
				b = photo
			}
			http.ServeContent(cw, r, "", time.Unix(1e9, 0), bytes.NewReader(b))
		}
	}
	ranges := newOrigin(t, serve(`"v1"`))
	weak := newOrigin(t, serve(`W/"v1"`))
	plain := newOrigin(t, serveBytes(clip))
	cfg := originConfig(t, true, "http://"+ranges.hostPort(), "http://"+weak.hostPort(), "http://"+plain.hostPort())
	cfg.MaxBodyBytes = 1 << 20
	srv, _ := newTestServer(t, cfg)
	whole, _ := newTestServer(t, testConfig(t))
	const q = "w=96&t=4.5&keyframe=true"
	_, _, want := postThumb(t, whole.URL, "?"+q, clip)
	s, _, got := do(t, "GET", thumbURL(srv.URL, ranges.URL+"/clip.mp4", q), nil)
	if s != 200 || !bytes.Equal(got, want) {
		t.Errorf("by range: %d (%d bytes; %.200s), want the clip's %d bytes", s, len(got), got, len(want))
	}
	if n := served.Load(); n <= 0 || n > int64(len(clip))/4 {
		t.Errorf("the origin served %d bytes of ranges of the %d-byte clip", n, len(clip))
	}
	t.Logf("one thumbnail: the origin served %d bytes of ranges of %d", served.Load(), len(clip))
	// An image from the same origin: one GET, read whole, as ever.
	gets.Store(0)
	if s, _, b := do(t, "GET", thumbURL(srv.URL, ranges.URL+"/photo.jpg", "w=64"), nil); s != 200 || gets.Load() != 1 {
		t.Errorf("an image: %d %.100s in %d GETs, want a thumbnail in one", s, b, gets.Load())
	}
	for _, o := range []*testOrigin{weak, plain} {
		getError(t, thumbURL(srv.URL, o.URL+"/clip.mp4", q), 422, apierr.SourceTooLarge)
	}
}

// countingWriter counts the body bytes written.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return w.ResponseWriter.Write(p)
}

// bucketGets is how many GETs the bucket client made.
func bucketGets(t *testing.T, d deps) uint64 {
	t.Helper()
	families, err := d.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != "thumbd_bucket_request_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "op" && l.GetValue() == "get" {
					n += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}

// TestVideoRevalidatedByRange: a thumbnail of an origin's video whose
// freshness has run out is revalidated with a conditional GET. A 304
// renews it without a range read; a 200 (the video changed: a new ETag)
// is read by range as a first read is, where a whole read would refuse
// the video as larger than THUMBD_MAX_BODY_BYTES.
func TestVideoRevalidatedByRange(t *testing.T) {
	clip := videoOf("640x360", 6, "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-b:v", "4M", "-pix_fmt", "yuv420p")(t)
	var served, conditional atomic.Int64
	var etag atomic.Value
	etag.Store(`"v1"`)
	origin := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != "" {
			conditional.Add(1)
		}
		w.Header().Set("ETag", etag.Load().(string))
		w.Header().Set("Cache-Control", "max-age=0") // stale at once: every request revalidates
		var cw http.ResponseWriter = w
		if r.Header.Get("Range") != "" {
			cw = &countingWriter{ResponseWriter: w, n: &served}
		}
		http.ServeContent(cw, r, "", time.Unix(1e9, 0), bytes.NewReader(clip))
	})
	cfg := originConfig(t, true, "http://"+origin.hostPort())
	cfg.MaxBodyBytes, cfg.CacheSize = 1<<20, 16<<20
	srv, _ := newTestServer(t, cfg)
	whole, _ := newTestServer(t, testConfig(t))
	const q = "w=96&t=4.5&keyframe=true"
	_, _, want := postThumb(t, whole.URL, "?"+q, clip)
	get := func(what string, wantRanged bool) {
		t.Helper()
		before, conds := served.Load(), conditional.Load()
		s, _, got := do(t, "GET", thumbURL(srv.URL, origin.URL+"/clip.mp4", q), nil)
		if s != 200 || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d (%d bytes; %.200s), want the clip's thumbnail", what, s, len(got), got)
		}
		if ranged := served.Load() > before; ranged != wantRanged {
			t.Errorf("%s: ranges read %v (%d bytes), want %v", what, ranged, served.Load()-before, wantRanged)
		}
		if what != "first" && conditional.Load() == conds {
			t.Errorf("%s: no conditional GET", what)
		}
	}
	get("first", true)
	get("revalidated, unchanged (304)", false)
	etag.Store(`"v2"`)
	get("revalidated, changed (200)", true)
}
