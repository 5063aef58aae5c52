// Package pipeline is the request pipeline of thumbd's engine routes
// (GET and POST /thumbnail and /info): one job type through one corridor,
//
//	parse ─ source ─ shared results ─ admit ─ engine ─ respond
//
// Each stage returns an *apierr.Error or nil; the respond stage writes
// the one answer. The package takes its settings (Config), its
// collaborators (Parts) and its instruments (Metrics) from package main,
// and never reaches back into it.
//
// Two seams are named for the storage work: Sources (which kind of source
// a GET names) and lookup/keep in shared.go (where finished answers are
// found and kept: the result cache today, a store behind it tomorrow).
package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/bucketsource"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/memplan"
	"github.com/thumbd/thumbd/service/internal/origin"
	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/plan"
	"github.com/thumbd/thumbd/service/internal/results"
	"github.com/thumbd/thumbd/service/internal/resultstore"
	"github.com/thumbd/thumbd/service/internal/signing"
	"github.com/thumbd/thumbd/service/internal/source"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/video"
	"github.com/thumbd/thumbd/service/internal/videoframe"
)

// Config is what the pipeline reads of the settings.
type Config struct {
	// Deadline runs from a request's arrival and covers reading the
	// source, the queue and the engine (THUMBD_DEADLINE).
	Deadline time.Duration
	// Rules are the parse rules, a request's client hints left out.
	Rules params.Rules
	// ClientHints, Merge, CacheUploads and UnsignedUploads are the
	// switches of the same names (THUMBD_*).
	ClientHints, Merge, CacheUploads, UnsignedUploads bool
	// MaxPixels, MaxFrames, MaxSide and QualityShrink are the engine's
	// limits, which a job's memory estimate reads.
	MaxPixels     int64
	MaxFrames     int
	MaxSide       int
	QualityShrink bool
	// SourceInJob: a job also holds a copy of its source (cells mode: in
	// its cell), counted in its cost.
	SourceInJob bool
	// Inputs are THUMBD_INPUTS (empty: every input format).
	Inputs []imagefmt.Format
	// MemoryBudget and MemoryLimit are named in a needs_more_memory answer.
	MemoryBudget, MemoryLimit int64
	// Fallback answers a source that cannot be read; nil: off.
	Fallback *Fallback
}

// Parts are the pipeline's collaborators, built by package main.
type Parts struct {
	Engine  Engine
	Ready   <-chan struct{} // closed once the engine has started
	Gate    *admission.Gate
	Limits  source.Limits // every source reads through the same budget
	Sources Sources
	Signer  *signing.Verifier  // checks sig= (when keys are set)
	Cache   *results.Cache     // nil: off (THUMBD_CACHE_SIZE=0)
	Store   *resultstore.Store // behind the cache; nil or without a backend: off (THUMBD_RESULT_STORE)
	Tracer  trace.Tracer       // a span per stage, children of the request's
	Metrics *Metrics
	Respond *Responder
}

// Pipeline runs the engine routes.
type Pipeline struct {
	Parts
	cfg     Config
	flights *flights // identical jobs in flight
}

// New is the pipeline of cfg with its parts.
func New(cfg Config, parts Parts) *Pipeline {
	return &Pipeline{Parts: parts, cfg: cfg, flights: newFlights()}
}

// Sources is the source seam of a GET: the kinds of source its query may
// name, each nil when off. A new kind (an object store) is a field here,
// its branch in of, and the query name that picks it in params.
type Sources struct {
	Dir     *source.Dir          // src=: a file of THUMBD_SOURCE (a directory) or THUMBD_SOURCE_DIR
	Bucket  *bucketsource.Bucket // src=: an object of THUMBD_SOURCE=s3://... (then Dir is nil)
	Origins *origin.Fetcher      // url=: an origin's image (THUMBD_ORIGINS)
}

