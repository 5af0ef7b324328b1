package supervise_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// scoredDeliverable scores alpha 0.4 and slow 0.9 and fails beta; node
// records which task word each worker wrote.
func scoredDeliverable(nodes map[supervise.NodeID]string, mu *sync.Mutex) supervise.Deliverable {
	score := func(s float64) *float64 { return &s }
	return supervise.Deliverable{Describe: "scored", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
		for word, s := range map[string]*float64{"alpha": score(0.4), "slow": score(0.9), "beta": score(0.95)} {
			if strings.HasPrefix(out.Text, word) {
				mu.Lock()
				nodes[out.Node] = word
				mu.Unlock()
				return kernel.Verdict{Passed: word != "beta", Score: s}, nil
			}
		}
		return kernel.Verdict{Passed: false, Reason: "unknown output " + out.Text}, nil
	}}
}

// §3.6 finalizer: Options.Finalizer chooses the winner among the root's
// delivered children. A choice of no candidate — none, a child whose
// result failed the check, an unknown node — makes no winner: no-winner
// all-children-down with FinalizerNote saying why (the reference's
// residual arm: a finalizer with nothing deliverable). A finalizer that
// errors, panics or outlives FinalizerTimeout is the driver's failure:
// no-winner driver-failed with a *FinalizerError. Whatever it chooses,
// the spend is the same (the finalizer moves no budget).
func TestFinalizerChoosesTheWinner(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	byWord := func(in supervise.FinalizeInput, word string, nodes map[supervise.NodeID]string) supervise.NodeID {
		for _, ws := range in.Tree {
			if nodes[ws.ID] == word {
				return ws.ID
			}
		}
		return ""
	}
	tests := []struct {
		name     string
		choose   func(in supervise.FinalizeInput, nodes map[supervise.NodeID]string) (supervise.NodeID, error)
		timeout  time.Duration
		want     string // the winner's task word; "" for no winner
		reason   supervise.NoWinnerReason
		note     string // in FinalizerNote
		errMatch string // in Error.Message
	}{
		{name: "default: the highest score", want: "slow"},
		{name: "a lower-scoring candidate", want: "alpha",
			choose: func(in supervise.FinalizeInput, n map[supervise.NodeID]string) (supervise.NodeID, error) {
				return byWord(in, "alpha", n), nil
			}},
		{name: "no candidate", reason: supervise.ReasonAllChildrenDown, note: "chose no candidate",
			choose: func(supervise.FinalizeInput, map[supervise.NodeID]string) (supervise.NodeID, error) { return "", nil }},
		{name: "a child whose check failed", reason: supervise.ReasonAllChildrenDown, note: "which is no candidate",
			choose: func(in supervise.FinalizeInput, n map[supervise.NodeID]string) (supervise.NodeID, error) {
				return byWord(in, "beta", n), nil
			}},
		{name: "an unknown node", reason: supervise.ReasonAllChildrenDown, note: "run1:nobody, which is no candidate",
			choose: func(supervise.FinalizeInput, map[supervise.NodeID]string) (supervise.NodeID, error) {
				return "run1:nobody", nil
			}},
		{name: "an error", reason: supervise.ReasonDriverFailed, errMatch: "the finalizer failed: the ledger is closed",
			choose: func(supervise.FinalizeInput, map[supervise.NodeID]string) (supervise.NodeID, error) {
				return "", errors.New("the ledger is closed")
			}},
		{name: "a panic", reason: supervise.ReasonDriverFailed, errMatch: "the finalizer panicked: boom",
			choose: func(supervise.FinalizeInput, map[supervise.NodeID]string) (supervise.NodeID, error) { panic("boom") }},
		{name: "past its timeout", reason: supervise.ReasonDriverFailed, errMatch: "did not return within 200ms", timeout: 200 * time.Millisecond,
			choose: func(supervise.FinalizeInput, map[supervise.NodeID]string) (supervise.NodeID, error) {
				<-block // ignores its context
				return "", nil
			}},
	}
	var spent *supervise.SpentTotal
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
			o.Brain = pipeline("write alpha", "write slow", "write beta")
			var mu sync.Mutex
			nodes := map[supervise.NodeID]string{}
			o.Deliverable = scoredDeliverable(nodes, &mu)
			var seen []string
			entered := make(chan struct{})
			var enter sync.Once
			if tc.choose != nil {
				o.FinalizerTimeout = tc.timeout
				o.Finalizer = func(ctx context.Context, in supervise.FinalizeInput) (supervise.NodeID, error) {
					if _, ok := ctx.Deadline(); !ok {
						t.Error("the finalizer's context has no deadline")
					}
					mu.Lock()
					for _, c := range in.Candidates {
						seen = append(seen, nodes[c.Node])
					}
					mu.Unlock()
					enter.Do(func() { close(entered) })
					return tc.choose(in, nodes)
				}
			}
			manager, err := processManager()
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, err := supervise.Supervise(context.Background(), manager, "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if tc.timeout > 0 && time.Since(start) > 30*time.Second {
				t.Errorf("the run took %s: the finalizer's timeout did not bound it", time.Since(start))
			}
			if tc.choose != nil {
				// A finalizer past its timeout is abandoned, not waited
				// for: on a loaded machine it may record its candidates
				// only after the run returned.
				select {
				case <-entered:
				case <-time.After(30 * time.Second):
					t.Fatal("the finalizer was never called")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.choose != nil {
				if diff := cmp.Diff([]string{"alpha", "slow"}, seen); diff != "" {
					t.Errorf("candidates (-want +got): the delivered children in tree order\n%s", diff)
				}
			}
			if tc.want != "" {
				if res.Status != supervise.StatusWinner || res.Winner == nil || nodes[res.Winner.Node] != tc.want {
					t.Fatalf("%s %s %+v; want the %s child the winner", res.Status, res.Reason, res.Winner, tc.want)
				}
				if res.FinalizerNote != "" || res.Error != nil {
					t.Errorf("a winner with note %q, error %+v", res.FinalizerNote, res.Error)
				}
			} else {
				if res.Status != supervise.StatusNoWinner || res.Reason != tc.reason || res.Winner != nil {
					t.Fatalf("%s %s %+v; want no-winner %s", res.Status, res.Reason, res.Winner, tc.reason)
				}
				if tc.note != "" && !strings.Contains(res.FinalizerNote, tc.note) {
					t.Errorf("FinalizerNote %q, want it to say %q", res.FinalizerNote, tc.note)
				}
				if tc.errMatch != "" {
					if res.Error == nil || res.Error.Name != "FinalizerError" || !strings.Contains(res.Error.Message, tc.errMatch) {
						t.Errorf("error %+v, want a *supervise.FinalizerError saying %q", res.Error, tc.errMatch)
					}
				} else if res.Error != nil {
					t.Errorf("error %+v, want none", res.Error)
				}
			}
			// Conservation unaffected: every case ran the same workers.
			b := res.Breakdown
			if res.Spent.Tokens != b.DriverInference.Tokens+b.ChildWork.Tokens || res.Spent.MicroUSD != b.DriverInference.MicroUSD+b.ChildWork.MicroUSD ||
				res.Spent.Iterations != b.DriverInference.Iterations+b.ChildWork.Iterations {
				t.Errorf("spent %+v is not its breakdown's sum %+v", res.Spent, b)
			}
			if spent == nil {
				s := res.Spent
				spent = &s
			} else if diff := cmp.Diff(*spent, res.Spent); diff != "" {
				t.Errorf("the spend differs from the default finalizer's run (-default +this):\n%s", diff)
			}
		})
	}
}

