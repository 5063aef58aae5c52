package apierr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCodesAndStatuses(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Codes() {
		if seen[c] || c.Status() < 400 || c.Status() > 599 || c == ClientGone {
			t.Errorf("code %s: status %d, seen %v", c, c.Status(), seen[c])
		}
		seen[c] = true
	}
	if QueueFull.Status() != 503 || BadParameter.Status() != 400 || ClientGone.Status() != StatusClientGone || Code("nope").Status() != 500 {
		t.Error("statuses")
	}
}

func TestFrom(t *testing.T) {
	e := New(TooManyPixels, "The source is %dx%d.", 2, 3)
	wrapped := fmt.Errorf("stage: %w", e)
	if From(wrapped) != e || e.Status() != 422 || e.Error() != "too_many_pixels: The source is 2x3." {
		t.Errorf("%v", From(wrapped))
	}
	cause := errors.New("disk on fire")
	got := From(cause)
	if got.Code != Internal || !errors.Is(got, cause) || got.Message == cause.Error() {
		t.Errorf("a foreign error: %+v (its text must not be sent)", got)
	}
}

func TestSentence(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "",
		"bad thing":               "Bad thing.",
		"  two\nlines  ":          "Two; lines.",
		"already.":                "Already.",
		"spaces   inside\t\there": "Spaces inside here.",
	} {
		if got := Sentence(in); got != want {
			t.Errorf("Sentence(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every code says when it is sent: docs/api.md's error table is made from
// these sentences, so a code without one would be an undocumented code.
func TestEveryCodeSaysWhen(t *testing.T) {
	for _, e := range codes {
		if strings.TrimSpace(e.when) == "" || strings.Contains(e.when, "|") || strings.Contains(e.when, "\n") {
			t.Errorf("%s: when %q: want one Markdown table cell", e.code, e.when)
		}
	}
	if Code("no_such_code").When() != "" {
		t.Error("an unknown code says when it is sent")
	}
}
