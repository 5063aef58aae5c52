package resultstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/bucket"
)

// Settings are what Open builds the service's store from.
type Settings struct {
	Location      Location         // THUMBD_RESULT_STORE; zero: off
	Conn          bucket.Conn      // how a bucket is reached (the AWS_* settings)
	LookupTimeout time.Duration    // THUMBD_RESULT_STORE_TIMEOUT
	QueueBytes    int64            // THUMBD_RESULT_STORE_QUEUE, as the memory plan gives it
	MaxBytes      int64            // THUMBD_MAX_BODY_BYTES
	Keys          [][]byte         // THUMBD_RESULT_STORE_KEY; nil: objects unsigned
	Namespace     string           // Config.Namespace
	Budget        *admission.Bytes // the source budget, which hits are read on
	// Metrics counts the bucket client's calls (use "result_store").
	Metrics *bucket.Metrics
	Tracer  trace.Tracer // nil: no spans
	Logger  *slog.Logger // nil: no logs
}

// Fixed parts of the service's store: its writes run in the background,
// so their bound is generous; the start-up check waits a little longer
// than a lookup, in the background too.
const (
	serviceWriteTimeout = 10 * time.Second
	startCheckTimeout   = 5 * time.Second
)

// Open is the store s.Location names (off when zero), for the service.
func Open(s Settings) *Store {
	var backend Backend
	switch loc := s.Location; {
	case loc.Dir != "":
		backend = Dir{Root: loc.Dir}
	case loc.Bucket != nil:
		c, err := bucket.New(*loc.Bucket, s.Conn, bucket.Options{Use: "result_store", Metrics: s.Metrics, Tracer: s.Tracer})
		if err != nil {
			// The configuration made this client already when it read
			// the setting: one it accepted cannot fail here.
			if s.Logger != nil {
				s.Logger.Error("result store: off", "store", loc.String(), "err", err)
			}
			break
		}
		backend = Bucket{Client: c}
	}
	store := New(Config{
		Backend: backend, LookupTimeout: s.LookupTimeout, WriteTimeout: serviceWriteTimeout,
		QueueBytes: s.QueueBytes, MaxBytes: s.MaxBytes, Keys: s.Keys, Namespace: s.Namespace, Budget: s.Budget, Tracer: s.Tracer, Logger: s.Logger,
	})
	store.loc = s.Location
	return store
}

// CheckBeside runs CheckAtStart beside the service's start, so that
// /health answers meanwhile: the channel gets its refusal, which stops
// the service as an engine failure does.
func (s *Store) CheckBeside(ctx context.Context) <-chan error {
	refused := make(chan error, 1)
	go func() {
		if err := s.CheckAtStart(ctx); err != nil {
			refused <- err
		}
	}()
	return refused
}

// CheckAtStart probes the store once at start: a refusal (credentials,
// permissions, a missing bucket or directory) is the operator's to fix
// and an error naming the setting, which stops the service; a store that
// does not answer is a warning, and thumbnails are computed until it does.
func (s *Store) CheckAtStart(ctx context.Context) error {
	if !s.On() {
		return nil
	}
	where := s.cfg.Backend.String()
	if s.loc.On() {
		where = s.loc.String()
	}
	ctx, cancel := context.WithTimeout(ctx, startCheckTimeout)
	defer cancel()
	err := s.Check(ctx)
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		return fmt.Errorf("THUMBD_RESULT_STORE=%s: %w", where, err)
	case err != nil:
		s.cfg.Logger.Warn("result store: not answering at start; thumbnails are computed until it answers", "store", where, "err", err)
	default:
		s.cfg.Logger.Info("result store: on", "store", where)
	}
	return nil
}
