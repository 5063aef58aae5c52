package main

import (
	"io"
	"slices"
	"testing"
	"time"
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
	if !slices.Equal(c.routes, []string{"health", "json", "compute", "hash", "thumb-small", "thumb-large-jpeg", "thumb-photo12-webp"}) {
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
	if len(c.routes) != 4+3*3 || c.routes[4] != "thumb-small" || c.routes[12] != "thumb-photo12-webp" {
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
