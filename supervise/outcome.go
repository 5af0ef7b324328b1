package supervise

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
)

// MaxJournaledText is the most of a winner's text, and of the brain's
// final text, the finished record keeps itself; a longer winner text is
// read back from its result blob only.
const MaxJournaledText = 64 << 10

// ErrOutcomeNotJournaled matches the error Supervise returns beside a
// result whose finished record could not be made durable (a store
// journal whose lease was lost matches store.ErrFenced too). The result
// is what this process saw, but nothing records it: a resumed run
// drives its brain again, and with a lost lease another process answers
// for the run.
var ErrOutcomeNotJournaled = errors.New("supervise: the run's outcome could not be journaled")

// OutcomeRecord is a run's result as its finished record journals it,
// so a run resumed after its end returns the same result without
// driving its brain again (§15 behaviour 46: a finished run is replayed,
// not re-run). Spent, DriverInference and ChildWork carry explicit
// known flags; an unknown channel is never a zero.
type OutcomeRecord struct {
	Status          Status              `json:"status"`
	Reason          NoWinnerReason      `json:"reason,omitzero"`
	Winner          *WinnerRecord       `json:"winner,omitzero"`
	Error           *ErrorRecord        `json:"error,omitzero"`
	Cancellation    *CancellationRecord `json:"cancellation,omitzero"`
	Spent           TotalRecord         `json:"spent"`
	DriverInference TotalRecord         `json:"driverInference"`
	ChildWork       TotalRecord         `json:"childWork"`
	MS              int64               `json:"ms"`
	DownCount       int                 `json:"downCount,omitzero"`
	SpendGaps       []GapRecord         `json:"spendGaps,omitzero"`
	// TeardownUnconfirmed: entries; a journal written before entries
	// had fields holds bare node ids, read as entries of only an ID.
	TeardownUnconfirmed []UnconfirmedTeardown `json:"teardownUnconfirmed,omitzero"`
	// BrainText is the brain's final text, when at most
	// MaxJournaledText bytes (BrainTextClipped says it was longer).
	BrainText        string `json:"brainText,omitzero"`
	BrainTextClipped bool   `json:"brainTextClipped,omitzero"`
	// LostCount counts the records of the run's state changes its
	// journal could not take; Lost names the first MaxLostNamed (see
	// JournalLossError).
	LostCount int          `json:"lostCount,omitzero"`
	Lost      []LostRecord `json:"lost,omitzero"`
	// Breaker is the restart-intensity breaker's trip, when it ended
	// the run.
	Breaker *BreakerTrip `json:"breaker,omitzero"`
	// ProgressStop is the stop rule's end of the run, when it ended it.
	ProgressStop *ProgressStop `json:"progressStop,omitzero"`
	// FinalizerNote is SupervisedResult.FinalizerNote.
	FinalizerNote string `json:"finalizerNote,omitzero"`
}

// WinnerRecord is the winner arm as journaled: the result itself is the
// blob OutRef names; Text is kept too when at most MaxJournaledText
// bytes (a run without a run dir keeps no blobs).
type WinnerRecord struct {
	Node      NodeID          `json:"node"`
	OutRef    string          `json:"outRef"`
	Verdict   *kernel.Verdict `json:"verdict,omitzero"`
	Submitted bool            `json:"submitted,omitzero"`
	Text      *string         `json:"text,omitzero"`
}

// ErrorRecord is a driver failure as journaled.
type ErrorRecord struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// CancellationRecord is a cancellation as journaled.
type CancellationRecord struct {
	Source      string `json:"source"`
	Reason      string `json:"reason,omitzero"`
	OperationID string `json:"operationId,omitzero"`
}

// TotalRecord is a SpentTotal as journaled.
type TotalRecord struct {
	Tokens          int64            `json:"tokens"`
	Iterations      int64            `json:"iterations"`
	MicroUSD        int64            `json:"microUsd"`
	Resources       map[string]int64 `json:"resources,omitzero"`
	TokensKnown     bool             `json:"tokensKnown"`
	IterationsKnown bool             `json:"iterationsKnown"`
	USDKnown        bool             `json:"usdKnown"`
}

