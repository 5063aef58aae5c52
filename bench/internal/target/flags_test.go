package target

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	parse := func(args ...string) (*Flags, error) {
		var f Flags
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.Register(fs, "an image")
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		return &f, f.Parsed(fs)
	}
	for _, bad := range [][]string{nil, {"-image", "thumbd:scratch", "--", "bin/thumbd"}} {
		if _, err := parse(bad...); err == nil || !strings.Contains(err.Error(), "want -image or a command") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	f, err := parse("-env", "A=1", "-env", "B=2", "--", "bin/thumbd", "-x")
	if err != nil {
		t.Fatal(err)
	}
	s := f.Spec("host", []string{"--read-only"}, []string{"PORT0=1"})
	if !slices.Equal(s.Command, []string{"bin/thumbd", "-x"}) || s.Image != "" || !slices.Equal(s.Env, []string{"PORT0=1", "A=1", "B=2"}) || f.Name() != "bin/thumbd -x" {
		t.Errorf("a command: %+v %q", s, f.Name())
	}
	f, err = parse("-image", "thumbd:slim", "-docker", "/bin/dk")
	if err != nil {
		t.Fatal(err)
	}
	s = f.Spec("host", []string{"--read-only"}, nil)
	if s.Image != "thumbd:slim" || s.Docker != "/bin/dk" || s.Network != "host" || !slices.Equal(s.DockerArgs, []string{"--read-only"}) || f.Name() != "thumbd:slim" {
		t.Errorf("an image: %+v %q", s, f.Name())
	}
}
