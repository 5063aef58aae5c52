package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/thumbd/thumbd/bench/internal/contract"
	"github.com/thumbd/thumbd/bench/internal/formats"
	"github.com/thumbd/thumbd/bench/internal/results"
	"github.com/thumbd/thumbd/bench/internal/sources"
)

// thumbFormats are the output formats every photo's thumbnail route is
// loaded in: every format thumbd writes (its format table, through
// bench/internal/formats).
func thumbFormats() []string { return formats.Names() }

// thumbQuality is the q the routes ask for: the format's default in
// thumbd's table (the twin's too), none for PNG.
func thumbQuality(format string) int {
	q, _ := formats.Quality(format)
	return q
}

// animatedSource is the suite's animated source. Its one route asks for
// every frame (animated=true), as an animated WebP: the only format that
// animates.
const animatedSource = "animated"

// thumbRouteID names the thumbnail route of a source and a format:
// thumb-small is the small source to PNG, thumb-photo12-webp the
// 12-megapixel photo to WebP, thumb-animated-webp the animation.
func thumbRouteID(source, format string) string {
	if format == "png" {
		return "thumb-" + source
	}
	return "thumb-" + source + "-" + format
}

// allRoutes are the default suite's routes: the four small ones, every
// photo (sources.DefaultNames) in every format, the animation, then /info.
func allRoutes() []string {
	ids := []string{"health", "json", "compute", "hash"}
	for _, s := range sources.DefaultNames() {
		for _, f := range thumbFormats() {
			ids = append(ids, thumbRouteID(s, f))
		}
	}
	return append(append(ids, thumbRouteID(animatedSource, "webp")), infoRoutes()...)
}

// infoSource is the /info routes' source: the 12 MP photo, where reading
// the header alone matters most; infoEXIFSource is the same photo as a
// camera writes it, with an EXIF thumbnail, which thumbd's ThumbHash
// reads instead of decoding the photo.
const infoSource, infoEXIFSource = "photo12", "photo12-exif"

// infoRoutes are POST /info of infoSource: thumbd's default, with the
// ThumbHash (the Node twin has none: sharp cannot make one, so it answers
// without, and the route's label says so), and thumbhash=false, the same
// work on both; then the default on infoEXIFSource.
func infoRoutes() []string {
	return []string{"info-" + infoSource, "info-" + infoSource + "-header", "info-" + infoEXIFSource}
}

// quickRoutes keep -quick short: every route kind, each source and each
// format once, not the whole matrix.
func quickRoutes() []string {
	return []string{"health", "json", "compute", "hash", "thumb-small", "thumb-large-jpeg", "thumb-photo12-webp", "thumb-small-avif", "thumb-animated-webp", "info-" + infoSource}
}

// thumbPath is the query of a 256x256 cover in format; animated asks for
// every frame of an animated source.
func thumbPath(format string, animated bool) string {
	p := "/thumbnail?w=256&h=256&fit=cover&format=" + format
	if q := thumbQuality(format); q > 0 {
		p += fmt.Sprintf("&q=%d", q)
	}
	if animated {
		p += "&animated=true"
	}
	return p
}

