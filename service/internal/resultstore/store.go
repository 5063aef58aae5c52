package resultstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/results"
	"github.com/thumbd/thumbd/service/internal/source"
)

// Config is a store's settings. A zero Backend is a store that is off:
// every lookup misses, nothing is written, the metrics read 0.
type Config struct {
	Backend Backend
	// LookupTimeout bounds one lookup, within the request's deadline: a
	// slow store costs a request at most this, then it is computed.
	LookupTimeout time.Duration
	// WriteTimeout bounds one write (in the background).
	WriteTimeout time.Duration
	// QueueBytes bounds the results waiting to be written (their bytes,
	// keys and bookkeeping); a result that would pass it is dropped and
	// counted. It is part of the memory plan.
	QueueBytes int64
	// MaxBytes is the largest result written or read back.
	MaxBytes int64
	// Budget, when set, is the byte budget a hit's bytes are read on
	// (reserved before the first is read, within the lookup's time), held
	// until the entry's Release: the source budget, so that hits and
	// sources share one bound.
	Budget *admission.Bytes
	// MaxLookups bounds the lookups in flight, a hung one included until
	// its backend returns; a lookup past it is a miss (0: 64).
	MaxLookups int
	// Namespace is hashed into every object key beside the request's key:
	// the deployment (THUMBD_RESULT_STORE_NAMESPACE, else the source
	// location) and a fingerprint of the settings that change a
	// thumbnail's bytes (libvips' version, JPEG shrink, AVIF effort, the
	// limits), so that deployments sharing a store, or one whose settings
	// changed, never answer each other's thumbnails. "": none (tests).
	Namespace string
	// Keys, when set (THUMBD_RESULT_STORE_KEY), sign every object written
	// (an HMAC-SHA256 of its key, media type, metadata and body, by the
	// first key) and an object is answered only with a signature by one of
	// them: for a store other writers share.
	Keys [][]byte
	// Failures in a row that open the breaker, and how long it stays open
	// before one request tries the store again (0: 5 and 5 s).
	BreakerFailures uint
	BreakerDelay    time.Duration
	Tracer          trace.Tracer // nil: no spans
	Logger          *slog.Logger // nil: no logs
}

// Store is the result store as the pipeline sees it: Get before a job,
// Put after one (write-behind: Put never waits for the backend).
type Store struct {
	cfg     Config
	loc     Location // as the setting gave it, for start-up messages (Open)
	breaker circuitbreaker.CircuitBreaker[any]
	metrics *metrics

	lookups chan struct{} // a token per lookup in flight (MaxLookups)

	mu     sync.RWMutex // held to send on queue, and to close it
	closed bool
	queue  chan write
	queued atomic.Int64 // bytes waiting, within cfg.QueueBytes
	done   chan struct{}
}

type write struct {
	key  string
	obj  Object
	size int64
	span trace.SpanContext // the request that made the result, for the write's span
}

// writers is how many writes run at once: a thumbnail is small, and one
// writer stuck on a slow store leaves another to drain the queue.
const writers = 2

// queueSlots bounds the queue's length as QueueBytes bounds its bytes.
const queueSlots = 4096

// writeOverhead is a queued write's bookkeeping beside its body, key and
// metadata (the struct, the map's buckets): counted so that tiny results
// stay bounded too. The key and the metadata are counted as written.
const writeOverhead = 512

// writeSize is what a queued write of o under key counts in the queue's
// bound: its body, key and metadata as written, and writeOverhead.
func writeSize(key string, o Object) int64 {
	return int64(len(o.Body)+len(key)+metaSize(o.Meta)) + writeOverhead
}

// New returns the store of cfg; with a backend, its writers run until
// Close.
func New(cfg Config) *Store {
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider().Tracer("")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BreakerFailures == 0 {
		cfg.BreakerFailures = 5
	}
	if cfg.BreakerDelay == 0 {
		cfg.BreakerDelay = 5 * time.Second
	}
	if cfg.MaxLookups <= 0 {
		cfg.MaxLookups = 64
	}
	s := &Store{cfg: cfg, metrics: newMetrics(), done: make(chan struct{}), lookups: make(chan struct{}, cfg.MaxLookups)}
	if cfg.Backend == nil {
		close(s.done)
		return s
	}
	log := cfg.Logger
	s.breaker = circuitbreaker.NewBuilder[any]().
		WithFailureThreshold(cfg.BreakerFailures).
		WithSuccessThreshold(1).
		WithDelay(cfg.BreakerDelay).
		OnOpen(func(circuitbreaker.StateChangedEvent) {
			s.metrics.opened.Inc()
			log.Warn("result store: not answering; thumbnails are computed, and it is tried again after the delay", "store", cfg.Backend.String(), "delay", cfg.BreakerDelay.String())
		}).
		OnClose(func(circuitbreaker.StateChangedEvent) {
			log.Info("result store: answering again", "store", cfg.Backend.String())
		}).
		Build()
	s.queue = make(chan write, queueSlots)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for w := range s.queue {
				s.write(w)
				s.queued.Add(-w.size)
			}
		})
	}
	go func() { wg.Wait(); close(s.done) }()
	return s
}