// GapRecord is a SpendGap as journaled.
type GapRecord struct {
	ID       NodeID   `json:"id"`
	Label    string   `json:"label,omitzero"`
	Kind     GapKind  `json:"kind"`
	Channels []string `json:"channels"`
}

func totalRecord(t SpentTotal) TotalRecord {
	r := TotalRecord{Tokens: t.Tokens, Iterations: t.Iterations, MicroUSD: t.MicroUSD, TokensKnown: t.TokensKnown,
		IterationsKnown: t.IterationsKnown, USDKnown: t.USDKnown}
	if len(t.Resources) > 0 {
		r.Resources = maps.Clone(t.Resources)
	}
	return r
}

func (r TotalRecord) total() SpentTotal {
	res := map[string]int64{}
	maps.Copy(res, r.Resources)
	return SpentTotal{Tokens: r.Tokens, Iterations: r.Iterations, MicroUSD: r.MicroUSD, Resources: res,
		TokensKnown: r.TokensKnown, IterationsKnown: r.IterationsKnown, USDKnown: r.USDKnown}
}

// outcomeRecord is res as its finished record journals it.
func outcomeRecord(res SupervisedResult) *OutcomeRecord {
	o := &OutcomeRecord{Status: res.Status, Reason: res.Reason, Spent: totalRecord(res.Spent),
		DriverInference: totalRecord(res.Breakdown.DriverInference), ChildWork: totalRecord(res.Breakdown.ChildWork),
		MS: res.MS, DownCount: res.DownCount, TeardownUnconfirmed: res.TeardownUnconfirmed, Breaker: res.Breaker,
		ProgressStop: res.ProgressStop, FinalizerNote: clip(res.FinalizerNote, MaxReasonBytes)}
	if w := res.Winner; w != nil {
		o.Winner = &WinnerRecord{Node: w.Node, OutRef: w.OutRef, Verdict: w.Verdict, Submitted: w.Submitted}
		if len(w.Text) <= MaxJournaledText {
			o.Winner.Text = &w.Text
		}
	}
	if e := res.Error; e != nil {
		o.Error = &ErrorRecord{Name: clip(e.Name, MaxReasonBytes), Message: clip(e.Message, MaxReasonBytes)}
	}
	if cn := res.Cancellation; cn != nil {
		o.Cancellation = &CancellationRecord{Source: cn.Source, Reason: clip(cn.Reason, MaxReasonBytes), OperationID: cn.OperationID}
	}
	for _, g := range res.SpendGaps {
		o.SpendGaps = append(o.SpendGaps, GapRecord(g))
	}
	if len(res.BrainText) <= MaxJournaledText {
		o.BrainText = res.BrainText
	} else {
		o.BrainTextClipped = true
	}
	return o
}

// journaledOutcome returns the outcome of the last finished record of
// prior that carries one, unless that outcome is an interruption (see
// OutcomeRecord.Interrupted): such a run has not ended and is driven on.
// An outcome that is not a result (see OutcomeRecord.Check) is an
// error: a journal is never trusted to say what a run returned.
func journaledOutcome(prior []Record) (*OutcomeRecord, error) {
	for i := len(prior) - 1; i >= 0; i-- {
		if prior[i].Kind == KindFinished && prior[i].Result != nil {
			if err := prior[i].Result.Check(); err != nil {
				return nil, fmt.Errorf("spawn journal record %d: %w", i+1, err)
			}
			if prior[i].Result.Interrupted() {
				return nil, nil
			}
			return prior[i].Result, nil
		}
	}
	return nil, nil
}

