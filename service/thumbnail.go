package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/origin"
	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/results"
	"github.com/thumbd/thumbd/service/internal/resultstore"
	"github.com/thumbd/thumbd/service/internal/signing"
	"github.com/thumbd/thumbd/service/internal/source"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// thumbnails is the pipeline both thumbnail routes run:
//
//	parse ─ source ─ admit ─ engine ─ respond
//
// Each stage returns an *apierr.Error or nil; the handler writes the one
// error, counted as a rejection.
type thumbnails struct {
	cfg     config
	engine  *engineStage
	gate    *admission.Gate
	limits  source.Limits     // every source reads through the same budget
	dir     *source.Dir       // nil when GET /thumbnail?src= is off
	origins *origin.Fetcher   // nil when GET /thumbnail?url= is off
	signer  *signing.Verifier // checks GET /thumbnail's sig= (when keys are set)
	respond *responder
	tracer  trace.Tracer   // a span per stage, children of the request's
	cache   *results.Cache // nil: off (THUMBD_CACHE_SIZE=0)
	store   *resultstore.Store
	flights *flights       // identical jobs in flight
	metrics *metrics
}

// handlePost makes a thumbnail of the request body (routes.go applies
// the uploads switch, as to POST /hash).
func (t *thumbnails) handlePost() handlerFunc {
	return t.handle(func(r *http.Request) (params.Thumbnail, source.Source, error) {
		q, err := params.UploadQuery(r.URL.RawQuery)
		if err != nil {
			return params.Thumbnail{}, nil, err
		}
		if err := t.checkUpload(r.URL.Path, q); err != nil {
			return params.Thumbnail{}, nil, err
		}
		req, err := t.rules(r).Upload(q)
		return req, source.Upload{Limits: t.limits, Body: r.Body, Length: r.ContentLength}, err
	})
}

// checkUpload checks a POST's signature as a GET's, before a byte of the
// body is read (its connection is then closed rather than drained). With
// THUMBD_UNSIGNED_UPLOADS=true a POST that carries neither sig nor exp is
// served unsigned; one that does is still checked, so its exp holds.
func (t *thumbnails) checkUpload(path string, q map[string]string) error {
	_, sig := q["sig"]
	_, exp := q["exp"]
	if t.cfg.UnsignedUploads && !sig && !exp {
		return nil
	}
	if err := t.signer.Check(path, q); err != nil {
		e := *apierr.From(err)
		if e.Code == apierr.SignatureMissing {
			e.Message = "POST " + path + " must be signed here: sig= is missing (THUMBD_UNSIGNED_UPLOADS=true serves unsigned uploads)."
		}
		e.CloseConnection = true
		return &e
	}
	return nil
}

// uploadsDisabled is the answer to a POST when THUMBD_UPLOADS=false: a 405
// (the route serves GET), given before a byte of the body is read, on a
// connection then closed rather than drained.
func uploadsDisabled(r *http.Request) error {
	return &apierr.Error{Code: apierr.UploadsDisabled, CloseConnection: true,
		Message: "POST " + r.URL.Path + " is off on this service (THUMBD_UPLOADS=false); GET is served."}
}

// handleGet makes a thumbnail of a file in the source directory or of an
// origin's image. The signature is checked right after the query's names,
// before its values are read: an unsigned request learns nothing, and
// reads no file, contacts no origin and takes no place.
func (t *thumbnails) handleGet() handlerFunc {
	return t.handle(func(r *http.Request) (params.Thumbnail, source.Source, error) {
		q, err := params.GetQuery(r.URL.RawQuery)
		if err != nil {
			return params.Thumbnail{}, nil, err
		}
		if err := t.signer.Check(r.URL.Path, q); err != nil {
			return params.Thumbnail{}, nil, err
		}
		req, err := t.rules(r).Get(q)
		if err != nil {
			return req, nil, err
		}
		src, err := t.sourceOf(r.URL.Path, req.Src, req.URL)
		return req, src, err
	})
}

// rules are the parse rules for r: the settings', with r's client hints
// when they are on.
func (t *thumbnails) rules(r *http.Request) params.Rules {
	rules := t.cfg.rules()
	rules.Hints = t.hints(r)
	return rules
}

// hints are r's client hints, nil when THUMBD_CLIENT_HINTS is off.
func (t *thumbnails) hints(r *http.Request) *params.Hints {
	if !t.cfg.ClientHints {
		return nil
	}
	return &params.Hints{DPR: r.Header.Values(params.HintDPR), Width: r.Header.Values(params.HintWidth), SaveData: r.Header.Values(params.HintSaveData)}
}

