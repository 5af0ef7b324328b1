package search

import (
	"math"
	"testing"
)

// The proposal's objectives obey the rule the proposal checker applies
// (candidate: "measured delta must equal candidate minus baseline", and
// the interval contains it). With latencies of hundreds of milliseconds
// the mean of the paired deltas misses the difference of the means by
// more than the checker's tolerance: TestImproveSearchProposal failed so
// under load, when measured latencies grew.
func TestPairedEstimateDeltaIsCandidateMinusBaseline(t *testing.T) {
	base := []float64{307.749, 313.771, 93.71}
	cand := []float64{307.751, 313.776, 93.7}
	var deltas []float64
	for i := range base {
		deltas = append(deltas, cand[i]-base[i])
	}
	tolerance := func(x float64) float64 { return 0x1p-52 * math.Max(1, math.Abs(x)) * 8 }
	if naive, want := mean(deltas), mean(cand)-mean(base); math.Abs(naive-want) <= tolerance(want) {
		t.Fatalf("the inputs no longer show the rounding: mean of deltas %v, difference of means %v", naive, want)
	}
	for _, li := range []Interval{{Level: 0.95, Resamples: 1000, Seed: 7}, {Level: 0.95, Resamples: 0}} {
		b, c, d, ci := pairedEstimate(base, cand, li)
		if d != c-b {
			t.Errorf("resamples %d: delta %v, want candidate − baseline = %v", li.Resamples, d, c-b)
		}
		if li.Resamples > 0 && (ci.Lower > ci.Upper || d < ci.Lower || d > ci.Upper) {
			t.Errorf("resamples %d: interval [%v, %v] does not contain delta %v", li.Resamples, ci.Lower, ci.Upper, d)
		}
	}
}
