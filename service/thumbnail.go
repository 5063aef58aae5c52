package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

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
		src, err := t.sourceOf(r.URL.Path, req.Src, req.URL)
		return req, src, err
	})
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
		req, src, err := parse(r)
		if err != nil {
			return err
		}
		if req.Negotiate(r.Header.Get("Accept")) {
			w.Header().Add("Vary", "Accept")
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
func (t *thumbnails) run(w http.ResponseWriter, r *http.Request, req params.Thumbnail, src source.Source) error {
	ctx, cancel := context.WithDeadline(r.Context(), time.Now().Add(t.cfg.Deadline))
	defer cancel()
	blob, ticket, tag, err := t.admit(ctx, w, r, src, req.Options.Normalised(), func(b []byte) int64 { return t.cost(b, req.Options) })
	if blob == nil {
		return err
	}
	defer blob.Release()
	defer ticket.Release()
	img, err := t.engine.thumbnail(ctx, ticket, blob, req.Options)
	if err != nil {
		return t.deadlineOrGone(err)
	}
	t.respond.image(w, img, tag)
	return nil
}

// admit reads the source and admits its job, within ctx: the stages both
// engine routes share. The job's ETag comes from the source and the
// normalised job; a GET that has it already gets its 304 here. cost is
// the job's estimated peak memory. admit returns the source and the job's
// ticket, both to release, and the ETag; or no source, and the error to
// answer with (nil after a 304).
func (t *thumbnails) admit(ctx context.Context, w http.ResponseWriter, r *http.Request, src source.Source, normalised string, cost func([]byte) int64) (*source.Blob, *admission.Ticket, string, error) {
	// With every place taken, wait at the door a while, the source
	// unread, then refuse before reading it: under overload most requests
	// are turned away without their upload, and no faster than one per
	// client per doorWait.
	if !t.gate.WaitRoom(ctx, t.cfg.Deadline/doorWaitFraction) {
		if ctx.Err() != nil {
			return nil, nil, "", t.deadlineOrGone(ctx.Err())
		}
		return nil, nil, "", queueFull(true)
	}
	blob, err := src.Read(ctx)
	if err != nil {
		return nil, nil, "", t.deadlineOrGone(err) // an origin fetch ends with the request
	}
	tag := etag(blob.ID, normalised)
	if t.respond.notModified(w, r, tag) {
		blob.Release()
		return nil, nil, "", nil
	}
	bytes := cost(blob.Bytes)
	ticket, err := t.gate.AdmitWithin(ctx, bytes, t.cfg.Deadline/doorWaitFraction)
	switch {
	case errors.Is(err, admission.ErrTooLarge):
		err = apierr.New(apierr.NeedsMoreMemory, "This image needs about %s of memory to thumbnail, more than the %s this instance has for thumbnails (memory limit %s); a smaller w and h, another format, or an instance with more memory would serve it.",
			mib(bytes), mib(t.cfg.MemoryBudget), mib(t.cfg.memory.Limit.Bytes))
	case errors.Is(err, admission.ErrFull):
		err = queueFull(false)
	case err != nil:
		err = t.deadlineOrGone(err)
	}
	if err != nil {
		blob.Release()
		return nil, nil, "", err
	}
	return blob, ticket, tag, nil
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
