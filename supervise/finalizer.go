package supervise

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
)

// DefaultFinalizerTimeout bounds a Finalizer when Options.FinalizerTimeout
// is 0.
const DefaultFinalizerTimeout = 30 * time.Second

// Candidate is one result a run's Finalizer may choose as its winner: a
// delivered child of the root (its result passed Options.Deliverable) or
// the manager's own submitted result (Submitted, Node the root).
type Candidate struct {
	Node      NodeID
	Label     string
	Profile   string
	Submitted bool
	Text      string
	Output    canonjson.Value
	OutRef    string
	Verdict   *kernel.Verdict
}

// Score is the candidate's rank as the default finalizer orders it: its
// verdict's score, 1 for a verdict that passed without one.
func (c Candidate) Score() float64 {
	if c.Verdict != nil && c.Verdict.Score != nil {
		return *c.Verdict.Score
	}
	return 1
}

// FinalizeInput is what a Finalizer chooses from. Candidates are the
// only results it may choose, in the tree's order (the submitted result,
// when there is one, first); Tree is every node of the run as the result
// reports it — metadata (the children that did not deliver, why), never
// a winner.
type FinalizeInput struct {
	RunID      string
	Candidates []Candidate
	Tree       []WorkerSummary
}

// Finalizer chooses a run's winner among its candidates (§3.6 finalizer):
// it returns the chosen candidate's Node, or "" for none. A choice that
// names no candidate (an unknown node, or a child that did not deliver:
// its result failed the run's check) makes no winner, as "" does: the
// run ends no-winner all-children-down, unless a lifecycle cause
// (budget-exhausted) or the brain's own failure (driver-failed) explains
// it, and SupervisedResult.FinalizerNote says why. A finalizer that
// returns an error, panics or outlives its deadline
// (Options.FinalizerTimeout) fails the run as a failed brain does:
// no-winner driver-failed with a *FinalizerError, outranked by the same
// lifecycle causes. A finalizer runs once, at the run's end, only when
// the run has a candidate and no abort, cancellation or breaker trip
// ended it: a run its deadline or its stop rule (Options.StopRule)
// ended still finalizes, and a worker that delivered before wins it. It
// must not call the run's Coordinator.
type Finalizer func(ctx context.Context, in FinalizeInput) (NodeID, error)

// DefaultFinalizer is the finalizer a run without Options.Finalizer
// uses: the submitted result when there is one, else the
// highest-scoring candidate (Candidate.Score), a tie going to the one
// earlier in the tree.
func DefaultFinalizer(_ context.Context, in FinalizeInput) (NodeID, error) {
	var best *Candidate
	for i := range in.Candidates {
		c := &in.Candidates[i]
		if c.Submitted {
			return c.Node, nil
		}
		if best == nil || c.Score() > best.Score() {
			best = c
		}
	}
	if best == nil {
		return "", nil
	}
	return best.Node, nil
}

// FinalizerError is a Finalizer that failed: it returned Err, panicked
// (Panic holds what it panicked with) or did not return within Timeout.
type FinalizerError struct {
	Err     error
	Panic   any
	Timeout time.Duration
}

func (e *FinalizerError) Error() string {
	switch {
	case e.Panic != nil:
		return fmt.Sprintf("supervise: the finalizer panicked: %v", e.Panic)
	case e.Timeout > 0:
		return fmt.Sprintf("supervise: the finalizer did not return within %s", e.Timeout)
	}
	return "supervise: the finalizer failed: " + e.Err.Error()
}

// Unwrap returns the error the finalizer returned (nil for a panic or a
// timeout).
func (e *FinalizerError) Unwrap() error { return e.Err }

// candidatesLocked returns the run's candidates: the root manager's
// submitted result, then its delivered children in tree order. c.mu is
// held.
func (c *Coordinator) candidatesLocked(tree []WorkerSummary) []Candidate {
	root := c.scope.Root()
	// A nested manager's children are its candidates, not the root's.
	candidate := func(ws *WorkerSummary) bool {
		return ws.Delivered && ws.State == StateDone && ws.Parent == root && c.workers[ws.ID] != nil
	}
	n := 0
	if c.submitted != nil {
		n++
	}
	for i := range tree {
		if candidate(&tree[i]) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]Candidate, 0, n) // sized: a large tree's candidates are not grown
	if s := c.submitted; s != nil {
		out = append(out, Candidate{Node: s.Node, Submitted: true, Text: s.Text, Output: s.Output, OutRef: s.OutRef, Verdict: s.Verdict})
	}
	for i := range tree {
		if ws := &tree[i]; candidate(ws) {
			w := c.workers[ws.ID]
			out = append(out, Candidate{Node: ws.ID, Label: ws.Label, Profile: ws.Profile, Text: w.text, Output: w.output, OutRef: w.outRef, Verdict: w.verdict})
		}
	}
	return out
}

// finalize runs the finalizer over cands and returns the winner it
// chose; nil with a note when it chose none or a node that is no
// candidate, nil with a *FinalizerError when it failed.
func (c *Coordinator) finalize(ctx context.Context, cands []Candidate, tree []WorkerSummary) (*Winner, string, error) {
	if len(cands) == 0 {
		return nil, "", nil
	}
	f, timeout := c.finalizer, c.finalizerTimeout
	if f == nil {
		f = DefaultFinalizer
	}
	if timeout <= 0 {
		timeout = DefaultFinalizerTimeout
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	in := FinalizeInput{RunID: c.runID, Candidates: cands, Tree: tree}
	if c.finalizer != nil {
		// A caller's finalizer gets copies: what it does to them changes
		// neither the winner's lookup below nor the result's tree. The
		// default only reads (a large tree is not copied for it).
		in.Candidates, in.Tree = slices.Clone(cands), slices.Clone(tree)
	}
	got, answered := callHook(fctx, func(ctx context.Context) (NodeID, error) { return f(ctx, in) })
	switch {
	case !answered:
		// A finalizer that ignores its context is not waited for.
		got.err = &FinalizerError{Timeout: timeout}
	case got.panic != nil:
		got.err = &FinalizerError{Panic: got.panic}
	case got.err != nil:
		got.err = &FinalizerError{Err: got.err}
	}
	if got.err != nil {
		c.logger.Error("supervise: the finalizer failed", "err", got.err)
		return nil, "", got.err
	}
	if got.v == "" {
		return nil, "the finalizer chose no candidate", nil
	}
	for _, cd := range cands {
		if cd.Node == got.v {
			return &Winner{Node: cd.Node, Text: cd.Text, Output: cd.Output, OutRef: cd.OutRef, Verdict: cd.Verdict, Submitted: cd.Submitted}, "", nil
		}
	}
	note := fmt.Sprintf("the finalizer chose %s, which is no candidate (not a delivered child of the root, nor the submitted result)", got.v)
	c.logger.Warn("supervise: "+note, "node", got.v)
	return nil, note, nil
}
