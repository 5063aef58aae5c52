package cell

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// staged is an engine that reports three stages.
type staged struct{}

func (s staged) Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, error) {
	return job.Run(ctx, src, s.Thumbnail, s.Info)
}

func (staged) Thumbnail(_ context.Context, _ thumbjob.Source, o thumbjob.Options) (thumbjob.Image, error) {
	var tr thumbjob.Trace
	t := time.Now()
	for _, name := range []string{thumbjob.StageDecode, thumbjob.StageResize, thumbjob.StageEncode} {
		t = tr.Add(name, t)
	}
	tr.SourceFormat, tr.SourceWidth, tr.SourceHeight, tr.Shrink = "jpeg", 400, 300, 2
	return thumbjob.Image{Bytes: pngBytes, Format: o.Format, Width: o.Width, Height: o.Width, Trace: tr}, nil
}

func (staged) Info(context.Context, thumbjob.Source, thumbjob.InfoJob) (thumbjob.Info, error) {
	return thumbjob.Info{}, errors.New("staged: no info jobs")
}

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// A traced job's span context goes to the cell and its timings come back;
// an untraced job's frames carry neither.
func TestJobTraceCrossesTheWire(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{1}, SpanID: [8]byte{2}, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	tp := traceparent(ctx)
	if tp != "00-01000000000000000000000000000000-0200000000000000-01" {
		t.Fatalf("traceparent %q", tp)
	}
	unsampled := trace.ContextWithSpanContext(context.Background(), sc.WithTraceFlags(0))
	if traceparent(unsampled) != "" || traceparent(context.Background()) != "" {
		t.Error("a traceparent for a job that is not traced")
	}

	start := time.Now()
	meta, _ := Worker{Engine: staged{}}.run(jobMeta{Job: thumbjob.Job{Options: job(8)}, Traceparent: tp})
	got := cellTrace(tp, meta, thumbjob.Stage{Start: start, End: time.Now()})
	if len(got.Stages) != 3 || got.SourceFormat != "jpeg" || got.Shrink != 2 || got.Job.Start.IsZero() || got.Exchange.Start.IsZero() {
		t.Errorf("trace %+v", got)
	}
	plain, _ := Worker{Engine: staged{}}.run(jobMeta{Job: thumbjob.Job{Options: job(8)}})
	if plain.Trace != nil || plain.Traceparent != "" || !plain.JobStart.IsZero() {
		t.Errorf("an untraced job's result carries %+v", plain)
	}
}

// Timings are what a cell says: they are kept only when they answer this
// job, name known stages and lie within the supervisor's own exchange.
func TestCellTimingsAreChecked(t *testing.T) {
	start := time.Now()
	good, _ := Worker{Engine: staged{}}.run(jobMeta{Job: thumbjob.Job{Options: job(8)}, Traceparent: parent})
	exchange := thumbjob.Stage{Start: start, End: time.Now()}
	for _, tc := range []struct {
		name   string
		change func(m *resultMeta)
	}{
		{"another job's traceparent", func(m *resultMeta) { m.Traceparent = "00-ffffffffffffffffffffffffffffffff-00f067aa0ba902b7-01" }},
		{"a job before the exchange", func(m *resultMeta) { m.JobStart = start.Add(-time.Hour) }},
		{"a stage after the exchange", func(m *resultMeta) { m.Trace.Stages[2].End = exchange.End.Add(time.Hour) }},
		{"an unknown stage", func(m *resultMeta) { m.Trace.Stages[0].Name = "<script>" }},
		{"too many stages", func(m *resultMeta) { m.Trace.Stages = append(m.Trace.Stages, m.Trace.Stages...) }},
		{"a stage ending before it starts", func(m *resultMeta) {
			m.Trace.Stages[1].Start, m.Trace.Stages[1].End = m.Trace.Stages[1].End, m.Trace.Stages[1].Start.Add(-time.Millisecond)
		}},
	} {
		m := good
		tr := *good.Trace
		tr.Stages = append([]thumbjob.Stage(nil), good.Trace.Stages...)
		m.Trace = &tr
		tc.change(&m)
		got := cellTrace(parent, m, exchange)
		if len(got.Stages) != 0 {
			t.Errorf("%s: stages kept: %+v", tc.name, got.Stages)
		}
		if got.Exchange != exchange {
			t.Errorf("%s: the exchange itself is the supervisor's and is kept", tc.name)
		}
	}
	m := good
	tr := *good.Trace
	tr.SourceFormat = "exe"
	m.Trace = &tr
	if got := cellTrace(parent, m, exchange); got.SourceFormat != "unknown" || len(got.Stages) != 3 {
		t.Errorf("an unknown source format: %+v", got)
	}
}
