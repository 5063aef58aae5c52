package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/thumbd/thumbd/service/internal/results"
	"github.com/thumbd/thumbd/service/internal/source"
)

// Shared results: identical requests (same source identity and normalised
// job, format chosen) are answered from the result cache, or share one
// job in flight: one fetch, one decode, one encode, one admission place,
// the same bytes and headers for every waiter.
//
// The result seam is lookup and keep for the memory cache, and stored for
// the result store behind it (THUMBD_RESULT_STORE): a store lookup after a
// cache miss and the store's write after a job both run inside the job,
// so identical requests share one lookup as they share one job, and a
// store hit is kept in the cache as a job's answer is.

// jobFunc makes key's answer: stale is the cached entry past its
// freshness (revalidated when its source can be asked), inm the request's
// If-None-Match ("" for a shared job).
type jobFunc func(ctx context.Context, stale *results.Entry, inm string) (*results.Entry, error)

// lookup is key's kept answer, and whether it is fresh now.
func (p *Pipeline) lookup(key string) (e *results.Entry, fresh bool) {
	return p.Cache.Lookup(key, time.Now())
}

// keep keeps a finished answer, as its freshness allows.
func (p *Pipeline) keep(key string, e *results.Entry) {
	p.Cache.Put(key, e)
}

// keeps reports whether a finished answer is kept anywhere: when not, a
// shared job no one waits for any more is cancelled.
func (p *Pipeline) keeps() bool { return p.Cache != nil || p.Store.On() }

// stored is job behind the result store: a fresh stored answer is the
// job's answer, made without reading the source (blob, an upload's, is
// released); a stale one is the job's to revalidate, as a stale cache
// entry; an answer the job made is queued to be written (write-behind:
// the answer does not wait for the store). tag names the source, the
// store's prefix for its answers; vary is the answer's Vary, kept beside
// it for whoever reads the store.
func (p *Pipeline) stored(tag, key string, vary []string, blob *source.Blob, job jobFunc) jobFunc {
	if !p.Store.On() || blob != nil && !blob.Fresh.Store {
		// An upload is stored only when the operator allows it
		// (THUMBD_CACHE_UPLOADS): none is looked for otherwise.
		return job
	}
	return func(ctx context.Context, stale *results.Entry, inm string) (*results.Entry, error) {
		var held *results.Entry // a stale hit, its bytes on the budget until the job is done
		if e, ok := p.Store.Get(ctx, tag, key); ok {
			if e.Fresh.Fresh(time.Now()) {
				blob.Release()
				if inm != "" && matchesETag(inm, e.ETag) {
					// As a job's answer to a matching If-None-Match:
					// no body, a 304; the entry is kept all the same.
					p.keep(key, e)
					e.Release()
					return &results.Entry{ETag: e.ETag, Fresh: e.Fresh}, nil
				}
				return e, nil // released once answered (shared)
			}
			held = e
			if stale == nil {
				stale = e
			}
		}
		e, err := job(ctx, stale, inm)
		if e != held {
			held.Release()
		}
		if err == nil {
			p.Store.Put(ctx, tag, key, e, vary)
		}
		return e, err
	}
}

// shared answers the request for key. blob is the source when already read
// (an upload): handed to the job when this request starts it, released
// otherwise. start is the request's arrival, from which the deadline runs.
//
// A request that joins a job in flight takes the job as it is: its answer
// comes by its own deadline or the job's, whichever is first, and the
// job's deadline is that of the request that started it. So a joiner may
// get a 504 before its own deadline, never after it.
//
// tag names the source (resultstore.Tag): the result store files key's
// answer under it.
func (p *Pipeline) shared(ctx context.Context, w http.ResponseWriter, r *http.Request, start time.Time, key, tag string, blob *source.Blob, job jobFunc) error {
	inm := r.Header.Get("If-None-Match")
	if r.Method != http.MethodGet {
		inm = "" // POST is never conditional
	}
	stale, fresh := p.lookup(key)
	if fresh {
		blob.Release()
		p.answer(ctx, w, stale, inm)
		return nil
	}
	job = p.stored(tag, key, w.Header().Values("Vary"), blob, job)
	if inm != "" || !p.cfg.Merge {
		// A conditional request is not merged: it reads the source to
		// compare ETags, and a match is a 304 that takes no place and
		// runs no engine job, which a shared job would.
		e, err := job(ctx, stale, inm)
		if err != nil {
			return err
		}
		if e.Body != nil {
			p.keep(key, e)
		}
		// An entry with a body may still be a 304: a stale one its origin
		// said had not changed, whose ETag the job did not compare.
		p.answer(ctx, w, e, inm)
		e.Release() // a store hit's bytes, off the budget once written
		return nil
	}
	fl, leader := p.flights.join(key, p.keeps(), func() (jobCtx context.Context, cancel context.CancelFunc) {
		// The job is every waiter's: no one client's leaving cancels it;
		// the deadline of the request that started it bounds it.
		return context.WithDeadline(context.WithoutCancel(ctx), start.Add(p.cfg.Deadline))
	}, func(ctx context.Context) (*results.Entry, error) {
		e, err := job(ctx, stale, "")
		if err == nil {
			p.keep(key, e) // errors are shared by the waiters, never kept
		}
		return e, err
	}, p.panicked)
	if !leader {
		p.Metrics.Merged.Inc()
		blob.Release()
	} else {
		// A store hit's bytes are on the budget until the starter's
		// answer is written, or the job's end when the starter left
		// (the other waiters write the same bytes).
		defer func() {
			select {
			case <-fl.done:
				fl.entry.Release()
			default:
				go func() { <-fl.done; fl.entry.Release() }()
			}
		}()
	}
	select {
	case <-fl.done:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			// The client left. A waiter whose deadline passed leaves the
			// job to its own deadline, which is the same or earlier (the
			// job's is its starter's, who came first): it ends as the
			// deadline's, not as a cancel.
			p.flights.leave(key, fl)
		}
		return p.deadlineOrGone(ctx.Err()) // this waiter's own deadline or departure
	}
	if fl.err != nil {
		return p.deadlineOrGone(fl.err)
	}
	p.answer(ctx, w, fl.entry, inm)
	return nil
}

