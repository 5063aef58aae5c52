// Package stats summarises samples: mean, median, extremes, standard
// deviation and percentiles, with the conventions the report states.
package stats

import (
	"math"
	"slices"
)

// Summary describes a set of samples in the samples' own unit.
type Summary struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// Stdev is the sample standard deviation (n-1 in the denominator); 0 for n < 2.
	Stdev float64 `json:"stdev"`
	// MedianLo and MedianHi bound the median's bootstrap 95% confidence
	// interval (MedianCI).
	MedianLo float64 `json:"median_ci95_lo,omitempty"`
	MedianHi float64 `json:"median_ci95_hi,omitempty"`
}

// Summarize returns the summary of xs; the zero Summary when xs is empty.
// xs is not modified.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	mean := sum / float64(len(s))
	var sq float64
	for _, x := range s {
		sq += (x - mean) * (x - mean)
	}
	stdev := 0.0
	if len(s) > 1 {
		stdev = math.Sqrt(sq / float64(len(s)-1))
	}
	lo, hi := MedianCI(s)
	return Summary{
		MedianLo: lo,
		MedianHi: hi,
		N:        len(s),
		Mean:     mean,
		Median:   PercentileSorted(s, 50),
		Min:      s[0],
		Max:      s[len(s)-1],
		Stdev:    stdev,
	}
}

// PercentileSorted returns the p-th percentile (0..100) of sorted samples by
// linear interpolation between closest ranks (the definition of NumPy's
// default and of Excel's PERCENTILE.INC); NaN when sorted is empty.
func PercentileSorted(sorted []float64, p float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return math.NaN()
	case n == 1 || p <= 0:
		return sorted[0]
	case p >= 100:
		return sorted[n-1]
	}
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	frac := rank - float64(lo)
	if lo+1 >= n {
		return sorted[n-1]
	}
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

// Percentiles sorts xs in place and returns the asked percentiles.
func Percentiles(xs []float64, ps ...float64) []float64 {
	slices.Sort(xs)
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = PercentileSorted(xs, p)
	}
	return out
}

// Ratio returns a/b, or 0 when either is not a positive finite number, so a
// missing figure never shows up as a huge or infinite ratio.
func Ratio(a, b float64) float64 {
	if !(a > 0) || !(b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return 0
	}
	return a / b
}