// of is the source a GET of route names: an origin's URL, else an object
// of the source bucket or a file of the source directory. An origin URL
// and an object's name are checked here, before any connection is made.
func (s Sources) of(route string, req params.Request) (source.Source, error) {
	if req.URL != "" {
		if s.Origins == nil {
			return nil, apierr.New(apierr.OriginsDisabled, "GET %s?url= is off: no origin is allowed (THUMBD_ORIGINS).", route)
		}
		return s.Origins.Source(req.URL)
	}
	if s.Bucket != nil {
		return s.Bucket.Object(req.Src)
	}
	if s.Dir == nil {
		return nil, apierr.New(apierr.SourcesDisabled, "GET %s?src= is off: no source is configured (THUMBD_SOURCE).", route)
	}
	return s.Dir.File(req.Src), nil
}

// Handler serves one engine route: its parse step, then the pipeline.
// The signature is checked right after the query's names, before its
// values are read: an unsigned request learns nothing, and reads no file,
// contacts no origin and takes no place.
func (p *Pipeline) Handler(rt params.Route) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		start := time.Now()
		if p.cfg.ClientHints && rt.Path == "/thumbnail" {
			w.Header().Set("Accept-CH", params.HintDPR+", "+params.HintWidth)
		}
		var req params.Request
		var src source.Source
		err := stage(r.Context(), p.Tracer, "parse", func(context.Context, trace.Span) (err error) {
			req, src, err = p.parse(rt, r)
			return err
		})
		if err != nil {
			return err
		}
		return p.serve(w, r, start, req, src)
	}
}

// Translated runs a GET that another grammar read (the imgproxy
// endpoint) through the same corridor as GET /thumbnail: its values are
// made into the job by params (Rules.Make: every bound checked there, the
// allow-lists binding what a.Chooser says the client chose; signed: its
// grammar checked a signature, and they bind nothing), and the source and
// the rest are GET /thumbnail's.
func (p *Pipeline) Translated(w http.ResponseWriter, r *http.Request, a params.Asked, signed bool) error {
	start := time.Now()
	var req params.Request
	var src source.Source
	err := stage(r.Context(), p.Tracer, "parse", func(context.Context, trace.Span) (err error) {
		rules := p.cfg.Rules
		if rules.PresetsOnly {
			// Its URL is a set of options, none a thumbd preset.
			return apierr.New(apierr.BadParameter, "%s is not taken here: only presets are (THUMBD_PRESETS_ONLY).", a.Name("w"))
		}
		if signed {
			rules = rules.Signed()
		}
		if req.Thumbnail, err = rules.Make(a); err != nil {
			return err
		}
		src, err = p.Sources.of("/thumbnail", req)
		return err
	})
	if err != nil {
		return err
	}
	return p.serve(w, r, start, req, src)
}

// serve is a parsed request from its Vary headers on.
func (p *Pipeline) serve(w http.ResponseWriter, r *http.Request, start time.Time, req params.Request, src source.Source) error {
	if req.Negotiate(r.Header.Get("Accept")) {
		w.Header().Add("Vary", "Accept")
	}
	for _, name := range req.Vary {
		w.Header().Add("Vary", name)
	}
	if req.SaveData() {
		w.Header().Add("Vary", params.HintSaveData)
	}
	if err := p.run(w, r, start, req.Job(), src); err != nil {
		return p.fallback(w, r, start, req.Job(), err)
	}
	return nil
}

// parse reads the route's query (strictly), checks its signature, reads
// its values and names its source: the body of a POST, else the kind of
// source the GET names.
func (p *Pipeline) parse(rt params.Route, r *http.Request) (params.Request, source.Source, error) {
	q, err := rt.Query(r.URL.RawQuery)
	if err != nil {
		return params.Request{}, nil, err
	}
	if rt.Upload() {
		err = p.checkUpload(r.URL.Path, q)
	} else {
		err = p.Signer.Check(r.URL.Path, q)
	}
	if err != nil {
		return params.Request{}, nil, err
	}
	_, signed := q["sig"] // checked above: a sig here is a valid one
	req, err := rt.Read(p.rules(r, signed), q)
	if err != nil {
		return req, nil, err
	}
	if rt.Upload() {
		return req, source.Upload{Limits: p.Limits, Body: r.Body, Length: r.ContentLength}, nil
	}
	src, err := p.Sources.of(r.URL.Path, req)
	return req, src, err
}

