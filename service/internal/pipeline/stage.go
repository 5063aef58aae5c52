package pipeline

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

// stage runs fn as the stage name of ctx's request: a span, a child of
// ctx's, that starts and ends here, failed with the API code of fn's
// error. fn may describe the span.
func stage(ctx context.Context, tr trace.Tracer, name string, fn func(context.Context, trace.Span) error) error {
	ctx, span := tr.Start(ctx, name)
	defer span.End()
	err := fn(ctx, span)
	if err != nil {
		failSpan(span, err)
	}
	return err
}

// attrErrorCode is the API error code of a failed span (apierr).
const attrErrorCode = attribute.Key("thumbd.error.code")

// failSpan sets span's status to the error, with its API code.
func failSpan(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	e := apierr.From(err)
	span.SetAttributes(attrErrorCode.String(string(e.Code)))
	span.SetStatus(codes.Error, e.Message)
}
