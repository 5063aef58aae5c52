package thumb

import (
	"strings"
	"testing"
)

func TestKnownCrash(t *testing.T) {
	for v, racy := range map[string]bool{
		"8.13.3":  false,
		"8.14.0":  false, // idle workers did not leave yet
		"8.14.1":  true,  // Debian bookworm
		"8.14.5":  true,
		"8.15.0":  true,
		"8.15.3":  true,
		"8.15.4":  false, // the fix
		"8.16.1":  false, // the images
		"9.0.0":   false,
		"":        false,
		"8.14":    false,
		"8.x.1":   false,
		"garbage": false,
	} {
		got := KnownCrash(v)
		if (got != "") != racy {
			t.Errorf("KnownCrash(%q) = %q, want a warning: %v", v, got, racy)
		}
		if racy && !strings.Contains(got, v) {
			t.Errorf("KnownCrash(%q) = %q: does not name the version", v, got)
		}
	}
}
