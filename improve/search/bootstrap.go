package search

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Interval is a paired-bootstrap percentile interval of a mean delta.
type Interval struct {
	Level     float64 `json:"level"`
	Lower     float64 `json:"lower"`
	Upper     float64 `json:"upper"`
	Resamples int     `json:"resamples"`
	Seed      uint64  `json:"seed"`
}

// PairedBootstrap returns the percentile interval at level of the mean of
// deltas (candidate − baseline per case), from resamples resamples drawn
// with a PCG generator seeded by seed: the same inputs give the same
// interval on every machine. With no deltas the interval is [0, 0].
// Its cost is O(resamples × len(deltas)).
func PairedBootstrap(deltas []float64, resamples int, level float64, seed uint64) Interval {
	out := Interval{Level: level, Resamples: resamples, Seed: seed}
	n := len(deltas)
	if n == 0 || resamples <= 0 {
		return out
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	means := make([]float64, resamples)
	for r := range means {
		sum := 0.0
		for range n {
			sum += deltas[rng.IntN(n)]
		}
		means[r] = sum / float64(n)
	}
	slices.Sort(means)
	alpha := (1 - level) / 2
	out.Lower = quantile(means, alpha)
	out.Upper = quantile(means, 1-alpha)
	// The interval must contain the observed mean (a degenerate sample
	// may otherwise leave it a rounding error outside).
	m := mean(deltas)
	out.Lower, out.Upper = math.Min(out.Lower, m), math.Max(out.Upper, m)
	return out
}

// quantile is the linear-interpolation quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[hi]-sorted[lo])
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