// sourceOf is the source a GET of route names: an origin's URL u, else a
// file src of the source directory. An origin URL is checked here, before
// any connection is made.
func (t *thumbnails) sourceOf(route, src, u string) (source.Source, error) {
	if u != "" {
		if t.origins == nil {
			return nil, apierr.New(apierr.OriginsDisabled, "GET %s?url= is off: no origin is allowed (THUMBD_ORIGINS).", route)
		}
		return t.origins.Source(u)
	}
	if t.dir == nil {
		return nil, apierr.New(apierr.SourcesDisabled, "GET %s?src= is off: no source directory is configured (THUMBD_SOURCE_DIR).", route)
	}
	return t.dir.File(src), nil
}

// handle runs the pipeline after the route's parse step, which yields the
// typed request and its source.
func (t *thumbnails) handle(parse func(r *http.Request) (params.Thumbnail, source.Source, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if t.cfg.ClientHints {
			w.Header().Set("Accept-CH", params.HintDPR+", "+params.HintWidth)
		}
		_, span := t.tracer.Start(r.Context(), "parse")
		req, src, err := parse(r)
		endSpan(span, err)
		if err != nil {
			return err
		}
		if req.Negotiate(r.Header.Get("Accept")) {
			w.Header().Add("Vary", "Accept")
		}
		for _, name := range req.Vary {
			w.Header().Add("Vary", name)
		}
		if req.SaveData() {
			w.Header().Add("Vary", params.HintSaveData)
		}
		return t.run(w, r, req, src)
	}
}

// rejections marks every error of an engine route (/thumbnail, /info) as
// a rejection, which the responder counts by its code.
func rejections(next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		err := next(w, r)
		if err == nil {
			return nil
		}
		e := *apierr.From(err)
		e.Rejection = true
		return &e
	}
}

// run is the pipeline from the source on. The deadline runs from the
// request's arrival and covers reading the source, the queue and libvips.
//
// Before the source is read, a request whose source identity is known
// (GET src=: the file's name, size and modification time; GET url=: the
// origin URL) is answered from the result cache, or joins the identical
// job in flight, or starts it; an upload does the same once its body is
// read, keyed by the body's hash (results.go).
func (t *thumbnails) run(w http.ResponseWriter, r *http.Request, req params.Thumbnail, src source.Source) error {
	start := time.Now()
	ctx, cancel := context.WithDeadline(r.Context(), start.Add(t.cfg.Deadline))
	defer cancel()
	opts := "\x00" + req.Options.Normalised()
	var tag string
	if named, ok := src.(source.Named); ok {
		tag = t.nameSource(w, named.Identity())
	}
	if keyed, ok := src.(source.Keyed); ok && keyed.Key() != "" {
		return t.shared(ctx, w, r, start, keyed.Key()+opts, tag, nil, func(ctx context.Context, stale *results.Entry, inm string) (*results.Entry, error) {
			return t.make(ctx, src, nil, req.Options, stale, inm)
		})
	}
	// With every place taken, wait at the door a while, the source
	// unread, then refuse before reading it: under overload most requests
	// are turned away without their upload, and no faster than one per
	// client per doorWait.
	if err := t.door(ctx); err != nil {
		return err
	}
	blob, err := t.read(ctx, src, nil)
	if err != nil {
		return err
	}
	if _, upload := src.(source.Upload); upload && t.cfg.CacheUploads {
		blob.Fresh = source.Freshness{Store: true, Until: time.Unix(1<<62, 0)} // keyed by its bytes: never stale
	}
	if tag == "" {
		tag = t.nameSource(w, source.UploadIdentity(blob))
	}
	return t.shared(ctx, w, r, start, "sha256\x00"+blob.ID+opts, tag, blob, func(ctx context.Context, stale *results.Entry, inm string) (*results.Entry, error) {
		return t.make(ctx, nil, blob, req.Options, nil, inm)
	})
}

// nameSource names the answer's source for CDNs, by the tag the result
// store files its thumbnails under, and returns the tag: Fastly's
// Surrogate-Key and Cloudflare's Cache-Tag, so that one purge by that tag
// and one delete of the store's prefix forget a source everywhere
// (docs/storage.md, "Purging one source").
func (t *thumbnails) nameSource(w http.ResponseWriter, identity string) string {
	tag := resultstore.Tag(identity)
	w.Header().Set("Surrogate-Key", tag)
	w.Header().Set("Cache-Tag", tag)
	return tag
}

