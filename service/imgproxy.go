package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/imgproxy"
	"github.com/thumbd/thumbd/service/internal/pipeline"
)

// imgproxySettings are THUMBD_IMGPROXY_*.
type imgproxySettings struct {
	On          bool
	Prefix      string
	Keys, Salts [][]byte
	// PluralKeys and PluralSalts are THUMBD_IMGPROXY_KEYS and _SALTS,
	// taken into Keys and Salts by takePlurals.
	PluralKeys, PluralSalts [][]byte
	// Unsigned is THUMBD_IMGPROXY_UNSIGNED: no imgproxy key beside
	// THUMBD_SIGNING_KEYS, on purpose.
	Unsigned      bool
	SignatureSize int
	Presets       string
	AutoFormat    bool
}

// minSignatureSize is the imgproxy signature below which start-up warns:
// 8 bytes leave 2^64 values to try per URL, 4 bytes 2^32, 1 byte 256.
const minSignatureSize = 8

// takePlurals reads THUMBD_IMGPROXY_KEYS and _SALTS as THUMBD_IMGPROXY_KEY
// and _SALT. imgproxy itself has only the singular names (each a
// comma-separated list: config.go up to v3, security/config.go in v4);
// with both spellings set there is no rule of its to follow, and choosing
// one silently could leave the keys an operator meant unused, so it is a
// start-up error.
func (s *imgproxySettings) takePlurals() []error {
	var errs []error
	take := func(singular string, one *[][]byte, plural string, many [][]byte) {
		switch {
		case len(many) == 0:
		case len(*one) > 0:
			errs = append(errs, fmt.Errorf("%s and %s are both set: set one of them (each takes a comma-separated list)", singular, plural))
		default:
			*one = many
		}
	}
	take("THUMBD_IMGPROXY_KEY", &s.Keys, "THUMBD_IMGPROXY_KEYS", s.PluralKeys)
	take("THUMBD_IMGPROXY_SALT", &s.Salts, "THUMBD_IMGPROXY_SALTS", s.PluralSalts)
	return errs
}

// unsignedBesideSigning reports an imgproxy endpoint without a key while
// thumbd's own URLs are signed: everything THUMBD_SIGNING_KEYS bounds on
// GET /thumbnail would be open there.
func (c config) unsignedBesideSigning() bool {
	return c.Imgproxy.On && len(c.SigningKeys) > 0 && len(c.Imgproxy.Keys) == 0
}

// imgproxyWarnings are the sentences start-up logs as warnings about the
// imgproxy endpoint.
func (c config) imgproxyWarnings() []string {
	var out []string
	if c.unsignedBesideSigning() && c.Imgproxy.Unsigned {
		out = append(out, "THUMBD_IMGPROXY_UNSIGNED is on: imgproxy's URLs are served without a signature (any size and option) beside signed /thumbnail URLs")
	}
	if c.Imgproxy.On && len(c.Imgproxy.Keys) > 0 && c.Imgproxy.SignatureSize < minSignatureSize {
		out = append(out, fmt.Sprintf("THUMBD_IMGPROXY_SIGNATURE_SIZE=%d: a signature this short is found by trying at most 2^%d values per URL; use %d bytes or more (imgproxy's default is 32)",
			c.Imgproxy.SignatureSize, 8*c.Imgproxy.SignatureSize, minSignatureSize))
	}
	return out
}

// hexList reads comma-separated hex values (imgproxy's keys and salts:
// any length); set but blank is an error, never a quiet "unsigned".
func hexList(s string) ([][]byte, error) {
	var out [][]byte
	for i, item := range strings.Split(s, ",") {
		b, err := hexValue(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("value %d: %w", i+1, err)
		}
		out = append(out, b)
	}
	return out, nil
}

func hexValue(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, errors.New("not hex")
	}
	return b, nil
}

// imgproxyRoot is the route pattern of the imgproxy endpoint; thumbd's
// own routes are fixed names, matched before it.
func (c config) imgproxyRoot() string { return strings.TrimSuffix(c.Imgproxy.Prefix, "/") + "/*" }

