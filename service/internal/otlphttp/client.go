// Package otlphttp sends spans to an OpenTelemetry collector over OTLP/HTTP
// (binary protobuf): the client of the SDK's OTLP trace exporter
// (otlptrace), configured by the standard OTEL_EXPORTER_OTLP_* variables.
//
// Why not the SDK's own otlptracehttp: it encodes the request with the
// collector's generated service package, which imports gRPC and its
// gateway. In thumbd that added 11 MB to the binary and about 70 package
// initialisers that run at every start, tracing on or off (the scratch
// image is 20 MB, and start-up to /health is measured in milliseconds).
// The request is one repeated field around the ResourceSpans that
// otlptrace has already built, so it is written here with protowire.
package otlphttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Config is where and how spans are sent.
type Config struct {
	URL     string      // the traces endpoint, /v1/traces included
	Headers http.Header // added to every request (a collector's API key)
	Timeout time.Duration
}

// FromEnv reads the standard variables: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// as it is, else OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended;
// OTEL_EXPORTER_OTLP_(TRACES_)HEADERS (key=value pairs, comma-separated,
// values percent-decoded) and OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT
// (milliseconds, default 10 s). ok is false when no endpoint is set.
func FromEnv(getenv func(string) string) (cfg Config, ok bool, err error) {
	either := func(name string) string {
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
			return v
		}
		return getenv("OTEL_EXPORTER_OTLP_" + name)
	}
	cfg.URL = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if cfg.URL == "" {
		if base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); base != "" {
			cfg.URL = strings.TrimSuffix(base, "/") + "/v1/traces"
		}
	}
	if cfg.URL == "" {
		return cfg, false, nil
	}
	var errs []error
	if u, err := url.Parse(cfg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("OTLP endpoint %q: not an http(s) URL", cfg.URL))
	}
	cfg.Timeout = 10 * time.Second
	if v := either("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			errs = append(errs, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT %q: not a positive number of milliseconds", v))
		}
		cfg.Timeout = time.Duration(ms) * time.Millisecond
	}
	cfg.Headers = http.Header{}
	if v := either("HEADERS"); v != "" {
		for _, kv := range strings.Split(v, ",") {
			k, val, found := strings.Cut(kv, "=")
			dk, err1 := url.PathUnescape(strings.TrimSpace(k))
			dv, err2 := url.PathUnescape(strings.TrimSpace(val))
			if !found || dk == "" || err1 != nil || err2 != nil {
				errs = append(errs, errors.New("OTEL_EXPORTER_OTLP_HEADERS: want key=value,... (values percent-encoded)"))
				break
			}
			cfg.Headers.Add(dk, dv)
		}
	}
	return cfg, true, errors.Join(errs...)
}

// Client is an otlptrace.Client.
type Client struct {
	cfg  Config
	http *http.Client
}

// New returns a client for cfg. Its HTTP client is its own: no proxy from
// the environment is needed to reach a collector, but one is honoured as
// by any Go client. It follows no redirect: Go's client re-sends every
// header but Authorization and Cookie to a redirect's target (all of them
// when its host is the same), so a collector answering 307 elsewhere would
// have the spans and OTEL_EXPORTER_OTLP_HEADERS (an API key) sent there.
// A redirect is an export error naming it; the endpoint to configure is
// the one that answers.
func New(cfg Config) *Client {
	return &Client{cfg: cfg, http: &http.Client{Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *Client) Start(context.Context) error { return nil }

func (c *Client) Stop(context.Context) error {
	c.http.CloseIdleConnections()
	return nil
}

// UploadTraces posts one ExportTraceServiceRequest.
func (c *Client) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	body, err := Encode(spans)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range c.cfg.Headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("OTLP export: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 3 {
		return fmt.Errorf("OTLP export to %s: the collector answered %s, a redirect, which is not followed (set the endpoint it names, if it is yours)", c.cfg.URL, resp.Status)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("OTLP export to %s: the collector answered %s", c.cfg.URL, resp.Status)
	}
	return nil
}

// Encode is an ExportTraceServiceRequest (opentelemetry-proto,
// collector/trace/v1): field 1, resource_spans, repeated.
func Encode(spans []*tracepb.ResourceSpans) ([]byte, error) {
	var b []byte
	for _, rs := range spans {
		m, err := proto.Marshal(rs)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}