// On reports whether the store has a backend.
func (s *Store) On() bool { return s != nil && s.cfg.Backend != nil }

// Check probes the backend (start-up): see Backend.Check.
func (s *Store) Check(ctx context.Context) error {
	if !s.On() {
		return nil
	}
	return s.cfg.Backend.Check(ctx)
}

// Close stops taking writes and waits for the queued ones, until ctx ends.
func (s *Store) Close(ctx context.Context) error {
	if !s.On() {
		return nil
	}
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.queue)
	}
	s.mu.Unlock()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Tag is the short hash of a source's identity without its version (a
// file's name, an origin's URL, an upload's SHA-256): the name of every
// thumbnail of that source, in the store's keys and in the answers'
// Surrogate-Key and Cache-Tag headers. 16 hex digits (64 bits).
func Tag(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return hex.EncodeToString(sum[:8])
}

// ObjectKey is where key's result lives: under its source's tag, so that
// one source's thumbnails are one prefix, then a hash of the whole key
// (source identity and version, normalised options, chosen format).
func ObjectKey(tag, key string) string {
	sum := sha256.Sum256([]byte(key))
	return tag + "/" + hex.EncodeToString(sum[:16])
}

// objectKey is ObjectKey within the store's namespace: the deployment's
// and the settings that change bytes (Config.Namespace).
func (s *Store) objectKey(tag, key string) string {
	if s.cfg.Namespace == "" {
		return ObjectKey(tag, key)
	}
	return ObjectKey(tag, s.cfg.Namespace+"\x00"+key)
}

// Get looks key up, within the lookup timeout and the request's deadline.
// Any failure is a miss (the caller computes); a stale entry is returned
// for the caller to revalidate, as the result cache's.
func (s *Store) Get(ctx context.Context, tag, key string) (*results.Entry, bool) {
	if !s.On() {
		return nil, false
	}
	ctx, span := s.cfg.Tracer.Start(ctx, "result_store.get")
	defer span.End()
	// The lookup's time: its own timeout, within the request's deadline.
	// A request with less left than the timeout does not try (an upload
	// whose body came late, a request that waited): the store would not
	// get its time, and its failure would be the client's, not the store's.
	timeout := s.cfg.LookupTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		s.metrics.misses.Inc()
		s.metrics.skipped.Inc()
		span.SetAttributes(attribute.String("thumbd.result_store", "skipped: less time left than the lookup timeout"))
		return nil, false
	}
	if !s.breaker.TryAcquirePermit() {
		s.metrics.misses.Inc()
		s.metrics.skipped.Inc()
		span.SetAttributes(attribute.String("thumbd.result_store", "skipped: breaker open"))
		return nil, false
	}
	// Detached from the client: a lookup always ends by its timeout and
	// reports to the breaker (a permit taken and never reported would
	// hold the breaker half-open).
	select {
	case s.lookups <- struct{}{}: // given back when the backend returns (fetch)
	default:
		// As many lookups in flight as allowed (a slow or hung store
		// holds them): this one is not tried, and the store is not
		// blamed.
		s.breaker.RecordSuccess()
		s.metrics.misses.Inc()
		s.metrics.skipped.Inc()
		span.SetAttributes(attribute.String("thumbd.result_store", "skipped: lookups in flight"))
		return nil, false
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	start := time.Now()
	okey := s.objectKey(tag, key)
	obj, err := s.fetch(lctx, okey)
	cancel()
	s.metrics.lookup.Observe(time.Since(start).Seconds())
	if errors.Is(err, errNoRoom) {
		// The budget is spent: not the store's failure.
		s.breaker.RecordSuccess()
		s.metrics.misses.Inc()
		s.metrics.skipped.Inc()
		span.SetAttributes(attribute.String("thumbd.result_store", "skipped: source budget spent"))
		return nil, false
	}
	var e *results.Entry
	if err == nil {
		if err = s.trusted(okey, obj); err != nil {
			obj.Release()
			// Not an object thumbd wrote: the store answered, its health
			// is not in question; what it holds is not answered.
			s.breaker.RecordSuccess()
			s.metrics.misses.Inc()
			s.metrics.rejected.Inc()
			s.cfg.Logger.Warn("result store: object refused, computed instead", "key", okey, "err", err)
			span.SetStatus(codes.Error, err.Error())
			return nil, false
		}
		if e, err = decode(obj); err != nil {
			obj.Release()
			s.breaker.RecordSuccess()
			s.metrics.misses.Inc()
			s.metrics.lookupErrors.Inc()
			s.cfg.Logger.Warn("result store: unreadable result, computed instead", "key", okey, "err", err)
			span.SetStatus(codes.Error, err.Error())
			return nil, false
		}
	}
	switch {
	case err == nil:
		s.breaker.RecordSuccess()
		s.metrics.hits.Inc()
		span.SetAttributes(attribute.String("thumbd.result_store", "hit"), attribute.Int("thumbd.result_store.bytes", len(e.Body)))
		return e, true
	case errors.Is(err, ErrNotFound):
		s.breaker.RecordSuccess()
		s.metrics.misses.Inc()
		span.SetAttributes(attribute.String("thumbd.result_store", "miss"))
		return nil, false
	}
	s.breaker.RecordFailure()
	s.metrics.misses.Inc()
	s.metrics.lookupErrors.Inc()
	s.cfg.Logger.Debug("result store: lookup failed, computed instead", "err", err)
	span.SetStatus(codes.Error, err.Error())
	return nil, false
}

