package main

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
	"github.com/thumbd/thumbd/service/internal/source"
	"github.com/thumbd/thumbd/service/internal/thumb"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// engine makes thumbnails: libvips in this process (inProcess), or in
// sandboxed worker processes (cellsEngine). Start once, Stop once no job
// runs any more.
type engine interface {
	Start() error
	Thumbnail(ctx context.Context, src []byte, o thumbjob.Options) (thumbjob.Image, error)
	// Info describes a source (/info); its Bytes is left to the caller.
	Info(ctx context.Context, src []byte, job thumbjob.InfoJob) (thumbjob.Info, error)
	Stop()
	// Memory is libvips' tracked allocations, current and peak; called
	// only once Start has returned.
	Memory() (current, peak int64)
	// Collector is the mode's own metrics, registered with the service's.
	Collector() prometheus.Collector
}

// inProcess is libvips in the HTTP process.
type inProcess struct{ *thumb.Engine }

func (e inProcess) Start() error {
	e.Engine.Start()
	return nil
}

func (inProcess) Memory() (current, peak int64) { return thumb.Memory() }

// Collector reports the cells' metrics with no pool: every sandbox layer
// off, so that the series exist in both modes.
func (inProcess) Collector() prometheus.Collector { return newCellMetrics(nil) }

// engineStage runs an admitted job: it waits for the engine to be up (a
// thumbnail that arrives during start-up waits rather than fails) and for a
// processing slot, runs the engine and turns its errors into answers.
type engineStage struct {
	engine  engine
	life    *lifecycle
	metrics *metrics
	tracer  trace.Tracer
}

// thumbnail runs the job; admit is the admission stage's span, which ends
// once the job holds a processing slot.
func (s *engineStage) thumbnail(ctx context.Context, admit trace.Span, ticket *admission.Ticket, blob *source.Blob, o thumbjob.Options) (thumbjob.Image, error) {
	s.metrics.sourceBytes.Observe(float64(len(blob.Bytes)))
	var img thumbjob.Image
	err := s.run(ctx, admit, ticket, s.metrics.processing, func(ctx context.Context, span trace.Span) (err error) {
		img, err = s.engine.Thumbnail(ctx, blob.Bytes, o)
		if err == nil {
			s.traceJob(ctx, span, img)
		}
		return err
	})
	return img, err
}

// info describes an admitted source (/info); admit as thumbnail's.
func (s *engineStage) info(ctx context.Context, admit trace.Span, ticket *admission.Ticket, blob *source.Blob, job thumbjob.InfoJob) (thumbjob.Info, error) {
	var info thumbjob.Info
	err := s.run(ctx, admit, ticket, s.metrics.infoProcessing.WithLabelValues(strconv.FormatBool(job.ThumbHash)), func(ctx context.Context, _ trace.Span) (err error) {
		info, err = s.engine.Info(ctx, blob.Bytes, job)
		return err
	})
	info.Bytes = int64(len(blob.Bytes))
	return info, err
}

// run runs an admitted job once the engine is up and the job holds a
// slot, within ctx, times it into processing and traces it as the engine
// span (which job may describe); admit ends once the job holds its slot.
func (s *engineStage) run(ctx context.Context, admit trace.Span, ticket *admission.Ticket, processing prometheus.Observer, job func(context.Context, trace.Span) error) error {
	admitted := time.Now()
	select {
	case <-s.life.engineReady:
	case <-ctx.Done():
		endSpan(admit, ctx.Err())
		return ctx.Err()
	}
	if err := ticket.Run(ctx); err != nil {
		endSpan(admit, err)
		return err
	}
	admit.End()
	s.metrics.queueWait.Observe(time.Since(admitted).Seconds())
	ctx, span := s.tracer.Start(ctx, "engine")
	began := time.Now()
	err := job(ctx, span)
	ticket.Finish()
	processing.Observe(time.Since(began).Seconds())
	if err != nil {
		err = engineError(err)
		endSpan(span, err)
		return err
	}
	span.End()
	// An answer finished after the deadline is not sent late.
	if deadline, ok := ctx.Deadline(); ok && time.Now().After(deadline) {
		return context.DeadlineExceeded
	}
	return nil
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
	return &apierr.Error{Code: apierr.Internal, Message: "The thumbnail could not be made.", Cause: err}
}

// traceJob describes the engine span with what explains its time, and
// records the job's own stages as its children at the times they ran (in
// cells mode as the cell measured them, beside the hand-off to and from
// the cell).
func (s *engineStage) traceJob(ctx context.Context, span trace.Span, img thumbjob.Image) {
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
	stage := func(name string, st thumbjob.Stage) {
		_, child := s.tracer.Start(ctx, name, trace.WithTimestamp(st.Start))
		child.End(trace.WithTimestamp(st.End))
	}
	if !t.Exchange.Start.IsZero() {
		span.SetAttributes(attribute.Int64("thumbd.cell.handoff_us", (t.Exchange.End.Sub(t.Exchange.Start) - t.Job.End.Sub(t.Job.Start)).Microseconds()))
		if !t.Job.Start.IsZero() {
			stage("cell.send", thumbjob.Stage{Start: t.Exchange.Start, End: t.Job.Start})
			defer stage("cell.return", thumbjob.Stage{Start: t.Job.End, End: t.Exchange.End})
		}
	}
	for _, st := range t.Stages {
		stage(st.Name, st)
	}
}
