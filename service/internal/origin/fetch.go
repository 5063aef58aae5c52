// Package origin is the source kind of GET /thumbnail?url=: an image
// fetched from an HTTP origin that THUMBD_ORIGINS allows, through a client
// whose every connection passes the SSRF guard (guard.go), bounded in time
// and bytes like every other source.
package origin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/source"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// MaxRedirects is the number of redirects followed; each one is checked
// against the allow-list, and its connection by the guard.
const MaxRedirects = 3

// ConnectTimeout bounds one TCP connect (the fetch timeout bounds the rest).
const ConnectTimeout = 2 * time.Second

// Config is the origin settings.
type Config struct {
	Patterns []Pattern // THUMBD_ORIGINS
	// AllowLoopback (THUMBD_ORIGINS_ALLOW_LOOPBACK) lets a loopback host
	// (LoopbackHost) reach loopback addresses; every other host stays
	// refused them, wildcards included.
	AllowLoopback bool
	FetchTimeout  time.Duration // THUMBD_FETCH_TIMEOUT, within the request's deadline
	// IdleConns is how many idle connections are kept per origin host:
	// about the number of fetches in flight at once, so that a busy origin
	// is not reconnected to on every fetch.
	IdleConns int
	// MaxConnsPerHost bounds the connections open to one origin host at
	// once (THUMBD_ORIGIN_MAX_CONNS); more fetches wait for one.
	MaxConnsPerHost int
	// Resolver resolves origin names; nil is the system's. Tests give a
	// resolver of their own (DNS rebinding).
	Resolver  *net.Resolver
	UserAgent string
	Accept    string // the media types thumbd reads
	// Observe, if set, is told of every fetch: how long it took, how many
	// bytes it read and the code it failed with ("" on success).
	Observe func(d time.Duration, bytes int, code apierr.Code)
	// Transport, if set, wraps the guarded transport (tracing: a client
	// span and traceparent on every request, redirects included). It sits
	// above the dialer, so the guard still judges every address dialed.
	Transport func(http.RoundTripper) http.RoundTripper
}

// Fetcher makes origin sources.
type Fetcher struct {
	cfg    Config
	limits source.Limits
	client *http.Client
}

// New returns a fetcher reading through limits (the byte budget and size
// limit every source shares).
func New(cfg Config, limits source.Limits) *Fetcher {
	f := &Fetcher{cfg: cfg, limits: limits}
	dialer := func(allowLoopback bool) *net.Dialer {
		return &net.Dialer{Timeout: ConnectTimeout, KeepAlive: 30 * time.Second, Resolver: cfg.Resolver, Control: guard(allowLoopback)}
	}
	strict, loose := dialer(false), dialer(cfg.AllowLoopback)
	transport := &http.Transport{
		// No proxy, whatever HTTP_PROXY and friends say: through a proxy
		// the guard would judge the proxy's address, not the origin's.
		Proxy: nil,
		// The host dialed is the one the allow-list checked (Check
		// rewrites the URL to it): only a loopback one may reach loopback.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, _, err := net.SplitHostPort(addr); err == nil && LoopbackHost(host) {
				return loose.DialContext(ctx, network, addr)
			}
			return strict.DialContext(ctx, network, addr)
		},
		// A custom dialer turns HTTP/2 off unless asked for; CDNs speak it.
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: ConnectTimeout,
		MaxIdleConns:        4 * max(cfg.IdleConns, 1),
		MaxIdleConnsPerHost: max(cfg.IdleConns, 1),
		// Without a cap, a burst of url= requests naming one origin opens
		// a connection each: thumbd would amplify a flood onto it.
		MaxConnsPerHost: cfg.MaxConnsPerHost,
		IdleConnTimeout: 90 * time.Second,
		// Images are compressed already; a gzip'ed body would only cost CPU
		// (and be one more way to inflate bytes past a Content-Length).
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	var rt http.RoundTripper = transport
	if cfg.Transport != nil {
		rt = cfg.Transport(transport)
	}
	f.client = &http.Client{Transport: rt, CheckRedirect: f.checkRedirect}
	return f
}

