package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/results"
	"github.com/thumbd/thumbd/service/internal/source"
)

// The respond stage: every answer thumbd writes, errors included, goes
// through here.

// CacheControl is the caching header of an answer whose source sets no
// rules of its own (files, uploads): a day. An origin's answer carries the
// origin's rules (source.Freshness.CacheControl).
const CacheControl = source.DefaultCacheControl

// jsonType is the media type of every JSON answer.
const jsonType = "application/json"

// Responder writes answers; it is the one place errors are written and
// counted.
type Responder struct {
	rejections *prometheus.CounterVec // by reason: the error code; nil: not counted
	ttl        source.TTL             // the answers' Cache-Control lifetimes
}

// NewResponder counts rejections into rejections (by code) and gives the
// answers ttl's lifetimes.
func NewResponder(rejections *prometheus.CounterVec, ttl source.TTL) *Responder {
	return &Responder{rejections: rejections, ttl: ttl}
}

// HandlerFunc is a handler that returns its error instead of writing it.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Handle adapts h: an error it returns is written by rs.error.
func (rs *Responder) Handle(h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			rs.error(w, r, err)
		}
	})
}

// Rejections marks every error of an engine route (/thumbnail, /info) as
// a rejection, which the responder counts by its code.
func Rejections(next HandlerFunc) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		err := next(w, r)
		if err == nil {
			return nil
		}
		e := *apierr.From(err)
		e.Rejection = true
		return &e
	}
}

type loggerKey struct{}

// WithLogger is ctx carrying the request's logger (with its request ID).
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// LoggerFrom returns the request's logger (it carries the request ID).
func LoggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// error writes err in the API's shape, {"error":..., "code":...}, with its
// status; counts it when it is a rejection; logs the cause of a 5xx with
// the request's ID. A client that left gets nothing written.
func (rs *Responder) error(w http.ResponseWriter, r *http.Request, err error) {
	e := apierr.From(err)
	failSpan(trace.SpanFromContext(r.Context()), e)
	if e.Rejection && rs.rejections != nil {
		rs.rejections.WithLabelValues(string(e.Code)).Inc()
	}
	if e.Code == apierr.ClientGone {
		LoggerFrom(r.Context()).Info("client left before the answer", "err", e.Cause)
		return
	}
	switch {
	case e.Status() >= 500 && e.Cause != nil:
		LoggerFrom(r.Context()).Error("request failed", "code", e.Code, "err", e.Cause)
	case e.Cause != nil:
		// A refusal whose detail is not sent, such as the address the
		// SSRF guard refused: the operator sees it, the client does not.
		LoggerFrom(r.Context()).Warn("request refused", "code", e.Code, "err", e.Cause)
	}
	h := w.Header()
	if e.Status() == http.StatusServiceUnavailable {
		h.Set("Retry-After", strconv.FormatInt(int64(max((e.RetryAfter+time.Second-1)/time.Second, 1)), 10))
	}
	if e.Code == apierr.UploadsDisabled {
		h.Set("Allow", http.MethodGet) // a 405 names what the route serves
	}
	if e.CloseConnection {
		h.Set("Connection", "close")
	}
	WriteJSON(w, e.Status(), errorBody{Error: e.Message, Code: string(e.Code)})
	if e.CloseConnection {
		closeUnread(w)
	}
}

// ConnectionRefusal is the whole HTTP/1.1 answer a connection past the
// serving port's cap gets with THUMBD_PAST_CONNECTION_CAP=refuse (package
// connlimit writes it before reading the request): a 503 queue_full in the
// API's shape, with Retry-After: 1.
func ConnectionRefusal() []byte {
	body, err := json.Marshal(errorBody{Error: "Too many connections are open; retry shortly.", Code: string(apierr.QueueFull)})
	if err != nil {
		panic(err) // two strings always encode
	}
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: %s\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", jsonType, len(body), body)
}

// Evicted is what a request's body read returns when the serving port's
// cap takes its connection back for a client waiting for a place (the
// body came too slowly: package connlimit): a 503 queue_full with
// Retry-After, on a connection then closed, rather than silence.
func Evicted() error {
	return &apierr.Error{Code: apierr.QueueFull, CloseConnection: true, RetryAfter: time.Second,
		Message: "The request's body came too slowly while other clients waited for a connection; retry shortly."}
}

// rstAvoidance is how long a connection closed with its upload unread
// stays open after the answer, as net/http's own
// rstAvoidanceDelay: closing at once would reset it, and a reset can
// discard the answer before the client has read it.
const rstAvoidance = 500 * time.Millisecond

// closeUnread ends the connection after the answer without reading the rest
// of the upload. net/http's server reads up to 256 KB of an unread body once
// the handler returns, even when the answer says Connection: close (its
// body.Close drains to keep the connection, which the close then
// discards). Under overload, with clients sending again as soon as they are
// turned away, that read was most of what a refusal cost: 31 % of the
// server's CPU with 100 clients uploading 260 KB JPEGs (docs/hardening.md,
// "Overload with closed-loop clients"). Where the connection cannot be taken over
// (HTTP/2, a recorder in tests), the server's own close stays.
func closeUnread(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite() // the FIN after the answer: the client reads it whole
	}
	time.AfterFunc(rstAvoidance, func() { conn.Close() })
}

// jsonBody is v compact, with no trailing newline.
func jsonBody(v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, internalError(err)
	}
	return body, nil
}

// WriteJSON writes v compactly, with no trailing newline.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := jsonBody(v)
	if err != nil {
		// Only fixed types of thumbd's are written here.
		http.Error(w, `{"error":"response could not be encoded","code":"internal_error"}`, http.StatusInternalServerError)
		return
	}
	writeBody(w, status, jsonType, body)
}

func writeBody(w http.ResponseWriter, status int, mediaType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", mediaType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// matchesETag reports whether an If-None-Match header matches tag, with the
// weak comparison RFC 9110 prescribes for If-None-Match.
func matchesETag(header, tag string) bool {
	for _, candidate := range strings.Split(header, ",") {
		candidate = strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if candidate == "*" || candidate == tag {
			return true
		}
	}
	return false
}

// entry answers with a finished job, with its caching headers: a 304 when
// the job found the request's If-None-Match matched (an entry without a
// body: no job was admitted) or when inm matches; else the answer's body.
// The 304 is written here alone. A cached entry and a merged job's answer
// are written by the same lines as a fresh one, so their headers are the
// same.
func (rs *Responder) entry(w http.ResponseWriter, e *results.Entry, inm string) {
	h := w.Header()
	h.Set("ETag", e.ETag)
	// The source's rules as they stand now: an origin's remaining lifetime
	// shrinks as the entry ages; the same on a 304.
	h.Set("Cache-Control", e.Fresh.CacheControl(time.Now(), rs.ttl))
	if e.Body == nil || inm != "" && matchesETag(inm, e.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, http.StatusOK, e.Type, e.Body)
}
