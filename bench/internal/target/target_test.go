package target

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	s, err := Parse("node=process:node bench/twins/node/server.mjs")
	if err != nil || s.Kind != Process || !slices.Equal(s.Command, []string{"node", "bench/twins/node/server.mjs"}) {
		t.Fatalf("%+v %v", s, err)
	}
	if s, _ := Parse("scratch=container:thumbd:scratch"); s.Image != "thumbd:scratch" || s.String() != "docker run thumbd:scratch" {
		t.Fatalf("%+v", s)
	}
	if s := (Spec{Kind: Container, Image: "thumbd:slim", ImageID: "sha256:27726c544e10abcdef"}); s.String() != "docker run thumbd:slim (27726c544e10)" {
		t.Fatalf("%q", s.String())
	}
	if s, _ := Parse("prod=url:http://127.0.0.1:8080/"); s.URL != "http://127.0.0.1:8080" {
		t.Fatalf("%+v", s)
	}
	s, err = Parse("cells=process:THUMBD_ENGINE=cells X=1 bin/thumbd-static -port 9")
	if err != nil || !slices.Equal(s.Env, []string{"THUMBD_ENGINE=cells", "X=1"}) || !slices.Equal(s.Command, []string{"bin/thumbd-static", "-port", "9"}) ||
		s.String() != "THUMBD_ENGINE=cells X=1 bin/thumbd-static -port 9" {
		t.Fatalf("%+v %v %q", s, err, s.String())
	}
	if s, err := Parse("c=container:THUMBD_ENGINE=cells thumbd:scratch"); err != nil || s.Image != "thumbd:scratch" || s.String() != "docker run -e THUMBD_ENGINE=cells thumbd:scratch" {
		t.Fatalf("%+v %v %q", s, err, s.String())
	}
	for _, bad := range []string{"x", "=process:a", "a=process:", "a=vm:x", "a=process:A=1", "a=container:A=1 b c"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestProcessLifecycle(t *testing.T) {
	ctx := context.Background()
	inst, err := Start(ctx, Spec{Name: "sleeper", Kind: Process, Command: []string{"sh", "-c", `[ -n "$PORT" ] && exec sleep 30`}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := inst.PID(ctx)
	if err != nil || pid <= 0 || inst.Exited() != nil || inst.Spawned.IsZero() {
		t.Fatalf("pid %d, err %v, exited %v", pid, err, inst.Exited())
	}
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	if inst.Exited() == nil {
		t.Fatal("still running after Stop")
	}

	dead, err := Start(ctx, Spec{Name: "dead", Kind: Process, Command: []string{"false"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); dead.Exited() == nil && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if dead.Exited() == nil {
		t.Fatal("an exited process is reported alive")
	}
	dead.Stop()
}
