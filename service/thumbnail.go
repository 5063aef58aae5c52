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
	tracer  trace.Tracer // a span per stage, children of the request's
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
		req, err := t.cfg.rules().Upload(q)
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
		req, err := t.cfg.rules().Get(q)
		if err != nil {
			return req, nil, err
		}
		src, err := t.sourceOf(req)
		return req, src, err
	})
}

// sourceOf is the source a GET names. An origin URL is checked here,
// before any connection is made.
func (t *thumbnails) sourceOf(req params.Thumbnail) (source.Source, error) {
	if req.URL != "" {
		if t.origins == nil {
			return nil, apierr.New(apierr.OriginsDisabled, "GET /thumbnail?url= is off: no origin is allowed (THUMBD_ORIGINS).")
		}
		return t.origins.Source(req.URL)
	}
	if t.dir == nil {
		return nil, apierr.New(apierr.SourcesDisabled, "GET /thumbnail?src= is off: no source directory is configured (THUMBD_SOURCE_DIR).")
	}
	return t.dir.File(req.Src), nil
}

// handle runs the pipeline after the route's parse step, which yields the
// typed request and its source.
func (t *thumbnails) handle(parse func(r *http.Request) (params.Thumbnail, source.Source, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		_, span := t.tracer.Start(r.Context(), "parse")
		req, src, err := parse(r)
		endSpan(span, err)
		if err != nil {
			return err
		}
		if req.Negotiate(r.Header.Get("Accept")) {
			w.Header().Add("Vary", "Accept")
		}
		return t.run(w, r, req, src)
	}
}

// rejections marks every error of a thumbnail route as a rejection, which
// the responder counts by its code.
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
func (t *thumbnails) run(w http.ResponseWriter, r *http.Request, req params.Thumbnail, src source.Source) error {
	start := time.Now()
	ctx, cancel := context.WithDeadline(r.Context(), start.Add(t.cfg.Deadline))
	defer cancel()
	// With every place taken, wait at the door a while, the source
	// unread, then refuse before reading it: under overload most requests
	// are turned away without their upload, and no faster than one per
	// client per doorWait.
	_, span := t.tracer.Start(ctx, "admit.door")
	room := t.gate.WaitRoom(ctx, t.cfg.Deadline/doorWaitFraction)
	span.End()
	if !room {
		if ctx.Err() != nil {
			return t.deadlineOrGone(ctx.Err())
		}
		return queueFull(true)
	}
	blob, err := t.read(ctx, src)
	if err != nil {
		return err
	}
	defer blob.Release()
	tag := etag(blob.ID, req.Options)
	if t.respond.notModified(w, r, tag) {
		return nil
	}
	cost := t.cost(blob.Bytes, req.Options)
	actx, admit := t.tracer.Start(ctx, "admit")
	admit.SetAttributes(attribute.Int64("thumbd.cost_bytes", cost))
	ticket, err := t.gate.AdmitWithin(actx, cost, t.cfg.Deadline/doorWaitFraction)
	switch {
	case errors.Is(err, admission.ErrTooLarge):
		err = apierr.New(apierr.NeedsMoreMemory, "This image needs about %s of memory to thumbnail, more than the %s this instance has for thumbnails (memory limit %s); a smaller w and h, another format, or an instance with more memory would serve it.",
			mib(cost), mib(t.cfg.MemoryBudget), mib(t.cfg.memory.Limit.Bytes))
	case errors.Is(err, admission.ErrFull):
		err = queueFull(false)
	case err != nil:
		err = t.deadlineOrGone(err)
	}
	if err != nil {
		endSpan(admit, err)
		return err
	}
	defer ticket.Release()
	img, err := t.engine.thumbnail(ctx, admit, ticket, blob, req.Options)
	if err != nil {
		return t.deadlineOrGone(err)
	}
	_, span = t.tracer.Start(ctx, "respond")
	t.respond.image(w, img, tag)
	span.End()
	return nil
}

// read is the source stage: the upload's body, the file, or the origin
// fetch (whose HTTP request is a client span of this one).
func (t *thumbnails) read(ctx context.Context, src source.Source) (*source.Blob, error) {
	ctx, span := t.tracer.Start(ctx, "source")
	blob, err := src.Read(ctx)
	if err != nil {
		err = t.deadlineOrGone(err) // an origin fetch ends with the request
		endSpan(span, err)
		return nil, err
	}
	span.SetAttributes(attribute.Int("thumbd.source.bytes", len(blob.Bytes)))
	span.End()
	return blob, nil
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
		h = memcost.Header{Format: imagefmt.PNG, Width: 1, Height: 1, Bands: 4, BytesPerSample: 1, Frames: 1}
		job.Width, job.Height = 1, 1
	}
	if o.AlphaFormat != "" {
		// format=auto: the costlier of the two formats it may write.
		alpha := job
		alpha.Output = o.AlphaFormat
		job.Output = costlier(job, alpha, h)
	}
	cost := memcost.Estimate(h, job)
	if t.cfg.Engine == engineCells {
		cost += int64(len(src)) // the cell holds its own copy of the source
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

// etag is strong and derived from the source bytes and normalised options:
// the same source with the same options always gives the same bytes.
func etag(sourceID string, opts thumbjob.Options) string {
	sum := sha256.Sum256([]byte(sourceID + "\x00" + opts.Normalised()))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}
