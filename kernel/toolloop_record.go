package kernel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// Event types of a recorded tool loop. Each model turn is one durable
// append of one step event: the turn's text, its usage, and its calls —
// each with its outcome once handled (a call without an outcome was not
// run: the loop stopped first) — and the calls of tools the loop does not
// run. The calls a resumed loop runs again (ToolLoopOptions.Recorded) are
// a step of their recorded turn, marked rerun, that spent nothing. The
// run's last event is its final one, appended with the last step.
const (
	EventToolLoopStep  = "tool-loop.step"
	EventToolLoopFinal = "tool-loop.final"
)

// loopRecorder records a tool loop as a run.
type loopRecorder struct {
	l    *toolLoop
	life *life
	// batch is the events not yet appended; ids holds their ids back to
	// back (one string per batch), ends where each id ends.
	batch []store.NewEvent
	ids   []byte
	ends  []int
}

// startLoopRecord records the loop's run, running under this process's
// lease; cancel is called when a RequestCancel for the run arrives or the
// lease is lost.
func startLoopRecord(ctx context.Context, l *toolLoop, lo lifeOptions, cancel context.CancelCauseFunc) (*loopRecorder, error) {
	life, err := startLife(ctx, lo, l.doc(), cancel)
	if err != nil {
		return nil, err
	}
	return &loopRecorder{l: l, life: life}, nil
}

// add queues one event whose id is prefix followed by n (none when n < 0).
func (r *loopRecorder) add(typ, prefix string, n int, body canonjson.Value) {
	r.ids = append(r.ids, prefix...)
	if n >= 0 {
		r.ids = strconv.AppendInt(r.ids, int64(n), 10)
	}
	r.ends = append(r.ends, len(r.ids))
	r.batch = append(r.batch, store.NewEvent{Type: typ, Body: body})
}

// flush appends the queued events in one durable, fenced append.
func (r *loopRecorder) flush() error {
	if len(r.batch) == 0 {
		return nil
	}
	ids, at, from := string(r.ids), r.l.now(), 0
	for i := range r.batch {
		r.batch[i].ID, r.batch[i].Time = ids[from:r.ends[i]], at
		from = r.ends[i]
	}
	_, err := r.life.appendEvents(r.batch)
	if errors.Is(err, store.ErrInvalid) && sanitize(r.batch) {
		_, err = r.life.appendEvents(r.batch)
	}
	clear(r.batch) // drop references to bodies
	r.batch, r.ids, r.ends = r.batch[:0], r.ids[:0], r.ends[:0]
	return err
}

// sanitize replaces each body without a canonical form (a tool result
// holding NaN, a lone surrogate from a model, …) by {"nonCanonical":
// <its lossless JSON text>}, so the event is kept rather than the run
// failing, and reports whether it replaced any.
func sanitize(batch []store.NewEvent) bool {
	changed := false
	for i, e := range batch {
		if _, err := canonjson.Canonical(e.Body); err != nil {
			batch[i].Body = canonjson.ObjectValue([]canonjson.Member{{Name: "nonCanonical", Value: str(string(canonjson.Marshal(e.Body)))}})
			changed = true
		}
	}
	return changed
}

// record queues the step that just ended — the turn's text, usage and
// calls, with the outcomes of the handled ones — and appends it unless the
// loop is ending (then the final event joins it).
func (l *toolLoop) record(text string, usage ledger.Usage, handled int, ending bool) {
	r := l.rec
	if r == nil {
		return
	}
	ignored := l.res.Ignored[l.ignoredFrom:]
	results := l.res.ToolResults[len(l.res.ToolResults)-handled:]
	// The step's members come from one allocation of the exact size (on a
	// hot path, bytes allocated are the cost), its arrays from another.
	size := 4 + 3*(len(l.calls)+len(ignored))
	if len(ignored) > 0 {
		size++
	}
	if l.rerun {
		size++
	}
	for i := range results {
		size += 3 // outcome member, ok and result (or code and message)
		if !results[i].Outcome.OK {
			size++
		}
		if label := results[i].Label; label != "" && label != results[i].Call.Name {
			size++
		}
	}
	a := make(memberArena, 0, size)
	values := make([]canonjson.Value, len(l.calls)+len(ignored))
	for i, c := range l.calls {
		if i < len(results) {
			values[i] = a.call(c, results[i].Label, a.outcome(results[i].Outcome))
		} else {
			values[i] = a.call(c, "", canonjson.Value{})
		}
	}
	for i, c := range ignored {
		values[len(l.calls)+i] = a.call(c, "", canonjson.Value{})
	}
	n := len(l.calls)
	// Members are written in canonical (sorted) order: the store
	// canonicalizes every body it appends, and sorted input costs it no
	// sorting.
	start := len(a)
	if len(ignored) > 0 {
		a = append(a, canonjson.Member{Name: "ignoredCalls", Value: canonjson.ArrayValue(values[n:])})
	}
	if l.rerun {
		a = append(a, canonjson.Member{Name: "rerun", Value: canonjson.BoolValue(true)})
	}
	a = append(a,
		canonjson.Member{Name: "text", Value: str(text)},
		canonjson.Member{Name: "toolCalls", Value: canonjson.ArrayValue(values[:n:n])},
		canonjson.Member{Name: "turn", Value: canonjson.NumberValue(float64(l.turn))},
		canonjson.Member{Name: "usage", Value: UsageValue(usage)},
	)
	step := canonjson.ObjectValue(a[start:len(a):len(a)])
	r.add(EventToolLoopStep, "t", l.turn, step)
	if ending {
		return
	}
	if err := r.flush(); err != nil {
		l.recordFailed("recording the step", err)
		return
	}
	// The loop's spend so far, as a floor (the loop is not over): a run
	// whose process dies keeps it.
	if err := r.life.appendLedger([]canonjson.Value{progressEntry(l.res.Usage, "")}, l.now()); err != nil {
		l.recordFailed("recording the loop's spend so far", err)
	}
}

