// Command thumbd is an HTTP thumbnail service: libvips through govips, on
// chi, with Prometheus metrics. See the README and docs/ for the API and settings.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/thumbd/thumbd/service/internal/buildinfo"
	"github.com/thumbd/thumbd/service/internal/cell"
	"github.com/thumbd/thumbd/service/internal/connlimit"
	"github.com/thumbd/thumbd/service/internal/engines"
	"github.com/thumbd/thumbd/service/internal/lifecycle"
	"github.com/thumbd/thumbd/service/internal/thumb"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/tracing"
)

func main() {
	// net/http's client reports some origin misbehaviour (bytes after a
	// body) through the log package, a process-wide logger: main, which
	// owns the process, routes it into the JSON logs (at info, as
	// slog.SetDefault did); run and serve set no globals.
	log.SetFlags(0)
	log.SetOutput(slog.NewLogLogger(slog.NewJSONHandler(os.Stderr, nil), slog.LevelInfo).Writer())
	// The OpenTelemetry SDK reports export failures (a collector down)
	// through its process-wide error handler, plain text by default: into
	// the JSON logs too, as warnings.
	otelLog := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { otelLog.Warn("tracing: export failed", "err", err) }))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.LookupEnv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "thumbd:", err)
		os.Exit(1)
	}
}

// run is the whole program: main only adds the signals and the exit code.
// It returns when ctx is done and the service has drained, or on error.
// lookupEnv is os.LookupEnv's shape: a variable set empty is not unset.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	getenv := func(name string) string { v, _ := lookupEnv(name); return v }
	if len(args) > 1 {
		switch args[1] {
		case "health":
			return lifecycle.HealthCheck(ctx, args[2:], getenv, stderr)
		case "settings":
			return printSettings(args[2:], stdout, stderr)
		case "formats":
			return printFormats(args[2:], stdout, stderr)
		case "version":
			info, err := buildinfo.Read()
			if err != nil {
				return err
			}
			return printVersion(args[2:], info, stdout, stderr)
		case "sign":
			return signCommand(args[2:], lookupEnv, time.Now(), stdout, stderr)
		case "cell":
			return engines.ServeCell(getenv, stderr, func(e cell.Engine) cell.Engine { return e })
		}
	}
	cfg, err := loadConfig(args[1:], lookupEnv, stderr)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, stderr, nil)
}

// engineConfig is what the libvips engine takes from the configuration.
func engineConfig(cfg config, logger *slog.Logger) thumbjob.Config {
	return thumbjob.Config{
		MaxPixels: cfg.MaxPixels, MaxFrames: cfg.MaxFrames, MaxSide: cfg.MaxSide, MaxAnimationPixels: cfg.MaxAnimationPixels,
		// One libvips thread per job: concurrency already runs a job per
		// usable CPU, and a second thread made a single job 0-21 % slower
		// and two jobs at once 2-20 % slower (docs/engine.md, "Thread
		// counts"): a thumbnail's pipeline is too short to split.
		Threads:    1,
		JPEGShrink: cfg.JPEGShrink,
		AVIFEffort: cfg.AVIFEffort,
		Inputs:     cfg.Inputs,
		Watermark:  cfg.WatermarkBytes,
		Logger:     logger,
	}
}

// newEngine is the engine of cfg's mode, not started.
func newEngine(cfg config, logger *slog.Logger, logOut io.Writer) (engines.Engine, error) {
	if cfg.Engine == engineCells {
		return engines.NewCells(cfg.cells(), logger, logOut)
	}
	return engines.InProcess{Engine: thumb.New(engineConfig(cfg, logger))}, nil
}

