// Package benchroutes is the benchmark contract's routes (GET /json,
// GET /compute, GET and POST /hash; THUMBD_BENCH_ROUTES): what the bench
// compares builds and twins on, beside the thumbnails.
package benchroutes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/pipeline"
	"github.com/thumbd/thumbd/service/internal/source"
)

// HandleJSON serialises the fixed document on every request: that
// serialisation is what the route measures.
func HandleJSON() pipeline.HandlerFunc {
	doc := newDocument()
	return func(w http.ResponseWriter, r *http.Request) error {
		if _, err := params.Query(r.URL.RawQuery); err != nil {
			return err
		}
		pipeline.WriteJSON(w, http.StatusOK, doc)
		return nil
	}
}

const (
	computeDefaultN = 100_000
	computeMaxN     = 100_000_000
	computeModulus  = 1_000_000_007
)

type computeResult struct {
	N      int64 `json:"n"`
	Result int64 `json:"result"`
}

// Compute runs the study's loop in integer arithmetic: the native build in
// the study lost to a JIT by doing it on doubles with fmod.
func Compute(n int64) int64 {
	var result int64
	for i := int64(0); i < n; i++ {
		result = (result + i*31) % computeModulus
	}
	return result
}

// HandleCompute is GET /compute?n=N.
func HandleCompute(w http.ResponseWriter, r *http.Request) error {
	q, err := params.Query(r.URL.RawQuery, "n")
	if err != nil {
		return err
	}
	n, err := params.Int(q, "n", computeDefaultN, 0, computeMaxN)
	if err != nil {
		return err
	}
	pipeline.WriteJSON(w, http.StatusOK, computeResult{N: n, Result: Compute(n)})
	return nil
}

type hashResult struct {
	Algorithm string `json:"algorithm"`
	Hex       string `json:"hex"`
}

// defaultHashPayload is what GET /hash hashes when data is absent.
var defaultHashPayload = strings.Repeat("0123456789abcdef", 64)

// HandleHashGet is GET /hash?data=S.
func HandleHashGet(w http.ResponseWriter, r *http.Request) error {
	q, err := params.Query(r.URL.RawQuery, "data")
	if err != nil {
		return err
	}
	data, ok := q["data"]
	if !ok {
		data = defaultHashPayload
	}
	sum := sha256.Sum256([]byte(data))
	pipeline.WriteJSON(w, http.StatusOK, hashResult{"sha256", hex.EncodeToString(sum[:])})
	return nil
}

// HandleHashPost hashes the body as it streams in; the query is ignored
// (the contract says so: POST /hash is the one route not strict about it).
func HandleHashPost(maxBody int64) pipeline.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		tooLarge := &apierr.Error{Code: apierr.BodyTooLarge, Message: source.BodyTooLargeMessage(maxBody), CloseConnection: true}
		if r.ContentLength > maxBody {
			return tooLarge
		}
		h := sha256.New()
		if _, err := io.Copy(h, http.MaxBytesReader(w, r.Body, maxBody)); err != nil {
			var over *http.MaxBytesError
			if errors.As(err, &over) {
				return tooLarge
			}
			return apierr.New(apierr.BadParameter, "The request body could not be read: %s.", err)
		}
		pipeline.WriteJSON(w, http.StatusOK, hashResult{"sha256", hex.EncodeToString(h.Sum(nil))})
		return nil
	}
}
