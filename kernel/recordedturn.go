package kernel

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// RecordedTurn is an exact run's turn as the run's recorded events tell
// it. A run records each event before it reads it, so a turn whose
// terminal event is recorded had ended, whatever became of the run
// afterwards: its process may have died, or its store stopped answering,
// before the run's own end was recorded (the run then reads interrupted).
// Such a turn is over, and must not be run again; ReadRecordedTurn lets
// the run's successor settle it from the record instead.
type RecordedTurn struct {
	// Terminal is the kind of the turn's terminal event; "" when the
	// recorded events end without one (the turn's end is unknown).
	Terminal contract.TerminalKind
	// Status is what the run reached with that turn, as Execute judges
	// it before its completion check: completed for a completed turn
	// served the requested model, failed for a failed turn or a served
	// model that contradicts the request; "" for a turn that did not end
	// (see Ended). Reason and Detail explain a failure.
	Status         store.Status
	Reason, Detail string
	// Served is what the platform reported serving (empty: unknown).
	Served ServedIdentity
	// Text is the turn's text, read as the run read it: the streamed
	// text, or the whole text its terminal event states.
	Text string
	// Output is the structured result the turn reported, if any.
	Output canonjson.Value
	// StopReason is the model's own reason a failed terminal event names
	// (StopReasonMember): the turn ran to its end.
	StopReason string
	// Usage is the turn's usage as its events report it: whole for a
	// turn that completed or that the model stopped, a floor otherwise.
	Usage ledger.Usage
	// Events is how many events were read.
	Events int
}

// Ended reports whether the turn ran to an end of its own — completed,
// or failed — so that running it again would run finished work twice. A
// turn that ended cancelled says nothing of the work: it was cancelled
// on request, or with its holder (see Reattach), and a turn without a
// terminal event has an unknown end.
func (t *RecordedTurn) Ended() bool {
	return t.Terminal == contract.TerminalCompleted || t.Terminal == contract.TerminalFailed
}

// ReadRecordedTurn reads the turn of exact run runID from its recorded
// events, with the rules Execute reads a live turn by: the first
// terminal event ends it (an "error" event is a failed one), and a turn
// that ended cancelled and was then run again (a re-attached turn that
// had died with its holder, see Reattach) is the turn that ran after it.
// A missing run is store.ErrNotFound; a recorded event that is not an
// environment event is skipped.
func ReadRecordedTurn(ctx context.Context, s store.Store, runID string) (*RecordedTurn, error) {
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("kernel: reading run %s: %w", runID, err)
	}
	requested := ""
	if run.Doc.IsValid() {
		if rec, err := DecodeRecord(run.Doc); err == nil {
			requested = string(rec.RequestedModel)
		}
	}
	out := &RecordedTurn{}
	// mismatch is the first served model that contradicted the request.
	mismatch := ""
	var text strings.Builder
	var usage ledger.TurnUsage
	whole := false
	for after := ""; ; {
		page, err := s.Events(ctx, runID, after, 1000)
		if err != nil {
			return nil, fmt.Errorf("kernel: reading run %s's events: %w", runID, err)
		}
		for _, stored := range page {
			out.Events++
			var e contract.EnvironmentEvent
			if err := canonjson.FromValue(stored.Body, &e); err != nil {
				// Not a provider's event (another writer's): it neither
				// ends the turn nor reports its usage.
				continue
			}
			if out.Terminal == contract.TerminalCancelled {
				// The cancelled turn was run again: this is its successor.
				*out, whole, mismatch = RecordedTurn{Events: out.Events}, false, ""
				text.Reset()
				usage = ledger.TurnUsage{}
			}
			if d := servedMismatch(requested, &out.Served, e); d != "" && mismatch == "" {
				mismatch = d
			}
			// A report Execute could not aggregate (an unknown usage mode)
			// it only logged; it leaves the usage as it was here too.
			_, _ = usage.ObserveEvent(e)
			appendText(&text, e)
			if v, ok := e.Data["result"]; ok && v.IsValid() {
				out.Output = v
			}
			kind, ok := turnTerminal(e)
			if !ok {
				continue
			}
			out.Terminal = kind
			if t := terminalText(e); t != "" {
				text.Reset()
				text.WriteString(t)
			}
			switch kind {
			case contract.TerminalCompleted:
				whole = true
				out.Status = store.StatusCompleted
			case contract.TerminalFailed:
				out.StopReason = modelStopReason(e)
				whole = out.StopReason != ""
				out.Status, out.Reason, out.Detail = store.StatusFailed, ReasonInBandError, eventError(e)
			}
			if mismatch != "" && out.Ended() {
				// The first terminal fact wins, as in Execute.
				out.Status, out.Reason, out.Detail = store.StatusFailed, ReasonModelMismatch, mismatch
			}
			if out.Ended() {
				// Nothing after the terminal belongs to the turn.
				out.Text, out.Usage = text.String(), usage.Total()
				if !whole {
					out.Usage = out.Usage.Floor()
				}
				return out, nil
			}
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].Cursor
	}
	out.Text, out.Usage = text.String(), usage.Total().Floor()
	return out, nil
}
