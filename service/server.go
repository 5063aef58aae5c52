package main

import (
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/bucket"
	"github.com/thumbd/thumbd/service/internal/bucketsource"
	"github.com/thumbd/thumbd/service/internal/connlimit"
	"github.com/thumbd/thumbd/service/internal/engines"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/lifecycle"
	"github.com/thumbd/thumbd/service/internal/memplan"
	"github.com/thumbd/thumbd/service/internal/origin"
	"github.com/thumbd/thumbd/service/internal/pipeline"
	"github.com/thumbd/thumbd/service/internal/requestlog"
	"github.com/thumbd/thumbd/service/internal/results"
	"github.com/thumbd/thumbd/service/internal/resultstore"
	"github.com/thumbd/thumbd/service/internal/signing"
	"github.com/thumbd/thumbd/service/internal/source"
	"github.com/thumbd/thumbd/service/internal/thumb"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/tracing"
)

// deps is what the handlers need, built once in run.
type deps struct {
	cfg      config
	logger   *slog.Logger
	registry *prometheus.Registry
	metrics  *metrics
	life     *lifecycle.Lifecycle
	respond  *pipeline.Responder
	thumbs   *pipeline.Pipeline // the engine routes' pipeline
	tracing  *tracing.Tracing
	store    *resultstore.Store
	conns    *connlimit.Limiter // the serving port's cap (THUMBD_MAX_CONNECTIONS)
}

// newDeps wires the service's parts. sources may be nil (GET /thumbnail
// off); tr may be nil (tracing off).
func newDeps(cfg config, logger *slog.Logger, eng engines.Engine, life *lifecycle.Lifecycle, sources *os.Root, tr *tracing.Tracing) deps {
	if tr == nil {
		tr = tracing.Off()
	}
	reg := prometheus.NewRegistry()
	gate := admission.New(cfg.Concurrency, cfg.Queue, cfg.MemoryBudget)
	m := newMetrics(reg, cfg.build, gate, life, eng, cfg.Engine, len(cfg.SigningKeys))
	rs := pipeline.NewResponder(m.Rejections, cfg.TTL)
	// Sources are held from the first byte read until the answer is
	// written: the budget bounds them all, whatever the queue's depth.
	// A source of known length waits for the budget up to half the
	// deadline, unread (backpressure), before it is refused.
	// Uploads are identified by a keyed hash: under the result store's
	// signing key when there is one, which every replica sharing the store
	// holds, so that they find each other's thumbnails of uploads (and
	// their own after a restart); else under a key of this process's own.
	var idSecret []byte
	if len(cfg.ResultStoreKeys) > 0 {
		idSecret = cfg.ResultStoreKeys[0]
	}
	limits := source.Limits{MaxBytes: cfg.MaxBodyBytes, Budget: admission.NewBytes(cfg.SourceBudget), Wait: cfg.Deadline / 2,
		Hashers: source.NewHashers(runtime.GOMAXPROCS(0)), IDs: source.NewIDHash(idSecret)}
	memplan.Register(reg, cfg.memory, gate, limits.Budget)
	// Files and bucket objects are read at disk or data-centre speed: a
	// few held are enough to keep the slots fed, and more only hold memory
	// (admission's WithHeld). Uploads and origins keep the bytes alone.
	held := limits
	held.Budget = limits.Budget.WithHeld(cfg.memory.SourcesHeld)
	var dir *source.Dir
	if sources != nil {
		dir = &source.Dir{Limits: held, Root: sources}
	}
	cache := results.New(cfg.CacheSize)
	reg.MustRegister(cache.Collector())
	buckets := bucket.NewMetrics(reg)
	store := resultstore.Open(resultstore.Settings{
		Location: cfg.ResultStore, Conn: cfg.S3, LookupTimeout: cfg.ResultStoreTimeout, QueueBytes: cfg.memory.StoreQueue,
		MaxBytes: cfg.MaxBodyBytes, Keys: cfg.ResultStoreKeys, Namespace: cfg.storeNamespace(thumb.Version()), Budget: limits.Budget, Metrics: buckets, Tracer: tr.Tracer, Logger: logger,
	})
	reg.MustRegister(store.Collectors()...)
	conns := connlimit.New(connlimit.Config{
		Max: cfg.MaxConnections, Refusal: pipeline.ConnectionRefusal(), RefusePastCap: cfg.PastConnectionCap == "refuse",
		PerAddress: cfg.MaxConnectionsPerAddress, Stall: cfg.ClientStallTimeout, MinRate: cfg.ClientMinRate,
		Probes: cfg.probePaths(), Evicted: pipeline.Evicted(),
	})
	reg.MustRegister(conns.Collectors()...)
	return deps{
		cfg: cfg, logger: logger, registry: reg, metrics: m, life: life, respond: rs, tracing: tr, store: store, conns: conns,
		thumbs: pipeline.New(cfg.pipeline(), pipeline.Parts{
			Engine: eng, Ready: life.EngineReady(), Gate: gate, Limits: limits,
			Sources: pipeline.Sources{Dir: dir, Bucket: newSourceBucket(cfg, held, buckets, tr, logger), Origins: newOrigins(cfg, limits, m, nil, tr)},
			Signer:  signing.NewVerifier(cfg.SigningKeys, time.Now),
			Cache:   cache, Store: store, Tracer: tr.Tracer, Metrics: m.Metrics, Respond: rs,
		}),
	}
}

