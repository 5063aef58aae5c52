// Package tracing is thumbd's tracer provider and W3C propagator: made
// once at start-up from explicit settings (read by package main through
// run's getenv, never by the SDK from the process environment) and passed
// down; nothing is set globally.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/thumbd/thumbd/service/internal/flagenv"
	"github.com/thumbd/thumbd/service/internal/httpmetrics"
	"github.com/thumbd/thumbd/service/internal/otlphttp"
)

// Env lists the OpenTelemetry variables of the exporter, read through
// getenv by otlphttp (the SDK's standard names, no flag twins;
// docs/observability.md, "Traces"). The sampler and the resource are
// settings rows of their own (Config). A test checks the docs list them.
var Env = []struct{ Name, Meaning string }{
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTLP/HTTP base URL (`/v1/traces` is appended), e.g. `http://jaeger:4318`. Unset (and no traces endpoint): tracing is off."},
	{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTLP/HTTP URL for traces, used as it is; wins over the base URL."},
	{"OTEL_EXPORTER_OTLP_HEADERS", "headers sent with every export, `key=value,...` (values percent-encoded; a hosted collector's API key); `OTEL_EXPORTER_OTLP_TRACES_HEADERS` wins over it. A collector's redirect is not followed (it is an export error, logged), so the headers go to the endpoint set and nowhere else."},
	{"OTEL_EXPORTER_OTLP_TIMEOUT", "time for one export, in milliseconds (default `10000`); `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` wins over it."},
	{"OTEL_SDK_DISABLED", "`true` turns tracing off whatever the endpoint."},
}

// Samplers are the OTEL_TRACES_SAMPLER values thumbd builds (the SDK's
// standard names; jaeger_remote and xray are not linked).
var Samplers = []string{"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio", "always_on", "always_off", "traceidratio"}

// Config is how spans are sampled and what resource they carry.
type Config struct {
	Sampler    string  // one of Samplers
	SamplerArg float64 // the ratio of the traceidratio samplers, 0..1
	// ServiceName wins over a service.name in Attributes; "" leaves
	// Attributes' (or "thumbd").
	ServiceName string
	Attributes  []attribute.KeyValue
	Version     string // service.version
}

// Tracing is the service's tracer provider and W3C propagator.
type Tracing struct {
	Provider trace.TracerProvider
	Tracer   trace.Tracer
	Prop     propagation.TextMapPropagator
	// On is false when no endpoint is configured: the tracer is a no-op,
	// the HTTP server and client are not wrapped, no exporter runs.
	On       bool
	Shutdown func(context.Context) error
}

// Off is the no-op tracing: no provider, no exporter, no goroutine.
func Off() *Tracing {
	p := noop.NewTracerProvider()
	return &Tracing{Provider: p, Tracer: p.Tracer(""), Prop: propagation.TraceContext{},
		Shutdown: func(context.Context) error { return nil }}
}

// New builds tracing: on only when an OTLP endpoint is set (getenv reads
// the exporter's OTEL_EXPORTER_OTLP_* variables). The exporter speaks OTLP
// over HTTP (protobuf, through otlphttp: see there why not otlptracehttp),
// batches spans in the background and is flushed by Shutdown.
func New(ctx context.Context, c Config, getenv func(string) string) (*Tracing, error) {
	ocfg, on, err := otlphttp.FromEnv(getenv)
	if !on || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return Off(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	exp, err := otlptrace.New(ctx, otlphttp.New(ocfg))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := c.Resource(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return With(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(c.sampler()),
		sdktrace.WithResource(res))), nil
}

// Resource is the spans' resource, from c alone. (The SDK's WithResource
// still merges its own reading of the process' OTEL_RESOURCE_ATTRIBUTES
// and OTEL_SERVICE_NAME under it: every key set here wins; in thumbd the
// process environment is what run's getenv reads anyway.)
func (c Config) Resource(ctx context.Context) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", "thumbd"), attribute.String("service.version", c.Version)}
	attrs = append(attrs, c.Attributes...) // a later key wins
	if c.ServiceName != "" {
		attrs = append(attrs, attribute.String("service.name", c.ServiceName))
	}
	return resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
}

// sampler is c.Sampler built (an unknown name was refused by the
// settings: parent-based always-on, the SDK's default).
func (c Config) sampler() sdktrace.Sampler {
	switch c.Sampler {
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(c.SamplerArg)
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SamplerArg))
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample())
}

