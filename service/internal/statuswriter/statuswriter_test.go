package statuswriter

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Writer records what the request log and the metrics read: the
// final status (not an informational one, not a second WriteHeader), 200
// for a body written without one, 0 for no answer yet, and the body's
// bytes; flushing reaches the connection's writer through Unwrap.
func TestStatusWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		handle func(w http.ResponseWriter)
		status int
		bytes  int
		sent   int // what the recorder got (0: not checked: it keeps a 103 as the code)
	}{
		{"nothing written", func(w http.ResponseWriter) {}, 0, 0, http.StatusOK},
		{"body without a header", func(w http.ResponseWriter) { w.Write([]byte("hello")) }, http.StatusOK, 5, http.StatusOK},
		{"status then body", func(w http.ResponseWriter) { w.WriteHeader(http.StatusTeapot); w.Write([]byte("abc")) }, http.StatusTeapot, 3, http.StatusTeapot},
		{"informational first", func(w http.ResponseWriter) { w.WriteHeader(http.StatusEarlyHints); w.WriteHeader(http.StatusNotFound) }, http.StatusNotFound, 0, 0},
		{"second header ignored", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusAccepted)
			w.WriteHeader(http.StatusInternalServerError)
		}, http.StatusAccepted, 0, http.StatusAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			ww := Wrap(rec)
			if again := Wrap(ww); again != ww {
				t.Fatal("a wrapped writer was wrapped again")
			}
			tc.handle(ww)
			if ww.Status() != tc.status || ww.BytesWritten() != tc.bytes {
				t.Errorf("recorded status %d, %d bytes; want %d, %d", ww.Status(), ww.BytesWritten(), tc.status, tc.bytes)
			}
			if tc.sent != 0 && rec.Code != tc.sent {
				t.Errorf("sent %d, want %d", rec.Code, tc.sent)
			}
		})
	}
	rec := httptest.NewRecorder()
	ww := Wrap(rec)
	ww.Write([]byte("x"))
	if err := http.NewResponseController(ww).Flush(); err != nil || !rec.Flushed {
		t.Errorf("flush through the wrapper: err %v, flushed %v", err, rec.Flushed)
	}
}