// panicked is the answer to a shared job that panicked: its waiters get a
// 500, counted, the panic and its stack logged with each; the process
// and every other request go on.
func (p *Pipeline) panicked(v any) error {
	p.Metrics.Panics.Inc()
	return internalError(fmt.Errorf("panic in the shared job: %v\n%s", v, debug.Stack()))
}

// flights are the shared jobs in flight, by key. It is
// golang.org/x/sync/singleflight's DoChan but for three things: join
// tells its caller at once whether it started the job (an upload must
// know, to hand its body to the job or give its bytes back to the
// budget); a panic in the job answers its waiters instead of ending the
// process; and a job whose every waiter left is cancelled when no one
// keeps its answer, which frees its admission place (and, in cells mode,
// its cell).
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

// flight is one shared job; entry and err are set before done is closed.
type flight struct {
	done    chan struct{}
	entry   *results.Entry
	err     error
	waiters int                // requests waiting for it (under flights.mu)
	cancel  context.CancelFunc // ends the job; nil once no waiter may end it
}

func newFlights() *flights { return &flights{m: map[string]*flight{}} }

// join returns key's flight, started when none is in flight (leader: this
// call started it) with job, in a goroutine of its own, on the context
// jobCtx makes. keeps says whether the job's answer is kept beyond its
// waiters: if not, the last waiter to leave cancels it. A panic in job is
// recovered and answered with panicked's error. A finished or cancelled
// flight is forgotten before its waiters are told, so an error is never
// reused by a later request.
func (f *flights) join(key string, keeps bool, jobCtx func() (context.Context, context.CancelFunc), job func(context.Context) (*results.Entry, error), panicked func(any) error) (fl *flight, leader bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[key]; ok {
		fl.waiters++
		return fl, false
	}
	ctx, cancel := jobCtx()
	fl = &flight{done: make(chan struct{}), waiters: 1}
	if !keeps {
		fl.cancel = cancel
	}
	f.m[key] = fl
	go func() {
		defer func() {
			if v := recover(); v != nil {
				fl.entry, fl.err = nil, panicked(v)
			}
			cancel()
			f.forget(key, fl)
			close(fl.done)
		}()
		fl.entry, fl.err = job(ctx)
	}()
	return fl, true
}

// leave is a waiter's departure before fl finished: the last one cancels
// the job, when it may.
func (f *flights) leave(key string, fl *flight) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl.waiters--; fl.waiters > 0 || fl.cancel == nil {
		return
	}
	if f.m[key] == fl {
		delete(f.m, key) // a later request starts afresh
	}
	fl.cancel()
}

// forget removes fl from the flights in flight, unless it left already.
func (f *flights) forget(key string, fl *flight) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m[key] == fl {
		delete(f.m, key)
	}
}

// InFlight is how many shared jobs are in flight.
func (p *Pipeline) InFlight() int {
	p.flights.mu.Lock()
	defer p.flights.mu.Unlock()
	return len(p.flights.m)
}

// answer is the respond stage: e written as the request's answer (its
// body, or a 304: see Responder.entry for inm).
func (p *Pipeline) answer(ctx context.Context, w http.ResponseWriter, e *results.Entry, inm string) {
	stage(ctx, p.Tracer, "respond", func(context.Context, trace.Span) error {
		p.Respond.entry(w, e, inm)
		return nil
	})
}