// Ratio is a sampler ratio setting, 0..1.
func Ratio(p *float64) flagenv.Value[float64] {
	return flagenv.Of(p, func(s string) (float64, error) {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("want a ratio from 0 to 1")
		}
		return r, nil
	}, func(r float64) string { return strconv.FormatFloat(r, 'g', -1, 64) })
}

// ServiceName is a service name setting: printable, no control
// characters (they would reach every exported span and a collector's UI).
func ServiceName(p *string) flagenv.Value[string] {
	return flagenv.Of(p, func(s string) (string, error) {
		if strings.ContainsFunc(s, unicode.IsControl) {
			return "", fmt.Errorf("a control character in a service name")
		}
		return s, nil
	}, func(s string) string { return s })
}

// Attributes is a resource attributes setting, `key=value,...` with the
// values percent-encoded (OTEL_RESOURCE_ATTRIBUTES' syntax).
func Attributes(p *[]attribute.KeyValue) flagenv.Value[[]attribute.KeyValue] {
	return flagenv.Of(p, parseAttributes, func(kvs []attribute.KeyValue) string {
		parts := make([]string, len(kvs))
		for i, kv := range kvs {
			parts[i] = string(kv.Key) + "=" + kv.Value.Emit()
		}
		return strings.Join(parts, ",")
	})
}

func parseAttributes(s string) ([]attribute.KeyValue, error) {
	var kvs []attribute.KeyValue
	for pair := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want key=value", pair)
		}
		// Percent-decoded with '+' kept a plus, as the OpenTelemetry spec's
		// W3C Baggage octets say: path unescaping, not query unescaping.
		value, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%q: a %% without two hex digits", pair)
		}
		kvs = append(kvs, attribute.String(k, value))
	}
	return kvs, nil
}

// With is tracing on, through p.
func With(p *sdktrace.TracerProvider) *Tracing {
	return &Tracing{Provider: p, Tracer: p.Tracer("github.com/thumbd/thumbd/service"),
		Prop: propagation.TraceContext{}, On: true, Shutdown: p.Shutdown}
}

// Handler wraps the service's handler in the request's server span,
// joining the caller's trace when its traceparent says so; with public
// (THUMBD_TRACE_PUBLIC_ENDPOINT), starting a trace of its own linked to
// the caller's instead, so a client cannot choose the trace ID (nor the
// tracestate) of thumbd's spans and of its requests to origins. Off: next
// as it is. The span is named by the route pattern once the router has
// matched it (package main's nameSpan), not by the raw path, whose values
// are unbounded.
func (t *Tracing) Handler(next http.Handler, public bool) http.Handler {
	if !t.On {
		return next
	}
	opts := []otelhttp.Option{otelhttp.WithTracerProvider(t.Provider), otelhttp.WithPropagators(t.Prop),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
		otelhttp.WithFilter(traced)}
	if public {
		opts = append(opts, otelhttp.WithPublicEndpointFn(func(*http.Request) bool { return true }))
	}
	return otelhttp.NewHandler(next, "http", opts...)
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

// Transport wraps an HTTP client's transport so that each request is a
// client span and carries traceparent, never tracestate: a caller's
// tracestate (continued from its request) is its own business, not a
// value thumbd stamps onto requests to other sites. Off: base as it is.
func (t *Tracing) Transport(base http.RoundTripper) http.RoundTripper {
	if !t.On {
		return base
	}
	return otelhttp.NewTransport(base, otelhttp.WithTracerProvider(t.Provider), otelhttp.WithPropagators(withoutTraceState{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "origin " + r.Method }))
}

// withoutTraceState is the W3C propagator that injects traceparent alone.
type withoutTraceState struct{ propagation.TraceContext }

func (p withoutTraceState) Inject(ctx context.Context, carrier propagation.TextMapCarrier) {
	sc := trace.SpanContextFromContext(ctx).WithTraceState(trace.TraceState{})
	p.TraceContext.Inject(trace.ContextWithSpanContext(ctx, sc), carrier)
}

// NameSpan names the request's server span by its method and route
// pattern, known once chi has matched the route: it runs inside the
// router, after the handler.
func NameSpan(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		trace.SpanFromContext(r.Context()).SetName(httpmetrics.Method(r.Method) + " " + httpmetrics.Route(r))
	})
}
