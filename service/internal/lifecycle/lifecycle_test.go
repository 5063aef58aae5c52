package lifecycle

import (
	"net/http/httptest"
	"testing"

	"github.com/thumbd/thumbd/service/internal/pipeline"
)

func TestReadyFollowsLifecycle(t *testing.T) {
	life := New()
	h := (&pipeline.Responder{}).Handle(HandleReady(life))
	check := func(wantStatus int, want string) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/ready", nil))
		if rec.Code != wantStatus || rec.Body.String() != want {
			t.Fatalf("got %d %s, want %d %s", rec.Code, rec.Body, wantStatus, want)
		}
	}
	check(503, `{"status":"starting"}`)
	life.EngineStarted()
	check(200, `{"status":"ready"}`)
	life.Drain()
	check(503, `{"status":"draining"}`)
}
