package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/thumbd/thumbd/service/internal/bucket"
	"github.com/thumbd/thumbd/service/internal/resultstore"
	"github.com/thumbd/thumbd/service/internal/tracing"
)

// The result store (THUMBD_RESULT_STORE, docs/storage.md): built here from
// the settings, checked once at start, closed at shutdown.

// Fixed parts of the result store's behaviour: its writes run in the
// background, so their bound is generous; the start-up check waits a
// little longer than a lookup, in the background too.
const (
	resultStoreWriteTimeout = 10 * time.Second
	resultStoreCheckTimeout = 5 * time.Second
)

// newResultStore is the store THUMBD_RESULT_STORE names (off when unset).
// Its bucket client counts its calls in metrics (use "result_store").
func newResultStore(cfg config, metrics *bucket.Metrics, logger *slog.Logger, tr *tracing.Tracing) *resultstore.Store {
	var backend resultstore.Backend
	switch loc := cfg.ResultStore; {
	case loc.Dir != "":
		backend = resultstore.Dir{Root: loc.Dir}
	case loc.Bucket != nil:
		c, err := bucket.New(*loc.Bucket, cfg.S3, bucket.Options{Use: "result_store", Metrics: metrics, Tracer: tr.Tracer})
		if err != nil {
			// loadConfig made this client already: a configuration it
			// accepted cannot fail here.
			logger.Error("result store: off", "store", loc.String(), "err", err)
			break
		}
		backend = resultstore.Bucket{Client: c}
	}
	return resultstore.New(resultstore.Config{
		Backend: backend, LookupTimeout: cfg.ResultStoreTimeout, WriteTimeout: resultStoreWriteTimeout,
		QueueBytes: cfg.memory.StoreQueue, MaxBytes: cfg.MaxBodyBytes, Tracer: tr.Tracer, Logger: logger,
	})
}

// checkResultStore probes the store once at start: a refusal (credentials,
// permissions, a missing bucket or directory) is the operator's to fix and
// stops the service, naming the setting; a store that does not answer is
// a warning, and thumbnails are computed until it does.
func checkResultStore(ctx context.Context, s *resultstore.Store, loc resultstore.Location, logger *slog.Logger) error {
	if !s.On() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, resultStoreCheckTimeout)
	defer cancel()
	err := s.Check(ctx)
	var refused *resultstore.RefusedError
	switch {
	case errors.As(err, &refused):
		return fmt.Errorf("THUMBD_RESULT_STORE=%s: %w", loc, err)
	case err != nil:
		logger.Warn("result store: not answering at start; thumbnails are computed until it answers", "store", loc.String(), "err", err)
	default:
		logger.Info("result store: on", "store", loc.String())
	}
	return nil
}
