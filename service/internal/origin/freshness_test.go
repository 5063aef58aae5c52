package origin

import (
	"net/http"
	"testing"
	"time"
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
