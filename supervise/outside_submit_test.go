package supervise_test

// Outside scenarios for submit_result and the completion gate (§3.6
// "Completion gate", §9 submit_result; §15 behaviours 41, 55), written from
// the spec before reading the package's own tests.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// Behaviour 55: the first passing result is retained; a second passing one
// reports earlier-passing-result; a failing one reports accepted:false
// with the described expectation. The run's winner is the retained one.
func TestOutsideSubmitFirstPassingRetained(t *testing.T) {
	r := newOutsideRun(t)
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		bad, err := c.Submit(ctx, supervise.SubmitArgs{Result: "nothing yet"})
		if err != nil || bad.Accepted || bad.Expectation != passIfContains.Describe || bad.Verdict == nil || bad.Verdict.Passed {
			t.Errorf("failing submit = %+v, %v; want accepted:false, expectation %q and the failing verdict", bad, err, passIfContains.Describe)
		}
		first, err := c.Submit(ctx, supervise.SubmitArgs{Result: "PASS one"})
		if err != nil || !first.Accepted || first.OutRef == "" {
			t.Errorf("first passing submit = %+v, %v; want accepted with an outRef", first, err)
		}
		second, err := c.Submit(ctx, supervise.SubmitArgs{Result: "PASS two"})
		if codeOf(err) != "earlier-passing-result" || second.Accepted {
			t.Errorf("second passing submit = %+v, %v; want refused earlier-passing-result", second, err)
		}
		failingLater, err := c.Submit(ctx, supervise.SubmitArgs{Result: "worse"})
		if failingLater.Accepted {
			t.Errorf("failing submit after an accepted one = %+v, %v; want not accepted", failingLater, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if res.Status != supervise.StatusWinner || !res.Winner.Submitted || res.Winner.Text != "PASS one" {
		t.Fatalf("result = %s %s winner %+v, want the first passing submission", res.Status, res.Reason, res.Winner)
	}
}

// §3.6: "concurrent passing submits get earlier-passing-result" — of many
// passing submissions at once exactly one is accepted, and it is the winner.
func TestOutsideConcurrentSubmits(t *testing.T) {
	r := newOutsideRun(t)
	var accepted []string
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				text := fmt.Sprintf("PASS %d", i)
				got, err := c.Submit(ctx, supervise.SubmitArgs{Result: text})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && got.Accepted:
					accepted = append(accepted, text)
				case codeOf(err) == "earlier-passing-result":
				default:
					t.Errorf("concurrent submit %q = %+v, %v", text, got, err)
				}
			}()
		}
		wg.Wait()
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if len(accepted) != 1 {
		t.Fatalf("accepted %v, want exactly one", accepted)
	}
	if res.Winner == nil || res.Winner.Text != accepted[0] {
		t.Errorf("winner = %+v, want the accepted %q", res.Winner, accepted[0])
	}
}

// Behaviour 41: a check that throws (or panics) is not delivered, not a
// crash; the worker's spend is still committed. A submission whose check
// throws is not accepted.
func TestOutsideThrowingCheck(t *testing.T) {
	for _, mode := range []string{"error", "panic"} {
		t.Run(mode, func(t *testing.T) {
			r := newOutsideRun(t)
			r.opts.Deliverable = supervise.Deliverable{Describe: "never judged", Check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
				if mode == "panic" {
					panic("check exploded")
				}
				return kernel.Verdict{Passed: true}, errors.New("check exploded")
			}}
			var tokensAfter int64
			res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
				if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t"}); err != nil {
					return err
				}
				r.workers.waitStarted(t, "t")
				r.workers.finish("t", "PASS from worker")
				ev, err := awaitKind(ctx, c, supervise.EventSettled)
				if err != nil {
					return err
				}
				// Behaviour 41: a throwing check is valid:false — a verdict
				// not passed, saying why — not a missing verdict.
				if ev.Delivered == nil || *ev.Delivered || ev.Verdict == nil || ev.Verdict.Passed || !strings.Contains(ev.Verdict.Reason, "check") {
					t.Errorf("settlement with a throwing check = %+v (verdict %+v), want delivered false with a verdict not passed saying why", ev, ev.Verdict)
				}
				tokensAfter = committed(c, ledger.ChannelTokens)
				sub, err := c.Submit(ctx, supervise.SubmitArgs{Result: "PASS from manager"})
				if sub.Accepted || sub.Verdict == nil || sub.Verdict.Passed || sub.Verdict.Reason == "" {
					t.Errorf("submit with a throwing check = %+v, %v; want not accepted, its verdict not passed saying why", sub, err)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Supervise: %v", err)
			}
			if res.Status != supervise.StatusNoWinner {
				t.Errorf("result = %s (winner %+v), want no-winner", res.Status, res.Winner)
			}
			if tokensAfter != 100 {
				t.Errorf("tokens committed after the worker settled = %d, want its 100", tokensAfter)
			}
			if res.Spent.Tokens != 100 || !res.Spent.TokensKnown {
				t.Errorf("spentTotal tokens = %d (known %v), want 100 known", res.Spent.Tokens, res.Spent.TokensKnown)
			}
			if len(res.Tree) != 1 || res.Tree[0].Delivered || res.Tree[0].State != supervise.StateDone || res.Tree[0].CheckError == "" ||
				res.Tree[0].Verdict == nil || res.Tree[0].Verdict.Passed {
				t.Errorf("tree = %+v, want one done, undelivered worker with its check error", res.Tree)
			}
		})
	}
}

