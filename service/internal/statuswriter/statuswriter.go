// Package statuswriter records an answer's status and body size as it is
// written, for the request log and the HTTP metrics: one wrapper a
// request, however many middlewares read it.
package statuswriter

import "net/http"

// Wrap is w as a Writer: w itself when it is one already, so a request
// goes through one wrapper, not one per middleware.
func Wrap(w http.ResponseWriter) *Writer {
	if ww, ok := w.(*Writer); ok {
		return ww
	}
	return &Writer{ResponseWriter: w}
}

// Writer records an answer's status and the bytes of its body. It is
// thumbd's own rather than chi's middleware.WrapResponseWriter: that
// package links net/http/pprof (and with it runtime/pprof, html and their
// initialisers) into the binary for a profiler thumbd does not serve
// (docs/coldstart.md). Flushing and hijacking go through Unwrap
// (http.ResponseController).
type Writer struct {
	http.ResponseWriter
	status, bytes int
}

func (w *Writer) WriteHeader(code int) {
	switch {
	case w.status != 0:
		return // net/http would log a second one as superfluous
	case code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols:
		// Informational: the final status is still to come.
	default:
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *Writer) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// Status is the answer's status, 0 while none was written.
func (w *Writer) Status() int { return w.status }

// BytesWritten is the size of the body written so far.
func (w *Writer) BytesWritten() int { return w.bytes }

func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