// recordFailed stops a loop whose record write was refused: interrupted
// when the lease was lost, failed otherwise (the loop cannot go on
// unrecorded).
func (l *toolLoop) recordFailed(what string, err error) {
	l.stop(StopFailed)
	if lost := l.rec.life.leaseLost(); lost != nil {
		l.fail(store.StatusInterrupted, ReasonLeaseLost, lost.Error(), lost)
		return
	}
	l.fail(store.StatusFailed, ReasonTransport, what+": "+err.Error(), err)
}

// memberArena hands out object members from one backing array. Objects
// keep their members even when it grows (they stay in the old array).
type memberArena []canonjson.Member

// object returns an object of ms, copied into the arena.
func (a *memberArena) object(ms ...canonjson.Member) canonjson.Value {
	start := len(*a)
	*a = append(*a, ms...)
	return canonjson.ObjectValue((*a)[start:len(*a):len(*a)])
}

// call is one recorded call: id, name, arguments (null when absent), its
// label when it is not the tool's name, and its outcome when it was
// handled.
func (a *memberArena) call(c contract.ToolCall, label string, outcome canonjson.Value) canonjson.Value {
	args := c.Args
	if !args.IsValid() {
		args = canonjson.NullValue()
	}
	start := len(*a)
	*a = append(*a, canonjson.Member{Name: "arguments", Value: args}, canonjson.Member{Name: "id", Value: str(c.ID)})
	if label != "" && label != c.Name {
		*a = append(*a, canonjson.Member{Name: "label", Value: str(label)})
	}
	*a = append(*a, canonjson.Member{Name: "name", Value: str(c.Name)})
	if outcome.IsValid() {
		*a = append(*a, canonjson.Member{Name: "outcome", Value: outcome})
	}
	return canonjson.ObjectValue((*a)[start:len(*a):len(*a)])
}

// outcome is ToolOutcome.MarshalValue in the arena.
func (a *memberArena) outcome(o ToolOutcome) canonjson.Value {
	if o.OK {
		r := o.Result
		if !r.IsValid() {
			r = canonjson.NullValue()
		}
		return a.object(canonjson.Member{Name: "ok", Value: canonjson.BoolValue(true)}, canonjson.Member{Name: "result", Value: r})
	}
	return a.object(canonjson.Member{Name: "code", Value: str(o.Code)}, canonjson.Member{Name: "message", Value: str(o.Message)},
		canonjson.Member{Name: "ok", Value: canonjson.BoolValue(false)})
}

// end appends the final event (with any queued turn), the ledger entry,
// and the run's one terminal state. A lost lease is returned as the
// *LeaseLostError: nothing more was recorded.
func (r *loopRecorder) end() error {
	l := r.l
	r.life.finishing()
	if lost := r.life.leaseLost(); lost != nil {
		_, err := r.life.end(store.StatusInterrupted, func(lost *LeaseLostError) canonjson.Value {
			l.runErr = &RunError{RunID: l.res.RunID, Status: store.StatusInterrupted, Reason: ReasonLeaseLost, Detail: lost.Error(), Cause: lost}
			return l.doc()
		})
		return err
	}
	status, reason, detail := l.terminal()
	pending := make([]canonjson.Value, len(l.res.Pending))
	for i, c := range l.res.Pending {
		pending[i] = str(c.ID)
	}
	final := []canonjson.Member{
		{Name: "stopReason", Value: str(string(l.res.StopReason))},
		{Name: "turns", Value: canonjson.NumberValue(float64(l.res.Turns))},
		{Name: "pending", Value: canonjson.ArrayValue(pending)},
		{Name: "terminal", Value: terminalValue(status, reason, detail)},
	}
	r.add(EventToolLoopFinal, "final", -1, canonjson.ObjectValue(final))
	var errs []error
	if err := r.flush(); err != nil {
		errs = append(errs, fmt.Errorf("kernel: recording the events of run %s: %w", l.res.RunID, err))
	}
	entry, err := canonjson.ToValue(ledgerRecord{Kind: LedgerToolLoop, Usage: UsageValue(l.res.Usage), Status: string(status)})
	if err == nil {
		err = r.life.appendClosing(entry, l.now())
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("kernel: recording the ledger entry of run %s: %w", l.res.RunID, err))
	}
	if _, err := r.life.end(status, func(lost *LeaseLostError) canonjson.Value {
		if lost != nil {
			l.runErr = &RunError{RunID: l.res.RunID, Status: store.StatusInterrupted, Reason: ReasonLeaseLost, Detail: lost.Error(), Cause: lost}
		}
		return l.doc()
	}); err != nil {
		if lost, ok := errors.AsType[*LeaseLostError](err); ok {
			return lost
		}
		if re, ok := errors.AsType[*RunError](err); ok {
			// The end is unrecorded: readers will see the loop
			// interrupted, whatever it reached.
			l.runErr = re
			return re
		}
		errs = append(errs, err)
	}
	if lost := r.life.leaseLost(); lost != nil {
		return lost
	}
	return errors.Join(errs...)
}