// cells is what cells mode reads of the settings.
func (c config) cells() engines.CellSettings {
	return engines.CellSettings{
		Engine: engineConfig(c, nil), MaxSource: c.MaxBodyBytes, MaxSide: c.MaxSide, MaxAnimationPixels: c.MaxAnimationPixels,
		LogLevel: c.LogLevel, MemoryBudget: c.MemoryBudget, SandboxRequired: c.SandboxRequired,
		Cells: c.Concurrency, Spares: c.CellSpares, MaxJobs: c.CellJobs, MaxRSS: c.CellMaxRSS, IdleRecycle: c.CellIdleRecycle,
	}
}

// serve runs the service with cfg until ctx is done, as a list of steps.
// When listening is non-nil it receives the bound address once the
// listener is open (tests use port 0).
func serve(ctx context.Context, cfg config, logOut io.Writer, listening chan<- string) error {
	logger := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel}))
	applyMemoryPlan(cfg, logger)
	sources, err := openSources(cfg)
	if err != nil {
		return err
	}
	if sources != nil {
		defer sources.Close()
	}
	logWhatIsOpen(cfg, logger)
	// Tracing is set up before anything starts, so that its error stops
	// nothing but itself.
	tr, err := startTracing(ctx, cfg, logger)
	if err != nil {
		return err
	}
	lns, err := listen(ctx, cfg)
	if err != nil {
		tr.Shutdown(context.Background()) // nothing traced yet: its exporter stops
		return err
	}
	life := lifecycle.New()
	engine, err := newEngine(cfg, logger, logOut)
	if err != nil {
		lns.close()
		tr.Shutdown(context.Background())
		return err
	}
	up := startEngine(engine, life, cfg, logger)
	d := newDeps(cfg, logger, engine, life, sources, tr)
	// The result store and the source bucket are checked beside the
	// engine's start; a refusal stops the service.
	storeRefused := d.store.CheckBeside(ctx)
	sourceFailed := d.thumbs.Sources.Bucket.CheckAtStart(ctx, cfg.SourceTimeout, logger)
	idleCtx, stopIdle := context.WithCancel(context.Background())
	defer stopIdle()
	startIdleRelease(idleCtx, d)
	srv, served := startServing(d, lns.serving)
	// The admin server outlives the serving one: probes answer while it
	// drains. Every return below stops it.
	adminFailed, stopAdmin := startAdmin(d, lns.admin)
	defer stopAdmin()
	if listening != nil {
		listening <- lns.serving.Addr().String()
	}

	select {
	case err := <-served:
		<-up.done
		return err
	case err = <-adminFailed:
		err = fmt.Errorf("admin port: %w", err)
	case err = <-storeRefused:
	case err = <-sourceFailed:
	case err := <-up.failed:
		srv.Close()
		if errors.Is(err, cell.ErrSandboxOff) {
			return fmt.Errorf("engine: %w; THUMBD_SANDBOX_REQUIRED is true, so thumbd does not start without it", err)
		}
		return fmt.Errorf("engine: %w", err)
	case <-ctx.Done():
		return drain(d, srv, served, engine, up)
	}
	srv.Close()
	<-up.done
	return err
}

// applyMemoryPlan keeps the Go heap, which holds the sources and the
// answers, to its share of the limit: it collects sooner instead of
// growing into libvips' share (GOMEMLIMIT, when set, was applied by the
// runtime). Below that limit the collector's goal is defaultGCPercent
// unless GOGC was given. Then the plan is logged.
func applyMemoryPlan(cfg config, logger *slog.Logger) {
	if cfg.memory.GoLimit > 0 {
		debug.SetMemoryLimit(cfg.memory.GoLimit)
	}
	if cfg.gcPercent > 0 {
		debug.SetGCPercent(cfg.gcPercent)
	}
	cfg.memory.Log(logger, cfg.memorySettings())
}

// openSources opens THUMBD_SOURCE's directory; nil when there is none.
func openSources(cfg config) (*os.Root, error) {
	if cfg.SourceDir == "" {
		return nil, nil
	}
	root, err := os.OpenRoot(cfg.SourceDir)
	if err != nil {
		return nil, fmt.Errorf("source directory: %w", err)
	}
	return root, nil
}