// checkRedirect follows at most MaxRedirects redirects, each to a URL that
// passes the same checks as the first.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return apierr.New(apierr.TooManyRedirects, "The origin redirected more than %d times.", MaxRedirects)
	}
	if err := checkURL(req.URL, f.cfg.Patterns); err != nil {
		e := *apierr.From(err)
		e.Message = "The origin redirected to a URL thumbd does not fetch: " + e.Message
		return &e
	}
	return nil
}

// Source checks rawURL (before any connection is made) and returns the
// source that fetches it.
func (f *Fetcher) Source(rawURL string) (source.Keyed, error) {
	u, err := Check(rawURL, f.cfg.Patterns)
	if err != nil {
		return nil, err
	}
	return remote{f, u}, nil
}

// remote is one origin URL.
type remote struct {
	f *Fetcher
	u *url.URL
}

// Key is the checked URL: the signature's sig= and exp= are parameters of
// thumbd's URL, not of this one, so rotating keys keeps the key.
func (s remote) Key() string { return "url\x00" + s.u.String() }

// Identity is the URL: an origin's image has no version in its key (its
// freshness is the origin's caching headers').
func (s remote) Identity() string { return s.Key() }

// ReadSince fetches the URL with prior's validators (If-None-Match,
// If-Modified-Since): a 304 gives a blob with NotModified set and no
// bytes, its freshness renewed from the 304's headers.
func (s remote) ReadSince(ctx context.Context, prior source.Freshness) (*source.Blob, error) {
	return s.observed(ctx, func(ctx context.Context) (*source.Blob, error) { return s.fetch(ctx, &prior) })
}

// Read fetches the URL within the fetch timeout (inside ctx, the request's
// deadline), and reads its body through the byte budget and the size
// limit: a Content-Length over the limit is refused before the body is
// read, and a body that turns out longer is cut off at the limit.
func (s remote) Read(ctx context.Context) (*source.Blob, error) {
	return s.observed(ctx, func(ctx context.Context) (*source.Blob, error) { return s.fetch(ctx, nil) })
}

// observed runs fetch and tells Observe of it.
func (s remote) observed(ctx context.Context, fetch func(context.Context) (*source.Blob, error)) (*source.Blob, error) {
	start := time.Now()
	blob, err := fetch(ctx)
	if s.f.cfg.Observe != nil {
		n, code := 0, apierr.Code("")
		if blob != nil {
			n = len(blob.Bytes)
		}
		if err != nil && ctx.Err() == nil {
			code = apierr.From(err).Code
		} else if err != nil {
			code = apierr.DeadlineExceeded
			if errors.Is(ctx.Err(), context.Canceled) {
				code = apierr.ClientGone
			}
		}
		s.f.cfg.Observe(time.Since(start), n, code)
	}
	return blob, err
}

// fetch is a GET of the URL; with prior, a conditional one.
func (s remote) fetch(ctx context.Context, prior *source.Freshness) (*source.Blob, error) {
	fetchCtx, cancel := context.WithTimeout(ctx, s.f.cfg.FetchTimeout)
	defer cancel()
	resp, err := s.get(fetchCtx, 0, 0, "", prior)
	if err != nil {
		return nil, s.fetchError(ctx, fetchCtx, err)
	}
	defer resp.Body.Close()
	now := time.Now()
	switch {
	case resp.StatusCode == http.StatusNotModified && prior != nil:
		return &source.Blob{NotModified: true, Fresh: Renewed(*prior, resp.Header, now)}, nil
	case resp.StatusCode == http.StatusOK:
		return s.whole(ctx, fetchCtx, resp, now)
	}
	return nil, statusError(resp.StatusCode)
}

// ReadRanges fetches the URL by range when plan finds the ranges a job
// needs (a video's index and the packets of the frames it decodes:
// source.Ranged). The GET is the one Read makes; its first bytes are
// sniffed before the rest is read. A video whose origin says it serves
// ranges (Accept-Ranges: bytes) under a strong ETag, with its length,
// is then read by range instead, each range a GET held to that ETag
// (If-Match), within the fetch timeout: the video of any length, the
// bytes read within MaxBytes. Anything else (an image, an origin without
// ranges or a strong ETag) is read from that same answer, whole and
// bounded, as Read reads it: one GET, as before.
func (s remote) ReadRanges(ctx context.Context, plan source.Planner) (*source.Blob, error) {
	if plan == nil {
		return s.Read(ctx)
	}
	return s.observed(ctx, func(ctx context.Context) (*source.Blob, error) { return s.fetchRanges(ctx, plan, nil) })
}