// checkUpload checks a POST's signature as a GET's, before a byte of the
// body is read (its connection is then closed rather than drained). With
// THUMBD_UNSIGNED_UPLOADS=true a POST that carries neither sig nor exp is
// served unsigned; one that does is still checked, so its exp holds.
func (p *Pipeline) checkUpload(path string, q map[string]string) error {
	_, sig := q["sig"]
	_, exp := q["exp"]
	if p.cfg.UnsignedUploads && !sig && !exp {
		return nil
	}
	if err := p.Signer.Check(path, q); err != nil {
		e := *apierr.From(err)
		if e.Code == apierr.SignatureMissing {
			e.Message = "POST " + path + " must be signed here: sig= is missing (THUMBD_UNSIGNED_UPLOADS=true serves unsigned uploads)."
		}
		e.CloseConnection = true
		return &e
	}
	return nil
}

// rules are the parse rules for r: the settings', with r's client hints
// when they are on; a signed request is not bound by the allow-lists.
func (p *Pipeline) rules(r *http.Request, signed bool) params.Rules {
	rules := p.cfg.Rules
	if signed {
		rules = rules.Signed()
	}
	if p.cfg.ClientHints {
		rules.Hints = &params.Hints{DPR: r.Header.Values(params.HintDPR), Width: r.Header.Values(params.HintWidth), SaveData: r.Header.Values(params.HintSaveData)}
	}
	return rules
}

// run is the pipeline from the source on. The deadline runs from the
// request's arrival (start).
//
// Before the source is read, a request whose source identity is known
// (GET src=: the file's name, size and modification time, or the object's
// ETag, asked by a HEAD (source.Identifiable); GET url=: the origin URL)
// is answered from the result cache, or joins the identical
// job in flight, or starts it; an upload does the same once its body is
// read, keyed by the body's keyed hash (source.UploadIdentity). The job's
// normalised text, in the key and the ETag, is computed once here.
func (p *Pipeline) run(w http.ResponseWriter, r *http.Request, start time.Time, job thumbjob.Job, src source.Source) error {
	ctx, cancel := context.WithDeadline(r.Context(), start.Add(p.cfg.Deadline))
	defer cancel()
	norm := job.Normalised()
	var tag string
	if named, ok := src.(source.Named); ok {
		tag = nameSource(w, named.Identity())
	}
	if pending, ok := src.(source.Identifiable); ok {
		var err error
		if src, err = p.identify(ctx, pending); err != nil {
			return err
		}
	}
	if keyed, ok := src.(source.Keyed); ok && keyed.Key() != "" {
		return p.shared(ctx, w, r, start, keyed.Key()+"\x00"+norm, tag, nil, func(ctx context.Context, stale *results.Entry, inm string) (*results.Entry, error) {
			return p.produce(ctx, src, nil, job, norm, stale, inm)
		})
	}
	blob, err := p.read(ctx, src, nil, job)
	if err != nil {
		return err
	}
	if _, upload := src.(source.Upload); upload && p.cfg.CacheUploads {
		blob.Fresh = source.Freshness{Store: true, Until: time.Unix(1<<62, 0)} // keyed by its bytes: never stale
	}
	id := source.UploadIdentity(blob)
	if tag == "" {
		tag = nameSource(w, id)
	}
	return p.shared(ctx, w, r, start, id+"\x00"+norm, tag, blob, func(ctx context.Context, stale *results.Entry, inm string) (*results.Entry, error) {
		return p.produce(ctx, nil, blob, job, norm, nil, inm)
	})
}

// nameSource names the answer's source for CDNs by the tag the result
// store files its answers under, and returns the tag: Fastly's
// Surrogate-Key and Cloudflare's Cache-Tag, so that one purge by that tag
// and one delete of the store's prefix forget a source everywhere
// (docs/storage.md, "Purging one source").
func nameSource(w http.ResponseWriter, identity string) string {
	tag := resultstore.Tag(identity)
	w.Header().Set("Surrogate-Key", tag)
	w.Header().Set("Cache-Tag", tag)
	return tag
}

