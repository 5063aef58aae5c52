package probe

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Metric reads the unlabelled sample, not a labelled one of the same name,
// and NaN for a series the server does not have.
func TestMetric(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# HELP x\nthumbd_x_total{a=\"b\"} 9\nthumbd_x_total 20\n")
	}))
	defer srv.Close()
	ctx := context.Background()
	if v, err := Metric(ctx, srv.URL, "thumbd_x_total"); err != nil || v != 20 {
		t.Errorf("got %v %v, want 20", v, err)
	}
	if v, err := Metric(ctx, srv.URL, "thumbd_y_total"); err != nil || !math.IsNaN(v) {
		t.Errorf("absent: %v %v", v, err)
	}
	if s, body, err := Get(ctx, http.DefaultClient, srv.URL+"/metrics"); s != 200 || len(body) == 0 || err != nil {
		t.Errorf("get: %d %q %v", s, body, err)
	}
}
