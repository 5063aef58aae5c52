// Package bucket is thumbd's client of S3-compatible object storage (AWS
// S3, MinIO, Ceph RGW, SeaweedFS, R2, GCS's XML API, B2, versitygw): the
// source kind of THUMBD_SOURCE=s3://... and the result store use it. It
// wraps minio-go (docs/adr/0004-s3-client.md says why that client) with
// what thumbd asks of every outside call: connection caps and timeouts of
// its own transport, bounded retries of reads within the caller's
// deadline, errors as *apierr.Error values (the server's own words kept as
// the cause, for the log), metrics and a span per call.
//
// Making a client:
//
//	loc, err := bucket.ParseURL("s3://images/originals") // THUMBD_SOURCE, THUMBD_RESULT_STORE
//	conn, err := bucket.FromEnv(getenv)                   // the AWS SDKs' variables, through run's getenv
//	conn.Addressing = cfg.S3Addressing                    // THUMBD_S3_ADDRESSING
//	metrics := bucket.NewMetrics(registry)                // once per registry; every client shares it
//	c, err := bucket.New(loc, conn, bucket.Options{Use: "source", Metrics: metrics, Tracer: tracer})
//	obj, err := c.Stat(ctx, "a/b.jpg")                    // keys are relative to the location's prefix
//
// The endpoint is the operator's configuration, not a client's input: it
// may be on loopback or a private address, and the SSRF guard of url=
// sources does not apply to it.
package bucket

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

// Location is a bucket and a prefix in it: s3://BUCKET[/PREFIX].
type Location struct {
	Bucket string
	Prefix string // "" or ending in "/"
}

// ParseURL reads s3://BUCKET[/PREFIX]. The prefix is a folder: a trailing
// slash is implied, so s3://b/p holds p/a.jpg and never pa.jpg.
func ParseURL(raw string) (Location, error) {
	rest, ok := strings.CutPrefix(raw, "s3://")
	if !ok {
		return Location{}, errors.New("want s3://BUCKET[/PREFIX]")
	}
	name, prefix, _ := strings.Cut(rest, "/")
	if !validBucket(name) {
		return Location{}, errors.New("the bucket name " + quote(name) + " is not one S3 allows (3 to 63 lower-case letters, digits, '.' and '-')")
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if !ValidKey(prefix) {
			return Location{}, errors.New("the prefix " + quote(prefix) + " has an empty, '.' or '..' segment, or a control byte")
		}
		prefix += "/"
	}
	return Location{Bucket: name, Prefix: prefix}, nil
}

func quote(s string) string { return `"` + s + `"` }

func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Prefix }

// validBucket applies S3's naming rules (lower case, 3 to 63 bytes).
func validBucket(name string) bool {
	if len(name) < 3 || len(name) > 63 || strings.Contains(name, "..") {
		return false
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '-' || r == '.') && i > 0 && i < len(name)-1:
		default:
			return false
		}
	}
	return true
}

// MaxKey is the longest key S3 stores, in bytes.
const MaxKey = 1024

// ValidKey reports whether key is a relative, clean object key: no empty,
// "." or ".." segment (so no leading or doubled '/'), no NUL, control byte
// or backslash, and at most MaxKey bytes. Keys are checked before any
// request: a gateway that maps keys to files must not be handed one that
// climbs out of its bucket.
func ValidKey(key string) bool {
	if key == "" || len(key) > MaxKey {
		return false
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] == 0x7f || key[i] == '\\' {
			return false
		}
	}
	return true
}

// Options are how one client behaves; the zero value works.
type Options struct {
	// Use names what the client is for ("source", "result_store"): the
	// metrics' use label and the spans' attribute.
	Use     string
	Metrics *Metrics     // nil: not counted
	Tracer  trace.Tracer // nil: no spans
	// Timeout bounds one attempt (connect, headers and, for Get, the whole
	// body), within the caller's context. Default DefaultTimeout.
	Timeout time.Duration
	// MaxConns bounds the connections open to the endpoint at once (kept
	// alive when idle); more calls wait for one, within their deadline.
	// Default DefaultMaxConns.
	MaxConns int
	// Retries is how many more attempts a read (Stat, Get) makes after a
	// failure that may pass (a reset connection, a 5xx, SlowDown), with a
	// short backoff, never past the caller's deadline; a timed-out
	// attempt is not retried. Writes are never retried here. Default
	// DefaultRetries; negative: none.
	Retries int
}