// winnerJournaled reports whether the winner of o, the outcome a
// finished record of prior holds, is a winner the journal delivered: a
// child of the root settled done and delivered under the winner's
// outRef, or the root's submitted result under it — the candidates a
// finalizer chooses among. An outcome that says the journal lost the
// winner's settlement (o.Lost names it, or the losses are more than it
// names) needs only the winner's spawn: the run returned it and said
// what its journal could not take. Any other winner (a node never
// spawned, a worker whose result was not delivered, another result than
// the one committed) is an *OutcomeError: a journal is never trusted to
// say what a run returned. An outcome without a winner passes.
func winnerJournaled(prior []Record, root NodeID, o *OutcomeRecord) error {
	w := o.Winner
	if w == nil {
		return nil
	}
	child := false
	if p, ok := w.Node.Parent(); ok && p == root {
		child = true
	}
	lost := o.LostCount > len(o.Lost) || slices.Contains(o.Lost, LostRecord{Kind: KindSettled, Node: w.Node})
	for _, r := range prior {
		switch {
		case w.Submitted:
			if r.Kind == KindSubmitted && (r.Node == "" || r.Node == root) && w.Node == root && r.OutRef == w.OutRef {
				return nil
			}
		case !child || r.Node != w.Node:
		case r.Kind == KindSettled && r.State == StateDone && r.Delivered && r.OutRef == w.OutRef:
			return nil
		case r.Kind == KindSpawned && lost:
			return nil
		}
	}
	what := "no child of the run settled done and delivered with this result"
	if w.Submitted {
		what = "the run submitted no such result"
	}
	return &OutcomeError{Path: "/result/winner", Reason: fmt.Sprintf("winner %s (%s): %s", clip(string(w.Node), 128), clip(w.OutRef, 80), what)}
}

// OutcomeError is a finished record whose outcome is not a result a run
// can return. Path is the JSON pointer of the offending member within
// the record.
type OutcomeError struct {
	Path   string
	Reason string
}

func (e *OutcomeError) Error() string {
	return fmt.Sprintf("supervise: the finished record's outcome at %s: %s", e.Path, e.Reason)
}

// Check reports whether o is a result Supervise could have returned:
// a winner with its winner; or a no-winner with one of the reasons —
// driver-failed with its error, cancelled with its cancellation; and a
// loss count that covers the lost records it names. Otherwise it
// returns an *OutcomeError.
func (o *OutcomeRecord) Check() error {
	bad := func(path, reason string) error { return &OutcomeError{Path: "/result" + path, Reason: reason} }
	switch o.Status {
	case StatusWinner:
		if o.Winner == nil || o.Winner.Node == "" {
			return bad("/winner", "a winner outcome names no winner")
		}
		if o.Reason != "" {
			return bad("/reason", "a winner outcome has a no-winner reason")
		}
	case StatusNoWinner:
		if o.Winner != nil {
			return bad("/winner", "a no-winner outcome names a winner")
		}
		switch o.Reason {
		case ReasonAllChildrenDown, ReasonBudgetExhausted, ReasonAborted:
		case ReasonDriverFailed:
			if o.Error == nil {
				return bad("/error", "a driver-failed outcome has no error")
			}
		case ReasonCancelled:
			if o.Cancellation == nil {
				return bad("/cancellation", "a cancelled outcome says not who cancelled")
			}
		default:
			return bad("/reason", fmt.Sprintf("%q is not a no-winner reason", o.Reason))
		}
	default:
		return bad("/status", fmt.Sprintf("%q is neither winner nor no-winner", o.Status))
	}
	switch {
	case o.LostCount < 0:
		return bad("/lostCount", "a negative count")
	case len(o.Lost) > o.LostCount || len(o.Lost) > MaxLostNamed:
		return bad("/lost", fmt.Sprintf("%d lost records named for a count of %d (at most %d are named)", len(o.Lost), o.LostCount, MaxLostNamed))
	}
	return o.checkSpent(bad)
}

