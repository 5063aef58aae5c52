// Package source is the source stage: it yields the bytes a thumbnail is
// made from, with their identity for the ETag. Every kind (the request
// body, a file of the source directory, an HTTP origin) reads
// through the same byte budget and the same size limit, so memory held by
// sources is bounded whatever they come from.
//
// Only bytes without an identity of their own are hashed: an upload, and
// an origin's image without validators. A file's identity is its name,
// size and modification time, and a bucket object's its ETag: what keys
// their thumbnails already (Keyed), known before the read. An origin's
// image's is its URL and validators (a strong ETag, else Last-Modified),
// which its answer carries. Their bytes need no hash (docs/storage.md,
// "Source identity").
package source

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"runtime"
	"strconv"
	"time"

	"github.com/minio/highwayhash"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/prefault"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Source yields one request's source bytes. Read is called once.
type Source interface {
	Read(ctx context.Context) (*Blob, error)
}

// Blob is a source's bytes, held against the byte budget until Release.
type Blob struct {
	Bytes []byte
	// ID is the identity of Bytes, which the ETag is made from: the
	// version its kind read (a file's name, size and modification time;
	// an object's key and ETag; an origin's URL and validators), or, for
	// bytes without one (an upload, an origin's image without
	// validators), their keyed hash (IDHash) in hex. Two sources never
	// share one, and a source that changes gets another (a file rewritten
	// with its size within its modification time's granularity aside).
	ID string
	// Fresh says how a thumbnail of these bytes may be reused (the
	// result cache): set by the source kind that knows (a file's identity,
	// an origin's caching headers).
	Fresh Freshness
	// NotModified: a conditional read (Conditional.ReadSince) found the
	// bytes unchanged; Bytes is then empty and Fresh renewed.
	NotModified bool
	// Spans, for a source read by range (Ranged), are the byte ranges of
	// its Size bytes that Bytes holds, one after the other; empty: Bytes
	// is the whole source.
	Spans   []thumbjob.Span
	Size    int64
	release func()
}

// Len is the source's length: Size when read by range, else its bytes'.
func (b *Blob) Len() int64 {
	if len(b.Spans) > 0 {
		return b.Size
	}
	return int64(len(b.Bytes))
}

// Planner finds the byte ranges of a source that a job needs, reading
// what it must to find them through r (the source, size bytes long): nil
// to read it whole.
type Planner func(r io.ReaderAt, size int64) []thumbjob.Span

// RangeBodies reads spans' bytes one after the other, each span's body
// opened (a range GET) when the read reaches it, and closed at its end.
// Close closes the one open.
type RangeBodies struct {
	Open  func(thumbjob.Span) (io.ReadCloser, error)
	Spans []thumbjob.Span
	cur   io.ReadCloser
}

