package main

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/bench/internal/results"
)

func TestParseConfigQuick(t *testing.T) {
	c, err := parseConfig([]string{"-root", "/r", "-quick", "-runs", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.runs != 2 || c.duration != time.Second || !slices.Equal(c.concurrency, []int{10}) || c.out != "/r/bench/results/tmp/quick" {
		t.Fatalf("%+v", c)
	}
	if len(c.targets) != 6 || c.targets[5].Name != "node" || c.targets[1].Name != "thumbd-static-cells" || c.baseline != "node" {
		t.Fatalf("default suite %+v", c.targets)
	}
	if !slices.Equal(c.serverCPUs, []int{1}) || !slices.Equal(c.clientCPUs, []int{0}) {
		t.Fatalf("pinning %v %v", c.serverCPUs, c.clientCPUs)
	}
	// Quick: each route kind, source and format once, not the matrix.
	if !slices.Equal(c.routes, []string{"health", "json", "compute", "hash", "thumb-small", "thumb-large-jpeg", "thumb-photo12-webp", "thumb-small-avif", "thumb-animated-webp", "info-photo12"}) {
		t.Fatalf("quick routes %v", c.routes)
	}
	if c, _ := parseConfig([]string{"-root", "/r", "-quick", "-routes", "thumb-large-webp"}, io.Discard); !slices.Equal(c.routes, []string{"thumb-large-webp"}) {
		t.Fatalf("-routes with -quick: %v", c.routes)
	}
}

func TestTheDefaultSuiteLoadsEverySourceInEveryFormat(t *testing.T) {
	c, err := parseConfig([]string{"-root", "/r"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.routes) != 4+3*4+1+3 || c.routes[4] != "thumb-small" || c.routes[14] != "thumb-photo12-webp" || c.routes[15] != "thumb-photo12-avif" ||
		c.routes[16] != "thumb-animated-webp" || c.routes[17] != "info-photo12" || c.routes[18] != "info-photo12-header" || c.routes[19] != "info-photo12-exif" {
		t.Fatalf("routes %v", c.routes)
	}
	r := routeFor("thumb-photo12-webp", map[string]int{"photo12": 3_724_857})
	if r.Method != "POST" || r.Source != "photo12" || r.Format != "webp" || r.Path != "/thumbnail?w=256&h=256&fit=cover&format=webp&q=80" ||
		r.BodyBytes != 3_724_857 || r.Label != "POST /thumbnail, photo12: 3724.9 KB JPEG 4032x3024 to 256x256 cover WEBP q80" {
		t.Fatalf("%+v", r)
	}
	if r := routeFor("thumb-small", nil); r.Path != "/thumbnail?w=256&h=256&fit=cover&format=png" || r.Format != "png" {
		t.Fatalf("%+v", r)
	}
	if r := routeFor("thumb-large-avif", map[string]int{"large": 259_632}); r.Path != "/thumbnail?w=256&h=256&fit=cover&format=avif&q=58" || r.Format != "avif" ||
		r.Label != "POST /thumbnail, large: 259.6 KB JPEG 1920x1280 to 256x256 cover AVIF q58" {
		t.Fatalf("%+v", r)
	}
	r = routeFor("thumb-animated-webp", map[string]int{"animated": 1_478_483})
	if r.Path != "/thumbnail?w=256&h=256&fit=cover&format=webp&q=80&animated=true" || r.Source != "animated" || r.Format != "webp" || !r.Animated ||
		r.BodyBytes != 1_478_483 || r.Label != "POST /thumbnail, animated: 1478.5 KB GIF 320x240, 50 frames to 256x256 cover animated WEBP q80" {
		t.Fatalf("%+v", r)
	}
	if r := routeFor("thumb-animated", nil); r.Source != "" {
		t.Fatalf("the animation as a still PNG is no route: %+v", r)
	}
}

// The /info routes POST the 12 MP photo, with and without the ThumbHash;
// their checks are /info's, not a thumbnail's.
func TestInfoRoutes(t *testing.T) {
	r := routeFor("info-photo12", map[string]int{"photo12": 3_724_857})
	h := routeFor("info-photo12-header", map[string]int{"photo12": 3_724_857})
	if r.Path != "/info" || !r.Info || r.HeaderOnly || r.Source != "photo12" || r.BodyBytes != 3_724_857 || !strings.Contains(r.Label, "sharp has none") {
		t.Fatalf("%+v", r)
	}
	if h.Path != "/info?thumbhash=false" || !h.Info || !h.HeaderOnly {
		t.Fatalf("%+v", h)
	}
	e := routeFor("info-photo12-exif", map[string]int{"photo12-exif": 3_730_000})
	if e.Path != "/info" || !e.Info || e.HeaderOnly || e.Source != "photo12-exif" || e.BodyBytes != 3_730_000 ||
		e.Label != "POST /info, photo12-exif: 3730.0 KB JPEG with an EXIF thumbnail, 4032x3024, with the ThumbHash (thumbd; the Node twin answers without: sharp has none)" {
		t.Fatalf("%+v", e)
	}
	srcs := map[string][]byte{"photo12": []byte("jpeg")}
	if ts := thumbChecks([]results.Route{r, h}, srcs); len(ts) != 0 {
		t.Errorf("thumbnail checks of /info routes: %+v", ts)
	}
	is := infoChecks([]results.Route{routeFor("thumb-small", nil), r, h}, srcs)
	if len(is) != 2 || is[0].Width != 4032 || is[0].Height != 3024 || is[0].Format != "jpeg" || string(is[1].Body) != "jpeg" || is[1].Path != h.Path {
		t.Fatalf("%+v", is)
	}
}

// The animated route's check gets the GIF and knows it is animated.
func TestThumbChecksCarryTheAnimation(t *testing.T) {
	routes := []results.Route{routeFor("health", nil), routeFor("thumb-small-avif", nil), routeFor("thumb-animated-webp", nil)}
	checks := thumbChecks(routes, map[string][]byte{"small": []byte("jpeg"), "animated": []byte("gif")})
	if len(checks) != 2 || checks[0].Format != "avif" || checks[0].Animated || string(checks[0].Body) != "jpeg" ||
		!checks[1].Animated || string(checks[1].Body) != "gif" || checks[1].Path != routes[2].Path {
		t.Fatalf("%+v", checks)
	}
}

func TestParseConfigTargetsAndErrors(t *testing.T) {
	c, err := parseConfig([]string{"-root", "/r", "-pin=false", "-target", "a=process:bin/x -v", "-target", "b=url:http://127.0.0.1:9/"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.targets) != 2 || !slices.Equal(c.targets[0].Command, []string{"bin/x", "-v"}) || c.targets[1].URL != "http://127.0.0.1:9" {
		t.Fatalf("%+v", c.targets)
	}
	if c.serverCPUs != nil || c.clientCPUs != nil {
		t.Fatal("-pin=false still pins")
	}
	for _, bad := range [][]string{
		{"-routes", "nope"}, {"-concurrency", "10,x"}, {"-target", "a=vm:x"}, {"-target", "novalue"}, {"-runs", "0"}, {"extra"},
	} {
		if _, err := parseConfig(append([]string{"-root", "/r"}, bad...), io.Discard); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
