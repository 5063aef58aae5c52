package stats

import (
	"math"
	"math/rand/v2"
	"slices"
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

// bruteMedianCI is the bootstrap done the long way: resample, sort, take
// the median, b times.
func bruteMedianCI(xs []float64, b int, rng *rand.Rand) (float64, float64) {
	meds := make([]float64, b)
	re := make([]float64, len(xs))
	for i := range meds {
		for j := range re {
			re[j] = xs[rng.IntN(len(xs))]
		}
		slices.Sort(re)
		meds[i] = PercentileSorted(re, 50)
	}
	slices.Sort(meds)
	return PercentileSorted(meds, 2.5), PercentileSorted(meds, 97.5)
}

func TestMedianCIIsTheBootstrapsInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{3, 10, 11, 40, 301} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64((i * 7919) % n) // 0..n-1, shuffled: one unit between order statistics
		}
		lo, hi := MedianCI(xs)
		blo, bhi := bruteMedianCI(xs, 20000, rng)
		// The same distribution sampled twice: endpoints within one order
		// statistic (one unit here) of each other.
		if math.Abs(lo-blo) > 1 || math.Abs(hi-bhi) > 1 {
			t.Errorf("n=%d: [%v, %v], the long way [%v, %v]", n, lo, hi, blo, bhi)
		}
		med := Summarize(xs).Median
		if !(lo <= med && med <= hi) || lo < 0 || hi > float64(n-1) {
			t.Errorf("n=%d: median %v outside [%v, %v]", n, med, lo, hi)
		}
	}
}

func TestMedianCIEdges(t *testing.T) {
	if lo, hi := MedianCI(nil); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("empty: %v %v", lo, hi)
	}
	if lo, hi := MedianCI([]float64{7}); lo != 7 || hi != 7 {
		t.Errorf("one: %v %v", lo, hi)
	}
	xs := []float64{5, 1, 9, 3, 7, 2, 8}
	lo1, hi1 := MedianCI(xs)
	lo2, hi2 := MedianCI(xs)
	if lo1 != lo2 || hi1 != hi2 || xs[0] != 5 {
		t.Error("not deterministic, or xs changed")
	}
	// Narrower with more samples of the same spread.
	wide := make([]float64, 20)
	narrow := make([]float64, 2000)
	for i := range wide {
		wide[i] = float64(i % 10)
	}
	for i := range narrow {
		narrow[i] = float64(i % 10)
	}
	wlo, whi := MedianCI(wide)
	nlo, nhi := MedianCI(narrow)
	if !(nhi-nlo < whi-wlo) {
		t.Errorf("2000 samples [%v, %v] not narrower than 20 [%v, %v]", nlo, nhi, wlo, whi)
	}
	if s := Summarize(xs); s.MedianLo != lo1 || s.MedianHi != hi1 {
		t.Errorf("Summarize: %+v", s)
	}
}
