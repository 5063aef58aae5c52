package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// status is the body of /health and /ready.
type status struct {
	Status string `json:"status"`
}

func handleHealth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, status{"ok"})
	})
}

func handleReady(life *lifecycle) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch s := life.state(); s {
		case stateReady:
			writeJSON(w, http.StatusOK, status{"ready"})
		default:
			writeJSON(w, http.StatusServiceUnavailable, status{s.String()})
		}
	})
}

// handleJSON serialises the fixed document on every request: that
// serialisation is what the route measures.
func handleJSON() http.Handler {
	doc := newDocument()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, doc)
	})
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

// compute runs the study's loop in integer arithmetic: the native build in
// the study lost to a JIT by doing it on doubles with fmod.
func compute(n int64) int64 {
	var result int64
	for i := int64(0); i < n; i++ {
		result = (result + i*31) % computeModulus
	}
	return result
}

func handleCompute() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, ok := parseQuery(w, r)
		if !ok {
			return
		}
		n := int64(computeDefaultN)
		if v, ok := q["n"]; ok {
			var err error
			n, err = strconv.ParseInt(v[0], 10, 64)
			if err != nil || n < 0 || n > computeMaxN {
				writeError(w, http.StatusBadRequest, codeBadParameter, "Parameter \"n\" must be an integer from 0 to 100000000.")
				return
			}
		}
		writeJSON(w, http.StatusOK, computeResult{N: n, Result: compute(n)})
	})
}

type hashResult struct {
	Algorithm string `json:"algorithm"`
	Hex       string `json:"hex"`
}

// defaultHashPayload is what GET /hash hashes when data is absent.
var defaultHashPayload = strings.Repeat("0123456789abcdef", 64)

func handleHashGet() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, ok := parseQuery(w, r)
		if !ok {
			return
		}
		data := defaultHashPayload
		if v, ok := q["data"]; ok {
			data = v[0]
		}
		sum := sha256.Sum256([]byte(data))
		writeJSON(w, http.StatusOK, hashResult{"sha256", hex.EncodeToString(sum[:])})
	})
}

// handleHashPost hashes the body as it streams in; the query is ignored.
func handleHashPost(maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxBody {
			writeError(w, http.StatusRequestEntityTooLarge, codeBodyTooLarge, bodyTooLargeMsg(maxBody))
			return
		}
		h := sha256.New()
		if _, err := io.Copy(h, http.MaxBytesReader(w, r.Body, maxBody)); err != nil {
			writeBodyError(w, err, maxBody)
			return
		}
		writeJSON(w, http.StatusOK, hashResult{"sha256", hex.EncodeToString(h.Sum(nil))})
	})
}

func bodyTooLargeMsg(maxBody int64) string {
	return "The request body is larger than the " + strconv.FormatInt(maxBody, 10) + " bytes allowed."
}

// writeBodyError answers a failed body read: 413 past the limit, 400 for a
// body that broke off.
func writeBodyError(w http.ResponseWriter, err error, maxBody int64) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, codeBodyTooLarge, bodyTooLargeMsg(maxBody))
		return
	}
	writeError(w, http.StatusBadRequest, codeBadParameter, "The request body could not be read: "+err.Error()+".")
}