// logWhatIsOpen logs whether URLs are signed, and warns of every setting
// that leaves something open on purpose.
func logWhatIsOpen(cfg config, logger *slog.Logger) {
	if n := len(cfg.SigningKeys); n > 0 {
		logger.Info(fmt.Sprintf("signed URLs: on, %d keys", n), "keys", n)
	} else {
		logger.Info("signed URLs: off")
	}
	if len(cfg.SigningKeys) > 0 && cfg.Uploads && cfg.UnsignedUploads {
		logger.Warn("THUMBD_UNSIGNED_UPLOADS is on: POST /thumbnail is served without a signature, at any size and format")
	}
	if (cfg.ResultStore.Bucket != nil || cfg.SourceBucket != nil) && cfg.S3.Plaintext() {
		u, _ := url.Parse(cfg.S3.Endpoint)
		logger.Warn("object storage: the endpoint is http:// on a host other than loopback: requests, objects and credentials' answers are not encrypted", "endpoint", u.Redacted())
	}
	for _, w := range cfg.Imgproxy.Warnings(len(cfg.SigningKeys) > 0) {
		logger.Warn(w)
	}
	if cfg.AllowLoopback {
		logger.Warn("THUMBD_ORIGINS_ALLOW_LOOPBACK is on: origins on loopback addresses are fetched; for development and tests only")
	}
}

// startTracing starts the tracer provider (tracing.New), whose exporter
// reads its OTEL_EXPORTER_OTLP_* variables through cfg.getenv.
func startTracing(ctx context.Context, cfg config, logger *slog.Logger) (*tracing.Tracing, error) {
	getenv := cfg.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	cfg.Tracing.Version = cfg.build.Version
	tr, err := tracing.New(ctx, cfg.Tracing, getenv)
	if err == nil && tr.On {
		logger.Info("tracing: on (OTLP/HTTP)")
	}
	return tr, err
}

// listeners are the serving port's and the admin port's (nil without
// THUMBD_ADMIN_PORT).
type listeners struct{ serving, admin net.Listener }

// listen opens the listeners first: /health answers within milliseconds
// of exec, while libvips starts concurrently (its start-up maps many
// libraries). A connection is accepted once its first bytes have come, so
// that the cap can tell a probe's at once (connlimit.DeferAccept).
func listen(ctx context.Context, cfg config) (listeners, error) {
	var l listeners
	var err error
	if l.serving, err = (&net.ListenConfig{Control: connlimit.DeferAccept}).Listen(ctx, "tcp", ":"+strconv.Itoa(cfg.Port)); err != nil {
		return l, err
	}
	if cfg.AdminPort.On {
		if l.admin, err = net.Listen("tcp", ":"+strconv.Itoa(cfg.AdminPort.Port)); err != nil {
			l.serving.Close()
			return l, fmt.Errorf("admin port: %w", err)
		}
	}
	return l, nil
}

func (l listeners) close() {
	l.serving.Close()
	if l.admin != nil {
		l.admin.Close()
	}
}

// engineStart is the engine's start, in the background: done is closed
// once Start has returned; an engine that cannot start (cells that die
// before their hello) sends its error on failed, which stops the service.
type engineStart struct {
	done   chan struct{}
	failed chan error
}

func startEngine(engine engines.Engine, life *lifecycle.Lifecycle, cfg config, logger *slog.Logger) engineStart {
	up := engineStart{done: make(chan struct{}), failed: make(chan error, 1)}
	go func() {
		defer close(up.done)
		if err := engine.Start(); err != nil {
			up.failed <- err
			return
		}
		life.EngineStarted()
		logger.Info("engine started", "mode", cfg.Engine, "libvips", thumb.Version(), "threads", cfg.Concurrency)
		if issue := thumb.KnownCrash(thumb.Version()); issue != "" {
			logger.Warn(issue)
		}
	}()
	return up
}