// imgproxyConfig checks THUMBD_IMGPROXY_* and builds the parser's config.
func (c config) imgproxyConfig() (imgproxy.Config, error) {
	s := c.Imgproxy
	ic := imgproxy.Config{SignatureSize: s.SignatureSize, MaxSide: c.MaxSide, AutoFormat: s.AutoFormat}
	if len(s.Keys) != len(s.Salts) {
		return ic, fmt.Errorf("THUMBD_IMGPROXY_KEY has %d keys and THUMBD_IMGPROXY_SALT %d salts: give one salt per key", len(s.Keys), len(s.Salts))
	}
	if c.unsignedBesideSigning() && !s.Unsigned {
		return ic, errors.New("THUMBD_IMGPROXY=true without THUMBD_IMGPROXY_KEY while THUMBD_SIGNING_KEYS is set: imgproxy's URLs would be served unsigned (any size and option) beside signed /thumbnail URLs; set THUMBD_IMGPROXY_KEY and THUMBD_IMGPROXY_SALT, or THUMBD_IMGPROXY_UNSIGNED=true to serve them unsigned on purpose")
	}
	for i := range s.Keys {
		ic.Keys = append(ic.Keys, imgproxy.Key{Key: s.Keys[i], Salt: s.Salts[i]})
	}
	if s.SignatureSize < 1 || s.SignatureSize > 32 {
		return ic, fmt.Errorf("THUMBD_IMGPROXY_SIGNATURE_SIZE=%d: want 1..32", s.SignatureSize)
	}
	if p := s.Prefix; p != "" {
		first, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		if !strings.HasPrefix(p, "/") || p == "/" || strings.Contains(p, "*") || slices.Contains(ownRoots, first) {
			return ic, fmt.Errorf("THUMBD_IMGPROXY_PREFIX=%q: want /NAME (segments), none of thumbd's own routes (%s)", p, strings.Join(ownRoots, ", "))
		}
	}
	if c.SourceBucket != nil {
		ic.Bucket, ic.BucketPrefix = c.SourceBucket.Bucket, c.SourceBucket.Prefix
	}
	presets, err := imgproxy.ParsePresets(s.Presets)
	if err == nil {
		err = presets.Check(ic)
	}
	if err != nil {
		return ic, fmt.Errorf("THUMBD_IMGPROXY_PRESETS: %w", err)
	}
	ic.Presets = presets
	return ic, nil
}

// ownRoots are the first segments of thumbd's own routes: an imgproxy
// prefix may not be one of them.
var ownRoots = []string{"thumbnail", "info", "health", "ready", "metrics", "json", "compute", "hash"}

// handleImgproxy serves an imgproxy URL: the path read into thumbd's
// values (imgproxy's signature checked), then the one pipeline, with
// imgproxy's answer headers.
func handleImgproxy(ic imgproxy.Config, prefix string, thumbs *pipeline.Pipeline) pipeline.HandlerFunc {
	prefix = strings.TrimSuffix(prefix, "/")
	return func(w http.ResponseWriter, r *http.Request) error {
		req, err := ic.Parse(strings.TrimPrefix(rawPath(r), prefix))
		if err != nil {
			return err
		}
		return thumbs.Translated(&imgproxyWriter{ResponseWriter: w, req: req}, r, req.Asked, req.Signed)
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

// imgproxyWriter adds imgproxy's headers to a thumbnail (200) or its 304,
// once the answer's media type is known: Content-Disposition (its file
// name with the format's extension, as imgproxy) and Expires (exp).
type imgproxyWriter struct {
	http.ResponseWriter
	req     imgproxy.Request
	written bool // WriteHeader was called
}

func (w *imgproxyWriter) WriteHeader(code int) {
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

func (w *imgproxyWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *imgproxyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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

// labelled names the route label label for the metrics, the log and the
// span (httpmetrics.Route reads chi's pattern after the handler ran): the
// imgproxy endpoint's pattern is a catch-all, its label says its grammar.
func labelled(label string, next http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if rc := chi.RouteContext(r.Context()); rc != nil {
			rc.RoutePatterns = []string{label}
		}
	}
}
