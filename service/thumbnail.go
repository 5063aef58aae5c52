package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// thumbnailer holds what both thumbnail routes share.
type thumbnailer struct {
	cfg     config
	engine  *thumb.Engine
	gate    *admission.Gate
	bodies  *admission.Bytes // bytes of POST bodies held
	life    *lifecycle
	sources *os.Root // nil when GET /thumbnail is off
	metrics *metrics
}

// queryParams adapts url.Values to thumb.Params: the first value counts.
type queryParams url.Values

func (q queryParams) Lookup(key string) (string, bool) {
	v, ok := q[key]
	if !ok {
		return "", false
	}
	return v[0], true
}

const cacheControl = "public, max-age=86400"

// handlePost makes a thumbnail of the request body.
func (t *thumbnailer) handlePost() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		q, ok := parseQuery(w, r)
		if !ok {
			return
		}
		opts, ok := t.parseOptions(w, q)
		if !ok {
			return
		}
		if r.ContentLength > t.cfg.MaxBodyBytes {
			t.reject(w, "body_too_large", http.StatusRequestEntityTooLarge, codeBodyTooLarge, bodyTooLargeMsg(t.cfg.MaxBodyBytes))
			return
		}
		// With every place taken, refuse before reading the body: under
		// overload most requests are turned away without their upload.
		if t.gate.Full() {
			// Close the connection instead of draining the unread upload
			// (Go's server reads up to 256 KB of it to keep the connection):
			// under overload a refusal then costs a reconnect, not a body.
			w.Header().Set("Connection", "close")
			t.queueFull(w)
			return
		}
		// The body is read before the request takes a place, from a byte
		// budget of (queue + concurrency) x the body limit shared by every
		// body: memory held by bodies stays bounded, and a client that sends
		// slowly holds only the bytes it sent, never a place (34 uploads at a
		// byte a second used to hold every place for the read timeout).
		body := t.bodies.Reader(http.MaxBytesReader(w, r.Body, t.cfg.MaxBodyBytes))
		defer body.Close()
		src, err := io.ReadAll(body)
		if errors.Is(err, admission.ErrNoRoom) {
			w.Header().Set("Retry-After", "1")
			t.reject(w, "body_budget", http.StatusServiceUnavailable, codeQueueFull, "Too many request bodies are being held; retry shortly.")
			return
		}
		if err != nil {
			t.metrics.rejections.WithLabelValues("body_unreadable").Inc()
			writeBodyError(w, err, t.cfg.MaxBodyBytes)
			return
		}
		ticket, ok := t.admit(w)
		if !ok {
			return
		}
		defer ticket.Release()
		t.process(w, r, ticket, start, src, opts, false)
	})
}

// handleGet makes a thumbnail of a file in the source directory.
func (t *thumbnailer) handleGet() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if t.sources == nil {
			writeError(w, http.StatusNotFound, codeSourcesDisabled, "GET /thumbnail is off: no source directory is configured (THUMBD_SOURCE_DIR).")
			return
		}
		q, ok := parseQuery(w, r)
		if !ok {
			return
		}
		src, ok := queryParams(q).Lookup("src")
		if !ok || !validSourceName(src) {
			writeError(w, http.StatusBadRequest, codeBadSourceName, "Parameter \"src\" must name a file inside the source directory: relative, without \"..\".")
			return
		}
		opts, ok := t.parseOptions(w, q)
		if !ok {
			return
		}
		ticket, ok := t.admit(w)
		if !ok {
			return
		}
		defer ticket.Release()
		body, status, code, msg := t.readSource(src)
		if status != 0 {
			writeError(w, status, code, msg)
			return
		}
		t.process(w, r, ticket, start, body, opts, true)
	})
}

func (t *thumbnailer) parseOptions(w http.ResponseWriter, q url.Values) (thumb.Options, bool) {
	opts, err := thumb.ParseOptions(queryParams(q), t.cfg.MaxSide)
	if err != nil {
		t.metrics.rejections.WithLabelValues("bad_parameter").Inc()
		writeError(w, http.StatusBadRequest, codeBadParameter, sentence(err.Error()))
		return thumb.Options{}, false
	}
	return opts, true
}

func (t *thumbnailer) admit(w http.ResponseWriter) (*admission.Ticket, bool) {
	ticket, err := t.gate.Admit()
	if err != nil {
		t.queueFull(w)
		return nil, false
	}
	return ticket, true
}

func (t *thumbnailer) queueFull(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	t.reject(w, "queue_full", http.StatusServiceUnavailable, codeQueueFull, "The thumbnail queue is full; retry shortly.")
}

func (t *thumbnailer) reject(w http.ResponseWriter, reason string, status int, code, msg string) {
	t.metrics.rejections.WithLabelValues(reason).Inc()
	writeError(w, status, code, msg)
}

// validSourceName applies the contract's rules before the file system is
// asked; os.Root then also refuses symlinks that lead outside.
func validSourceName(name string) bool {
	return name != "" && !strings.HasPrefix(name, "/") && !strings.Contains(name, "..") &&
		!strings.ContainsRune(name, 0) && !strings.Contains(name, "\\")
}