// probePaths are the serving port's routes served past its cap, in the
// probes' reserve (connlimit): the probes, and the scrape while it is
// served there.
func (c config) probePaths() []string {
	if c.AdminPort.On {
		return []string{"/health", "/ready"}
	}
	return []string{"/health", "/ready", "/metrics"}
}

// pipeline is what the engine routes' pipeline reads of the settings.
func (c config) pipeline() pipeline.Config {
	return pipeline.Config{
		Deadline: c.Deadline, Rules: c.rules(),
		ClientHints: c.ClientHints, Merge: c.Merge, CacheUploads: c.CacheUploads, UnsignedUploads: c.UnsignedUploads,
		MaxPixels: c.MaxPixels, MaxFrames: c.MaxFrames, MaxSide: c.MaxSide, QualityShrink: c.JPEGShrink == thumbjob.JPEGShrinkQuality,
		SourceInJob: c.Engine == engineCells, Inputs: c.Inputs,
		MemoryBudget: c.MemoryBudget, MemoryLimit: c.memory.Limit.Bytes,
		Fallback: c.fallback(),
	}
}

// fallback is THUMBD_FALLBACK_IMAGE_*'s image, nil when none is set.
func (c config) fallback() *pipeline.Fallback {
	if c.Fallback.Image == nil {
		return nil
	}
	return &c.Fallback
}

// newSourceBucket is the source of GET /thumbnail?src= when THUMBD_SOURCE
// is a bucket, else nil.
func newSourceBucket(cfg config, limits source.Limits, m *bucket.Metrics, tr *tracing.Tracing, logger *slog.Logger) *bucketsource.Bucket {
	if cfg.SourceBucket == nil {
		return nil
	}
	client, err := bucket.New(*cfg.SourceBucket, cfg.S3, bucket.Options{Use: "source", Metrics: m, Tracer: tr.Tracer,
		Timeout: cfg.SourceTimeout, MaxConns: cfg.SourceMaxConns})
	if err != nil {
		// loadConfig made this client once already: it cannot fail here.
		logger.Error("THUMBD_SOURCE: no client", "err", err)
		return nil
	}
	return bucketsource.New(client, limits, bucketsource.Config{MaxAge: cfg.SourceMaxAge})
}

// newOrigins is the source of GET /thumbnail?url=, nil when no origin is
// allowed. resolver resolves origin names (nil: the system's); tr traces
// the fetches.
func newOrigins(cfg config, limits source.Limits, m *metrics, resolver *net.Resolver, tr *tracing.Tracing) *origin.Fetcher {
	if len(cfg.Origins) == 0 {
		return nil
	}
	var accept []string
	for _, f := range imagefmt.Inputs() {
		if !slices.Contains(accept, f.ContentType()) { // the video codecs share video/*
			accept = append(accept, f.ContentType())
		}
	}
	return origin.New(origin.Config{
		Patterns: cfg.Origins, AllowLoopback: cfg.AllowLoopback, FetchTimeout: cfg.FetchTimeout,
		// Every connection the cap allows can be kept.
		IdleConns: cfg.OriginMaxConns, MaxConnsPerHost: cfg.OriginMaxConns,
		Resolver: resolver, UserAgent: "thumbd/" + cfg.build.Version, Accept: strings.Join(accept, ", "),
		Observe: m.origins.Observe, Transport: tr.Transport,
	}, limits)
}

// newServer returns the service's handler: the request's server span
// (tracing on), request IDs and logs (which name the trace), metrics, then
// the routes.
func newServer(d deps) http.Handler {
	r := chi.NewRouter()
	r.Use(nosniff, requestlog.Middleware(d.logger, requestlog.NewIDs()), d.metrics.http.Instrument)
	if d.tracing.On {
		r.Use(tracing.NameSpan)
	}
	addRoutes(r, d)
	return d.tracing.Handler(r, d.cfg.TracePublicEndpoint)
}

// newAdminServer returns the admin port's handler: request IDs and logs
// (only answers other than 2xx are logged at info) and metrics, then the
// probes and /metrics. Not traced: probes every second would be most of
// the spans.
func newAdminServer(d deps) http.Handler {
	r := chi.NewRouter()
	r.Use(nosniff, requestlog.Middleware(d.logger, requestlog.NewIDs()), d.metrics.http.Instrument)
	addAdminRoutes(r, d)
	return r
}

// nosniff marks every answer, before any handler writes: no browser may
// read an image, an error or /metrics as a type it guesses (an SVG or
// HTML it would run), whatever Content-Type says.
func nosniff(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}
