package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// Error codes of the API; the README lists every one.
const (
	codeNotFound         = "not_found"
	codeMethodNotAllowed = "method_not_allowed"
	codeBadParameter     = "bad_parameter"
	codeBadSourceName    = "bad_source_name"
	codeSourceNotFound   = "source_not_found"
	codeSourcesDisabled  = "sources_disabled"
	codeBodyTooLarge     = "body_too_large"
	codeSourceTooLarge   = "source_too_large"
	codeUnsupported      = "unsupported_format"
	codeUnprocessable    = "unprocessable_image"
	codeTooManyPixels    = "too_many_pixels"
	codeTooManyFrames    = "too_many_frames"
	codeQueueFull        = "queue_full"
	codeDeadline         = "deadline_exceeded"
	codeInternal         = "internal_error"
)

type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// writeJSON writes v compactly, with no trailing newline.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only the fixed types of this package are written here.
		http.Error(w, `{"error":"response could not be encoded","code":"internal_error"}`, http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// writeError writes the API's error shape. msg is a sentence for a person.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: msg, Code: code})
}

// parseQuery decodes the query strictly (url.Query would drop a bad escape
// silently); a malformed query is answered with a 400 and ok is false.
func parseQuery(w http.ResponseWriter, r *http.Request) (q url.Values, ok bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadParameter, "The query string is malformed: "+err.Error()+".")
		return nil, false
	}
	return q, true
}