// readSource reads a file of the source directory; a non-zero status is the
// answer to give instead.
func (t *thumbnailer) readSource(name string) ([]byte, int, string, string) {
	// Non-blocking: opening a FIFO for reading otherwise waits for a writer,
	// forever, holding the request's admission place. Regular files ignore
	// the flag; anything else is refused below.
	f, err := t.sources.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, http.StatusNotFound, codeSourceNotFound, fmt.Sprintf("No source named %q.", name)
		}
		// os.Root refuses names that escape the directory, symlinks included.
		return nil, http.StatusBadRequest, codeBadSourceName, fmt.Sprintf("Source name %q is not inside the source directory.", name)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return nil, http.StatusNotFound, codeSourceNotFound, fmt.Sprintf("No source file named %q.", name)
	}
	if info.Size() > t.cfg.MaxBodyBytes {
		t.metrics.rejections.WithLabelValues("source_too_large").Inc()
		return nil, http.StatusUnprocessableEntity, codeSourceTooLarge, fmt.Sprintf("Source %q is larger than the %d bytes allowed.", name, t.cfg.MaxBodyBytes)
	}
	body, err := io.ReadAll(io.LimitReader(f, t.cfg.MaxBodyBytes+1))
	if err != nil {
		return nil, http.StatusInternalServerError, codeInternal, "The source could not be read."
	}
	if int64(len(body)) > t.cfg.MaxBodyBytes {
		return nil, http.StatusUnprocessableEntity, codeSourceTooLarge, fmt.Sprintf("Source %q is larger than the %d bytes allowed.", name, t.cfg.MaxBodyBytes)
	}
	return body, 0, "", ""
}

// etag is strong and derived from the source bytes and normalised options:
// the same source with the same options always gives the same bytes.
func etag(src []byte, opts thumb.Options) string {
	h := sha256.New()
	h.Write(src)
	h.Write([]byte{0})
	h.Write([]byte(opts.Normalised()))
	return `"` + hex.EncodeToString(h.Sum(nil)[:16]) + `"`
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

// process waits for libvips and a slot, then makes and writes the
// thumbnail. The deadline runs from the request's arrival.
func (t *thumbnailer) process(w http.ResponseWriter, r *http.Request, ticket *admission.Ticket, start time.Time, src []byte, opts thumb.Options, conditional bool) {
	tag := etag(src, opts)
	if conditional {
		if inm := r.Header.Get("If-None-Match"); inm != "" && matchesETag(inm, tag) {
			w.Header().Set("ETag", tag)
			w.Header().Set("Cache-Control", cacheControl)
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	t.metrics.sourceBytes.Observe(float64(len(src)))
	deadline := start.Add(t.cfg.Deadline)
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	if err := t.waitForSlot(ctx, ticket); err != nil {
		t.deadlineOrGone(w, r, err)
		return
	}
	t.metrics.queueWait.Observe(time.Since(start).Seconds())

	began := time.Now()
	img, err := t.engine.Thumbnail(src, opts)
	t.metrics.processing.Observe(time.Since(began).Seconds())
	if err != nil {
		t.writeEngineError(w, r, err)
		return
	}
	if time.Now().After(deadline) {
		t.deadlineOrGone(w, r, context.DeadlineExceeded)
		return
	}
	h := w.Header()
	h.Set("Content-Type", img.Format.ContentType())
	h.Set("Content-Length", strconv.Itoa(len(img.Bytes)))
	h.Set("ETag", tag)
	h.Set("Cache-Control", cacheControl)
	w.WriteHeader(http.StatusOK)
	w.Write(img.Bytes)
}

// waitForSlot waits for libvips to be up (a thumbnail that arrives during
// start-up waits rather than fails) and then for a processing slot.
func (t *thumbnailer) waitForSlot(ctx context.Context, ticket *admission.Ticket) error {
	select {
	case <-t.life.engineReady:
	case <-ctx.Done():
		return ctx.Err()
	}
	return ticket.Run(ctx)
}

func (t *thumbnailer) deadlineOrGone(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.DeadlineExceeded) {
		t.reject(w, "deadline", http.StatusGatewayTimeout, codeDeadline, fmt.Sprintf("The thumbnail was not done within the %s deadline.", t.cfg.Deadline))
		return
	}
	// The client went away while waiting: nobody reads an answer.
	t.metrics.rejections.WithLabelValues("client_gone").Inc()
	loggerFrom(r.Context()).Info("client left while queued", "err", err)
}

func (t *thumbnailer) writeEngineError(w http.ResponseWriter, r *http.Request, err error) {
	detail := sentence(err.Error())
	switch {
	case errors.Is(err, thumb.ErrUnsupportedFormat):
		t.reject(w, "unsupported_format", http.StatusUnsupportedMediaType, codeUnsupported, detail)
	case errors.Is(err, thumb.ErrTooManyPixels):
		t.reject(w, "too_many_pixels", http.StatusUnprocessableEntity, codeTooManyPixels, detail)
	case errors.Is(err, thumb.ErrTooManyFrames):
		t.reject(w, "too_many_frames", http.StatusUnprocessableEntity, codeTooManyFrames, detail)
	case errors.Is(err, thumb.ErrUndecodable):
		t.reject(w, "unprocessable", http.StatusUnprocessableEntity, codeUnprocessable, detail)
	default:
		loggerFrom(r.Context()).Error("thumbnail failed", "err", err)
		t.reject(w, "internal", http.StatusInternalServerError, codeInternal, "The thumbnail could not be made.")
	}
}

// sentence makes an error text read as a sentence for a person.
func sentence(s string) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")), " ")
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
