package main

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/thumbd/thumbd/service/internal/results"
	"github.com/thumbd/thumbd/service/internal/source"
)

// Shared results: identical requests (same source identity, normalised
// options and chosen format) are answered from the result cache, or share
// one job in flight: one fetch, one decode, one encode, one admission
// place, the same bytes and headers for every waiter.

// jobFunc makes key's answer: stale is the cached entry past its
// freshness (revalidated when its source can be asked), inm the request's
// If-None-Match ("" for a shared job).
type jobFunc func(ctx context.Context, stale *results.Entry, inm string) (*results.Entry, error)

// shared answers the request for key. blob is the source when already read
// (an upload): handed to the job when this request starts it, released
// otherwise. start is the request's arrival, from which the deadline runs.
//
// tag names the source (resultstore.Tag): the result store keeps key's
// result under it.
func (t *thumbnails) shared(ctx context.Context, w http.ResponseWriter, r *http.Request, start time.Time, key, tag string, blob *source.Blob, job jobFunc) error {
	cached, ok := t.cache.Get(key)
	if ok && cached.Fresh.Fresh(time.Now()) {
		blob.Release()
		t.metrics.cacheHits.Inc()
		t.answer(ctx, w, r, cached)
		return nil
	}
	if t.cache != nil {
		t.metrics.cacheMisses.Inc()
	}
	job = t.stored(tag, key, w.Header().Values("Vary"), blob, job)
	var stale *results.Entry
	if ok {
		stale = cached
	}
	inm := r.Header.Get("If-None-Match")
	if r.Method != http.MethodGet {
		inm = ""
	}
	if inm != "" || !t.cfg.Merge {
		// A conditional request is not merged: it reads the source to
		// compare ETags, and a match is a 304 that takes no place and
		// runs no engine job, which a shared job would.
		e, err := job(ctx, stale, inm)
		if err != nil {
			return err
		}
		if e.Image.Bytes != nil {
			t.cache.Put(key, e)
		}
		t.answer(ctx, w, r, e)
		return nil
	}
	fl, leader := t.flights.join(key, func() (*results.Entry, error) {
		// The job is every waiter's: no one client's leaving cancels it;
		// the deadline of the request that started it bounds it.
		jobCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), start.Add(t.cfg.Deadline))
		defer cancel()
		e, err := job(jobCtx, stale, "")
		if err == nil {
			t.cache.Put(key, e) // errors are shared by the waiters, never kept
		}
		return e, err
	})
	if !leader {
		t.metrics.merged.Inc()
		blob.Release()
	}
	select {
	case <-fl.done:
	case <-ctx.Done():
		return t.deadlineOrGone(ctx.Err()) // this waiter's own deadline or departure
	}
	if fl.err != nil {
		return t.deadlineOrGone(fl.err)
	}
	t.answer(ctx, w, r, fl.entry)
	return nil
}

// stored is job behind the result store: a fresh stored result answers
// without the job (and without reading the source: blob, an upload's,
// is released); a stale one is the job's to revalidate, as a stale cache
// entry; a result the job made is queued to be written (write-behind:
// the answer does not wait). vary is the answer's Vary, kept beside it.
func (t *thumbnails) stored(tag, key string, vary []string, blob *source.Blob, job jobFunc) jobFunc {
	if !t.store.On() || blob != nil && !blob.Fresh.Store {
		// An upload is stored only when the operator allows it
		// (THUMBD_CACHE_UPLOADS): none is looked for otherwise.
		return job
	}
	return func(ctx context.Context, stale *results.Entry, inm string) (*results.Entry, error) {
		if e, ok := t.store.Get(ctx, tag, key); ok {
			if e.Fresh.Fresh(time.Now()) {
				blob.Release()
				return e, nil
			}
			if stale == nil {
				stale = e
			}
		}
		e, err := job(ctx, stale, inm)
		if err == nil {
			t.store.Put(ctx, tag, key, e, vary)
		}
		return e, err
	}
}

// flights are the shared jobs in flight, by key. It is
// golang.org/x/sync/singleflight's DoChan but for one thing: join tells
// its caller at once whether it started the job, which an upload must
// know to hand its body to the job or give its bytes back to the budget.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

// flight is one shared job; entry and err are set before done is closed.
type flight struct {
	done  chan struct{}
	entry *results.Entry
	err   error
}

func newFlights() *flights { return &flights{m: map[string]*flight{}} }

// join returns key's flight, started with job in a goroutine of its own
// when none is in flight (leader: this call started it). A finished
// flight is forgotten before its waiters are told, so an error is never
// reused by a later request.
func (f *flights) join(key string, job func() (*results.Entry, error)) (fl *flight, leader bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[key]; ok {
		return fl, false
	}
	fl = &flight{done: make(chan struct{})}
	f.m[key] = fl
	go func() {
		fl.entry, fl.err = job()
		f.mu.Lock()
		delete(f.m, key)
		f.mu.Unlock()
		close(fl.done)
	}()
	return fl, true
}

// answer is the respond stage: e written as the request's answer (its
// image, or a 304 for a matching If-None-Match).
func (t *thumbnails) answer(ctx context.Context, w http.ResponseWriter, r *http.Request, e *results.Entry) {
	_, span := t.tracer.Start(ctx, "respond")
	t.respond.entry(w, r, e)
	span.End()
}
