package apierr

import (
	"errors"
	"fmt"
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
