package supervise

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
)

// A question asked and a decision delivered are state changes already
// made when their coordination record is refused: a run whose
// coordination log stops taking appends (its journal closed under it)
// still delivers its result, but returns it with a *JournalLossError
// naming the lost question and decision, and its finished record
// carries the loss (§3.6 coordination-log.jsonl; the journal's
// durability contract).
func TestLostQuestionAndDecisionAreJournalLoss(t *testing.T) {
	writer, manager := writerAndManager(t)
	n := func(v int64) *int64 { return &v }
	asking := ExecutorFunc(func(ctx context.Context, w Work) (WorkResult, error) {
		spent := ledger.Spend{Tokens: n(5), Iterations: n(1), MicroUSD: n(5)}
		d, err := w.Ask(ctx, AskArgs{Level: "worker", Question: "which colour?", Reason: "the task does not say", Urgency: UrgencyBlocksStep})
		if err != nil {
			return WorkResult{Spent: spent}, err
		}
		return WorkResult{Text: d.Answer + " DONE", Spent: spent}, nil
	})
	dir := t.TempDir()
	o := Options{
		Budget:    ledger.Budget{Tokens: n(10_000), Iterations: n(10), MicroUSD: n(1_000_000)},
		PerWorker: ledger.Budget{Tokens: n(1_000), Iterations: n(1), MicroUSD: n(100_000)},
		Profiles:  map[string]*profile.Profile{"writer": writer}, Executor: asking, RunID: "run1", RunDir: dir,
		Deliverable: Deliverable{Check: func(context.Context, Output) (kernel.Verdict, error) { return kernel.Verdict{Passed: true}, nil }},
		Brain: BrainFunc(func(ctx context.Context, c *Coordinator, _ string) (BrainReport, error) {
			// The coordination log stops taking appends.
			if err := c.log.coord.Close(); err != nil {
				return BrainReport{}, err
			}
			if _, err := c.Spawn(ctx, SpawnArgs{Profile: "writer", Task: "paint"}); err != nil {
				return BrainReport{}, err
			}
			if _, err := c.Await(ctx, AwaitArgs{TimeoutMS: 60_000, Kinds: []string{EventQuestion}}); err != nil {
				return BrainReport{}, err
			}
			if _, err := c.AnswerQuestion(ctx, AnswerArgs{QuestionID: "q1", Answer: "blue"}); err != nil {
				return BrainReport{}, err
			}
			_, err := c.Await(ctx, AwaitArgs{TimeoutMS: 60_000, Kinds: []string{EventSettled}})
			return BrainReport{}, err
		}),
	}
	res, err := Supervise(context.Background(), manager, "t", o)
	loss, ok := errors.AsType[*JournalLossError](err)
	if !ok || !errors.Is(err, ErrJournalIncomplete) {
		t.Fatalf("err %v, want a *JournalLossError", err)
	}
	want := []LostRecord{{Kind: CoordQuestion, Node: "run1:s1"}, {Kind: CoordDecision, Node: "run1:s1"}}
	if diff := cmp.Diff(want, loss.Lost); diff != "" || loss.Count != 2 {
		t.Errorf("lost %d (-want +got):\n%s", loss.Count, diff)
	}
	if res.Status != StatusWinner || res.Winner.Text != "blue DONE" {
		t.Errorf("the run's result changed: %+v", res)
	}

	// The finished record carries the loss: a resume to the ended run
	// reports it again.
	o.Resume, o.ReturnEnded = true, true
	_, err = Supervise(context.Background(), manager, "t", o)
	if again, ok := errors.AsType[*JournalLossError](err); !ok || again.Count != 2 {
		t.Errorf("resumed: %v, want the same loss", err)
	}
}