// §3.6 finalizer with submit_result: the manager's submitted result is
// a candidate beside the delivered children (Submitted, the root's node),
// and the default finalizer takes it first; a finalizer may prefer a
// child.
func TestFinalizerSeesTheSubmittedResult(t *testing.T) {
	for _, preferChild := range []bool{false, true} {
		o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
		brain := pipeline("write alpha")
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			if _, err := brain.Drive(ctx, c, task); err != nil {
				return supervise.BrainReport{}, err
			}
			if r, err := c.Submit(ctx, supervise.SubmitArgs{Result: "alpha: DONE, as submitted"}); err != nil || !r.Accepted {
				return supervise.BrainReport{}, errors.Join(err, errors.New("the submission was not accepted"))
			}
			return supervise.BrainReport{}, nil
		})
		var got []supervise.Candidate
		if preferChild {
			o.Finalizer = func(_ context.Context, in supervise.FinalizeInput) (supervise.NodeID, error) {
				got = in.Candidates
				for _, c := range in.Candidates {
					if !c.Submitted {
						return c.Node, nil
					}
				}
				return "", nil
			}
		}
		manager, err := processManager()
		if err != nil {
			t.Fatal(err)
		}
		res, err := supervise.Supervise(context.Background(), manager, "t", o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Winner == nil {
			t.Fatalf("prefer child %v: %s %s, no winner", preferChild, res.Status, res.Reason)
		}
		if !preferChild {
			if !res.Winner.Submitted || res.Winner.Node != "run1" {
				t.Errorf("default finalizer: winner %+v, want the submitted result", res.Winner)
			}
			continue
		}
		if res.Winner.Submitted || res.Winner.Node != "run1:s1" || res.Winner.Text != "alpha: DONE" {
			t.Errorf("winner %+v, want the alpha child run1:s1", res.Winner)
		}
		if len(got) != 2 || !got[0].Submitted || got[0].Node != "run1" || got[0].Text != "alpha: DONE, as submitted" || got[1].Node != "run1:s1" {
			t.Errorf("candidates %+v, want the submitted result then run1:s1", got)
		}
	}
}