// ReadRangesSince is ReadSince for a job that may read by range
// (source.ConditionalRanged): a conditional GET whose 304 renews the
// thumbnail kept, and whose 200 (the image changed, or an origin that
// ignores the condition) is read as ReadRanges reads it: a long video by
// range, where a whole read would refuse it as too large.
func (s remote) ReadRangesSince(ctx context.Context, prior source.Freshness, plan source.Planner) (*source.Blob, error) {
	return s.observed(ctx, func(ctx context.Context) (*source.Blob, error) { return s.fetchRanges(ctx, plan, &prior) })
}

// sniffHead is how much of an answer is read before deciding to read it
// by range: as many bytes as a video's container is sniffed from.
const sniffHead = 4096

func (s remote) fetchRanges(ctx context.Context, plan source.Planner, prior *source.Freshness) (*source.Blob, error) {
	fetchCtx, cancel := context.WithTimeout(ctx, s.f.cfg.FetchTimeout)
	defer cancel()
	resp, err := s.get(fetchCtx, 0, 0, "", prior)
	if err != nil {
		return nil, s.fetchError(ctx, fetchCtx, err)
	}
	defer resp.Body.Close()
	now := time.Now()
	switch {
	case resp.StatusCode == http.StatusNotModified && prior != nil:
		return &source.Blob{NotModified: true, Fresh: Renewed(*prior, resp.Header, now)}, nil
	case resp.StatusCode != http.StatusOK:
		return nil, statusError(resp.StatusCode)
	}
	etag, size := resp.Header.Get("ETag"), resp.ContentLength
	if resp.Header.Get("Accept-Ranges") != "bytes" || etag == "" || strings.HasPrefix(etag, "W/") || size <= sniffHead {
		return s.whole(ctx, fetchCtx, resp, now)
	}
	head := make([]byte, sniffHead)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		return nil, s.fetchError(ctx, fetchCtx, err)
	}
	at := &remoteAt{ctx: fetchCtx, s: s, etag: etag, head: head}
	spans := plan(at, size)
	if len(spans) == 0 || at.err != nil {
		// Not a video (or one whose frames were not found): the answer,
		// its first bytes read already, is read on, whole.
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
		if at.err != nil {
			resp.Body.Close()
			return s.fetch(ctx, nil) // its ranges failed partway: the image anew
		}
		return s.whole(ctx, fetchCtx, resp, now)
	}
	resp.Body.Close() // the rest unread: the ranges are read instead
	open := func(sp thumbjob.Span) (io.ReadCloser, error) { return at.open(sp.Offset, sp.Size) }
	blob, err := s.f.limits.ReadSpans(ctx, spans, size, open, s.Key()+"\x00etag:"+etag, "the origin's video")
	if err != nil {
		return nil, s.fetchError(ctx, fetchCtx, err)
	}
	blob.Fresh = Freshness(resp.Header, now)
	return blob, nil
}

// get is a GET of the URL, of n bytes at off when n is above 0 (Range),
// held to etag when given (If-Match), conditional on prior when given
// (If-None-Match, If-Modified-Since).
func (s remote) get(ctx context.Context, off, n int64, etag string, prior *source.Freshness) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.u.String(), nil)
	if err != nil {
		return nil, apierr.New(apierr.BadURL, "Parameter \"url\" is not a URL thumbd can fetch.")
	}
	req.Header.Set("User-Agent", s.f.cfg.UserAgent)
	req.Header.Set("Accept", s.f.cfg.Accept)
	if n > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	}
	if etag != "" {
		req.Header.Set("If-Match", etag)
	}
	if prior != nil {
		if prior.ETag != "" {
			req.Header.Set("If-None-Match", prior.ETag)
		}
		if prior.LastModified != "" {
			req.Header.Set("If-Modified-Since", prior.LastModified)
		}
	}
	return s.f.client.Do(req)
}