// fetch is the backend's Get, given up at ctx's end whatever the backend
// does: a file system may block in open or read past any context (a
// frozen NFS mount), and a lookup must still end by its timeout and
// count as a failure. The abandoned call ends in the background when the
// file system returns.
func (s *Store) fetch(ctx context.Context, key string) (Object, error) {
	type got struct {
		obj Object
		err error
	}
	done := make(chan got) // unbuffered: an answer is taken, or released
	abandoned := make(chan struct{})
	go func() {
		defer func() { <-s.lookups }()
		obj, err := s.cfg.Backend.Get(ctx, key, Limits{Max: s.cfg.MaxBytes, Budget: s.cfg.Budget})
		select {
		case done <- got{obj, err}:
		case <-abandoned:
			obj.Release() // no one takes it: its bytes are given back at once
		}
	}()
	select {
	case g := <-done:
		return g.obj, g.err
	case <-ctx.Done():
		close(abandoned)
		// The backend may have answered at the same moment.
		select {
		case g := <-done:
			return g.obj, g.err
		default:
		}
		return Object{}, ctx.Err()
	}
}

// Put queues e to be written under key, when its freshness allows keeping
// it (the result cache's rule: an origin's caching headers, uploads only
// when the operator allows). It never waits: a full queue, a result too
// large and a store known to be down drop the write, counted.
func (s *Store) Put(ctx context.Context, tag, key string, e *results.Entry, vary []string) {
	if !s.On() || !e.Fresh.Store || e.Body == nil {
		return
	}
	drop := func(reason string) { s.metrics.dropped.WithLabelValues(reason).Inc() }
	if int64(len(e.Body)) > s.cfg.MaxBytes {
		drop("too_large")
		return
	}
	obj, ok := encode(e, vary)
	if !ok {
		drop("unstorable")
		return
	}
	okey := s.objectKey(tag, key)
	if len(s.cfg.Keys) > 0 {
		obj.Meta[metaSignature] = sign(s.cfg.Keys[0], okey, obj)
	}
	if metaSize(obj.Meta) > maxMetaSize {
		// S3 refuses the PUT (a failure the breaker would count), and
		// every backend is held to what S3 takes.
		drop("unstorable")
		return
	}
	if s.breaker.IsOpen() && s.breaker.RemainingDelay() > 0 {
		drop("store_down")
		return
	}
	w := write{key: okey, obj: obj, size: writeSize(okey, obj), span: trace.SpanContextFromContext(ctx)}
	if s.queued.Add(w.size) > s.cfg.QueueBytes {
		s.queued.Add(-w.size)
		drop("queue_full")
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.queued.Add(-w.size)
		drop("closed")
		return
	}
	select {
	case s.queue <- w:
	default:
		s.queued.Add(-w.size)
		drop("queue_full")
	}
}