// produce is one job: the source read (a conditional read when stale can be
// revalidated), the ETag (an entry without a body for a matching inm: the
// respond stage answers 304, nothing is admitted), admission and the
// engine. blob, when given, is the source already read, released here.
// The entry's freshness is the source's.
func (p *Pipeline) produce(ctx context.Context, src source.Source, blob *source.Blob, job thumbjob.Job, norm string, stale *results.Entry, inm string) (*results.Entry, error) {
	if blob == nil {
		var since *source.Freshness
		if stale != nil && stale.Fresh.Revalidable() {
			since = &stale.Fresh
		}
		var err error
		if blob, err = p.read(ctx, src, since, job); err != nil {
			return nil, err
		}
		if blob.NotModified {
			p.Cache.Revalidated()
			renewed := *stale
			renewed.Fresh = blob.Fresh
			return &renewed, nil
		}
	}
	defer blob.Release()
	tag := etag(blob.ID, norm)
	if inm != "" && matchesETag(inm, tag) {
		return &results.Entry{ETag: tag, Fresh: blob.Fresh}, nil // its 304 says the source's rules
	}
	// The one look at the source's bytes (its format sniffed, its header
	// read): admission prices the job with it and the engine gets it, so
	// neither sniffs again (in cells mode it travels with the bytes).
	look, _ := memcost.LookSource(thumbjob.Source{Bytes: blob.Bytes, Spans: blob.Spans, Size: blob.Size})
	if err := p.priceable(look); err != nil {
		return nil, err
	}
	// A source read by range is never answered as it is: its bytes are
	// parts of it (a video, which no as-is list can name anyway).
	if job.Info == nil && job.Options.AnsweredAsIs(look.Format) && len(blob.Spans) == 0 {
		if err := p.servableAsIs(look); err != nil {
			return nil, err
		}
		// The answer is the source's bytes: they stay on the budget until
		// it is written (results.Held), as a store hit's do.
		return results.Held(&results.Entry{Body: blob.Bytes, Type: look.Format.ContentType(), ETag: tag, Fresh: blob.Fresh}, blob.Handover()), nil
	}
	job.Options = job.Options.FromSource(look.Format)
	if c := job.Options.Crop; job.Info == nil && c != nil && c.Outside(look.Header) {
		return nil, apierr.New(apierr.BadParameter, "Parameter \"crop\" is outside the %dx%d source.", look.Header.Width, look.Header.Height)
	}
	ticket, err := p.admit(ctx, p.Cost(look, job), p.Work(look, job), job, len(blob.Bytes))
	if err != nil {
		return nil, err
	}
	defer ticket.Release()
	res, err := p.engine(ctx, ticket, look, job)
	if err != nil {
		return nil, err
	}
	if res.Info != nil {
		res.Info.Bytes = blob.Len()
		body, err := jsonBody(res.Info)
		return &results.Entry{Body: body, Type: jsonType, ETag: tag, Fresh: blob.Fresh}, err
	}
	return &results.Entry{Body: res.Image.Bytes, Type: res.Image.Format.ContentType(), ETag: tag, Fresh: blob.Fresh}, nil
}

// priceable refuses, before it takes a place, a source of an accepted
// input format whose header the look could not read: its price is
// unknown, and thumbd decodes nothing it cannot price (the engine refuses
// it too, in either mode). Bytes of no input format, and formats left out
// of THUMBD_INPUTS, go on to the engine's 415.
func (p *Pipeline) priceable(look thumbjob.Source) error {
	if look.Format == "" || look.Header.Width > 0 || len(p.cfg.Inputs) > 0 && !slices.Contains(p.cfg.Inputs, look.Format) {
		return nil
	}
	spec, _ := imagefmt.Lookup(look.Format)
	return apierr.New(apierr.UnprocessableImage, "This %s image cannot be priced (%s), so none of it is decoded.", spec.Name, look.Unread)
}

