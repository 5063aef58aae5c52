package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/thumbd/thumbd/service/internal/resultstore"
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

// newResultBackend is the backend THUMBD_RESULT_STORE names; nil when off.
func newResultBackend(loc resultstore.Location, getenv func(string) string) (resultstore.Backend, error) {
	switch {
	case loc.Dir != "":
		return resultstore.Dir{Root: loc.Dir}, nil
	case loc.Bucket != "":
		return nil, errors.New("THUMBD_RESULT_STORE: s3:// is not in this build yet")
	}
	return nil, nil
}

// newResultStore is the store of cfg over backend (nil: off).
func newResultStore(cfg config, backend resultstore.Backend, logger *slog.Logger, tr *tracing) *resultstore.Store {
	return resultstore.New(resultstore.Config{
		Backend: backend, LookupTimeout: cfg.ResultStoreTimeout, WriteTimeout: resultStoreWriteTimeout,
		QueueBytes: cfg.memory.StoreQueue, MaxBytes: cfg.MaxBodyBytes, Tracer: tr.tracer, Logger: logger,
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