// A failing check: the child settles not delivered (valid:false) and its
// spend is committed (behaviour 41).
func TestOutsideFailingCheckSpendCommitted(t *testing.T) {
	r := newOutsideRun(t)
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t"}); err != nil {
			return err
		}
		r.workers.waitStarted(t, "t")
		r.workers.finish("t", "no good")
		ev, err := awaitKind(ctx, c, supervise.EventSettled)
		if err != nil {
			return err
		}
		if ev.Delivered == nil || *ev.Delivered || ev.Verdict == nil || ev.Verdict.Passed {
			t.Errorf("settlement = %+v, want not delivered with its failing verdict", ev)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if res.Status != supervise.StatusNoWinner || res.Spent.Tokens != 100 || res.Spent.Iterations != 1 {
		t.Errorf("result = %s, spent %+v; want no-winner with the worker's 100 tokens, 1 iteration", res.Status, res.Spent)
	}
}

// submit_result after stop: the run is settling. Whatever the answer, it
// must be true: a submission reported accepted is the run's winner, and
// one that is not accepted does not win.
func TestOutsideSubmitAfterStop(t *testing.T) {
	r := newOutsideRun(t)
	var sub supervise.SubmitResult
	var subErr error
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		if st, err := c.Stop(supervise.StopArgs{Reason: "enough"}); err != nil || !st.Stopped {
			t.Errorf("stop = %+v, %v", st, err)
		}
		sub, subErr = c.Submit(ctx, supervise.SubmitArgs{Result: "PASS late"})
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	t.Logf("submit after stop = %+v, %v; result %s %s", sub, subErr, res.Status, res.Reason)
	if sub.Accepted != (res.Status == supervise.StatusWinner) {
		t.Errorf("submit after stop accepted=%v but the run ended %s %s", sub.Accepted, res.Status, res.Reason)
	}
	if !sub.Accepted && subErr == nil {
		t.Errorf("submit after stop neither accepted nor refused: %+v", sub)
	}
}

// §3.6: "the default finalizer picks the highest-scoring child that
// passes"; a higher-scoring child that fails the check never wins; ties
// keep the earliest (the reference's pickBestDelivered keeps the earliest
// ledger entry).
func TestOutsideDefaultFinalizer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outputs []string // by spawn order; settled in settleOrder
		order   []int
		want    int
	}{
		{"highest passing", []string{"PASS score=0.3", "PASS score=0.9", "fail score=0.95"}, []int{0, 1, 2}, 1},
		{"highest passing, settled backwards", []string{"PASS score=0.3", "PASS score=0.9", "fail score=0.95"}, []int{2, 1, 0}, 1},
		{"tie, settled in spawn order", []string{"PASS a score=0.5", "PASS b score=0.5"}, []int{0, 1}, 0},
		// §3.6 "scope.next() delivers settlements strictly in recorded seq
		// order": the earliest entry of a tie is the lower seq, whatever
		// order the workers finished in.
		{"tie, settled backwards", []string{"PASS a score=0.5", "PASS b score=0.5"}, []int{1, 0}, 0},
		// §3.6 gate: "the inner score is preserved (else 1/0)": a passing
		// verdict without a score scores 1.
		{"a passing verdict without a score scores 1", []string{"PASS c score=0.9", "PASS unscored"}, []int{0, 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newOutsideRun(t)
			var ids []supervise.NodeID
			res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
				for i := range tc.outputs {
					sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: fmt.Sprint("t", i)})
					if err != nil {
						return err
					}
					ids = append(ids, sp.WorkerID)
					r.workers.waitStarted(t, fmt.Sprint("t", i))
				}
				for _, i := range tc.order {
					r.workers.finish(fmt.Sprint("t", i), tc.outputs[i])
					if _, err := awaitKind(ctx, c, supervise.EventSettled); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Supervise: %v", err)
			}
			if res.Status != supervise.StatusWinner || res.Winner.Node != ids[tc.want] || !strings.HasPrefix(res.Winner.Text, tc.outputs[tc.want]) {
				t.Errorf("winner = %+v, want %s (%q)", res.Winner, ids[tc.want], tc.outputs[tc.want])
			}
		})
	}
}
