package kernel

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// ReasonCheckpointFailed: a tool loop's Checkpoint failed, so the loop
// stopped rather than run ahead of what it could record (a
// *CheckpointError is the cause).
const ReasonCheckpointFailed = "checkpoint-failed"

// CheckpointError is a tool loop's failed ToolLoopOptions.Checkpoint:
// Messages is how many messages it was given, Err what it returned.
type CheckpointError struct {
	RunID    string
	Messages int
	Err      error
}

func (e *CheckpointError) Error() string {
	return fmt.Sprintf("kernel: the tool loop could not record %d transcript message(s): %v", e.Messages, e.Err)
}

// Unwrap returns what Checkpoint returned.
func (e *CheckpointError) Unwrap() error { return e.Err }

// checkpoint gives Checkpoint the messages the transcript gained since
// it was last called and reports whether the loop may go on. After a
// failure it stops the loop and is not called again.
func (l *toolLoop) checkpoint() bool {
	if l.ckptErr != nil {
		return false
	}
	msgs := l.res.Messages
	if l.o.Checkpoint == nil || l.ckpt >= len(msgs) {
		return true
	}
	appended := msgs[l.ckpt:len(msgs):len(msgs)]
	if l.ckptCtx == nil {
		l.ckptCtx = context.WithoutCancel(l.loopCtx) // made once: a step costs no allocation for it
	}
	if err := l.o.Checkpoint(l.ckptCtx, appended); err != nil {
		l.ckptErr = &CheckpointError{RunID: l.res.RunID, Messages: len(appended), Err: err}
		l.stop(StopFailed)
		l.fail(store.StatusFailed, ReasonCheckpointFailed, l.ckptErr.Error(), l.ckptErr)
		return false
	}
	l.ckpt = len(msgs)
	return true
}

// checkpointEnd records what the transcript gained after the last
// checkpoint (a final answer, a steer that arrived with it).
func (l *toolLoop) checkpointEnd() {
	if l.ckptErr != nil {
		return
	}
	if !l.checkpoint() && l.runErr != nil && l.runErr.Cause != l.ckptErr {
		// The loop had failed already: its own error stays, and the
		// record's failure is logged.
		l.log.Error("recording the transcript's end", "run", l.res.RunID, "err", l.ckptErr)
	}
}

// nothingSpent is the spend of a reserved turn whose model was never
// called.
func nothingSpent() ledger.Spend {
	zero := int64(0)
	return ledger.Spend{Tokens: &zero, Iterations: &zero, MicroUSD: &zero}
}

// resumeRecorded takes up ToolLoopOptions.Recorded before the first
// model turn: it counts the recorded tool turns, starts the final text
// with the recorded answers, runs the calls the last recorded turn left
// without a result, and completes a loop whose record ends on an answer.
// It reports whether the loop goes on to a model turn.
func (l *toolLoop) resumeRecorded(ctx context.Context) bool {
	rec := l.o.Recorded
	if len(rec) == 0 {
		return true
	}
	for _, m := range rec {
		if m.Role != contract.ChatAssistant {
			continue
		}
		if len(m.ToolCalls) > 0 {
			l.turn++
		}
		if m.Content != nil {
			l.final.WriteString(*m.Content)
		}
	}
	last := rec[len(rec)-1]
	if last.Role == contract.ChatAssistant && len(last.ToolCalls) == 0 {
		// The loop had answered; only a steer that arrived since makes
		// it go on.
		if l.o.Interject != nil && l.interject(ctx, true) {
			return true
		}
		l.stop(StopCompleted)
		return false
	}
	pending := unanswered(rec)
	if len(pending) == 0 {
		return true
	}
	if l.contextEnd(ctx) {
		l.res.Pending = pending
		return false
	}
	if !l.o.Deadline.IsZero() && !l.now().Before(l.o.Deadline) {
		l.stop(StopDeadline)
		l.res.Pending = pending
		return false
	}
	// The calls belong to the last recorded tool turn.
	l.turn--
	handled := l.handleCalls(pending)
	l.recordRerun(rec, pending, handled)
	l.turn++
	return l.res.StopReason == ""
}

// recordRerun records, in a recorded loop, the calls of rec's last tool
// turn that ran again (handled of pending) as a step of that turn: its
// text, its calls with their outcomes, nothing spent (no model was
// asked), marked rerun.
func (l *toolLoop) recordRerun(rec []contract.ChatMessage, pending []contract.ToolCall, handled int) {
	if l.rec == nil {
		return
	}
	text := ""
	for i := len(rec) - 1; i >= 0; i-- {
		if m := rec[i]; m.Role == contract.ChatAssistant {
			if m.Content != nil {
				text = *m.Content
			}
			break
		}
	}
	// record reads the turn's calls from l.calls, the scratch of model
	// turns: it gets them back untouched.
	calls := l.calls
	l.calls, l.rerun = pending, true
	l.record(text, ledger.NoUsage(), handled, l.res.StopReason != "")
	l.calls, l.rerun = calls, false
}

// unanswered returns the calls of rec's last assistant message that no
// tool message after it answers, in order; a tool message answers the
// earliest unanswered call of its id.
func unanswered(rec []contract.ChatMessage) []contract.ToolCall {
	var open []contract.ToolCall
	for _, m := range rec {
		switch m.Role {
		case contract.ChatAssistant:
			open = append(open[:0:0], m.ToolCalls...)
		case contract.ChatTool:
			for i, c := range open {
				if c.ID == m.ToolCallID {
					open = append(open[:i:i], open[i+1:]...)
					break
				}
			}
		}
	}
	return open
}

// validateRecorded checks ToolLoopOptions.Recorded (see its doc).
func (o *ToolLoopOptions) validateRecorded(errs *optionErrors) {
	var open []contract.ToolCall
	for i, m := range o.Recorded {
		field := fmt.Sprintf("Recorded[%d]", i)
		switch m.Role {
		case contract.ChatUser, contract.ChatAssistant:
			if len(open) > 0 {
				errs.add(field, "a %s message follows calls with no result (%s)", m.Role, callIDs(open))
				return
			}
			if m.Role == contract.ChatAssistant {
				open = append(open[:0:0], m.ToolCalls...)
			}
		case contract.ChatTool:
			j := -1
			for k, c := range open {
				if c.ID == m.ToolCallID {
					j = k
					break
				}
			}
			if j < 0 {
				errs.add(field, "a tool message answers %q, which no unanswered call of the assistant message before it has", m.ToolCallID)
				return
			}
			open = append(open[:j:j], open[j+1:]...)
		default:
			errs.add(field, "a recorded transcript holds user, assistant and tool messages only, not %q", m.Role)
			return
		}
	}
	for _, c := range open {
		known := false
		for _, t := range o.Tools {
			known = known || t.Name == c.Name
		}
		if !known {
			errs.add("Recorded", "the unanswered call %s names %q, which is not one of the Tools, so it cannot run again", c.ID, c.Name)
		}
	}
}

func callIDs(calls []contract.ToolCall) string {
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
	}
	return strings.Join(ids, ", ")
}