// checkSpent reports, through bad, an outcome whose spend Supervise
// could not have returned: a negative quantity, or a spentTotal that is
// not its breakdown's sum (driver inference plus child work, each
// channel known only when both parts are).
func (o *OutcomeRecord) checkSpent(bad func(path, reason string) error) error {
	for _, t := range []struct {
		path string
		r    TotalRecord
	}{{"/spent", o.Spent}, {"/driverInference", o.DriverInference}, {"/childWork", o.ChildWork}} {
		if t.r.Tokens < 0 || t.r.Iterations < 0 || t.r.MicroUSD < 0 {
			return bad(t.path, "a negative quantity")
		}
	}
	d, c, s := o.DriverInference, o.ChildWork, o.Spent
	for _, ch := range []struct {
		member            string
		sum, d, c         int64
		known, dKnown, cK bool
	}{
		{"tokens", s.Tokens, d.Tokens, c.Tokens, s.TokensKnown, d.TokensKnown, c.TokensKnown},
		{"iterations", s.Iterations, d.Iterations, c.Iterations, s.IterationsKnown, d.IterationsKnown, c.IterationsKnown},
		{"microUsd", s.MicroUSD, d.MicroUSD, c.MicroUSD, s.USDKnown, d.USDKnown, c.USDKnown},
	} {
		if ch.d > math.MaxInt64-ch.c || ch.sum != ch.d+ch.c || ch.known != (ch.dKnown && ch.cK) {
			return bad("/spent/"+ch.member, "the spent total is not the sum of driverInference and childWork")
		}
	}
	return nil
}

// Interrupted reports whether o is the outcome of a run its caller's
// context cancelled (no-winner aborted with Cancellation.Source
// CancelSourceContext, no CancelRun operation): the
// process driving it stopped, the run did not decide to end. A
// CancelRun request, the deadline, an exhausted budget, a driver failure
// and a winner are ends.
func (o *OutcomeRecord) Interrupted() bool {
	// Reason aborted since a caller's context maps to it, as the
	// reference's caller abort signal does; cancelled in records
	// journaled before.
	return o != nil && o.Status == StatusNoWinner && (o.Reason == ReasonAborted || o.Reason == ReasonCancelled) &&
		o.Cancellation != nil && o.Cancellation.Source == CancelSourceContext && o.Cancellation.OperationID == ""
}

// result is the result o journals, without its tree: the winner's text
// only as o keeps it (its blob holds the rest).
func (o *OutcomeRecord) result(runID string) SupervisedResult {
	res := SupervisedResult{
		RunID: runID, Status: o.Status, Reason: o.Reason,
		Spent:     o.Spent.total(),
		Breakdown: Breakdown{DriverInference: o.DriverInference.total(), ChildWork: o.ChildWork.total()},
		MS:        o.MS, DownCount: o.DownCount, TeardownUnconfirmed: o.TeardownUnconfirmed, BrainText: o.BrainText,
		Breaker: o.Breaker, ProgressStop: o.ProgressStop, FinalizerNote: o.FinalizerNote,
	}
	if w := o.Winner; w != nil {
		res.Winner = &Winner{Node: w.Node, OutRef: w.OutRef, Verdict: w.Verdict, Submitted: w.Submitted}
		if w.Text != nil {
			res.Winner.Text = *w.Text
		}
	}
	if e := o.Error; e != nil {
		res.Error = &DriverError{Name: e.Name, Message: e.Message}
	}
	if cn := o.Cancellation; cn != nil {
		res.Cancellation = &Cancellation{Source: cn.Source, Reason: cn.Reason, OperationID: cn.OperationID}
	}
	for _, g := range o.SpendGaps {
		res.SpendGaps = append(res.SpendGaps, SpendGap(g))
	}
	return res
}

// finishedResult rebuilds the result the finished record o journaled:
// the tree as the replayed journal holds it, the winner's result from
// its blob (or the record's own copy of its text).
func (c *Coordinator) finishedResult(o *OutcomeRecord) SupervisedResult {
	res := o.result(c.runID)
	if w := o.Winner; w != nil {
		if v, err := c.log.getBlob(w.OutRef); err == nil {
			if t, ok := canonjson.Resolve(v, "/text"); ok {
				res.Winner.Text = t.Str()
			}
			if out, ok := canonjson.Resolve(v, "/output"); ok {
				res.Winner.Output = out
			}
		} else if w.Text == nil {
			c.logger.Warn("supervise: the finished run's winner blob is unreadable", "outRef", w.OutRef, "err", err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.scope.Nodes() {
		res.Tree = append(res.Tree, c.summaryLocked(n))
	}
	return res
}
