package toolbin

import (
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	env := func(m map[string]string) func(string) string {
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		name            string
		vars            map[string]string
		bin, skip, fail string
	}{
		{"set", map[string]string{"THUMBD_X": "/opt/x"}, "/opt/x", "", ""},
		{"set in CI", map[string]string{"THUMBD_X": "/opt/x", "CI": "true"}, "/opt/x", "", ""},
		{"unset: skip", map[string]string{}, "", "THUMBD_X is unset: THUMBD_X=$(scripts/build-x.sh) runs this test against a real X", ""},
		{"unset in CI: fail", map[string]string{"CI": "true"}, "", "", "CI: THUMBD_X must name the binary (scripts/test.sh sets it from scripts/build-x.sh)"},
	} {
		bin, skip, fail := Lookup(env(c.vars), "THUMBD_X", "scripts/build-x.sh", "a real X")
		if bin != c.bin || skip != c.skip || fail != c.fail {
			t.Errorf("%s: got (%q, %q, %q), want (%q, %q, %q)", c.name, bin, skip, fail, c.bin, c.skip, c.fail)
		}
	}
}

// ForTest in a test that has the variable returns it untouched.
func TestForTestReturnsTheBinary(t *testing.T) {
	t.Setenv("THUMBD_TOOLBIN_TEST", "/opt/tool")
	if got := ForTest(t, "THUMBD_TOOLBIN_TEST", "scripts/build-tool.sh", "a tool"); !strings.HasSuffix(got, "/opt/tool") {
		t.Fatalf("ForTest = %q", got)
	}
}

// ByHand skips, never fails, when its variable is unset, in CI too, and
// returns the binary when it is set.
func TestByHand(t *testing.T) {
	t.Setenv("CI", "true")
	t.Setenv("THUMBD_TOOLBIN_BYHAND", "")
	var skipped bool
	t.Run("unset", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		ByHand(t, "THUMBD_TOOLBIN_BYHAND", "not served here", "a reference")
		t.Error("ByHand returned with its variable unset")
	})
	if !skipped {
		t.Fatal("ByHand did not skip with its variable unset in CI")
	}
	t.Setenv("THUMBD_TOOLBIN_BYHAND", "/opt/ref")
	if got := ByHand(t, "THUMBD_TOOLBIN_BYHAND", "not served here", "a reference"); got != "/opt/ref" {
		t.Fatalf("ByHand = %q", got)
	}
}