// servableAsIs holds a source answered as it is (imgproxy's raw and
// skip_processing) to what the engine would hold it to before decoding:
// an accepted format (THUMBD_INPUTS), its header read (priceable), within
// the pixel and frame limits. A client is never sent what thumbd would
// refuse to read.
func (p *Pipeline) servableAsIs(look thumbjob.Source) error {
	spec, _ := imagefmt.Lookup(look.Format)
	h := look.Header
	switch {
	case len(p.cfg.Inputs) > 0 && !slices.Contains(p.cfg.Inputs, look.Format):
		return apierr.New(apierr.UnsupportedFormat, "The body is a %s image, a format this server does not accept (THUMBD_INPUTS).", spec.Name)
	case int64(h.Width)*int64(h.Height) > p.cfg.MaxPixels:
		return apierr.New(apierr.TooManyPixels, "The source is %dx%d, more than the %d pixels allowed.", h.Width, h.Height, p.cfg.MaxPixels)
	case h.Frames > p.cfg.MaxFrames:
		return apierr.New(apierr.TooManyFrames, "The source has %d frames, more than the %d allowed.", h.Frames, p.cfg.MaxFrames)
	}
	return nil
}

// identify asks a source for its identity (a bucket's object: a HEAD, or
// the one remembered within THUMBD_SOURCE_MAX_AGE) within the request's
// deadline, before a shared result is looked for: it takes no place.
func (p *Pipeline) identify(ctx context.Context, src source.Identifiable) (source.Source, error) {
	var keyed source.Keyed
	err := stage(ctx, p.Tracer, "source.identify", func(ctx context.Context, _ trace.Span) (err error) {
		if keyed, err = src.Identify(ctx); err != nil {
			return p.deadlineOrGone(err)
		}
		return nil
	})
	return keyed, err
}

// read is the source stage: the upload's body, the file, or the origin
// fetch (whose HTTP request is a client span of this one); a conditional
// read of an origin's image when since is given and the source can.
//
// With every place taken, it first waits at the door a while, the source
// unread, then refuses before reading it: under overload most requests
// are turned away without their upload, and no faster than one per
// client per doorWait.
func (p *Pipeline) read(ctx context.Context, src source.Source, since *source.Freshness, job thumbjob.Job) (*source.Blob, error) {
	if err := p.door(ctx); err != nil {
		return nil, err
	}
	var blob *source.Blob
	err := stage(ctx, p.Tracer, "source", func(ctx context.Context, span trace.Span) (err error) {
		cond, conditional := src.(source.Conditional)
		condRanged, condByRange := src.(source.ConditionalRanged)
		ranged, byRange := src.(source.Ranged)
		var spent bool
		switch {
		case condByRange && since != nil:
			blob, err = condRanged.ReadRangesSince(ctx, *since, p.videoRanges(job, &spent))
		case conditional && since != nil:
			blob, err = cond.ReadSince(ctx, *since)
		case byRange:
			blob, err = ranged.ReadRanges(ctx, p.videoRanges(job, &spent))
		default:
			blob, err = src.Read(ctx)
		}
		if err != nil && spent {
			// The ranges could not be found within the budget, and the
			// whole read failed: the budget's refusal, not the whole
			// read's (a long video is no "too large" when ranged).
			err = source.NoRoom()
		}
		if err != nil {
			return p.deadlineOrGone(err) // an origin fetch ends with the request
		}
		span.SetAttributes(attribute.Int("thumbd.source.bytes", len(blob.Bytes)), attribute.Int("thumbd.source.spans", len(blob.Spans)))
		p.Metrics.SourceRead.WithLabelValues(strconv.FormatBool(len(blob.Spans) > 0)).Add(float64(len(blob.Bytes)))
		return nil
	})
	return blob, err
}

