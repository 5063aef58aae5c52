package origin

import (
	"net/http"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/source"
)

func TestFreshness(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	date := now.Format(http.TimeFormat)
	for _, c := range []struct {
		name   string
		header []string
		store  bool
		fresh  time.Duration // Until - now
	}{
		{"max-age", []string{"Cache-Control", "public, max-age=60"}, true, time.Minute},
		{"max-age less Age", []string{"Cache-Control", "max-age=60", "Age", "20"}, true, 40 * time.Second},
		{"s-maxage over max-age", []string{"Cache-Control", "max-age=60, s-maxage=10"}, true, 10 * time.Second},
		{"directives are case-insensitive, values unquoted", []string{"Cache-Control", `Max-Age="30"`}, true, 30 * time.Second},
		{"Expires minus Date", []string{"Date", date, "Expires", now.Add(time.Hour).Format(http.TimeFormat)}, true, time.Hour},
		{"max-age over Expires", []string{"Cache-Control", "max-age=5", "Expires", now.Add(time.Hour).Format(http.TimeFormat)}, true, 5 * time.Second},
		{"invalid Expires is past", []string{"Expires", "0"}, false, 0},
		{"invalid max-age is none", []string{"Cache-Control", "max-age=soon"}, false, 0},
		{"invalid max-age, with a validator: revalidate", []string{"Cache-Control", "max-age=soon", "ETag", `"a"`}, true, 0},
		{"no-store", []string{"Cache-Control", "max-age=60, no-store"}, false, 0},
		{"private", []string{"Cache-Control", "private, max-age=60", "ETag", `"a"`}, false, 0},
		{"no-cache with Last-Modified", []string{"Cache-Control", "no-cache", "Last-Modified", date}, true, 0},
		{"nothing", nil, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i+1 < len(c.header); i += 2 {
				h.Set(c.header[i], c.header[i+1])
			}
			f := Freshness(h, now)
			if f.Store != c.store || f.Store && f.Until.Sub(now) != c.fresh {
				t.Errorf("store %t for %s, want %t for %s", f.Store, f.Until.Sub(now), c.store, c.fresh)
			}
		})
	}
	// A 304 without validators keeps the stored ones.
	prior := Freshness(http.Header{"Etag": {`"a"`}, "Cache-Control": {"max-age=1"}}, now)
	renewed := Renewed(prior, http.Header{"Cache-Control": {"max-age=120"}}, now)
	if renewed.ETag != `"a"` || renewed.Until.Sub(now) != 2*time.Minute || !renewed.Store {
		t.Errorf("renewed %+v", renewed)
	}
}

// The answer's Cache-Control carries the origin's rules on to the caches
// in front of thumbd: no-store and private through, and a lifetime no
// longer than the origin's remaining one (nor than a day, thumbd's own);
// later, what is left of it.
func TestAnswerCacheControl(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	date := now.Format(http.TimeFormat)
	for _, c := range []struct {
		name       string
		header     []string
		now, later string // at now, and 30 s later
	}{
		{"max-age", []string{"Cache-Control", "public, max-age=600"}, "public, max-age=600", "public, max-age=570"},
		{"max-age=5", []string{"Cache-Control", "max-age=5"}, "public, max-age=5", "public, no-cache"},
		{"max-age less Age", []string{"Cache-Control", "max-age=600", "Age", "100"}, "public, max-age=500", "public, max-age=470"},
		{"no longer than a day", []string{"Cache-Control", "max-age=31536000"}, "public, max-age=86400", "public, max-age=86400"},
		{"the shorter of max-age and s-maxage", []string{"Cache-Control", "max-age=60, s-maxage=600"}, "public, max-age=60", "public, max-age=30"},
		{"Expires minus Date", []string{"Date", date, "Expires", now.Add(time.Hour).Format(http.TimeFormat)}, "public, max-age=3600", "public, max-age=3570"},
		{"no-store", []string{"Cache-Control", "no-store, max-age=600"}, "no-store", "no-store"},
		{"private", []string{"Cache-Control", "private, max-age=600", "ETag", `"a"`}, "private, max-age=600", "private, max-age=570"},
		{"private without a lifetime", []string{"Cache-Control", "private"}, "private, no-cache", "private, no-cache"},
		{"no-cache", []string{"Cache-Control", "no-cache, max-age=600", "ETag", `"a"`}, "public, no-cache", "public, no-cache"},
		{"no lifetime", []string{"ETag", `"a"`}, "public, no-cache", "public, no-cache"},
		{"nothing", nil, "public, no-cache", "public, no-cache"},
		{"Vary: *", []string{"Cache-Control", "max-age=600", "Vary", "*"}, "public, no-cache", "public, no-cache"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i+1 < len(c.header); i += 2 {
				h.Set(c.header[i], c.header[i+1])
			}
			f := Freshness(h, now)
			if got := f.CacheControl(now, source.TTL{}); got != c.now {
				t.Errorf("at once: %q, want %q", got, c.now)
			}
			if got := f.CacheControl(now.Add(30*time.Second), source.TTL{}); got != c.later {
				t.Errorf("30 s later: %q, want %q", got, c.later)
			}
		})
	}
	// Files and uploads: thumbd's own rule, whatever the time.
	for _, f := range []source.Freshness{{}, {Store: true, Until: time.Unix(1<<62, 0)}} {
		if got := f.CacheControl(now, source.TTL{}); got != "public, max-age=86400" {
			t.Errorf("%+v: %q", f, got)
		}
	}
}
