package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/results"
	"github.com/thumbd/thumbd/service/internal/source"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// The respond stage: every answer thumbd writes, errors included, goes
// through here.

// cacheControl is the answer's Cache-Control where the source sets no
// rules of its own (files, uploads, /info): a day.
const cacheControl = source.DefaultCacheControl

// responder writes answers; it is the one place errors are written and
// counted.
type responder struct {
	rejections *prometheus.CounterVec // by reason: the error code
}

// handlerFunc is a handler that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts h: an error it returns is written by rs.error.
func (rs *responder) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			rs.error(w, r, err)
		}
	})
}

type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// error writes err in the API's shape, {"error":..., "code":...}, with its
// status; counts it when it is a rejection; logs the cause of a 5xx with
// the request's ID. A client that left gets nothing written.
func (rs *responder) error(w http.ResponseWriter, r *http.Request, err error) {
	e := apierr.From(err)
	failSpan(trace.SpanFromContext(r.Context()), e)
	if e.Rejection {
		rs.rejections.WithLabelValues(string(e.Code)).Inc()
	}
	if e.Code == apierr.ClientGone {
		loggerFrom(r.Context()).Info("client left before the answer", "err", e.Cause)
		return
	}
	switch {
	case e.Status() >= 500 && e.Cause != nil:
		loggerFrom(r.Context()).Error("request failed", "code", e.Code, "err", e.Cause)
	case e.Cause != nil:
		// A refusal whose detail is not sent, such as the address the
		// SSRF guard refused: the operator sees it, the client does not.
		loggerFrom(r.Context()).Warn("request refused", "code", e.Code, "err", e.Cause)
	}
	h := w.Header()
	if e.Status() == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	if e.Code == apierr.UploadsDisabled {
		h.Set("Allow", http.MethodGet) // a 405 names what the route serves
	}
	if e.CloseConnection {
		h.Set("Connection", "close")
	}
	writeJSON(w, e.Status(), errorBody{Error: e.Message, Code: string(e.Code)})
	if e.CloseConnection {
		closeUnread(w)
	}
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

// writeJSON writes v compactly, with no trailing newline.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only the fixed types of this package are written here.
		http.Error(w, `{"error":"response could not be encoded","code":"internal_error"}`, http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// notModified answers a GET whose If-None-Match matches tag with a 304
// (with the 200's Cache-Control, cc) and reports whether it did. POST is
// never conditional here.
func (rs *responder) notModified(w http.ResponseWriter, r *http.Request, tag, cc string) bool {
	if r.Method != http.MethodGet {
		return false
	}
	inm := r.Header.Get("If-None-Match")
	if inm == "" || !matchesETag(inm, tag) {
		return false
	}
	w.Header().Set("ETag", tag)
	w.Header().Set("Cache-Control", cc)
	w.WriteHeader(http.StatusNotModified)
	return true
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

// entry answers with a finished job: a 304 for a GET whose If-None-Match
// matches, else the image. A cached entry and a merged job's answer are
// written by the same lines as a fresh one, so their headers are the same.
// Its Cache-Control is its source's rules as they stand now (an origin's
// remaining lifetime shrinks as the entry ages).
func (rs *responder) entry(w http.ResponseWriter, r *http.Request, e *results.Entry) {
	cc := e.Fresh.CacheControl(time.Now())
	if !rs.notModified(w, r, e.ETag, cc) {
		rs.image(w, e.Image, e.ETag, cc)
	}
}

// image writes a thumbnail with its caching headers.
func (rs *responder) image(w http.ResponseWriter, img thumbjob.Image, tag, cc string) {
	h := w.Header()
	h.Set("Content-Type", img.Format.ContentType())
	h.Set("Content-Length", strconv.Itoa(len(img.Bytes)))
	h.Set("ETag", tag)
	h.Set("Cache-Control", cc)
	w.WriteHeader(http.StatusOK)
	w.Write(img.Bytes)
}