// routeFor describes route id; thumbnail routes carry their source and
// format, and sizes gives each source's bytes.
func routeFor(id string, sizes map[string]int) results.Route {
	switch id {
	case "health":
		return results.Route{ID: id, Method: "GET", Path: "/health", Label: "/health"}
	case "json":
		return results.Route{ID: id, Method: "GET", Path: "/json", Label: "/json"}
	case "compute":
		return results.Route{ID: id, Method: "GET", Path: "/compute", Label: "/compute (n=100000)"}
	case "hash":
		return results.Route{ID: id, Method: "GET", Path: "/hash", Label: "/hash (1 KiB default payload)"}
	}
	label := func(s, f string, animated bool) string {
		r, _ := sources.Lookup(s)
		in := fmt.Sprintf("JPEG %dx%d", r.Width, r.Height)
		out := strings.ToUpper(f)
		if animated {
			in = fmt.Sprintf("GIF %dx%d, %d frames", r.Width, r.Height, r.Frames)
			out = "animated " + out
		}
		if q := thumbQuality(f); q > 0 {
			out += fmt.Sprintf(" q%d", q)
		}
		return fmt.Sprintf("POST /thumbnail, %s: %.1f KB %s to 256x256 cover %s", s, float64(sizes[s])/1000, in, out)
	}
	if ids := infoRoutes(); slices.Contains(ids, id) {
		header, src, what := id == ids[1], infoSource, "JPEG"
		if id == ids[2] {
			src, what = infoEXIFSource, "JPEG with an EXIF thumbnail,"
		}
		r, _ := sources.Lookup(src)
		label := fmt.Sprintf("POST /info, %s: %.1f KB %s %dx%d, with the ThumbHash (thumbd; the Node twin answers without: sharp has none)", src, float64(sizes[src])/1000, what, r.Width, r.Height)
		path := "/info"
		if header {
			label = fmt.Sprintf("POST /info?thumbhash=false, %s: %.1f KB JPEG %dx%d, the header alone", src, float64(sizes[src])/1000, r.Width, r.Height)
			path += "?thumbhash=false"
		}
		return results.Route{ID: id, Method: "POST", Path: path, BodyBytes: sizes[src], Source: src, Info: true, HeaderOnly: header, Label: label}
	}
	if id == thumbRouteID(animatedSource, "webp") {
		return results.Route{ID: id, Method: "POST", Path: thumbPath("webp", true), BodyBytes: sizes[animatedSource], Source: animatedSource,
			Format: "webp", Animated: true, Label: label(animatedSource, "webp", true)}
	}
	for _, s := range sources.DefaultNames() {
		for _, f := range thumbFormats() {
			if id == thumbRouteID(s, f) {
				return results.Route{ID: id, Method: "POST", Path: thumbPath(f, false), BodyBytes: sizes[s], Source: s, Format: f, Label: label(s, f, false)}
			}
		}
	}
	return results.Route{ID: id}
}

// readSources reads the sources the routes need, and small (the first
// thumbnail of every startup), making any that is missing.
func readSources(dir string, routes []string) (map[string][]byte, error) {
	names := []string{"small"}
	for _, id := range routes {
		if r := routeFor(id, nil); r.Source != "" && !contains(names, r.Source) {
			names = append(names, r.Source)
		}
	}
	paths, err := sources.Ensure(dir, names...)
	if err != nil {
		return nil, fmt.Errorf("making sources: %w", err)
	}
	srcs := map[string][]byte{}
	for i, p := range paths {
		if srcs[names[i]], err = os.ReadFile(p); err != nil {
			return nil, err
		}
	}
	return srcs, nil
}

// thumbChecks are the contract checks of the thumbnail routes.
func thumbChecks(routes []results.Route, srcs map[string][]byte) []contract.Thumb {
	var ts []contract.Thumb
	for _, r := range routes {
		if r.Source != "" && !r.Info {
			ts = append(ts, contract.Thumb{Route: r.ID, Path: r.Path, Format: r.Format, Animated: r.Animated, Body: srcs[r.Source]})
		}
	}
	return ts
}

// infoChecks are the contract checks of the /info routes: the source's
// format and size.
func infoChecks(routes []results.Route, srcs map[string][]byte) []contract.Info {
	var is []contract.Info
	for _, r := range routes {
		if r.Info {
			rec, _ := sources.Lookup(r.Source)
			is = append(is, contract.Info{Route: r.ID, Path: r.Path, Body: srcs[r.Source], Format: "jpeg", Width: rec.Width, Height: rec.Height})
		}
	}
	return is
}

// sourcesDir is where the bench keeps its sources unless told otherwise.
func sourcesDir(root string) string { return filepath.Join(root, "bench", "results", "tmp", "sources") }
