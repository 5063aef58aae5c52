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
	"strings"
)

// Backend is where stored results live. Keys are slash-separated paths of
// hex digits made by Store; a backend adds its own prefix.
type Backend interface {
	// Get is key's object, whole, its body at most max bytes (a larger
	// one is an error, not read); ErrNotFound when there is none.
	Get(ctx context.Context, key string, max int64) (Object, error)
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
