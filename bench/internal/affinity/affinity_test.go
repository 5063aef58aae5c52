package affinity

import (
	"flag"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
)

func TestParseList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		bad  bool
	}{
		{"", nil, false}, {"1", []int{1}, false}, {"0,2", []int{0, 2}, false}, {"0-2,5", []int{0, 1, 2, 5}, false},
		{"x", nil, true}, {"3-1", nil, true}, {"-1", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseList(tt.in)
		if (err != nil) != tt.bad || !slices.Equal(got, tt.want) {
			t.Errorf("ParseList(%q) = %v, %v", tt.in, got, err)
		}
	}
	if got := Format([]int{0, 3}); got != "0,3" {
		t.Errorf("Format = %q", got)
	}
}

func TestStartPinsChild(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	cmd := exec.Command("sleep", "5")
	if err := Start(cmd, []int{1}); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	got, err := Allowed(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if got != "1" {
		t.Fatalf("child allowed on %q, want 1", got)
	}
	self, _ := Allowed(os.Getpid())
	if self == "1" {
		t.Fatalf("the driver's own mask leaked: %q", self)
	}
}

// A Split reads both lists from its flags; an empty one pins nothing, and
// a malformed one is an error.
func TestSplit(t *testing.T) {
	var s Split
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	s.Register(fs, "the driver")
	if err := fs.Parse([]string{"-server-cpus", "0-1", "-client-cpus", ""}); err != nil {
		t.Fatal(err)
	}
	if err := s.Parsed(); err != nil || len(s.Server) != 2 || s.Server[1] != 1 || len(s.Client) != 0 {
		t.Fatalf("split %+v, err %v", s, err)
	}
	if err := s.PinDriver(); err != nil {
		t.Fatalf("no client CPUs, yet pinning failed: %v", err)
	}
	bad := Split{client: "x"}
	if err := bad.Parsed(); err == nil {
		t.Fatal("a malformed -client-cpus was taken")
	}
}