func (b *RangeBodies) Read(p []byte) (int, error) {
	for {
		if b.cur == nil {
			if len(b.Spans) == 0 {
				return 0, io.EOF
			}
			body, err := b.Open(b.Spans[0])
			if err != nil {
				return 0, err
			}
			b.cur, b.Spans = body, b.Spans[1:]
		}
		n, err := b.cur.Read(p)
		if err == io.EOF {
			b.cur.Close()
			b.cur = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

// Close closes the span's body being read, if any.
func (b *RangeBodies) Close() error {
	if b.cur == nil {
		return nil
	}
	return b.cur.Close()
}

// ReadSpans reads spans of a source of size bytes through the budget,
// each span's body opened by open when the read reaches it (RangeBodies),
// their bytes within MaxBytes (a refusal that names the source as what
// says), waiting for the budget as ReadSized does. The Blob carries the
// spans and size.
func (l Limits) ReadSpans(ctx context.Context, spans []thumbjob.Span, size int64, open func(thumbjob.Span) (io.ReadCloser, error), id, what string) (*Blob, error) {
	n := thumbjob.SpanBytes(spans)
	tooLarge := func() error {
		return apierr.New(apierr.SourceTooLarge, "The %d bytes of %s this job reads (its index and the packets of the frames it decodes) are more than the %d bytes a source may read (THUMBD_MAX_BODY_BYTES).", n, what, l.MaxBytes)
	}
	if n > l.MaxBytes {
		return nil, tooLarge()
	}
	body := &RangeBodies{Open: open, Spans: spans}
	defer body.Close()
	blob, err := l.ReadSized(ctx, body, n, id, tooLarge)
	if err != nil {
		return nil, err
	}
	blob.Spans, blob.Size = spans, size
	return blob, nil
}

// Ranged is a source that can read only the ranges a job needs: a video
// (its index and the packets of the frames decoded) of any length,
// within MaxBytes read.
type Ranged interface {
	ReadRanges(ctx context.Context, plan Planner) (*Blob, error)
}

// Freshness is how long a thumbnail made from a source may be reused
// without asking the source again, and how to ask it then.
type Freshness struct {
	Store bool      // may a thumbnail of it be kept at all
	Until time.Time // reusable without asking until then (zero: ask every time)
	// The source's validators, for a conditional read once Until passed.
	ETag, LastModified string
	// Origin: the source's own caching rules (an origin's headers) decide
	// the answer's Cache-Control; false (files, uploads): thumbd's.
	Origin bool
	// The origin said no-store, or private: the answer says the same.
	NoStore, Private bool
	// AnswerUntil is how long the answer may be reused by the caches in
	// front of thumbd: the shorter of the origin's lifetime for a shared
	// cache (Until) and for a browser (max-age, Expires).
	AnswerUntil time.Time
}

// MaxAge is the answer's lifetime where the source sets none of its own
// (files, uploads), by default (THUMBD_TTL): the ETag is of the source's
// identity, so a CDN revalidating after a day gets a 304 when nothing
// changed. No origin's rule gives longer.
const MaxAge = 24 * time.Hour

// DefaultCacheControl is the Cache-Control of an answer whose source sets
// no rules of its own, by default (TTL{MaxAge: MaxAge}).
const DefaultCacheControl = "public, max-age=86400"

// TTL is how long the caches in front of thumbd may keep an answer:
// MaxAge where the source sets no rules of its own, and the most an
// origin's may give (THUMBD_TTL, imgproxy's IMGPROXY_TTL); a CDN that
// honours stale-while-revalidate may serve it that much longer while it
// asks thumbd again (THUMBD_STALE_WHILE_REVALIDATE; 0: not said).
type TTL struct{ MaxAge, StaleWhileRevalidate time.Duration }

// CacheControl is the Cache-Control of an answer made from the source,
// written at now: t's lifetime for files and uploads; an origin's rules
// carried on (no-store and private through, a lifetime no longer than
// what is left of the origin's, nor than t's; "no-cache", which lets a
// cache keep the answer but revalidate it with thumbd, once none is left).
func (f Freshness) CacheControl(now time.Time, t TTL) string {
	if t.MaxAge <= 0 {
		t.MaxAge = MaxAge
	}
	scope, left := "public", t.MaxAge
	if f.Origin {
		if f.NoStore {
			return "no-store"
		}
		if f.Private {
			scope = "private"
		}
		left = min(f.AnswerUntil.Sub(now), t.MaxAge)
		if left < time.Second {
			return scope + ", no-cache"
		}
	}
	cc := scope + ", max-age=" + strconv.Itoa(int(left/time.Second))
	if t.StaleWhileRevalidate >= time.Second {
		cc += ", stale-while-revalidate=" + strconv.Itoa(int(t.StaleWhileRevalidate/time.Second))
	}
	return cc
}

// Fresh reports whether a thumbnail may be reused at now without asking.
func (f Freshness) Fresh(now time.Time) bool { return f.Store && now.Before(f.Until) }

// Revalidable reports whether the source can be asked if it changed.
func (f Freshness) Revalidable() bool { return f.ETag != "" || f.LastModified != "" }

// Keyed is a source whose identity is known before its bytes are read
// (a file: name, size and modification time; an origin: its URL), so that
// identical requests can share one job and one cached answer.
type Keyed interface {
	Source
	// Key is the identity, "" when it cannot be known (the read then
	// answers the error).
	Key() string
}

// Named is a source whose identity without its version is known before it
// is read (a file's name, an origin's URL): what names every thumbnail of
// it, whichever version, in the result store's keys and in the answers'
// Surrogate-Key and Cache-Tag (purging one source everywhere).
type Named interface {
	Identity() string
}

// UploadIdentity is the identity of uploaded bytes: their keyed hash (an
// upload has no name; the same bytes are the same source). It keys the
// upload's thumbnails (the result cache, merging, the result store) and
// names them (resultstore.Tag).
func UploadIdentity(b *Blob) string { return "upload\x00" + b.ID }

// Identifiable is a source whose identity must be asked for before it is
// known (a bucket's object: its ETag, by a HEAD). The pipeline calls
// Identify within the request's deadline, before it looks for a shared
// result; the Keyed it returns is the source to read. Its error is the
// answer (a missing object, the bucket failing).
type Identifiable interface {
	Source
	Identify(ctx context.Context) (Keyed, error)
}

// ConditionalRanged is a Conditional source that can read by range too:
// a revalidation whose answer says the bytes changed reads them as
// Ranged's ReadRanges does (a long video by range, not whole).
type ConditionalRanged interface {
	ReadRangesSince(ctx context.Context, prior Freshness, plan Planner) (*Blob, error)
}

// Conditional is a source that can be asked whether its bytes changed
// since a read that gave prior (an origin's If-None-Match and
// If-Modified-Since).
type Conditional interface {
	ReadSince(ctx context.Context, prior Freshness) (*Blob, error)
}

// Handover is the blob's release, which the caller now owns: the blob
// holds none after it (an answer that is the source's own bytes gives
// them back once it is written, not when its job ends).
func (b *Blob) Handover() func() {
	release := b.release
	b.release = nil
	return release
}

// Release gives the blob's bytes back to the budget. Call it once the
// bytes are no longer used.
func (b *Blob) Release() {
	if b != nil && b.release != nil {
		b.release()
		b.release = nil
	}
}

// Limits are what every source kind shares.
type Limits struct {
	MaxBytes int64            // largest source
	Budget   *admission.Bytes // bytes held by every source being read or processed
	// Wait is how long a source of known length may wait for the budget
	// before it is refused (503): while it waits its bytes stay unread.
	Wait time.Duration
	// Hashers bounds the turns of sources hashed at once (nil: no bound).
	Hashers Hashers
	// IDs is the hash of bytes read without an identity of their own
	// (Hashed); nil hashes nothing (a read that asks is a programming
	// error).
	IDs IDHash
}

// IDHash makes the hash that identifies bytes without an identity of their
// own: HighwayHash-256 under a secret key. Two uploads that share an ID
// share their answer, so collisions must be out of an attacker's reach:
// HighwayHash resists them only while its key is secret, which it is
// here; SHA-256, which needs no key, is 4 to 5 times slower here
// (docs/storage.md, "Source identity").
type IDHash func() hash.Hash

// NewIDHash is the IDHash under a key derived from secret: the same in
// every process given the same secret (the replicas sharing a result
// store, which keys uploads by their ID, hold THUMBD_RESULT_STORE_KEY).
// Without a secret, the key is drawn now: this process's own, so its IDs
// are its own (an upload's ETag differs between replicas and restarts).
func NewIDHash(secret []byte) IDHash {
	key := make([]byte, 32)
	if len(secret) > 0 {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte("thumbd source identity"))
		key = m.Sum(nil)
	} else {
		rand.Read(key)
	}
	return func() hash.Hash {
		h, err := highwayhash.New(key)
		if err != nil {
			panic(err) // the key is 32 bytes: never
		}
		return h
	}
}

// Hashed, as a read's id, asks for the bytes' keyed hash (IDs) as their
// identity: the source has none of its own.
const Hashed = ""

// Hashers is a bound on the sources hashed at once: a token per turn of
// at most turn bytes, taken once the turn's bytes are read, so an upload
// whose bytes are slow to come holds none while it waits for them.
type Hashers chan struct{}

// NewHashers bounds hashing to n turns at once (at least one).
func NewHashers(n int) Hashers { return make(Hashers, max(n, 1)) }

// Read reads r whole through the budget: every source kind reads through
// it, so the budget and the limit hold for all. id is the bytes' identity
// (Blob.ID) when the source knows it; Hashed hashes them as they are read.
// tooLarge is the error for a source over the limit; the budget being
// spent is a 503; any other error of r is returned as it is, for the kind
// to name.
func (l Limits) Read(r io.Reader, id string, tooLarge func() error) (*Blob, error) {
	return l.read(l.Budget.Reader(io.LimitReader(r, l.MaxBytes+1)), -1, id, tooLarge)
}

// ReadSized is Read for a source that says its length n (at most MaxBytes):
// the n bytes are reserved first, waiting up to Wait (or ctx's end) in
// arrival order while the budget is spent, so that under load an upload
// waits unread instead of being refused partway. A negative n is a length
// not said (a bucket's chunked answer): read as Read reads.
func (l Limits) ReadSized(ctx context.Context, r io.Reader, n int64, id string, tooLarge func() error) (*Blob, error) {
	if n < 0 {
		return l.Read(r, id, tooLarge)
	}
	wait, cancel := context.WithTimeout(ctx, l.Wait)
	defer cancel()
	budget, err := l.Budget.Reserve(wait, io.LimitReader(r, l.MaxBytes+1), n)
	switch {
	case err == nil:
		return l.read(budget, n, id, tooLarge)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, NoRoom()
}

func (l Limits) read(budget *admission.BytesReader, size int64, id string, tooLarge func() error) (*Blob, error) {
	var h hash.Hash
	if id == Hashed {
		h = l.IDs()
	}
	space := make([]byte, 0, max(size, 0)+bytes.MinRead)
	// The source's pages are mapped in one call, not faulted in one by
	// one as the bytes are copied in: the bytes are reserved already, and
	// the faults were most of thumbd's under load (package prefault).
	prefault.Write(space)
	buf := bytes.NewBuffer(space)
	_, err := buf.ReadFrom(turns{r: budget, h: h, hashers: l.Hashers})
	b := buf.Bytes()
	if err == nil && int64(len(b)) > l.MaxBytes {
		err = tooLarge()
	}
	if err != nil {
		budget.Close()
		if errors.Is(err, admission.ErrNoRoom) {
			return nil, NoRoom()
		}
		return nil, err
	}
	if h != nil {
		id = hex.EncodeToString(h.Sum(nil))
	}
	return &Blob{Bytes: b, ID: id, release: budget.Close}, nil
}

// Sum is the keyed hash of bytes already read, by turns as a read hashes
// them: the identity of bytes whose version could not be told (a file
// written while it was read).
func (l Limits) Sum(b []byte) string {
	h := l.IDs()
	for len(b) > 0 {
		n := min(len(b), turn)
		l.Hashers.hash(h, b[:n])
		b = b[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

// turn is the most of a source read and hashed in one go before the
// goroutine yields its processor.
const turn = 64 << 10

// turns reads at most turn bytes a call, hashes them (h, when the source
// has no identity of its own) holding a token of hashers, and yields the
// processor before each hash. A source's bytes are usually in the socket's
// buffer already, so its reader never blocks and, without the yield,
// keeps its processor until Go preempts it after 10 ms: with uploads read
// and hashed at once, a /health probe waited behind them 0.1-0.7 s in
// Go's run queue (the runtime's /sched/latencies p99 537-671 ms, 500
// clients posting the 12 MP photo). With the yield
// alone a goroutine still waited behind every upload's turn (p99 8-42 ms
// with 64 KiB turns and 500 uploads); with the tokens the uploads waiting
// for one are parked, out of the run queue, so a probe waits behind at
// most a turn per token (docs/hardening.md, "Probes under load"). The
// token is taken after the read, not before: a slow upload waits for its
// bytes holding none. A source not hashed (h nil) still yields after each
// turn, as a long file read would keep its processor too, but takes no
// token: the token guards the hashing, and its turn's copy is done.
type turns struct {
	r       io.Reader
	h       hash.Hash
	hashers Hashers
}

func (t turns) Read(p []byte) (int, error) {
	n, err := t.r.Read(p[:min(len(p), turn)])
	switch {
	case n == 0:
	case t.h != nil:
		t.hashers.hash(t.h, p[:n])
	default:
		runtime.Gosched()
	}
	return n, err
}

// hash writes p, a turn's bytes, to h holding a token (when hs bounds the
// hashing), after yielding the processor.
func (hs Hashers) hash(h hash.Hash, p []byte) {
	if hs != nil {
		hs <- struct{}{}
		defer func() { <-hs }()
	}
	// The goroutine just given a token runs next on this processor (Go's
	// runnext), ahead of the run queue; yielding here lets what waits
	// there (a probe) go first.
	runtime.Gosched()
	h.Write(p)
}

// NoRoom is the refusal of a source the budget has no room for: a 503
// that asks the client to retry shortly.
func NoRoom() error {
	return &apierr.Error{Code: apierr.QueueFull, Message: "Too many sources are being held; retry shortly.", CloseConnection: true}
}