// startServing serves d's routes on ln; served receives Serve's end.
func startServing(d deps, ln net.Listener) (srv *http.Server, served <-chan error) {
	cfg := d.cfg
	srv = &http.Server{
		Handler:           newServer(d),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(d.logger.Handler(), slog.LevelWarn),
	}
	// The cap learns which connections are idle and which wait for a
	// request's body, to close them first when it is reached.
	d.conns.Attach(srv)
	end := make(chan error, 1)
	go func() { end <- srv.Serve(d.conns.Listen(ln)) }()
	d.logger.Info("listening", "addr", ln.Addr().String(), "concurrency", cfg.Concurrency, "queue", cfg.Queue, "max_connections", cfg.MaxConnections)
	return srv, end
}

// startAdmin serves THUMBD_ADMIN_PORT's server on ln, when there is one:
// a listener and goroutines of its own, so that its probes never queue
// behind the serving port's connections. failed receives Serve's end
// (never, without one); stop lets the admin requests in flight finish,
// briefly, then closes what is left.
func startAdmin(d deps, ln net.Listener) (failed <-chan error, stop func()) {
	if ln == nil {
		return nil, func() {}
	}
	admin := &http.Server{
		Handler:           newAdminServer(d),
		ReadHeaderTimeout: adminReadTimeout,
		ReadTimeout:       adminReadTimeout,
		WriteTimeout:      adminWriteTimeout,
		IdleTimeout:       adminIdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(d.logger.Handler(), slog.LevelWarn),
	}
	end := make(chan error, 1)
	go func() { end <- admin.Serve(ln) }()
	d.logger.Info("admin listening", "addr", ln.Addr().String())
	return end, func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminStopTimeout)
		defer cancel()
		if err := admin.Shutdown(ctx); err != nil {
			admin.Close()
			d.logger.Warn("admin port: requests still open at exit were closed", "err", err)
		}
	}
}

// drain stops the service once ctx is done: /ready fails at once so load
// balancers stop sending; it keeps serving for the delay while endpoints
// are removed; then it closes the listener and lets every admitted
// request finish.
func drain(d deps, srv *http.Server, served <-chan error, engine engines.Engine, up engineStart) error {
	cfg, logger := d.cfg, d.logger
	d.life.Drain()
	logger.Info("draining", "delay", cfg.ShutdownDelay.String(), "timeout", cfg.ShutdownTimeout.String())
	time.Sleep(cfg.ShutdownDelay)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	// The results still queued for the store are written within what is
	// left of the timeout; then the last requests' spans go out.
	if serr := d.store.Close(shutdownCtx); serr != nil {
		logger.Warn("result store: writes still queued at shutdown were dropped", "err", serr)
	}
	if terr := d.tracing.Shutdown(shutdownCtx); terr != nil {
		logger.Warn("tracing: spans not flushed at shutdown", "err", terr)
	}
	<-up.done
	if err != nil {
		// Requests are still running on libvips: stopping it now would
		// crash them, so leave it to process exit (cells die with their
		// supervisor).
		return fmt.Errorf("shutdown: %w", err)
	}
	if e := <-served; e != nil && !errors.Is(e, http.ErrServerClosed) {
		return e
	}
	select {
	case err := <-up.failed:
		return fmt.Errorf("engine: %w", err)
	default:
	}
	engine.Stop()
	logger.Info("stopped")
	return nil
}

// The admin server's bounds: its requests are probes and scrapes from
// inside the cluster, without a body, so a connection that is slow to
// send its request is dropped within a probe's timeout.
const (
	adminReadTimeout  = 2 * time.Second  // the whole request
	adminWriteTimeout = 10 * time.Second // a scrape of the whole registry
	adminIdleTimeout  = 60 * time.Second // Prometheus keeps its connection between scrapes
	adminStopTimeout  = time.Second      // for the probes in flight at exit
)
