package pipeline

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/cell"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Engine is the engine seam: one call for every job, a thumbnail or a
// description, in process (thumb.Engine) or in cells (cellpool.Pool).
type Engine interface {
	Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, error)
}

// engine is the engine stage: an admitted job that holds its slot runs
// within ctx, timed into its histogram and traced as the engine span; the
// engine's errors become answers. An answer finished after the deadline
// is not sent late.
func (p *Pipeline) engine(ctx context.Context, ticket *admission.Ticket, src thumbjob.Source, job thumbjob.Job) (res thumbjob.Result, err error) {
	var processing prometheus.Observer = p.Metrics.Processing
	if job.Info != nil {
		processing = p.Metrics.InfoProcessing.WithLabelValues(strconv.FormatBool(job.Info.ThumbHash))
	}
	err = stage(ctx, p.Tracer, "engine", func(ctx context.Context, span trace.Span) error {
		began := time.Now()
		res, err = p.Engine.Run(ctx, src, job)
		ticket.Finish()
		processing.Observe(time.Since(began).Seconds())
		if err != nil {
			return p.deadlineOrGone(engineError(err))
		}
		if res.Info == nil {
			p.traceJob(ctx, span, res.Image)
		}
		return nil
	})
	if deadline, ok := ctx.Deadline(); err == nil && ok && time.Now().After(deadline) {
		err = p.deadlineOrGone(context.DeadlineExceeded)
	}
	return res, err
}

// engineError gives the engine's typed errors their API codes; anything
// else is an internal error, logged with its cause.
func engineError(err error) error {
	if errors.Is(err, cell.ErrCrashed) {
		// The cause (the cell's PID and how it ended) is logged with the
		// request ID, not sent.
		return &apierr.Error{Code: apierr.EngineCrashed, Message: "The process making the thumbnail crashed; the request was not retried.", Cause: err}
	}
	var typed *thumbjob.Error
	if errors.As(err, &typed) {
		return &apierr.Error{Code: typed.Code, Message: apierr.Sentence(err.Error())}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return internalError(err)
}

// internalError is the answer to a failure of thumbd's own: a 500 whose
// cause is logged with the request ID, not sent.
func internalError(cause error) error {
	return &apierr.Error{Code: apierr.Internal, Message: "The thumbnail could not be made.", Cause: cause}
}

// traceJob describes the engine span with what explains its time, and
// records the job's own stages as its children at the times they ran (in
// cells mode as the cell measured them, beside the hand-off to and from
// the cell).
func (p *Pipeline) traceJob(ctx context.Context, span trace.Span, img thumbjob.Image) {
	if !span.IsRecording() {
		return
	}
	t := img.Trace
	span.SetAttributes(
		attribute.String("thumbd.source.format", string(t.SourceFormat)),
		attribute.Int64("thumbd.source.pixels", int64(t.SourceWidth)*int64(t.SourceHeight)),
		attribute.Int("thumbd.source.width", t.SourceWidth), attribute.Int("thumbd.source.height", t.SourceHeight),
		attribute.Int("thumbd.shrink_on_load", t.Shrink),
		attribute.String("thumbd.output.format", string(img.Format)),
		attribute.Int("thumbd.output.bytes", len(img.Bytes)),
		attribute.Int("thumbd.output.frames", max(img.Frames, 1)),
	)
	// Each of the engine's own stages is a span that starts and ends here,
	// at the times the engine measured.
	child := func(name string, st thumbjob.Stage) {
		_, c := p.Tracer.Start(ctx, name, trace.WithTimestamp(st.Start))
		c.End(trace.WithTimestamp(st.End))
	}
	if !t.Exchange.Start.IsZero() {
		span.SetAttributes(attribute.Int64("thumbd.cell.handoff_us", (t.Exchange.End.Sub(t.Exchange.Start) - t.Job.End.Sub(t.Job.Start)).Microseconds()))
		if !t.Job.Start.IsZero() {
			child("cell.send", thumbjob.Stage{Start: t.Exchange.Start, End: t.Job.Start})
			defer child("cell.return", thumbjob.Stage{Start: t.Job.End, End: t.Exchange.End})
		}
	}
	for _, st := range t.Stages {
		child(st.Name, st)
	}
}

// Cost is a job's estimated peak memory, the price of its admission, from
// the header the source's look read (in Go: no pixel is decoded). A source
// the engine refuses before decoding costs the smallest job: bytes of no
// input format (or one left out) and, since the engine holds the look's
// header to the limits as well as libvips', one past the pixel or frame
// limit. (A header the look could not read never gets here: priceable.) An info job costs a thumbnail into the
// ThumbHash's box (libvips decodes for it as for a thumbnail, shrunk on
// load where the format allows), or the smallest job for the header alone.
func (p *Pipeline) Cost(src thumbjob.Source, job thumbjob.Job) int64 {
	o := job.Options
	if job.Info != nil {
		o = job.Info.AsThumbnail()
		if !job.Info.ThumbHash {
			h, j := smallestJob(memcost.JobOf(o))
			return p.withSource(memcost.Estimate(h, j), src)
		}
	}
	h, mj := p.sized(src, o)
	if o.AlphaFormat != "" {
		// format=auto: the costlier of the two formats it may write.
		alpha := mj
		alpha.Output = o.AlphaFormat
		mj.Output = costlier(mj, alpha, h)
	}
	return p.withSource(memcost.Estimate(h, mj), src)
}

// Work is a thumbnail job's CPU against a plain thumbnail's (memcost.Work),
// which the deadline door counts; 1 for a description.
func (p *Pipeline) Work(src thumbjob.Source, job thumbjob.Job) float64 {
	if job.Info != nil {
		return 1
	}
	return memcost.Work(p.sized(src, job.Options))
}

// sized is the header and job the estimates price a thumbnail by: the
// look's, or the smallest job for a source the engine refuses before
// decoding (Cost).
func (p *Pipeline) sized(src thumbjob.Source, o thumbjob.Options) (memcost.Header, memcost.Job) {
	mj := memcost.JobOf(o)
	mj.QualityShrink, mj.MaxSide, mj.MaxPixels = p.cfg.QualityShrink, p.cfg.MaxSide, p.cfg.MaxPixels
	h := src.Header
	if h.Width == 0 || h.Pixels() > p.cfg.MaxPixels || h.Frames > p.cfg.MaxFrames && o.Animated {
		h, mj = smallestJob(mj)
	}
	return h, mj
}

// smallestJob is the smallest job and source there are: a 1x1 PNG.
func smallestJob(job memcost.Job) (memcost.Header, memcost.Job) {
	job.Width, job.Height = 1, 1
	return memcost.Header{Format: imagefmt.PNG, Width: 1, Height: 1, Bands: 4, BytesPerSample: 1, Frames: 1}, job
}

// withSource adds to a job's cost the copy of its source a cell holds.
func (p *Pipeline) withSource(cost int64, src thumbjob.Source) int64 {
	if p.cfg.SourceInJob {
		cost += int64(len(src.Bytes))
	}
	return cost
}

func costlier(a, b memcost.Job, h memcost.Header) imagefmt.Format {
	if memcost.Estimate(h, b) > memcost.Estimate(h, a) {
		return b.Output
	}
	return a.Output
}
