package results

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/thumbd/thumbd/bench/internal/load"
)

func TestCombine(t *testing.T) {
	rounds := []Round{
		{Outcome: load.Outcome{RPS: 300, P50: 3, ErrorCount: 1, Non2xx: map[string]int{"503": 1}, ServerPeakRSS: 10}},
		{Outcome: load.Outcome{RPS: 100, P50: 1, ServerPeakRSS: 30}},
		{Outcome: load.Outcome{RPS: 200, P50: 2, ErrorCount: 2, Errors: map[string]int{"reset": 2}, ServerPeakRSS: 20}},
		{Failed: "the server died during the step"},
	}
	st := Combine("health", "a", 10, rounds)
	if st.Skipped != "" || st.FailedRounds != 1 || st.RPS != 200 || st.P50 != 2 {
		t.Fatalf("median round not chosen: %+v", st)
	}
	if st.ErrorCount != 3 || st.Non2xx["503"] != 1 || st.Errors["reset"] != 2 || st.ServerPeakRSS != 30 {
		t.Fatalf("errors and peak not folded over rounds: %+v", st)
	}
	if !slices.Equal(st.RoundsRPS, []float64{300, 100, 200}) || len(st.Rounds) != 4 {
		t.Fatalf("rounds: %+v", st.RoundsRPS)
	}
	// The chosen round's own error maps are not modified.
	if rounds[2].Errors["reset"] != 2 || len(rounds[2].Non2xx) != 0 {
		t.Fatalf("input modified: %+v", rounds[2])
	}

	one := Combine("health", "a", 10, rounds[1:2])
	if one.RPS != 100 || one.RoundsRPS != nil || one.Rounds != nil {
		t.Fatalf("one round: %+v", one)
	}
	none := Combine("health", "a", 10, rounds[3:])
	if none.Skipped == "" {
		t.Fatal("all rounds failed, yet not skipped")
	}
}

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	in := &Results{Schema: Schema, Load: []LoadStep{Combine("json", "b", 100, []Round{{Outcome: load.Outcome{RPS: 5}}})}}
	if err := Write(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := Read(path)
	if err != nil || out.Schema != Schema || out.Load[0].RPS != 5 {
		t.Fatalf("%+v %v", out, err)
	}
}
