package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"time"
)

// config is every setting, read once from flags and environment and passed
// down typed. Each flag has an environment twin; a flag wins over its twin.
type config struct {
	Port              int
	MaxBodyBytes      int64
	MaxPixels         int64
	MaxFrames         int
	MaxSide           int
	Concurrency       int
	Queue             int
	Deadline          time.Duration
	SourceDir         string
	ShutdownDelay     time.Duration
	ShutdownTimeout   time.Duration
	LogLevel          slog.Level
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
}

// envReader collects parse errors of environment values so that all of
// them are reported at once.
type envReader struct {
	getenv func(string) string
	errs   []error
}

func (e *envReader) int64(name string, def int64) int64 {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: not an integer", name, v))
		return def
	}
	return n
}

func (e *envReader) int(name string, def int) int { return int(e.int64(name, int64(def))) }

func (e *envReader) duration(name string, def time.Duration) time.Duration {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: not a duration such as 10s or 500ms", name, v))
		return def
	}
	return d
}

func (e *envReader) string(name, def string) string {
	if v := e.getenv(name); v != "" {
		return v
	}
	return def
}

// loadConfig reads args (without the program name) and the environment.
func loadConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	env := &envReader{getenv: getenv}
	var c config
	var logLevel string
	fs := flag.NewFlagSet("thumbd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.Port, "port", env.int("PORT", 8080), "TCP port to listen on (env PORT)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", env.int64("THUMBD_MAX_BODY_BYTES", 20<<20), "largest request body in bytes; 413 above (env THUMBD_MAX_BODY_BYTES)")
	fs.Int64Var(&c.MaxPixels, "max-pixels", env.int64("THUMBD_MAX_PIXELS", 40_000_000), "largest source width x height; 422 above (env THUMBD_MAX_PIXELS)")
	fs.IntVar(&c.MaxFrames, "max-frames", env.int("THUMBD_MAX_FRAMES", 256), "most frames in an animated source; 422 above (env THUMBD_MAX_FRAMES)")
	fs.IntVar(&c.MaxSide, "max-side", env.int("THUMBD_MAX_SIDE", 4096), "largest w or h; 400 above (env THUMBD_MAX_SIDE)")
	fs.IntVar(&c.Concurrency, "concurrency", env.int("THUMBD_CONCURRENCY", runtime.GOMAXPROCS(0)), "thumbnails processed at once; default: usable CPUs (env THUMBD_CONCURRENCY)")
	fs.IntVar(&c.Queue, "queue", env.int("THUMBD_QUEUE", 32), "thumbnails that may wait for a slot; 503 beyond (env THUMBD_QUEUE)")
	fs.DurationVar(&c.Deadline, "deadline", env.duration("THUMBD_DEADLINE", 10*time.Second), "queue wait plus processing per thumbnail; 504 after (env THUMBD_DEADLINE)")
	fs.StringVar(&c.SourceDir, "source-dir", env.string("THUMBD_SOURCE_DIR", ""), "directory GET /thumbnail?src= reads from; empty turns it off (env THUMBD_SOURCE_DIR)")
	fs.DurationVar(&c.ShutdownDelay, "shutdown-delay", env.duration("THUMBD_SHUTDOWN_DELAY", 0), "after SIGTERM, keep serving this long with /ready at 503 (env THUMBD_SHUTDOWN_DELAY)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", env.duration("THUMBD_SHUTDOWN_TIMEOUT", 30*time.Second), "time to finish admitted requests after the listener closed (env THUMBD_SHUTDOWN_TIMEOUT)")
	fs.StringVar(&logLevel, "log-level", env.string("THUMBD_LOG_LEVEL", "info"), "debug, info, warn or error (env THUMBD_LOG_LEVEL)")
	fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", env.duration("THUMBD_READ_HEADER_TIMEOUT", 5*time.Second), "time to read request headers (env THUMBD_READ_HEADER_TIMEOUT)")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", env.duration("THUMBD_READ_TIMEOUT", 30*time.Second), "time to read a whole request, body included (env THUMBD_READ_TIMEOUT)")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", env.duration("THUMBD_WRITE_TIMEOUT", 60*time.Second), "time from the end of the request headers to the end of the response (env THUMBD_WRITE_TIMEOUT)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", env.duration("THUMBD_IDLE_TIMEOUT", 120*time.Second), "keep-alive idle time (env THUMBD_IDLE_TIMEOUT)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	errs := env.errs
	if err := c.LogLevel.UnmarshalText([]byte(logLevel)); err != nil {
		errs = append(errs, fmt.Errorf("log level %q: want debug, info, warn or error", logLevel))
	}
	errs = append(errs, c.validate()...)
	if err := errors.Join(errs...); err != nil {
		return config{}, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return c, nil
}

func (c config) validate() []error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Port >= 0 && c.Port <= 65535, "port %d: want 0..65535", c.Port)
	check(c.MaxBodyBytes >= 1, "max body bytes %d: want at least 1", c.MaxBodyBytes)
	check(c.MaxPixels >= 1, "max pixels %d: want at least 1", c.MaxPixels)
	check(c.MaxFrames >= 1, "max frames %d: want at least 1", c.MaxFrames)
	check(c.MaxSide >= 1 && c.MaxSide <= 16384, "max side %d: want 1..16384", c.MaxSide)
	check(c.Concurrency >= 1 && c.Concurrency <= 1024, "concurrency %d: want 1..1024", c.Concurrency)
	check(c.Queue >= 0 && c.Queue <= 100000, "queue %d: want 0..100000", c.Queue)
	check(c.Deadline > 0, "deadline %s: want more than 0", c.Deadline)
	check(c.ShutdownDelay >= 0, "shutdown delay %s: want 0 or more", c.ShutdownDelay)
	check(c.ShutdownTimeout > 0, "shutdown timeout %s: want more than 0", c.ShutdownTimeout)
	check(c.ReadHeaderTimeout > 0 && c.ReadTimeout > 0 && c.IdleTimeout > 0, "read-header, read and idle timeouts: want more than 0")
	check(c.WriteTimeout > c.Deadline, "write timeout %s: want more than the deadline %s, or a late thumbnail could never be written", c.WriteTimeout, c.Deadline)
	return errs
}