// videoRanges is the planner of a job's ranged read: for a video, the
// byte ranges its engine reads (videoframe.Spans: the index, and the
// packets of the frame the job decodes, a preview's frames, or the
// default poster frame's candidates for /info and its ThumbHash); nil,
// a whole read, for anything else or a video whose frames are not found
// (the look then refuses it as it would).
//
// The bytes finding the ranges read (the container's index, mostly, read
// again with the ranges) are counted with the ranges' in
// thumbd_source_read_bytes_total{ranged="true"}.
func (p *Pipeline) videoRanges(job thumbjob.Job, spent *bool) source.Planner {
	frame := plan.VideoFrame(job.Options)
	if job.Info != nil {
		frame = thumbjob.Frame{}
	}
	return func(r io.ReaderAt, size int64) []thumbjob.Span {
		head := make([]byte, min(size, videoSniffBytes))
		if n, _ := r.ReadAt(head, 0); n != len(head) {
			return nil
		}
		if _, isVideo := video.Sniff(head); !isVideo {
			return nil
		}
		counted := &countedAt{r: r, budget: p.Limits.Budget}
		defer counted.give()
		spans, err := videoframe.Spans(counted, size, frame)
		*spent = counted.spent
		if err != nil {
			return nil
		}
		p.Metrics.SourceRead.WithLabelValues("true").Add(float64(counted.n.Load()))
		return spans
	}
}

// countedAt counts the bytes read through it and holds them in the
// source budget until give: what finding a video's ranges reads (its
// index, mostly) is held while it is parsed, as a source's bytes are.
// A read the budget has no room for fails (spent), without waiting: a
// planner waiting with bytes taken could wait for another that waits
// for it.
type countedAt struct {
	r      io.ReaderAt
	budget *admission.Bytes // nil: counted only
	n      atomic.Int64
	taken  atomic.Int64
	spent  bool
}

func (c *countedAt) ReadAt(b []byte, off int64) (int, error) {
	if c.budget != nil {
		if !c.budget.Take(int64(len(b))) {
			c.spent = true
			return 0, errPlanSpent
		}
		c.taken.Add(int64(len(b)))
	}
	n, err := c.r.ReadAt(b, off)
	c.n.Add(int64(n))
	return n, err
}

// give gives back what the reads took.
func (c *countedAt) give() {
	if c.budget != nil {
		c.budget.Give(c.taken.Swap(0))
	}
}

// errPlanSpent is a read for a video's ranges the source budget had no
// room for.
var errPlanSpent = errors.New("the source budget has no room for the video's index")

// videoSniffBytes are the bytes video.Sniff is given: as many as
// video.Open sniffs, so that the two never disagree (ftyp's brands, EBML's
// DocType lie within them).
const videoSniffBytes = 4096

// door waits, with every place taken or the queue too long for the
// request's deadline (admission's estimate, before the job's cost is
// known), up to doorWaitFraction of the deadline for room: nil when there
// is, else a 503 before the source is read, whose Retry-After is the
// queue's estimated wait when that is what refused it. Refusing a late
// request at once instead made closed-loop clients send again at once:
// 1,707 refusals and 6.3 thumbnails/s against 398 and 10.3/s without the
// estimate (500 clients, the 12 MP photo, docs/hardening.md).
func (p *Pipeline) door(ctx context.Context) error {
	var room bool
	stage(ctx, p.Tracer, "admit.door", func(ctx context.Context, _ trace.Span) error {
		room = p.Gate.WaitRoom(ctx, p.cfg.Deadline/doorWaitFraction)
		return nil
	})
	switch {
	case room:
		return nil
	case ctx.Err() != nil:
		return p.deadlineOrGone(ctx.Err())
	}
	if err := p.late(ctx); err != nil {
		return err
	}
	return queueFull(true)
}

