package params

import (
	"net/http"
	"testing"
)

// The route table is the engine routes, each reading its own job.
func TestRoutesReadTheirJobs(t *testing.T) {
	cases := []struct {
		method, path, query string
		info                bool
	}{
		{http.MethodGet, "/thumbnail", "src=a.jpg&w=10", false},
		{http.MethodPost, "/thumbnail", "w=10", false},
		{http.MethodGet, "/info", "src=a.jpg&thumbhash=false", true},
		{http.MethodPost, "/info", "", true},
	}
	if len(Routes()) != len(cases) {
		t.Fatalf("%d routes, want %d", len(Routes()), len(cases))
	}
	for _, c := range cases {
		rt, ok := RouteOf(c.method, c.path)
		if !ok || rt.Upload() != (c.method == http.MethodPost) {
			t.Fatalf("%s %s: found %t, upload %t", c.method, c.path, ok, rt.Upload())
		}
		q, err := rt.Query(c.query)
		if err != nil {
			t.Fatalf("%s %s?%s: %v", c.method, c.path, c.query, err)
		}
		req, err := rt.Read(Rules{MaxSide: 100}, q)
		job := req.Job()
		if err != nil || (job.Info != nil) != c.info || !c.info && job.Options.Width != 10 || c.method == http.MethodGet && req.Src != "a.jpg" {
			t.Errorf("%s %s?%s: %+v, %v", c.method, c.path, c.query, req, err)
		}
		if c.info && c.method == http.MethodGet && job.Info.ThumbHash {
			t.Errorf("GET /info?thumbhash=false asked for a ThumbHash")
		}
		if _, err := rt.Query("nonsense=1"); err == nil {
			t.Errorf("%s %s took an unknown parameter", c.method, c.path)
		}
	}
	if _, ok := RouteOf(http.MethodGet, "/hash"); ok {
		t.Error("/hash is no engine route")
	}
}
