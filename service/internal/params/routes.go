package params

import (
	"net/http"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Request is a parsed engine request (/thumbnail or /info): its job and
// the name of its source.
type Request struct {
	// Thumbnail is a thumbnail's options and hints, and the source's name
	// (Src, URL) of either route; an /info request uses only the name.
	Thumbnail
	Info *thumbjob.InfoJob // an /info request's job; nil for a thumbnail
}

// Job is the engine job the request asks for.
func (r Request) Job() thumbjob.Job { return thumbjob.Job{Options: r.Options, Info: r.Info} }

// Route is how one engine route reads its query: Query decodes it
// strictly (its signature is checked on what Query returns), Read reads
// the decoded values. The handlers and `thumbd sign` read queries through
// this one table.
type Route struct {
	Method, Path string
	names        []string
	read         func(Rules, map[string]string) (Request, error)
}

// Upload reports whether the route's source is the request body.
func (rt Route) Upload() bool { return rt.Method == http.MethodPost }

// Query decodes the route's raw query, strictly (known names, each once).
func (rt Route) Query(raw string) (map[string]string, error) { return Query(raw, rt.names...) }

// Read reads a query decoded by Query, with rules (its client hints
// included; /info takes none of them).
func (rt Route) Read(rules Rules, q map[string]string) (Request, error) { return rt.read(rules, q) }

// Routes are the engine routes, in the order the API lists them.
func Routes() []Route {
	thumbnail := func(read func(Rules, map[string]string) (Thumbnail, error)) func(Rules, map[string]string) (Request, error) {
		return func(r Rules, q map[string]string) (Request, error) {
			t, err := read(r, q)
			return Request{Thumbnail: t}, err
		}
	}
	info := func(read func(map[string]string) (Info, error)) func(Rules, map[string]string) (Request, error) {
		return func(_ Rules, q map[string]string) (Request, error) {
			i, err := read(q)
			return Request{Thumbnail: Thumbnail{Src: i.Src, URL: i.URL}, Info: &i.Job}, err
		}
	}
	return []Route{
		{http.MethodGet, "/thumbnail", getNames, thumbnail(Rules.Get)},
		{http.MethodPost, "/thumbnail", uploadNames, thumbnail(Rules.Upload)},
		{http.MethodGet, "/info", infoGetNames, info(InfoGet)},
		{http.MethodPost, "/info", infoUploadNames, info(InfoUpload)},
	}
}

// RouteOf is the engine route of method and path.
func RouteOf(method, path string) (Route, bool) {
	for _, rt := range Routes() {
		if rt.Method == method && rt.Path == path {
			return rt, true
		}
	}
	return Route{}, false
}
