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
	if len(c.targets) != 5 || c.targets[4].Name != "node" || c.baseline != "node" {
		t.Fatalf("default suite %+v", c.targets)
	}
	if !slices.Equal(c.serverCPUs, []int{1}) || !slices.Equal(c.clientCPUs, []int{0}) {
		t.Fatalf("pinning %v %v", c.serverCPUs, c.clientCPUs)
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
