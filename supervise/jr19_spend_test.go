package supervise_test

import (
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// JR19 (c), §3.6 "spentTotal ... tokensKnown/usdKnown are always
// explicit here: true is a checked claim" and §6 (the pool's observe
// marks an invalid quantity unknown): a metered record of the manager's
// own inference with negative quantities — no model turn spends less
// than nothing — is unknown spend, never subtracted. Before, a resume
// replaying {"tokens":-100,"iterations":-1,"microUsd":-1} reported
// spentTotal 82 tokens, known, below the 182 its workers alone
// committed, and a driver breakdown of -100 tokens.
func TestJR19NegativeDriverSpendIsUnknownNeverSubtracted(t *testing.T) {
	for hname, mk := range tamperedJournals(t) {
		for _, kind := range []string{supervise.KindMetered, supervise.KindDriverTurnEnded} {
			t.Run(hname+"/"+kind, func(t *testing.T) {
				res, again, conserved, err := jr19Resume(t, mk(t), false, func(rows []string) []string {
					return append(withoutFinished(rows), `{"kind":"`+kind+`","key":"k","spent":{"tokens":-100,"iterations":-1,"microUsd":-1}}`)
				})
				if err != nil {
					t.Fatalf("the resume: %v", err)
				}
				if conserved != nil {
					t.Errorf("the resumed pool: %v", conserved)
				}
				d, all := res.Breakdown.DriverInference, res.Spent
				if d.Tokens < 0 || d.Iterations < 0 || d.MicroUSD < 0 {
					t.Errorf("driver inference %+v: a negative quantity was charged", d)
				}
				if d.TokensKnown || d.IterationsKnown || d.USDKnown {
					t.Errorf("driver inference %+v: a negative quantity is claimed known", d)
				}
				if all.Tokens < 182 || all.MicroUSD < 3001 || all.Iterations < 3 || all.TokensKnown || all.USDKnown || all.IterationsKnown {
					t.Errorf("spent total %+v: below what the workers committed (182 tokens, 3 iterations, 3001 micro-dollars) or claimed known", all)
				}
				if n := again.count("alpha") + again.count("beta") + again.count("slow"); n != 0 {
					t.Errorf("the resume ran %d workers again", n)
				}
			})
		}
	}
}
