package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/thumbd/thumbd/service/internal/otlphttp"
)

// tracingEnv lists the OpenTelemetry variables thumbd reads. They are the
// SDK's standard ones, read by the SDK itself, not thumbd settings: they
// have no flag twin (docs/observability.md, "Traces"). A test checks the
// docs list them.
var tracingEnv = []struct{ name, meaning string }{
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTLP/HTTP base URL (`/v1/traces` is appended), e.g. `http://jaeger:4318`. Unset (and no traces endpoint): tracing is off."},
	{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTLP/HTTP URL for traces, used as it is; wins over the base URL."},
	{"OTEL_EXPORTER_OTLP_HEADERS", "headers sent with every export, `key=value,...` (values percent-encoded; a hosted collector's API key); `OTEL_EXPORTER_OTLP_TRACES_HEADERS` wins over it. A collector's redirect is not followed (it is an export error, logged), so the headers go to the endpoint set and nowhere else."},
	{"OTEL_EXPORTER_OTLP_TIMEOUT", "time for one export, in milliseconds (default `10000`); `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` wins over it."},
	{"OTEL_SERVICE_NAME", "`service.name` of the spans (default `thumbd`)."},
	{"OTEL_RESOURCE_ATTRIBUTES", "more resource attributes, `key=value,...` (e.g. `deployment.environment=prod`)."},
	{"OTEL_TRACES_SAMPLER", "the SDK's sampler: `parentbased_always_on` (default), `parentbased_traceidratio`, `traceidratio`, `always_on`, `always_off`, ..."},
	{"OTEL_TRACES_SAMPLER_ARG", "the ratio for the `traceidratio` samplers, 0..1."},
	{"OTEL_SDK_DISABLED", "`true` turns tracing off whatever the endpoint."},
}

// tracing is the service's tracer provider and W3C propagator, made in
// serve and passed down: nothing is set globally (main routes the SDK's
// process-wide error handler into the JSON logs).
type tracing struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	// on is false when no endpoint is configured: the tracer is a no-op,
	// the HTTP server and client are not wrapped, no exporter runs.
	on       bool
	shutdown func(context.Context) error
}

// tracingOff is the no-op tracing: no provider, no exporter, no goroutine.
func tracingOff() *tracing {
	p := noop.NewTracerProvider()
	return &tracing{provider: p, tracer: p.Tracer(""), prop: propagation.TraceContext{},
		shutdown: func(context.Context) error { return nil }}
}

// newTracing builds tracing from the standard OTEL_* variables. Tracing is
// on only when an OTLP endpoint is set: the exporter speaks OTLP over HTTP
// (protobuf, through otlphttp: see there why not otlptracehttp), batches
// spans in the background and is flushed by shutdown.
// The sampler (OTEL_TRACES_SAMPLER, default parent-based always-on) and the
// resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) are the SDK's own
// reading of the same variables.
func newTracing(ctx context.Context, getenv func(string) string) (*tracing, error) {
	ocfg, on, err := otlphttp.FromEnv(getenv)
	if !on || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return tracingOff(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	exp, err := otlptrace.New(ctx, otlphttp.New(ocfg))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the defaults.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "thumbd"), attribute.String("service.version", version)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	return tracingWith(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))), nil
}

// tracingWith is tracing on, through p.
func tracingWith(p *sdktrace.TracerProvider) *tracing {
	return &tracing{provider: p, tracer: p.Tracer("github.com/thumbd/thumbd/service"),
		prop: propagation.TraceContext{}, on: true, shutdown: p.Shutdown}
}

// handler wraps the service's handler in the request's server span,
// joining the caller's trace when its traceparent says so; with public
// (THUMBD_TRACE_PUBLIC_ENDPOINT), starting a trace of its own linked to
// the caller's instead, so a client cannot choose the trace ID (nor the
// tracestate) of thumbd's spans and of its requests to origins. Off: next
// as it is. The span is named by the route pattern once chi has matched
// it (nameSpan), not by the raw path, whose values are unbounded.
func (t *tracing) handler(next http.Handler, public bool) http.Handler {
	if !t.on {
		return next
	}
	opts := []otelhttp.Option{otelhttp.WithTracerProvider(t.provider), otelhttp.WithPropagators(t.prop),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
		otelhttp.WithFilter(traced)}
	if public {
		opts = append(opts, otelhttp.WithPublicEndpointFn(func(*http.Request) bool { return true }))
	}
	return otelhttp.NewHandler(next, "http", opts...)
}

// nameSpan names the request's server span by its method and route
// pattern, known once chi has matched the route: it runs inside the
// router, after the handler.
func nameSpan(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		trace.SpanFromContext(r.Context()).SetName(methodLabel(r.Method) + " " + routeLabel(r))
	})
}

// traced leaves out the probes and the scrapes: a kubelet's /health every
// few seconds would be most of the traces, and each costs a span's export
// (on /health, tracing tripled the CPU a request took).
func traced(r *http.Request) bool {
	switch r.URL.Path {
	case "/health", "/ready", "/metrics":
		return false
	}
	return true
}

// transport wraps an HTTP client's transport so that each request is a
// client span and carries traceparent, never tracestate: a caller's
// tracestate (continued from its request) is its own business, not a
// value thumbd stamps onto requests to other sites. Off: base as it is.
func (t *tracing) transport(base http.RoundTripper) http.RoundTripper {
	if !t.on {
		return base
	}
	return otelhttp.NewTransport(base, otelhttp.WithTracerProvider(t.provider), otelhttp.WithPropagators(withoutTraceState{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "origin " + r.Method }))
}

// withoutTraceState is the W3C propagator that injects traceparent alone.
type withoutTraceState struct{ propagation.TraceContext }

func (p withoutTraceState) Inject(ctx context.Context, carrier propagation.TextMapCarrier) {
	sc := trace.SpanContextFromContext(ctx).WithTraceState(trace.TraceState{})
	p.TraceContext.Inject(trace.ContextWithSpanContext(ctx, sc), carrier)
}
