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

// Code is an error code of the API (docs/api.md lists every one, from
// the table below).
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

	// GET /thumbnail?src= from a bucket (THUMBD_SOURCE=s3://...): the
	// operator's storage failing, each a 5xx of its own; the bucket's own
	// words go to the log. A missing object is SourceNotFound.
	BucketDenied      Code = "bucket_denied"
	BucketNotFound    Code = "bucket_not_found"
	BucketUnreachable Code = "bucket_unreachable"
	BucketError       Code = "bucket_error"
	BucketTimeout     Code = "bucket_timeout"

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

// codes is every code with its status and when it is sent, in the order
// of docs/api.md's error table.
var codes = [...]struct {
	code   Code
	status int
	// when says when the code is sent, for docs/api.md's error table
	// (Markdown; generated from this table, a test checks it).
	when string
}{
	{BadParameter, http.StatusBadRequest,
		"a query parameter out of range or malformed (also a broken request body)"},
	{BadSourceName, http.StatusBadRequest,
		"`src` absolute, containing `..`, empty, not canonical (an empty or `.` segment: `./a.jpg`, `a//b.jpg`, `a/./b.jpg`, a trailing `/`), or resolving (symlinks included) outside the source directory; for a bucket source, an empty, `.` or `..` segment, a control byte or backslash, or a key over 1024 bytes"},
	{BadURL, http.StatusBadRequest,
		"`url` empty, not an absolute URL with a host, or with a bad port"},
	{URLSchemeNotAllowed, http.StatusBadRequest,
		"`url` (or a redirect) with a scheme other than `http` or `https`"},
	{URLCredentials, http.StatusBadRequest,
		"`url` (or a redirect) with user information (`user:password@`)"},
	{OriginNotAllowed, http.StatusForbidden,
		"`url` (or a redirect) whose scheme, host or port no `THUMBD_ORIGINS` entry allows"},
	{OriginAddressBlocked, http.StatusForbidden,
		"the origin's name resolved to an address the guard refuses (private, loopback, link-local, ...)"},
	{SignatureMissing, http.StatusForbidden,
		"signed URLs are on (`THUMBD_SIGNING_KEYS`) and the `GET /thumbnail` (or, unless `THUMBD_UNSIGNED_UPLOADS=true`, the `POST /thumbnail`) has no `sig`"},
	{BadSignature, http.StatusForbidden,
		"`sig` does not match the path and query under any key, or is not 43 characters of base64url"},
	{SignatureExpired, http.StatusForbidden,
		"the signed `exp` (Unix seconds) has passed"},
	{NotFound, http.StatusNotFound,
		"no such route"},
	{SourceNotFound, http.StatusNotFound,
		"no such file in the source directory or object in the source bucket, or the origin answered 404 or 410"},
	{SourcesDisabled, http.StatusNotFound,
		"`GET /thumbnail?src=` with no `THUMBD_SOURCE` or `THUMBD_SOURCE_DIR`"},
	{OriginsDisabled, http.StatusNotFound,
		"`GET /thumbnail?url=` with no `THUMBD_ORIGINS`"},
	{MethodNotAllowed, http.StatusMethodNotAllowed,
		"the route exists, not with this method"},
	{UploadsDisabled, http.StatusMethodNotAllowed,
		"`POST /thumbnail` or `POST /hash` with `THUMBD_UPLOADS=false` (sent with `Allow: GET`; the body is not read)"},
	{BodyTooLarge, http.StatusRequestEntityTooLarge,
		"body over `THUMBD_MAX_BODY_BYTES`"},
	{UnsupportedFormat, http.StatusUnsupportedMediaType,
		"bytes of no format thumbd reads (it reads JPEG, PNG, WebP, AVIF, GIF, HEIC, TIFF, JPEG XL, BMP and ICO; not SVG, PDF, PSD, text, empty...)"},
	{UnprocessableImage, http.StatusUnprocessableEntity,
		"a supported format that does not decode: truncated, corrupt"},
	{TooManyPixels, http.StatusUnprocessableEntity,
		"source width x height (a GIF's declared screen included) over `THUMBD_MAX_PIXELS`, read from the header before decoding; also a `cover` whose scaled source (before the crop) would be over it, such as a 1x40000 strip covered to 256x256"},
	{TooManyFrames, http.StatusUnprocessableEntity,
		"more frames than `THUMBD_MAX_FRAMES`"},
	{AnimationTooLarge, http.StatusUnprocessableEntity,
		"`animated=true` whose frames x output width x height is over `THUMBD_MAX_ANIMATION_PIXELS` (its frames x source pixels, all decoded, count against `THUMBD_MAX_PIXELS`: `too_many_pixels`)"},
	{NeedsMoreMemory, http.StatusUnprocessableEntity,
		"the job's estimated memory (from the source's header, the box and the format) is more than this instance's whole budget for thumbnails (`THUMBD_MEMORY_BUDGET`, derived from its memory limit): it could never run here; the sentence gives both figures. A job that fits the budget but not now waits for memory instead"},
	{SourceTooLarge, http.StatusUnprocessableEntity,
		"a source file or an origin's image over the body limit"},
	{OriginError, http.StatusBadGateway,
		"the origin answered neither 200 nor 404/410, or its name did not resolve, or it could not be connected to (refused, TLS) or read"},
	{TooManyRedirects, http.StatusBadGateway,
		"the origin redirected more than 3 times"},
	{BucketDenied, http.StatusBadGateway,
		"the source bucket (`THUMBD_SOURCE=s3://...`) refused thumbd's credentials (the bucket's words are logged, not sent)"},
	{BucketNotFound, http.StatusBadGateway,
		"the source bucket does not exist"},
	{BucketUnreachable, http.StatusBadGateway,
		"the source bucket's endpoint could not be connected to (refused, unknown name, TLS)"},
	{BucketError, http.StatusBadGateway,
		"the source bucket failed otherwise (a 5xx after bounded retries, an answer that broke off)"},
	{QueueFull, http.StatusServiceUnavailable,
		"every processing slot and queue place taken, the queue would keep the request past its deadline (by the recent jobs' service times; `Retry-After` is then the estimated wait, and the upload is unread), or the bytes of sources being held at their budget (`source-budget`); otherwise sent with `Retry-After: 1`; the request was never admitted, or its job never started"},
	{DeadlineExceeded, http.StatusGatewayTimeout,
		"an admitted thumbnail's deadline (queue wait plus processing) passed"},
	{OriginTimeout, http.StatusGatewayTimeout,
		"the origin's image was not fetched within `THUMBD_FETCH_TIMEOUT`, or a connect to it took over 2 s"},
	{BucketTimeout, http.StatusGatewayTimeout,
		"a call to the source bucket did not finish within `THUMBD_SOURCE_TIMEOUT`, or a connect to it took over 2 s"},
	{Internal, http.StatusInternalServerError,
		"a failure thumbd did not foresee (logged with the request ID)"},
	{EngineCrashed, http.StatusInternalServerError,
		"cells mode: the cell making the thumbnail died during the job (a decoder crash, out of memory, killed by its sandbox) or answered outside the protocol; logged with the request ID, the cell's PID and how it ended (`signal SIGSEGV`); never retried, since a source that kills one cell would kill the next; the cell is replaced"},
	{ClientGone, StatusClientGone,
		"never sent: the client left before its answer (nginx's 499); counted in thumbd_thumbnail_rejections_total only"},
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

// When says when c is sent (Markdown: docs/api.md's error table).
func (c Code) When() string {
	for _, e := range codes {
		if e.code == c {
			return e.when
		}
	}
	return ""
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