// terminal is the loop's terminal status: completed for every stop that
// is not a failure or a cancellation (the stop reason tells them apart).
func (l *toolLoop) terminal() (status store.Status, reason, detail string) {
	if l.runErr != nil {
		return l.runErr.Status, l.runErr.Reason, l.runErr.Detail
	}
	return store.StatusCompleted, "", ""
}

// ToolLoopRecord is the document of a recorded tool loop, written by
// the loop and read by ReadRun with the same codec: what the loop was
// asked to do and, once it ended, what it did.
type ToolLoopRecord struct {
	System         string   `json:"system"`
	PriorMessages  int      `json:"priorMessages"`
	User           string   `json:"user"`
	Tools          []string `json:"tools"`
	MaxToolTurns   int      `json:"maxToolTurns"`
	StopOnRefusal  bool     `json:"stopOnRefusal"`
	Deadline       string   `json:"deadline,omitzero"`
	MaxCostUSD     float64  `json:"maxCostUsd,omitzero"`
	RequestedModel string   `json:"requestedModel,omitzero"`
	// ProfileDigest is the identity of the profile the loop ran
	// (ToolLoopOptions.Profile); absent for a loop without one.
	ProfileDigest string `json:"profileDigest,omitzero"`
	// The members below are set once the loop ended.
	StopReason   StopReason `json:"stopReason,omitzero"`
	Turns        *int       `json:"turns,omitzero"`
	ToolResults  *int       `json:"toolResults,omitzero"`
	IgnoredCalls *int       `json:"ignoredCalls,omitzero"`
	PendingCalls *int       `json:"pendingCalls,omitzero"`
	Usage        *Usage     `json:"usage,omitzero"`
	Text         *string    `json:"text,omitzero"`
	Terminal     *Terminal  `json:"terminal,omitzero"`
	CostUSD      *float64   `json:"costUsd,omitzero"`
	ServedModels []string   `json:"servedModels,omitzero"`
	// CancelRequested is a cancel request another process recorded.
	CancelRequested *CancelRequest `json:"cancelRequested,omitzero"`
}

// doc is the run's document (ToolLoopRecord).
func (l *toolLoop) doc() canonjson.Value {
	o := &l.o
	rec := ToolLoopRecord{System: o.System, PriorMessages: len(o.Prior), User: o.User, Tools: make([]string, len(o.Tools)),
		MaxToolTurns: o.MaxToolTurns, StopOnRefusal: o.StopOnRefusal, MaxCostUSD: o.MaxCostUSD, RequestedModel: o.RequestedModel,
		ProfileDigest: l.profileDigest}
	for i, t := range o.Tools {
		rec.Tools[i] = t.Name
	}
	if !o.Deadline.IsZero() {
		rec.Deadline = o.Deadline.UTC().Format(time.RFC3339Nano)
	}
	if l.res.StopReason != "" {
		status, reason, detail := l.terminal()
		turns, results, ignored, pending, text := l.res.Turns, len(l.res.ToolResults), len(l.res.Ignored), len(l.res.Pending), l.res.FinalText
		rec.StopReason, rec.Turns, rec.ToolResults, rec.IgnoredCalls, rec.PendingCalls = l.res.StopReason, &turns, &results, &ignored, &pending
		rec.Usage, rec.Text, rec.Terminal = &Usage{l.res.Usage}, &text, &Terminal{Status: status, Reason: reason, Detail: detail}
		if o.CostOf != nil {
			cost := l.res.CostUSD
			rec.CostUSD = &cost
		}
		rec.ServedModels = l.res.ServedModels
	}
	v, err := canonjson.ToValue(rec)
	if err != nil {
		l.log.Error("encoding the tool loop's record", "run", l.res.RunID, "err", err)
	}
	return v
}
