package origin

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/thumbd/thumbd/service/internal/source"
)

// Freshness reads an origin's caching headers (RFC 9111) as thumbd, a
// shared cache of thumbnails made from the origin's image, must obey them:
//
//   - no-store, private, or Vary: * : nothing is kept;
//   - s-maxage, else max-age, else Expires minus Date (less Age): reused
//     without asking until then;
//   - no-cache, or no explicit lifetime (no heuristic freshness): asked
//     again every time, which needs a validator (ETag or Last-Modified);
//     without one nothing is kept;
//   - once stale, with a validator: asked again with If-None-Match /
//     If-Modified-Since; a 304 keeps the thumbnail (Renewed).
//
// The answer's own Cache-Control carries the same rules on to the caches
// in front of thumbd (source.Freshness.CacheControl): no-store and private
// through, and no longer a lifetime than the origin's remaining one.
func Freshness(h http.Header, now time.Time) source.Freshness {
	f := source.Freshness{ETag: h.Get("ETag"), LastModified: h.Get("Last-Modified"), Origin: true}
	cc := directives(h.Values("Cache-Control"))
	if _, ok := cc["no-store"]; ok {
		return source.Freshness{Origin: true, NoStore: true}
	}
	if _, ok := cc["private"]; ok {
		// A browser may keep it for its max-age; thumbd, a shared cache,
		// keeps nothing.
		return source.Freshness{Origin: true, Private: true, AnswerUntil: now.Add(lifetime(h, cc, now, false))}
	}
	if strings.TrimSpace(h.Get("Vary")) == "*" {
		return source.Freshness{Origin: true}
	}
	f.Until = now.Add(lifetime(h, cc, now, true))
	if _, ok := cc["no-cache"]; ok {
		f.Until = now
	}
	f.AnswerUntil = f.Until
	if _, ok := cc["s-maxage"]; ok {
		// A browser behind the CDN keeps it no longer than max-age.
		if _, ok := cc["max-age"]; ok || h.Get("Expires") != "" {
			f.AnswerUntil = minTime(f.Until, now.Add(lifetime(h, cc, now, false)))
		}
	}
	f.Store = f.Until.After(now) || f.Revalidable()
	return f
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Renewed is prior after a 304 whose headers are h: its freshness from
// h, its validators kept where h gives none (RFC 9111 4.3.4).
func Renewed(prior source.Freshness, h http.Header, now time.Time) source.Freshness {
	if h.Get("ETag") == "" {
		h = h.Clone()
		h.Set("ETag", prior.ETag)
	}
	if h.Get("Last-Modified") == "" {
		h = h.Clone()
		h.Set("Last-Modified", prior.LastModified)
	}
	return Freshness(h, now)
}

// lifetime is the response's remaining freshness, 0 when it has none:
// for a shared cache (s-maxage first), or for a private one.
func lifetime(h http.Header, cc map[string]string, now time.Time, shared bool) time.Duration {
	age := time.Duration(0)
	if a, err := strconv.ParseInt(strings.TrimSpace(h.Get("Age")), 10, 64); err == nil && a > 0 {
		age = time.Duration(min(a, 1<<31)) * time.Second
	}
	names := []string{"max-age"}
	if shared {
		names = []string{"s-maxage", "max-age"}
	}
	for _, name := range names {
		if v, ok := cc[name]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return 0 // an invalid lifetime is none (RFC 9111 4.2.1)
			}
			return time.Duration(min(n, 1<<31))*time.Second - age
		}
	}
	if exp := h.Get("Expires"); exp != "" {
		expires, err := http.ParseTime(exp)
		if err != nil {
			return 0 // an invalid Expires is in the past
		}
		date, err := http.ParseTime(h.Get("Date"))
		if err != nil {
			date = now
		}
		return expires.Sub(date) - age
	}
	return 0
}

// directives parses Cache-Control into lower-case names and their values
// (unquoted).
func directives(values []string) map[string]string {
	d := map[string]string{}
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(part), "=")
			if name = strings.ToLower(strings.TrimSpace(name)); name != "" {
				d[name] = strings.Trim(strings.TrimSpace(value), `"`)
			}
		}
	}
	return d
}