// door waits, with every place taken, up to doorWaitFraction of the
// deadline for one: nil when there is room.
func (t *thumbnails) door(ctx context.Context) error {
	_, span := t.tracer.Start(ctx, "admit.door")
	room := t.gate.WaitRoom(ctx, t.cfg.Deadline/doorWaitFraction)
	span.End()
	if room {
		return nil
	}
	if ctx.Err() != nil {
		return t.deadlineOrGone(ctx.Err())
	}
	return queueFull(true)
}

// make is one job: the source read (a conditional read when stale can be
// revalidated), the ETag (a 304 for a matching inm, before admission),
// admission and the engine (an entry without an image: inm matched).
// blob, when given, is the source already read,
// released here. The entry's freshness is the source's.
func (t *thumbnails) make(ctx context.Context, src source.Source, blob *source.Blob, o thumbjob.Options, stale *results.Entry, inm string) (*results.Entry, error) {
	if blob == nil {
		if err := t.door(ctx); err != nil {
			return nil, err
		}
		var since *source.Freshness
		if stale != nil && stale.Fresh.Revalidable() {
			since = &stale.Fresh
		}
		var err error
		if blob, err = t.read(ctx, src, since); err != nil {
			return nil, err
		}
		if blob.NotModified {
			t.metrics.cacheRevalidated.Inc()
			renewed := *stale
			renewed.Fresh = blob.Fresh
			return &renewed, nil
		}
	}
	defer blob.Release()
	tag := etag(blob.ID, o.Normalised())
	if inm != "" && matchesETag(inm, tag) {
		return &results.Entry{ETag: tag}, nil // the respond stage answers 304; nothing to keep
	}
	ticket, admit, err := t.ticket(ctx, t.cost(blob.Bytes, o))
	if err != nil {
		return nil, err
	}
	defer ticket.Release()
	img, err := t.engine.thumbnail(ctx, admit, ticket, blob, o)
	if err != nil {
		return nil, t.deadlineOrGone(err)
	}
	return &results.Entry{Image: img, ETag: tag, Fresh: blob.Fresh}, nil
}

// admit reads the source and admits its job, within ctx: /info's stages
// (a thumbnail's are make's, which shares results). The job's ETag comes
// from the source and the normalised job; a GET that has it already gets
// its 304 here. cost is the job's estimated peak memory. admit returns the
// source and the job's ticket, both to release, the admission span (which
// the engine stage ends) and the ETag; or no source, and the error to
// answer with (nil after a 304).
func (t *thumbnails) admit(ctx context.Context, w http.ResponseWriter, r *http.Request, src source.Source, normalised string, cost func([]byte) int64) (*source.Blob, *admission.Ticket, trace.Span, string, error) {
	if err := t.door(ctx); err != nil {
		return nil, nil, nil, "", err
	}
	blob, err := t.read(ctx, src, nil)
	if err != nil {
		return nil, nil, nil, "", err
	}
	tag := etag(blob.ID, normalised)
	if t.respond.notModified(w, r, tag) {
		blob.Release()
		return nil, nil, nil, "", nil
	}
	ticket, span, err := t.ticket(ctx, cost(blob.Bytes))
	if err != nil {
		blob.Release()
		return nil, nil, nil, "", err
	}
	return blob, ticket, span, tag, nil
}

// read is the source stage: the upload's body, the file, or the origin
// fetch (whose HTTP request is a client span of this one); a conditional
// read of an origin's image when since is given and the source can.
func (t *thumbnails) read(ctx context.Context, src source.Source, since *source.Freshness) (*source.Blob, error) {
	ctx, span := t.tracer.Start(ctx, "source")
	var blob *source.Blob
	var err error
	if cond, ok := src.(source.Conditional); ok && since != nil {
		blob, err = cond.ReadSince(ctx, *since)
	} else {
		blob, err = src.Read(ctx)
	}
	if err != nil {
		err = t.deadlineOrGone(err) // an origin fetch ends with the request
		endSpan(span, err)
		return nil, err
	}
	span.SetAttributes(attribute.Int("thumbd.source.bytes", len(blob.Bytes)))
	span.End()
	return blob, nil
}