// admit is the admission stage: a place for a job of the given estimated
// peak memory and CPU against a plain thumbnail's (work; its source of
// sourceBytes), then, once the engine is up, a processing slot; or why
// not: more than the whole budget, a full queue, or the deadline. The
// ticket returned holds its slot.
func (p *Pipeline) admit(ctx context.Context, bytes int64, work float64, job thumbjob.Job, sourceBytes int) (ticket *admission.Ticket, err error) {
	err = stage(ctx, p.Tracer, "admit", func(ctx context.Context, span trace.Span) error {
		span.SetAttributes(attribute.Int64("thumbd.cost_bytes", bytes), attribute.Float64("thumbd.cost_work", work))
		ticket, err = p.Gate.AdmitWithin(ctx, bytes, work, p.cfg.Deadline/doorWaitFraction)
		switch {
		case errors.Is(err, admission.ErrTooLarge):
			return apierr.New(apierr.NeedsMoreMemory, "This image needs about %s of memory to thumbnail, more than the %s this instance has for thumbnails (memory limit %s); a smaller w and h, another format, or an instance with more memory would serve it.",
				memplan.MiB(bytes), memplan.MiB(p.cfg.MemoryBudget), memplan.MiB(p.cfg.MemoryLimit))
		case errors.Is(err, admission.ErrFull):
			return queueFull(false)
		case err != nil:
			return p.deadlineOrGone(err)
		}
		if job.Info == nil {
			p.Metrics.SourceBytes.Observe(float64(sourceBytes))
		}
		admitted := time.Now()
		// A job that arrives during start-up waits for the engine rather
		// than fails.
		select {
		case <-p.Ready:
		case <-ctx.Done():
			ticket.Release()
			return p.deadlineOrGone(ctx.Err())
		}
		if err := ticket.Run(ctx); err != nil {
			ticket.Release()
			if errors.Is(err, admission.ErrLate) {
				return tooLate(0, false)
			}
			return p.deadlineOrGone(err)
		}
		p.Metrics.QueueWait.Observe(time.Since(admitted).Seconds())
		return nil
	})
	return ticket, err
}

// doorWaitFraction: a request finding every place taken waits up to this
// fraction of the deadline for one (1 s of the default 10 s).
const doorWaitFraction = 10

// late is the deadline-aware door's answer for a request arriving now, its
// source not read yet (its cost not known): a 503 when the queue's
// estimated wait and a recent job's service time outlast ctx's deadline,
// nil otherwise. It is asked at the door only: asked again once the source
// was read (with the job's cost), it refused at once, and closed-loop clients sent again at once
// (628 refusals and 23 thumbnails against 260 and 153, 500 clients, no
// memory limit); a job admitted late is still never started (Ticket.Run).
func (p *Pipeline) late(ctx context.Context) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	if late, wait := p.Gate.Late(deadline, -1); late {
		return tooLate(wait, true)
	}
	return nil
}

// tooLate is the answer to a job that would not be done within its
// deadline, refused before the engine spends anything on it: a 503 whose
// Retry-After is the queue's estimated wait.
func tooLate(wait time.Duration, unread bool) error {
	return &apierr.Error{Code: apierr.QueueFull, CloseConnection: unread, RetryAfter: wait,
		Message: "The thumbnail queue would not reach this request within its deadline; retry after Retry-After seconds."}
}

func queueFull(unread bool) error {
	return &apierr.Error{Code: apierr.QueueFull, Message: "The thumbnail queue is full; retry shortly.", CloseConnection: unread}
}

// deadlineOrGone turns a context's end into the answer: a 504 when the
// deadline passed, nothing (counted) when the client left.
func (p *Pipeline) deadlineOrGone(err error) error {
	var answer *apierr.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &answer):
		return err // already an answer, whatever its cause
	case errors.Is(err, context.DeadlineExceeded):
		return apierr.New(apierr.DeadlineExceeded, "The thumbnail was not done within the %s deadline.", p.cfg.Deadline)
	case errors.Is(err, context.Canceled):
		return &apierr.Error{Code: apierr.ClientGone, Message: "The client left before the answer.", Cause: err}
	}
	return err
}

// etag is strong and derived from the source's identity (source.Blob.ID:
// the version its kind read, or its bytes' keyed hash) and the normalised
// job: the same source with the same job always gives the same bytes, and
// a source that changes has another identity.
func etag(sourceID, normalised string) string {
	sum := sha256.Sum256([]byte(sourceID + "\x00" + normalised))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}
