// Package requestlog gives every request an ID and a logger carrying it,
// and logs one line per request.
package requestlog

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/thumbd/thumbd/service/internal/pipeline"
	"github.com/thumbd/thumbd/service/internal/statuswriter"
)

// IDs makes IDs that are unique per process without a syscall per
// request: a random prefix chosen at start-up and a counter.
type IDs struct {
	prefix string
	next   atomic.Uint64
}

func NewIDs() *IDs {
	b := make([]byte, 6)
	rand.Read(b)
	return &IDs{prefix: hex.EncodeToString(b)}
}

func (g *IDs) new() string {
	return g.prefix + "-" + strconv.FormatUint(g.next.Add(1), 10)
}

// validRequestID accepts a caller's X-Request-Id only when it is short and
// plain, so that logs cannot be forged or flooded through it.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// Middleware gives every request an ID (the caller's X-Request-Id when
// valid), echoes it in the response, puts a logger carrying it in the
// context, and logs one line per request: 5xx at error, 4xx at info and
// the rest at debug, so that a service taking thousands of requests a
// second does not spend its CPU on logging successes that metrics count.
func Middleware(base *slog.Logger, ids *IDs) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get("X-Request-Id")
			if !validRequestID(id) {
				id = ids.new()
			}
			w.Header().Set("X-Request-Id", id)
			var logger *slog.Logger
			if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
				// The server span's IDs: a log line leads to its trace.
				logger = base.With("request_id", id, "trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
			} else {
				logger = base.With("request_id", id)
			}
			ww := statuswriter.Wrap(w)
			start := time.Now()
			next.ServeHTTP(ww, r.WithContext(pipeline.WithLogger(r.Context(), logger)))
			level := slog.LevelDebug
			switch {
			case ww.Status() >= 500:
				level = slog.LevelError
			case ww.Status() >= 400:
				level = slog.LevelInfo
			}
			logger.Log(r.Context(), level, "request", "method", r.Method, "path", r.URL.Path,
				"status", ww.Status(), "bytes", ww.BytesWritten(), "duration_ms", float64(time.Since(start).Microseconds())/1000)
		})
	}
}
