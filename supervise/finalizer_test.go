package supervise_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// The default finalizer (§3.6, issue 13's completion gate): without a
// submitted result the winner is the highest-scoring delivered child; a
// verdict without a score counts as 1; a tie goes to the child settled
// first in the tree; a child whose check failed never wins, whatever
// its score.
func TestDefaultFinalizerPicksTheHighestScoringPassingChild(t *testing.T) {
	score := func(s float64) *float64 { return &s }
	tests := []struct {
		name   string
		scores map[string]*float64 // by task word; nil: passed without a score
		fail   string              // the task word whose check fails
		want   string              // the winner's task word
	}{
		{"highest score wins", map[string]*float64{"alpha": score(0.4), "slow": score(0.9), "beta": score(0.95)}, "beta", "slow"},
		{"unscored counts as 1", map[string]*float64{"alpha": score(0.99), "slow": nil, "beta": score(0.5)}, "", "slow"},
		{"a tie goes to the earlier child", map[string]*float64{"alpha": score(0.7), "slow": score(0.7), "beta": score(0.7)}, "", "alpha"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
			o.Brain = pipeline("write alpha", "write slow", "write beta")
			var mu sync.Mutex
			nodes := map[supervise.NodeID]string{}
			o.Deliverable = supervise.Deliverable{Describe: "scored", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
				for word, s := range tc.scores {
					if strings.HasPrefix(out.Text, word) {
						mu.Lock()
						nodes[out.Node] = word
						mu.Unlock()
						return kernel.Verdict{Passed: word != tc.fail, Score: s}, nil
					}
				}
				return kernel.Verdict{Passed: false, Reason: "unknown output " + out.Text}, nil
			}}
			manager, err := processManager()
			if err != nil {
				t.Fatal(err)
			}
			res, err := supervise.Supervise(context.Background(), manager, "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != supervise.StatusWinner || res.Winner == nil {
				t.Fatalf("%s %s, no winner; want the %s child", res.Status, res.Reason, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if got := nodes[res.Winner.Node]; got != tc.want {
				t.Errorf("the winner is the %s child (%+v); want the %s child", got, res.Winner, tc.want)
			}
		})
	}
}