// write is one queued write, by a writer.
func (s *Store) write(w write) {
	if !s.breaker.TryAcquirePermit() {
		s.metrics.dropped.WithLabelValues("store_down").Inc()
		return
	}
	ctx := trace.ContextWithSpanContext(context.Background(), w.span)
	ctx, span := s.cfg.Tracer.Start(ctx, "result_store.put", trace.WithAttributes(attribute.Int("thumbd.result_store.bytes", len(w.obj.Body))))
	defer span.End()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	if err := s.cfg.Backend.Put(ctx, w.key, w.obj); err != nil {
		s.breaker.RecordFailure()
		s.metrics.writeErrors.Inc()
		s.cfg.Logger.Debug("result store: write failed", "key", w.key, "err", err)
		span.SetStatus(codes.Error, err.Error())
		return
	}
	s.breaker.RecordSuccess()
	s.metrics.writes.Inc()
}

// QueuedBytes is what waits to be written now.
func (s *Store) QueuedBytes() int64 { return s.queued.Load() }

// The stored object's metadata names.
const (
	metaETag         = "etag"
	metaUntil        = "fresh-until" // Unix seconds
	metaSourceETag   = "source-etag"
	metaSourceLM     = "source-last-modified"
	metaVary         = "vary"
	metaOrigin       = "origin"       // "1": the origin's caching rules make the answer's Cache-Control
	metaAnswerUntil  = "answer-until" // Unix nanoseconds: the answer's own lifetime for caches in front
	metaDigest       = "body-sha256"  // the body's, checked on reading
	metaSignature    = "hmac-sha256"  // with Keys: the object's signature (sign)
	maxMetaValueSize = 1024
	// maxMetaSize is S3's bound on an object's user metadata, 2 KB: the
	// bytes of every name (counted with its x-amz-meta- prefix, to be safe
	// with services that count it) and value.
	maxMetaSize = 2048
)

// metaSize is meta's size as S3 counts it (maxMetaSize).
func metaSize(meta map[string]string) int {
	n := 0
	for k, v := range meta {
		n += len("x-amz-meta-") + len(k) + len(v)
	}
	return n
}

// encode is e as an object; false when its strings cannot be S3 metadata.
func encode(e *results.Entry, vary []string) (Object, bool) {
	meta := map[string]string{
		metaETag:   e.ETag,
		metaUntil:  strconv.FormatInt(e.Fresh.Until.Unix(), 10),
		metaDigest: digest(e.Body),
	}
	if e.Fresh.ETag != "" {
		meta[metaSourceETag] = e.Fresh.ETag
	}
	if e.Fresh.LastModified != "" {
		meta[metaSourceLM] = e.Fresh.LastModified
	}
	if len(vary) > 0 {
		meta[metaVary] = strings.Join(vary, ", ")
	}
	if e.Fresh.Origin {
		meta[metaOrigin] = "1"
	}
	if !e.Fresh.AnswerUntil.IsZero() {
		meta[metaAnswerUntil] = strconv.FormatInt(e.Fresh.AnswerUntil.UnixNano(), 10)
	}
	for _, v := range append(slices.Collect(maps.Values(meta)), e.Type) {
		if !printable(v) {
			return Object{}, false
		}
	}
	return Object{ContentType: e.Type, Meta: meta, Body: e.Body}, true
}

// digest is the hex SHA-256 of body: a stored result's metadata names its
// body, so a reader never answers with one write's ETag and another's
// bytes.
func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// printable: S3 user metadata travels as HTTP header values.
func printable(v string) bool {
	if len(v) > maxMetaValueSize {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// decode is the entry an object stores, or why it is not one.
func decode(o Object) (*results.Entry, error) {
	m := o.Meta
	until, err := strconv.ParseInt(m[metaUntil], 10, 64)
	var answerUntil time.Time
	if v, ok := m[metaAnswerUntil]; ok {
		ns, aerr := strconv.ParseInt(v, 10, 64)
		err = errors.Join(err, aerr)
		answerUntil = time.Unix(0, ns)
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("freshness: %w", err)
	case m[metaETag] == "" || o.ContentType == "" || len(o.Body) == 0:
		return nil, errors.New("no ETag, media type or body")
	case m[metaDigest] != digest(o.Body):
		// A store that keeps metadata apart from the body (versitygw's
		// sidecar) may show one write's metadata beside another's body.
		return nil, errors.New("the body is not the one its metadata describes")
	}
	return results.Held(&results.Entry{
		Body: o.Body, Type: o.ContentType, ETag: m[metaETag],
		Fresh: source.Freshness{Store: true, Until: time.Unix(until, 0), ETag: m[metaSourceETag], LastModified: m[metaSourceLM],
			Origin: m[metaOrigin] == "1", AnswerUntil: answerUntil},
	}, o.release), nil
}
