package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// BootstrapResamples is how many resamples MedianCI draws.
const BootstrapResamples = 2000

// MedianCI returns the bootstrap 95% confidence interval of the median of
// xs (percentile method, BootstrapResamples resamples), the same for the
// same samples; NaN, NaN when xs is empty. xs is not modified.
//
// A resample's median needs no resample: draw n indices with replacement
// from the sorted samples and the median is the sample at the m-th smallest
// index (m = (n+1)/2; for even n the mean of the m-th and (m+1)-th, m =
// n/2). The m-th smallest of n uniform indices is floor(n*U) for U the m-th
// smallest of n uniforms on [0,1), which is Beta(m, n-m+1); the next one is
// U + (1-U)*Beta(1, n-m). So each resample costs a few random numbers
// whatever n is, and a load step's hundred thousand latencies cost no more
// than a startup's ten runs.
func MedianCI(xs []float64) (lo, hi float64) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rng := rand.New(rand.NewPCG(uint64(n), 0x7468756d6264)) // deterministic: a report redrawn gives the same interval
	at := func(u float64) float64 { return s[min(n-1, int(u*float64(n)))] }
	meds := make([]float64, BootstrapResamples)
	for i := range meds {
		if n%2 == 1 {
			m := (n + 1) / 2
			meds[i] = at(beta(rng, float64(m), float64(n-m+1)))
			continue
		}
		m := n / 2
		u := beta(rng, float64(m), float64(n-m+1))
		next := u + (1-u)*(1-math.Pow(rng.Float64(), 1/float64(n-m))) // Beta(1, n-m) by inversion
		meds[i] = (at(u) + at(next)) / 2
	}
	slices.Sort(meds)
	return PercentileSorted(meds, 2.5), PercentileSorted(meds, 97.5)
}

// beta draws from Beta(a, b) as X/(X+Y) with X ~ Gamma(a), Y ~ Gamma(b).
func beta(rng *rand.Rand, a, b float64) float64 {
	x, y := gamma(rng, a), gamma(rng, b)
	return x / (x + y)
}

// gamma draws from Gamma(shape, 1) for shape >= 1 (Marsaglia and Tsang,
// "A simple method for generating gamma variables", 2000).
func gamma(rng *rand.Rand, shape float64) float64 {
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}
