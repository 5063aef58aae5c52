// Package imgproxyendpoint is the imgproxy endpoint (THUMBD_IMGPROXY,
// docs/imgproxy.md): its settings, the handler that reads an imgproxy URL
// through imgproxy's grammar and runs it through the one pipeline, and the
// writer that adds imgproxy's answer headers. The grammar itself
// (internal/imgproxy) stays pure Go, free of HTTP.
package imgproxyendpoint

import (
	"mime"
	"net/http"
	"strings"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/imgproxy"
	"github.com/thumbd/thumbd/service/internal/pipeline"
)

// Handler serves an imgproxy URL: the path read into thumbd's
// values (imgproxy's signature checked), then the one pipeline, with
// imgproxy's answer headers.
func Handler(ic imgproxy.Config, prefix string, thumbs *pipeline.Pipeline) pipeline.HandlerFunc {
	prefix = strings.TrimSuffix(prefix, "/")
	return func(w http.ResponseWriter, r *http.Request) error {
		req, err := ic.Parse(strings.TrimPrefix(rawPath(r), prefix))
		if err != nil {
			return err
		}
		return thumbs.Translated(&writer{ResponseWriter: w, req: req}, r, req.Asked, req.Signed)
	}
}

// rawPath is the path as the client sent it, which imgproxy signs (its
// handlers.SplitPathSignature reads RequestURI), else the escaped path.
func rawPath(r *http.Request) string {
	if p, _, _ := strings.Cut(r.RequestURI, "?"); strings.HasPrefix(p, "/") {
		return p
	}
	return r.URL.EscapedPath()
}

// writer adds imgproxy's headers to a thumbnail (200) or its 304,
// once the answer's media type is known: Content-Disposition (its file
// name with the format's extension, as imgproxy) and Expires (exp).
type writer struct {
	http.ResponseWriter
	req     imgproxy.Request
	written bool // WriteHeader was called
}

func (w *writer) WriteHeader(code int) {
	if w.written {
		w.ResponseWriter.WriteHeader(code) // as net/http: superfluous, logged
		return
	}
	w.written = true
	if code == http.StatusOK || code == http.StatusNotModified {
		h := w.Header()
		disposition := "inline"
		if w.req.Attachment {
			disposition = "attachment"
		}
		h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": w.req.Filename + extension(h.Get("Content-Type"))}))
		if !w.req.Expires.IsZero() {
			h.Set("Expires", w.req.Expires.UTC().Format(http.TimeFormat))
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// extension is the file extension of a media type of the format table
// (".jpg" for JPEG, as imgproxy writes it); "" for another.
func extension(mediaType string) string {
	for _, s := range imagefmt.Table() {
		if s.ContentType == mediaType && s.Output {
			if s.Format == imagefmt.JPEG {
				return ".jpg"
			}
			return "." + string(s.Format)
		}
	}
	return ""
}