// Defaults of Options.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultMaxConns = 32
	DefaultRetries  = 2
	// ConnectTimeout bounds one TCP connect and one TLS handshake.
	ConnectTimeout = 2 * time.Second
	// backoff is the first retry's wait, doubled for each next one.
	backoff = 50 * time.Millisecond
	// bucketSeenFor is how long a bucket known to exist is not asked again
	// when an object is missing (HEAD's 404 does not say which is).
	bucketSeenFor = 10 * time.Second
)

// Client is one bucket location, safe for concurrent use.
type Client struct {
	loc    Location
	opts   Options
	core   minio.Core
	tracer trace.Tracer
	noun   string // how messages name the bucket: "The source bucket"
	// bucketSeen is when the bucket was last known to exist (unix ns).
	bucketSeen atomic.Int64
}

// Object is what a bucket says of one object.
type Object struct {
	Key          string // relative to the location's prefix
	Size         int64
	ETag         string // as the server sent it, unquoted; "" when it sent none
	LastModified time.Time
	ContentType  string
	// Metadata is the object's user metadata (x-amz-meta-*), keys in
	// canonical header form without the prefix.
	Metadata map[string]string
}

// New returns a client of loc reached through conn.
func New(loc Location, conn Conn, opts Options) (*Client, error) {
	opts.Timeout = cmpOr(opts.Timeout, DefaultTimeout)
	opts.MaxConns = cmpOr(opts.MaxConns, DefaultMaxConns)
	if opts.Retries == 0 {
		opts.Retries = DefaultRetries
	}
	opts.Retries = max(opts.Retries, 0)
	endpoint, secure, lookup, err := conn.endpoint()
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{
		Proxy:               conn.proxy(),
		DialContext:         (&net.Dialer{Timeout: ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: ConnectTimeout,
		// Without a cap a burst of requests opens a connection each: thumbd
		// would pass a flood of its clients on to the bucket.
		MaxConnsPerHost:       opts.MaxConns,
		MaxIdleConns:          opts.MaxConns,
		MaxIdleConnsPerHost:   opts.MaxConns,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: opts.Timeout,
		ExpectContinueTimeout: time.Second,
		// Images are compressed already.
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	// The credentials' calls (STS, instance metadata) carry the web
	// identity token: a redirect is never followed, so it goes nowhere
	// but the endpoint configured.
	creds := conn.credentials(&http.Client{Transport: transport, Timeout: opts.Timeout,
		CheckRedirect: func(r *http.Request, _ []*http.Request) error {
			return errors.New("bucket: the credentials endpoint redirected to " + r.URL.Redacted() + ": not followed")
		}})
	mc, err := minio.New(endpoint, &minio.Options{
		Creds: creds, Secure: secure, Region: conn.Region, BucketLookup: lookup, Transport: endOnFailure{transport},
		// Retries are this package's: bounded by the caller's deadline,
		// for reads only.
		MaxRetries: 1,
	})
	if err != nil {
		return nil, err
	}
	tracer := opts.Tracer
	if tracer == nil {
		tracer = noop.NewTracerProvider().Tracer("")
	}
	noun := "The bucket"
	if opts.Use != "" {
		noun = "The " + strings.ReplaceAll(opts.Use, "_", " ") + " bucket"
	}
	return &Client{loc: loc, opts: opts, core: minio.Core{Client: mc}, tracer: tracer, noun: noun}, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Location is the client's bucket and prefix.
func (c *Client) Location() Location { return c.loc }

// Stat asks for key's size, ETag, modification time and metadata (a HEAD).
// A missing object is apierr.SourceNotFound.
func (c *Client) Stat(ctx context.Context, key string) (Object, error) {
	ctx, call := c.begin(ctx, opStat, key)
	var obj Object
	err := c.retry(ctx, call, func(ctx context.Context) error {
		ctx, try := c.newAttempt(ctx)
		defer try.cancel()
		info, err := c.core.StatObject(ctx, c.loc.Bucket, c.loc.Prefix+key, minio.StatObjectOptions{})
		if err == nil {
			obj = c.object(key, info)
			return nil
		}
		return c.classify(ctx, call, try.failure(err))
	})
	call.end(0, err)
	return obj, err
}

// NotFound reports whether err is a missing object's (a miss, for a
// store).
func NotFound(err error) bool { return errorCode(err) == apierr.SourceNotFound }

// GetOptions make a Get conditional.
type GetOptions struct {
	// IfMatch: only this version (an ETag); another version answers an
	// error that is ErrChanged.
	IfMatch string
	// Length, when above 0, asks for Length bytes at Offset (a Range
	// request): the Reader's Size is then the range's.
	Offset, Length int64
}

// Reader is an object's body, with what the bucket said of the object
// before a byte of it was read. Close it.
type Reader struct {
	Object
	body   io.ReadCloser
	n      int64
	call   *call
	ctx    context.Context // the attempt's, with its timeout
	cancel context.CancelFunc
	err    error // the body's failure, counted at Close
	closed bool
}

func (r *Reader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	r.n += int64(n)
	if err != nil && err != io.EOF {
		err = r.call.c.classify(r.ctx, r.call, err)
		r.err = err
	}
	return n, err
}

// Close ends the body (unread bytes are not downloaded: the connection is
// dropped) and the call's span and metrics.
func (r *Reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.body.Close()
	r.cancel()
	r.call.end(r.n, r.err)
	return err
}

// Get opens key's body. The object's size (Content-Length) is known
// before a byte is read: a caller with a bound closes the reader unread.
// An answer without Content-Length (chunked) has Size -1: the caller
// reads it as a body of unknown length, bounded as it reads.
// The attempt's timeout covers reading the body, until Close.
func (c *Client) Get(ctx context.Context, key string, o GetOptions) (*Reader, error) {
	ctx, call := c.begin(ctx, opGet, key)
	var r *Reader
	err := c.retry(ctx, call, func(ctx context.Context) error {
		ctx, try := c.newAttempt(ctx)
		opts := minio.GetObjectOptions{}
		if o.IfMatch != "" {
			opts.SetMatchETag(o.IfMatch)
		}
		if o.Length > 0 {
			if err := opts.SetRange(o.Offset, o.Offset+o.Length-1); err != nil {
				try.cancel()
				return err
			}
		}
		body, info, _, err := c.core.GetObject(ctx, c.loc.Bucket, c.loc.Prefix+key, opts)
		if err != nil {
			try.cancel()
			return c.classify(ctx, call, try.failure(err))
		}
		r = &Reader{Object: c.object(key, info), body: body, call: call, ctx: ctx, cancel: try.cancel}
		return nil
	})
	if err != nil {
		call.end(0, err)
		return nil, err
	}
	return r, nil
}

// Put stores body as key in one PUT (atomic: a reader sees the old object
// or the new one, never a part). It is not retried.
func (c *Client) Put(ctx context.Context, key string, body []byte, contentType string, metadata map[string]string) error {
	ctx, call := c.begin(ctx, opPut, key)
	ctx, try := c.newAttempt(ctx)
	defer try.cancel()
	_, err := c.core.PutObject(ctx, c.loc.Bucket, c.loc.Prefix+key, bytes.NewReader(body), int64(len(body)), "", "",
		minio.PutObjectOptions{ContentType: contentType, UserMetadata: metadata, DisableContentSha256: true})
	if err != nil {
		err = c.classify(ctx, call, try.failure(err))
	}
	call.end(int64(len(body)), err)
	return err
}

// Delete removes key; a missing key is no error (S3's DELETE is so).
func (c *Client) Delete(ctx context.Context, key string) error {
	ctx, call := c.begin(ctx, opDelete, key)
	ctx, try := c.newAttempt(ctx)
	defer try.cancel()
	err := c.core.RemoveObject(ctx, c.loc.Bucket, c.loc.Prefix+key, minio.RemoveObjectOptions{})
	if err != nil {
		err = c.classify(ctx, call, try.failure(err))
	}
	call.end(0, err)
	return err
}

// Check asks whether the bucket exists and the credentials are accepted
// (a HEAD of the bucket): nil, or BucketDenied, BucketNotFound,
// BucketUnreachable, BucketTimeout or BucketError. For start-up checks.
func (c *Client) Check(ctx context.Context) error {
	ctx, call := c.begin(ctx, opCheck, "")
	ctx, try := c.newAttempt(ctx)
	defer try.cancel()
	ok, err := c.core.BucketExists(ctx, c.loc.Bucket)
	if err == nil && try.resp.StatusCode == http.StatusNotFound {
		ok = false // BucketExists' own reading of the 404, ended early
	} else if err != nil {
		err = try.failure(err)
		if minio.ToErrorResponse(err).StatusCode == http.StatusNotFound {
			ok, err = false, nil
		}
	}
	switch {
	case err != nil:
		err = c.classify(ctx, call, err)
	case !ok:
		err = c.missingBucket(nil)
	default:
		c.bucketSeen.Store(time.Now().UnixNano())
	}
	call.end(0, err)
	return err
}

func (c *Client) object(key string, info minio.ObjectInfo) Object {
	meta := make(map[string]string, len(info.UserMetadata))
	for k, v := range info.UserMetadata {
		meta[http.CanonicalHeaderKey(k)] = v
	}
	return Object{Key: key, Size: info.Size, ETag: info.ETag, LastModified: info.LastModified, ContentType: info.ContentType, Metadata: meta}
}

// retry runs attempt, and again after a failure that may pass, while the
// retries and ctx's deadline allow.
func (c *Client) retry(ctx context.Context, call *call, attempt func(context.Context) error) error {
	wait := backoff
	for n := 0; ; n++ {
		call.attempts = n + 1
		err := attempt(ctx)
		if err == nil || n >= c.opts.Retries || !retryable(err) {
			return final(err)
		}
		// Full jitter around wait; never past the deadline, with room
		// left for the attempt itself.
		sleep := wait/2 + rand.N(wait/2+1)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < 2*sleep {
			return final(err)
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return final(err)
		case <-t.C:
		}
		wait *= 2
	}
}

// errRetry marks a failure worth one more attempt.
type errRetry struct{ error }

func (e errRetry) Unwrap() error { return e.error }

func retryable(err error) bool {
	var r errRetry
	return errors.As(err, &r)
}

// final is err without its retry mark.
func final(err error) error {
	if r, ok := err.(errRetry); ok {
		return r.error
	}
	return err
}

// ErrChanged is a conditional Get's answer when the object is no longer
// the version asked for (412 Precondition Failed).
var ErrChanged = errors.New("bucket: the object is not the version asked for")

// Classify turns a failed call into the API's answer: the caller's own end
// (deadline, departure) as ctx's error, which the pipeline answers; a
// missing object as a 404; anything about the bucket as its 5xx code, the
// server's own words kept as the cause (logged, never sent).
func (c *Client) classify(ctx context.Context, call *call, err error) error {
	var answer *apierr.Error
	if errors.As(err, &answer) {
		return err
	}
	if call.ctx.Err() != nil {
		return call.ctx.Err()
	}
	resp := minio.ToErrorResponse(err)
	where := c.loc.String()
	switch {
	case resp.StatusCode == 0:
		// No answer: the network, or the attempt's timeout.
		var ne net.Error
		// (The try's context is also cancelled at its failure: only its
		// deadline is a timeout.)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			return &apierr.Error{Code: apierr.BucketTimeout, Message: c.noun + " did not answer in time.", Cause: err}
		}
		var ue *url.Error
		if errors.As(err, &ue) || errors.As(err, new(*net.OpError)) {
			return errRetry{&apierr.Error{Code: apierr.BucketUnreachable, Message: c.noun + " could not be reached.", Cause: err}}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
			return errRetry{&apierr.Error{Code: apierr.BucketError, Message: c.noun + "'s answer broke off.", Cause: err}}
		}
		return &apierr.Error{Code: apierr.BucketError, Message: c.noun + " could not be read.", Cause: err}
	case resp.Code == minio.NoSuchBucket:
		return c.missingBucket(err)
	case resp.Code == minio.NoSuchKey || resp.StatusCode == http.StatusNotFound:
		if call.op == opStat && c.bucketGone(call.ctx) {
			return c.missingBucket(err)
		}
		return apierr.New(apierr.SourceNotFound, "No source named %q.", call.key)
	case resp.StatusCode == http.StatusPreconditionFailed:
		return &changed{err}
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized ||
		resp.Code == "InvalidAccessKeyId" || resp.Code == "SignatureDoesNotMatch" || resp.Code == "ExpiredToken":
		return &apierr.Error{Code: apierr.BucketDenied, Message: c.noun + " refused thumbd's credentials.", Cause: describe(where, err)}
	case resp.StatusCode >= 500 || resp.Code == "SlowDown":
		return errRetry{&apierr.Error{Code: apierr.BucketError, Message: c.noun + " failed to answer.", Cause: describe(where, err)}}
	}
	return &apierr.Error{Code: apierr.BucketError, Message: c.noun + " refused the request.", Cause: describe(where, err)}
}

func (c *Client) missingBucket(err error) error {
	return &apierr.Error{Code: apierr.BucketNotFound, Message: c.noun + " does not exist.", Cause: describe(c.loc.String(), err)}
}

// bucketGone reports whether a HEAD's 404 was the bucket's: asked at most
// every bucketSeenFor while the bucket is there, so a flood of missing
// names does not double the requests.
func (c *Client) bucketGone(ctx context.Context) bool {
	if time.Since(time.Unix(0, c.bucketSeen.Load())) < bucketSeenFor {
		return false
	}
	ctx, try := c.newAttempt(ctx)
	defer try.cancel()
	ok, err := c.core.BucketExists(ctx, c.loc.Bucket)
	if err == nil && ok {
		c.bucketSeen.Store(time.Now().UnixNano())
	}
	return try.resp.StatusCode == http.StatusNotFound || err == nil && !ok
}

type changed struct{ error }

func (changed) Is(target error) bool { return target == ErrChanged }
func (c changed) Unwrap() error      { return c.error }

// describe names the bucket in the cause that is logged.
func describe(where string, err error) error {
	if err == nil {
		return errors.New(where + ": the bucket does not exist")
	}
	return &located{where, err}
}

type located struct {
	where string
	err   error
}

func (l *located) Error() string { return l.where + ": " + l.err.Error() }
func (l *located) Unwrap() error { return l.err }

// Operations, as the metrics and spans name them.
const (
	opStat   = "stat"
	opGet    = "get"
	opPut    = "put"
	opDelete = "delete"
	opCheck  = "check"
)

// call is one operation's span and measurements.
type call struct {
	c        *Client
	ctx      context.Context // the caller's (with the span)
	op, key  string
	span     trace.Span
	start    time.Time
	attempts int
}

func (c *Client) begin(ctx context.Context, op, key string) (context.Context, *call) {
	ctx, span := c.tracer.Start(ctx, "bucket."+op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("thumbd.bucket.use", c.opts.Use),
		attribute.String("aws.s3.bucket", c.loc.Bucket),
		attribute.String("aws.s3.key", c.loc.Prefix+key)))
	return ctx, &call{c: c, ctx: ctx, op: op, key: key, span: span, start: time.Now(), attempts: 1}
}

func (k *call) end(n int64, err error) {
	code := ""
	if err != nil {
		code = string(errorCode(err))
		k.span.RecordError(err)
		k.span.SetStatus(codes.Error, code)
	}
	k.span.SetAttributes(attribute.Int64("thumbd.bucket.bytes", n), attribute.Int("thumbd.bucket.attempts", k.attempts))
	k.span.End()
	k.c.opts.Metrics.observe(k.c.opts.Use, k.op, time.Since(k.start), n, code)
}

// errorCode is the code a failed call is counted under: the API code, or
// the caller's deadline or departure.
func errorCode(err error) apierr.Code {
	var e *apierr.Error
	switch {
	case errors.As(err, &e):
		return e.Code // a bucket_timeout's cause is a deadline too
	case errors.Is(err, context.DeadlineExceeded):
		return apierr.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return apierr.ClientGone
	}
	return apierr.From(err).Code
}
