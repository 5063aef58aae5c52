package main

import (
	"context"
	"net/http"
	"time"

	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/source"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// /info runs the thumbnail pipeline with another job: the same parse
// rules (strict, signed when keys are set), sources, admission, engine
// (in process or in cells), deadline and errors; its answer is JSON.

// handleInfoGet describes a file of the source directory or an origin's
// image; the signature is checked before the values are read, as GET
// /thumbnail's.
func (t *thumbnails) handleInfoGet() handlerFunc {
	return t.handleInfo(func(r *http.Request) (params.Info, source.Source, error) {
		q, err := params.InfoGetQuery(r.URL.RawQuery)
		if err != nil {
			return params.Info{}, nil, err
		}
		if err := t.signer.Check(r.URL.Path, q); err != nil {
			return params.Info{}, nil, err
		}
		req, err := params.InfoGet(q)
		if err != nil {
			return req, nil, err
		}
		src, err := t.sourceOf(r.URL.Path, req.Src, req.URL)
		return req, src, err
	})
}

// handleInfoPost describes the request body, under POST /thumbnail's
// rules: signed unless unsigned uploads are allowed (routes.go applies the
// uploads switch, as to the other POST routes).
func (t *thumbnails) handleInfoPost() handlerFunc {
	return t.handleInfo(func(r *http.Request) (params.Info, source.Source, error) {
		q, err := params.InfoUploadQuery(r.URL.RawQuery)
		if err != nil {
			return params.Info{}, nil, err
		}
		if err := t.checkUpload(r.URL.Path, q); err != nil {
			return params.Info{}, nil, err
		}
		req, err := params.InfoUpload(q)
		return req, source.Upload{Limits: t.limits, Body: r.Body, Length: r.ContentLength}, err
	})
}

func (t *thumbnails) handleInfo(parse func(r *http.Request) (params.Info, source.Source, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		_, span := t.tracer.Start(r.Context(), "parse")
		req, src, err := parse(r)
		endSpan(span, err)
		if err != nil {
			return err
		}
		return t.runInfo(w, r, req, src)
	}
}

// runInfo is /info from the source on, as run is a thumbnail's.
func (t *thumbnails) runInfo(w http.ResponseWriter, r *http.Request, req params.Info, src source.Source) error {
	ctx, cancel := context.WithDeadline(r.Context(), time.Now().Add(t.cfg.Deadline))
	defer cancel()
	blob, ticket, admit, tag, err := t.admit(ctx, w, r, src, req.Job.Normalised(), func(b []byte) int64 { return t.infoCost(b, req.Job) })
	if blob == nil {
		return err
	}
	defer blob.Release()
	defer ticket.Release()
	info, err := t.engine.info(ctx, admit, ticket, blob, req.Job)
	if err != nil {
		return t.deadlineOrGone(err)
	}
	_, span := t.tracer.Start(ctx, "respond")
	defer span.End()
	h := w.Header()
	h.Set("ETag", tag)
	h.Set("Cache-Control", cacheControl)
	writeJSON(w, http.StatusOK, info)
	return nil
}

// infoCost is an info job's estimated peak memory: a thumbnail's into
// the ThumbHash's box (libvips decodes for it as for a thumbnail, shrunk
// on load where the format allows), or the smallest job's for the header
// alone.
func (t *thumbnails) infoCost(src []byte, job thumbjob.InfoJob) int64 {
	if job.ThumbHash {
		return t.cost(src, job.AsThumbnail())
	}
	h, j := smallestJob(memcost.JobOf(job.AsThumbnail()))
	return t.withSource(memcost.Estimate(h, j), src)
}
