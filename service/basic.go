package main

import (
	"net/http"

	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/pipeline"
)

// status is the body of /health and /ready.
type status struct {
	Status string `json:"status"`
}

func handleHealth(w http.ResponseWriter, r *http.Request) error {
	if _, err := params.Query(r.URL.RawQuery); err != nil {
		return err
	}
	pipeline.WriteJSON(w, http.StatusOK, status{"ok"})
	return nil
}

func handleReady(life *lifecycle) pipeline.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if _, err := params.Query(r.URL.RawQuery); err != nil {
			return err
		}
		switch s := life.state(); s {
		case stateReady:
			pipeline.WriteJSON(w, http.StatusOK, status{"ready"})
		default:
			pipeline.WriteJSON(w, http.StatusServiceUnavailable, status{s.String()})
		}
		return nil
	}
}
