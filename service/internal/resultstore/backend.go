// Package resultstore is thumbd's result store: finished thumbnails kept
// outside the process (a directory shared by pods, or an S3 bucket), so
// that replicas share them and a process started from zero (scale-to-zero,
// a new pod) answers from them without an engine job.
//
// The pipeline sees Store (keys, write-behind queue, lookup timeout,
// breaker, metrics, spans); Store sees one small interface, Backend, with
// two implementations: Dir (a directory: a temporary file renamed into
// place) and Bucket (an S3 bucket: one PUT). The same test table runs
// against each (docs/storage.md).
package resultstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/thumbd/thumbd/service/internal/admission"
)

// Backend is where stored results live. Keys are slash-separated paths of
// hex digits made by Store; a backend adds its own prefix.
type Backend interface {
	// Get is key's object, whole, its body read by lim (at most lim.Max
	// bytes: a larger one is an error, not read; within lim.Budget);
	// ErrNotFound when there is none. The caller calls the object's
	// Release once its body is no longer held.
	Get(ctx context.Context, key string, lim Limits) (Object, error)
	// Put stores o under key, whole or not at all: a reader never sees
	// part of it.
	Put(ctx context.Context, key string, o Object) error
	// Check is the start-up probe: nil, a *RefusedError (the operator's
	// configuration: credentials, permissions, a missing bucket or
	// directory), or another error (unreachable for now).
	Check(ctx context.Context) error
	// String names the backend for logs (never a credential).
	String() string
}

// Object is one stored result: the image's bytes, its media type, and the
// few strings the answer needs beside them (metadata: printable ASCII
// names and values, as S3 user metadata requires).
type Object struct {
	ContentType string
	Meta        map[string]string
	Body        []byte
	release     func() // gives back the budget Body was read on; nil: none
}

// Release gives back the budget the body was read on (once).
func (o *Object) Release() {
	if o.release != nil {
		o.release()
		o.release = nil
	}
}

// Limits are how a backend reads a body: at most Max bytes, on Budget (the
// source budget: a stored result's bytes are held like a source's) when
// set, reserved before the first byte is read.
type Limits struct {
	Max    int64
	Budget *admission.Bytes
}

// errNoRoom is the budget spent, or not free within the lookup's time:
// not the store's failure.
var errNoRoom = errors.New("the source budget has no room for the stored object")

// read reads r's body of n bytes (-1: unknown) within l, and what gives
// its bytes back to the budget.
func (l Limits) read(ctx context.Context, r io.Reader, n int64) ([]byte, func(), error) {
	if n > l.Max {
		return nil, nil, errTooLarge(n, l.Max)
	}
	if l.Budget == nil {
		return readAll(r, n, l.Max, nil)
	}
	if n < 0 {
		br := l.Budget.Reader(r)
		return readAll(br, n, l.Max, br.Close)
	}
	br, err := l.Budget.Reserve(ctx, r, n)
	if err != nil {
		return nil, nil, errNoRoom
	}
	return readAll(br, n, l.Max, br.Close)
}

// readAll reads n bytes of r (n < 0: up to max, and one byte more to know
// it was passed); on failure release is called and nothing returned.
func readAll(r io.Reader, n, max int64, release func()) ([]byte, func(), error) {
	var body []byte
	var err error
	if n >= 0 {
		body = make([]byte, n)
		_, err = io.ReadFull(r, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(r, max+1))
		if err == nil && int64(len(body)) > max {
			err = errTooLarge(int64(len(body)), max)
		}
	}
	if errors.Is(err, admission.ErrNoRoom) {
		err = errNoRoom
	}
	if err != nil {
		if release != nil {
			release()
		}
		return nil, nil, err
	}
	if release == nil {
		release = func() {}
	}
	return body, release, nil
}

// ErrNotFound is a key the backend does not hold.
var ErrNotFound = errors.New("not in the result store")

// RefusedError is a backend refusing thumbd for a reason only the operator
// can change; at start-up it stops the service.
type RefusedError struct{ Err error }

// Error says why, with the backend's own words when the error carries them
// as its cause (the operator reads this at start-up).
func (e *RefusedError) Error() string {
	msg := e.Err.Error()
	if cause := errors.Unwrap(e.Err); cause != nil && !strings.Contains(msg, cause.Error()) {
		msg += ": " + cause.Error()
	}
	return "refused: " + msg
}
func (e *RefusedError) Unwrap() error { return e.Err }

// errTooLarge is an object over Get's bound.
func errTooLarge(size, max int64) error {
	return fmt.Errorf("stored object of %d bytes is over the %d bytes read back", size, max)
}
