package stats

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want Summary
	}{
		{"empty", nil, Summary{}},
		{"one", []float64{4}, Summary{N: 1, Mean: 4, Median: 4, Min: 4, Max: 4}},
		{"even count, unsorted", []float64{4, 1, 3, 2}, Summary{N: 4, Mean: 2.5, Median: 2.5, Min: 1, Max: 4, Stdev: math.Sqrt(5.0 / 3)}},
		{"odd count", []float64{2, 4, 4, 4, 5, 5, 7, 9, 1}, Summary{N: 9, Mean: 41.0 / 9, Median: 4, Min: 1, Max: 9, Stdev: 2.4037008503093262}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.in)
			if got.N != tt.want.N || !near(got.Mean, tt.want.Mean) || !near(got.Median, tt.want.Median) ||
				!near(got.Min, tt.want.Min) || !near(got.Max, tt.want.Max) || !near(got.Stdev, tt.want.Stdev) {
				t.Fatalf("Summarize(%v) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestSummarizeDoesNotModifyInput(t *testing.T) {
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Fatalf("input modified: %v", in)
	}
}

func TestPercentileSorted(t *testing.T) {
	s := []float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	tests := []struct{ p, want float64 }{
		{0, 10}, {50, 55}, {90, 91}, {99, 99.1}, {100, 100}, {-5, 10}, {150, 100},
	}
	for _, tt := range tests {
		if got := PercentileSorted(s, tt.p); !near(got, tt.want) {
			t.Errorf("p%v = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := PercentileSorted(nil, 50); !math.IsNaN(got) {
		t.Errorf("empty: %v, want NaN", got)
	}
	if got := PercentileSorted([]float64{7}, 99); got != 7 {
		t.Errorf("single: %v, want 7", got)
	}
}

func TestPercentiles(t *testing.T) {
	got := Percentiles([]float64{5, 1, 4, 2, 3}, 50, 100)
	if got[0] != 3 || got[1] != 5 {
		t.Fatalf("got %v", got)
	}
}

func TestRatio(t *testing.T) {
	tests := []struct{ a, b, want float64 }{
		{10, 4, 2.5}, {0, 4, 0}, {4, 0, 0}, {math.NaN(), 1, 0}, {math.Inf(1), 1, 0}, {-1, 2, 0},
	}
	for _, tt := range tests {
		if got := Ratio(tt.a, tt.b); !near(got, tt.want) {
			t.Errorf("Ratio(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
