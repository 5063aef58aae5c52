// Package apierr is the one error type of thumbd's API: an answer given
// instead of a result, with its HTTP status, its documented code and a
// sentence for a person. Stages and handlers return these as errors; one
// function in the service writes them (and counts the rejections).
package apierr

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Code is an error code of the API (the README lists every one).
type Code string

const (
	NotFound           Code = "not_found"
	MethodNotAllowed   Code = "method_not_allowed"
	BadParameter       Code = "bad_parameter"
	BadSourceName      Code = "bad_source_name"
	SourceNotFound     Code = "source_not_found"
	SourcesDisabled    Code = "sources_disabled"
	BodyTooLarge       Code = "body_too_large"
	SourceTooLarge     Code = "source_too_large"
	UnsupportedFormat  Code = "unsupported_format"
	UnprocessableImage Code = "unprocessable_image"
	TooManyPixels      Code = "too_many_pixels"
	TooManyFrames      Code = "too_many_frames"
	AnimationTooLarge  Code = "animation_too_large"
	// NeedsMoreMemory: the job's estimated peak is more than this
	// instance's whole memory budget for jobs; it could never run here.
	NeedsMoreMemory  Code = "needs_more_memory"
	QueueFull        Code = "queue_full"
	DeadlineExceeded Code = "deadline_exceeded"
	Internal         Code = "internal_error"

	// GET /thumbnail?url=: the URL's checks, the guard and the origin.
	OriginsDisabled      Code = "origins_disabled"
	BadURL               Code = "bad_url"
	URLSchemeNotAllowed  Code = "url_scheme_not_allowed"
	URLCredentials       Code = "url_credentials"
	OriginNotAllowed     Code = "origin_not_allowed"
	OriginAddressBlocked Code = "origin_address_blocked"
	OriginError          Code = "origin_error"
	TooManyRedirects     Code = "too_many_redirects"
	OriginTimeout        Code = "origin_timeout"

	// Signed URLs (THUMBD_SIGNING_KEYS).
	SignatureMissing Code = "signature_missing"
	BadSignature     Code = "bad_signature"
	SignatureExpired Code = "signature_expired"

	// UploadsDisabled answers a POST when THUMBD_UPLOADS=false.
	UploadsDisabled Code = "uploads_disabled"
	// EngineCrashed: the process making the thumbnail (a cell) died or
	// misbehaved during the job. Not retried: a source that kills one
	// cell would kill the next.
	EngineCrashed Code = "engine_crashed"
	// ClientGone is counted but never sent: the client left before the
	// answer (nginx's 499).
	ClientGone Code = "client_gone"
)

// StatusClientGone is the status ClientGone carries: no response is written.
const StatusClientGone = 499

// codes is every code with its status, in the README's order.
var codes = [...]struct {
	code   Code
	status int
}{
	{BadParameter, http.StatusBadRequest},
	{BadSourceName, http.StatusBadRequest},
	{BadURL, http.StatusBadRequest},
	{URLSchemeNotAllowed, http.StatusBadRequest},
	{URLCredentials, http.StatusBadRequest},
	{OriginNotAllowed, http.StatusForbidden},
	{OriginAddressBlocked, http.StatusForbidden},
	{SignatureMissing, http.StatusForbidden},
	{BadSignature, http.StatusForbidden},
	{SignatureExpired, http.StatusForbidden},
	{NotFound, http.StatusNotFound},
	{SourceNotFound, http.StatusNotFound},
	{SourcesDisabled, http.StatusNotFound},
	{OriginsDisabled, http.StatusNotFound},
	{MethodNotAllowed, http.StatusMethodNotAllowed},
	{UploadsDisabled, http.StatusMethodNotAllowed},
	{BodyTooLarge, http.StatusRequestEntityTooLarge},
	{UnsupportedFormat, http.StatusUnsupportedMediaType},
	{UnprocessableImage, http.StatusUnprocessableEntity},
	{TooManyPixels, http.StatusUnprocessableEntity},
	{TooManyFrames, http.StatusUnprocessableEntity},
	{AnimationTooLarge, http.StatusUnprocessableEntity},
	{NeedsMoreMemory, http.StatusUnprocessableEntity},
	{SourceTooLarge, http.StatusUnprocessableEntity},
	{OriginError, http.StatusBadGateway},
	{TooManyRedirects, http.StatusBadGateway},
	{QueueFull, http.StatusServiceUnavailable},
	{DeadlineExceeded, http.StatusGatewayTimeout},
	{OriginTimeout, http.StatusGatewayTimeout},
	{Internal, http.StatusInternalServerError},
	{EngineCrashed, http.StatusInternalServerError},
	{ClientGone, StatusClientGone},
}

// Status is the HTTP status a code is sent with.
func (c Code) Status() int {
	for _, e := range codes {
		if e.code == c {
			return e.status
		}
	}
	return http.StatusInternalServerError
}

// Codes lists every code that can be sent (ClientGone is not).
func Codes() []Code {
	var out []Code
	for _, e := range codes {
		if e.code != ClientGone {
			out = append(out, e.code)
		}
	}
	return out
}

// Error is an answer given instead of a result.
type Error struct {
	Code    Code
	Message string // a sentence for a person; never a stack or a path
	// Rejection marks a refused or failed thumbnail: it is counted in
	// thumbd_thumbnail_rejections_total with Code as its reason.
	Rejection bool
	// CloseConnection asks for the connection to be closed after the
	// answer: the request's upload was left unread, and closing costs the
	// client a reconnect where draining would cost the server the body.
	CloseConnection bool
	// Cause is logged with a 5xx, never sent.
	Cause error
	// RetryAfter is a 503's Retry-After, in whole seconds rounded up (at
	// most 1 s less is sent as 1).
	RetryAfter time.Duration
}

// New returns an error with code and a message made from format and args.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Status is the HTTP status of the answer.
func (e *Error) Status() int { return e.Code.Status() }

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

func (e *Error) Unwrap() error { return e.Cause }

// From returns the *Error in err's chain, or an internal_error carrying err
// as its cause: a failure nobody foresaw gets the API's shape too.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: Internal, Message: "The request could not be completed.", Cause: err}
}

// Sentence makes an error text read as a sentence for a person: one line,
// a capital first letter, a full stop.
func Sentence(s string) string {
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
