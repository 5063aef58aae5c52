package cellarms

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummariseAgainstInProcess(t *testing.T) {
	rounds := map[[2]string][]raw{
		{InProcess, "small"}: {{Ms: []float64{10, 11, 9}, FirstMs: 20, FirstFaults: 500, Faults: []int64{20, 30, 25}}, {Ms: []float64{10, 12, 10}, FirstMs: 20, FirstFaults: 500, Faults: []int64{25}}},
		{Reused, "small"}:    {{Ms: []float64{10.5, 10.5, 11}, RSS: 30e6, StartRSS: 17e6}, {Ms: []float64{10.5}, RSS: 32e6, StartRSS: 17e6}},
		{Fresh, "small"}:     {{Ms: []float64{25, 26}}},
	}
	rows := summarise(rounds, []string{"small"})
	if len(rows) != 3 || rows[0].Arm != InProcess || rows[1].Arm != Reused || rows[2].Arm != Fresh {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].Ms != 10 || rows[0].FirstMs != 20 || rows[0].WarmFaults != 25 {
		t.Errorf("in process: %+v", rows[0])
	}
	if r := rows[1]; r.Ms != 10.5 || r.OverheadMs != 0.5 || r.Ratio != 1.05 || r.RSS != 31e6 || len(r.RoundsMs) != 2 {
		t.Errorf("reused: %+v", r)
	}
	var b bytes.Buffer
	Markdown(&b, Table{Flavour: "static", Samples: 3, Fresh: 2, Rounds: 2, Rows: rows})
	for _, want := range []string{"| small | native cell, reused | 10.50 | +0.50 ms (1.05x) |", "17.0 → 31.0 MB", "| small | in process | 10.00 | — |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	b.Reset()
	Markdown(&b, Table{Error: "no binary"})
	if !strings.Contains(b.String(), "✗ Not measured: no binary") {
		t.Error(b.String())
	}
}