// ticket admits a job of the given estimated peak memory, or answers why
// not: more than the whole budget, a full queue, or the deadline. The
// admission span it starts is ended by the engine stage, once the job
// holds a processing slot (here on a refusal).
func (t *thumbnails) ticket(ctx context.Context, bytes int64) (ticket *admission.Ticket, span trace.Span, err error) {
	ctx, span = t.tracer.Start(ctx, "admit")
	span.SetAttributes(attribute.Int64("thumbd.cost_bytes", bytes))
	defer func() {
		if err != nil {
			endSpan(span, err)
		}
	}()
	ticket, err = t.gate.AdmitWithin(ctx, bytes, t.cfg.Deadline/doorWaitFraction)
	switch {
	case errors.Is(err, admission.ErrTooLarge):
		return nil, span, apierr.New(apierr.NeedsMoreMemory, "This image needs about %s of memory to thumbnail, more than the %s this instance has for thumbnails (memory limit %s); a smaller w and h, another format, or an instance with more memory would serve it.",
			mib(bytes), mib(t.cfg.MemoryBudget), mib(t.cfg.memory.Limit.Bytes))
	case errors.Is(err, admission.ErrFull):
		return nil, span, queueFull(false)
	case err != nil:
		return nil, span, t.deadlineOrGone(err)
	}
	return ticket, span, nil
}

// cost is the job's estimated peak memory, from the source's header (read
// in Go: no pixel is decoded). A header that cannot be read, or a source
// the engine will refuse for its size, costs the smallest job: the engine
// answers those from libvips' own header check, before decoding.
func (t *thumbnails) cost(src []byte, o thumbjob.Options) int64 {
	job := memcost.JobOf(o)
	job.QualityShrink, job.MaxSide, job.MaxPixels = t.cfg.JPEGShrink == thumbjob.JPEGShrinkQuality, t.cfg.MaxSide, t.cfg.MaxPixels
	h, err := memcost.ReadHeader(src)
	if err != nil || h.Pixels() > t.cfg.MaxPixels || h.Frames > t.cfg.MaxFrames && o.Animated {
		h, job = smallestJob(job)
	}
	if o.AlphaFormat != "" {
		// format=auto: the costlier of the two formats it may write.
		alpha := job
		alpha.Output = o.AlphaFormat
		job.Output = costlier(job, alpha, h)
	}
	return t.withSource(memcost.Estimate(h, job), src)
}

// smallestJob is the smallest job and source there are: a 1x1 PNG.
func smallestJob(job memcost.Job) (memcost.Header, memcost.Job) {
	job.Width, job.Height = 1, 1
	return memcost.Header{Format: imagefmt.PNG, Width: 1, Height: 1, Bands: 4, BytesPerSample: 1, Frames: 1}, job
}

// withSource adds to a job's cost the copy of its source a cell holds.
func (t *thumbnails) withSource(cost int64, src []byte) int64 {
	if t.cfg.Engine == engineCells {
		cost += int64(len(src))
	}
	return cost
}

func costlier(a, b memcost.Job, h memcost.Header) imagefmt.Format {
	if memcost.Estimate(h, b) > memcost.Estimate(h, a) {
		return b.Output
	}
	return a.Output
}

// doorWaitFraction: a request finding every place taken waits up to this
// fraction of the deadline for one (1 s of the default 10 s).
const doorWaitFraction = 10

func queueFull(unread bool) error {
	return &apierr.Error{Code: apierr.QueueFull, Message: "The thumbnail queue is full; retry shortly.", CloseConnection: unread}
}

// deadlineOrGone turns a context's end into the answer: a 504 when the
// deadline passed, nothing (counted) when the client left.
func (t *thumbnails) deadlineOrGone(err error) error {
	var answer *apierr.Error
	switch {
	case errors.As(err, &answer):
		return err // already an answer, whatever its cause
	case errors.Is(err, context.DeadlineExceeded):
		return apierr.New(apierr.DeadlineExceeded, "The thumbnail was not done within the %s deadline.", t.cfg.Deadline)
	case errors.Is(err, context.Canceled):
		return &apierr.Error{Code: apierr.ClientGone, Message: "The client left before the answer.", Cause: err}
	}
	return err
}

// etag is strong and derived from the source bytes and the normalised
// job (thumbjob.Options or InfoJob's Normalised): the same source with the
// same job always gives the same bytes.
func etag(sourceID, normalised string) string {
	sum := sha256.Sum256([]byte(sourceID + "\x00" + normalised))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}
