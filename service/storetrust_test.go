package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

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