// §3.6 finalizer, Behaviour 46: the finalizer's choice is journaled with
// the finished record, so a resume of the ended run (ReturnEnded)
// returns the same result — the chosen winner, or the no-winner and its
// note — without calling a finalizer again, even one that would choose
// otherwise.
func TestFinalizerChoiceSurvivesResumeBehaviour46(t *testing.T) {
	tests := []struct {
		name   string
		choose func(in supervise.FinalizeInput) supervise.NodeID
		want   supervise.NodeID
	}{
		{"the last candidate", func(in supervise.FinalizeInput) supervise.NodeID { return in.Candidates[len(in.Candidates)-1].Node }, "run1:s2"},
		{"none", func(supervise.FinalizeInput) supervise.NodeID { return "" }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			manager, err := processManager()
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			o, err := processOptions(newCounting(t, workerProvider(t)), dir)
			if err != nil {
				t.Fatal(err)
			}
			o.Brain = pipeline("write alpha", "write slow")
			o.Finalizer = func(_ context.Context, in supervise.FinalizeInput) (supervise.NodeID, error) {
				return tc.choose(in), nil
			}
			first, err := supervise.Supervise(context.Background(), manager, "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && (first.Winner == nil || first.Winner.Node != tc.want) ||
				tc.want == "" && (first.Reason != supervise.ReasonAllChildrenDown || first.FinalizerNote == "") {
				t.Fatalf("first process: %s %s %+v %q, want winner %q", first.Status, first.Reason, first.Winner, first.FinalizerNote, tc.want)
			}

			o, err = processOptions(newCounting(t, workerProvider(t)), dir)
			if err != nil {
				t.Fatal(err)
			}
			o.ReturnEnded = true
			o.Brain = pipeline("write alpha", "write slow")
			calls := 0
			o.Finalizer = func(_ context.Context, in supervise.FinalizeInput) (supervise.NodeID, error) {
				calls++
				return in.Candidates[0].Node, nil
			}
			second, err := supervise.Supervise(context.Background(), manager, "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if calls != 0 {
				t.Errorf("the resume of the ended run called the finalizer %d times, want 0", calls)
			}
			if !second.Resumed {
				t.Error("the second process did not resume the run")
			}
			type view struct {
				Status                   supervise.Status
				Reason                   supervise.NoWinnerReason
				Note, Node, Text, OutRef string
				Spent                    supervise.SpentTotal
				MS                       int64
			}
			see := func(r supervise.SupervisedResult) view {
				v := view{Status: r.Status, Reason: r.Reason, Note: r.FinalizerNote, Spent: r.Spent, MS: r.MS}
				if r.Winner != nil {
					v.Node, v.Text, v.OutRef = string(r.Winner.Node), r.Winner.Text, r.Winner.OutRef
				}
				return v
			}
			if diff := cmp.Diff(see(first), see(second)); diff != "" {
				t.Errorf("the resumed result differs from the first process's (-first +resumed):\n%s", diff)
			}
		})
	}
}