// whole reads a 200 answer as Read does.
func (s remote) whole(ctx, fetchCtx context.Context, resp *http.Response, now time.Time) (*source.Blob, error) {
	tooLarge := func() error {
		return apierr.New(apierr.SourceTooLarge, "The origin's image is larger than the %d bytes allowed.", s.f.limits.MaxBytes)
	}
	if resp.ContentLength > s.f.limits.MaxBytes {
		return nil, tooLarge()
	}
	id, sized := s.identity(resp.Header)
	blob, err := s.f.limits.Read(resp.Body, id, tooLarge)
	if err != nil && apierr.From(err).Code == apierr.Internal {
		return nil, s.fetchError(ctx, fetchCtx, err)
	}
	if err == nil {
		blob.Fresh = Freshness(resp.Header, now)
		if sized {
			blob.ID += "\x00size:" + strconv.Itoa(len(blob.Bytes))
		}
	}
	return blob, err
}

// statusError is the error of an answer that is neither a 200 nor a 206.
func statusError(code int) error {
	if code == http.StatusNotFound || code == http.StatusGone {
		return apierr.New(apierr.SourceNotFound, "The origin has no such image (it answered %d).", code)
	}
	return apierr.New(apierr.OriginError, "The origin answered %d; thumbd needs a 200.", code)
}

// remoteAt reads an origin's image by range, held to its ETag: reads
// within its first bytes (read from the first answer) from them, others
// a GET each. Its first
// failure is kept: the planner then reads the image whole.
type remoteAt struct {
	ctx  context.Context
	s    remote
	etag string
	head []byte
	err  error
}

func (a *remoteAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) <= int64(len(a.head)) {
		return copy(p, a.head[off:]), nil
	}
	body, err := a.open(off, int64(len(p)))
	if err != nil {
		a.err = err
		return 0, err
	}
	defer body.Close()
	n, err := io.ReadFull(body, p)
	if err != nil {
		a.err = err
	}
	return n, err
}

// open is the body of n bytes at off: a 206 of exactly that range.
func (a *remoteAt) open(off, n int64) (io.ReadCloser, error) {
	resp, err := a.s.get(a.ctx, off, n, a.etag, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusPartialContent || resp.ContentLength != n {
		resp.Body.Close()
		return nil, apierr.New(apierr.OriginError, "The origin answered a range of %d bytes at %d with %d (%d bytes); the image changed, or its ranges are not served.", n, off, resp.StatusCode, resp.ContentLength)
	}
	return resp.Body, nil
}

// identity is the identity of the image an answer with header h carries
// (source.Blob.ID), from its validators, as a bucket object's is: its URL
// and ETag when the ETag is strong, which the origin changes whenever the
// bytes do (RFC 9110 8.8.3); else its URL and Last-Modified, with its
// length once read (sized: a same-length replacement within
// Last-Modified's second keeps it). An answer with neither is hashed: its
// bytes are their only identity.
func (s remote) identity(h http.Header) (id string, sized bool) {
	if etag := h.Get("ETag"); etag != "" && !strings.HasPrefix(etag, "W/") {
		return s.Key() + "\x00etag:" + etag, false
	}
	if lm := h.Get("Last-Modified"); lm != "" {
		return s.Key() + "\x00modified:" + lm, true
	}
	return source.Hashed, false
}

// fetchError names a failed fetch: the guard's or the redirect checks'
// refusal as it is; the request's own deadline or departure as ctx's
// error (the pipeline answers those); the fetch timeout (fetchCtx's end)
// or a connect that took longer than ConnectTimeout as a 504; anything
// else (refused connection, unknown name, TLS, a broken body) as a 502.
func (s remote) fetchError(ctx, fetchCtx context.Context, err error) error {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if fetchCtx.Err() != nil {
		return &apierr.Error{Code: apierr.OriginTimeout, Message: "The origin did not answer within the fetch timeout (" + s.f.cfg.FetchTimeout.String() + ").", Cause: err}
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		msg := "The origin did not answer in time."
		if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
			msg = "The origin could not be connected to within " + ConnectTimeout.String() + "."
		}
		return &apierr.Error{Code: apierr.OriginTimeout, Message: msg, Cause: err}
	}
	return &apierr.Error{Code: apierr.OriginError, Message: "The origin could not be fetched.", Cause: err}
}
