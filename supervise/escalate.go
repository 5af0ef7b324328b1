package supervise

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/kernel"
)

// DefaultEscalateQuestionTimeout bounds one call of
// Options.EscalateQuestion: a hook that has not answered by then is a
// refusal (the question reached no parent).
const DefaultEscalateQuestionTimeout = 10 * time.Second

// EscalationOutcome is what Options.EscalateQuestion answers for one
// question (§3.6 escalateQuestion): Delivered with To naming who holds
// the question now (ask_parent replies queued-for-parent), or not
// delivered with Reason saying why (ask_parent replies no-parent, and
// the manager is told it is the last decider).
type EscalationOutcome struct {
	Delivered bool
	To        string
	Reason    string
}

// EscalationRecord is the coordination log's record-only account of one
// question that left the run's root manager through ask_parent or
// answer_question escalateTo parent (CoordEscalation): which question,
// whether anything received it, and who holds it (To) or why nothing did
// (Reason). Call is the manager's tool call that escalated it
// (kernel.ToolCallID; empty when the call had none): a resumed manager
// running that call again gets this outcome back, and the hook is not
// called again.
type EscalationRecord struct {
	QuestionID string  `json:"questionId"`
	From       NodeID  `json:"from"`
	Urgency    Urgency `json:"urgency"`
	Delivered  bool    `json:"delivered"`
	To         string  `json:"to,omitzero"`
	Reason     string  `json:"reason,omitzero"`
	// AtMS is when the outcome was known, in Unix milliseconds on the
	// run's clock.
	AtMS int64  `json:"atMs"`
	Call string `json:"call,omitzero"`
}

// Replies of a root question's escalation (AskParentResult.Status,
// AnswerResult.Status).
const (
	StatusQueuedForParent = "queued-for-parent"
	StatusNoParent        = "no-parent"
)

// noParentReason is why a question reached no parent when the run has
// no Options.EscalateQuestion.
const noParentReason = "no parent inbox is configured above this manager (the run has no EscalateQuestion)"

// lastDecider is what a manager whose question reached no parent is
// told to do.
const lastDecider = "Nothing will route an answer back to you: YOU are the last decider. " +
	"Do not wait for one. Decide the question yourself (answer_question with an answer, or with deferReason to record that it stays open) and carry on."

// ownLastDecider is what the root manager whose own ask_parent reached
// no parent is told: its question is recorded expired (decided, its
// asker being the manager itself), so unlike a worker's question there
// is nothing for answer_question to decide.
const ownLastDecider = "Nothing will route an answer back to you: YOU are the last decider. " +
	"Do not wait for one. Decide the question yourself and carry on: it is recorded as expired, and there is nothing to answer."

// queuedGuidance is how a delivered escalation's answer reaches the root
// manager.
const queuedGuidance = "The answer, when it comes, reaches you as a message between your turns; carry on with what does not depend on it."

// escalate hands question q, which the run's root manager escalates, to
// Options.EscalateQuestion, bounded by DefaultEscalateQuestionTimeout
// through callHook, and journals the outcome (CoordEscalation). Without
// the hook the outcome is not delivered (no default operator queue); a
// hook that errs, panics, does not answer in time, or answers delivered
// with no To, did not deliver.
func (c *Coordinator) escalate(ctx context.Context, q Question) EscalationRecord {
	call := kernel.ToolCallID(ctx)
	out := EscalationOutcome{Reason: noParentReason}
	if f := c.escalateQuestion; f != nil {
		// The hook gets its own copy: the run's record of the question
		// shares q's options.
		given := q
		given.Options = slices.Clone(q.Options)
		timeout := c.escalateTimeout
		if timeout <= 0 {
			timeout = DefaultEscalateQuestionTimeout
		}
		hctx, cancel := context.WithTimeout(ctx, timeout)
		a, answered := callHook(hctx, func(ctx context.Context) (EscalationOutcome, error) { return f(ctx, given) })
		cancel()
		switch {
		case !answered:
			out = EscalationOutcome{Reason: fmt.Sprintf("the escalation hook did not answer: %v", context.Cause(hctx))}
		case a.panic != nil:
			out = EscalationOutcome{Reason: fmt.Sprintf("the escalation hook panicked: %v", a.panic)}
		case a.err != nil:
			out = EscalationOutcome{Reason: a.err.Error()}
		case a.v.Delivered && a.v.To == "":
			out = EscalationOutcome{Reason: "the escalation hook answered delivered without naming who holds the question"}
		case a.v.Delivered:
			out = EscalationOutcome{Delivered: true, To: clip(a.v.To, MaxReasonBytes)}
		case a.v.Reason == "":
			out = EscalationOutcome{Reason: "the escalation hook did not deliver the question and gave no reason"}
		default:
			// Not delivered: nothing holds the question, whatever To says.
			out = EscalationOutcome{Reason: a.v.Reason}
		}
	}
	rec := EscalationRecord{QuestionID: q.ID, From: q.From, Urgency: q.Urgency, Delivered: out.Delivered, To: out.To,
		Reason: clip(out.Reason, MaxReasonBytes), AtMS: c.now().UnixMilli(), Call: call}
	if err := c.log.appendCoordOrLose(context.WithoutCancel(ctx), CoordRecord{Kind: CoordEscalation, QuestionID: q.ID, Escalation: &rec}, q.From); err != nil {
		c.logger.Error("supervise: journaling a question's escalation", "question", q.ID, "err", err)
	}
	return rec
}

// escalationReply is what a manager is told of rec: its status, the
// reason (who holds the question, or why nothing does) and what to do.
func escalationReply(rec EscalationRecord) (status, reason, guidance string) {
	if rec.Delivered {
		return StatusQueuedForParent, "the question is queued for " + rec.To, queuedGuidance
	}
	return StatusNoParent, rec.Reason, lastDecider
}

// escalateTimeoutKey carries, in Supervise's context, a bound of one
// EscalateQuestion call other than DefaultEscalateQuestionTimeout (the
// package's tests set it).
type escalateTimeoutKey struct{}

// escalateTimeout is the bound of one EscalateQuestion call for a run
// started with ctx.
func escalateTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(escalateTimeoutKey{}).(time.Duration); ok && d > 0 {
		return d
	}
	return DefaultEscalateQuestionTimeout
}

// askRootParent is the run's root manager's ask_parent: the question is
// recorded (list_questions, the journal) and handed to
// Options.EscalateQuestion (escalate). Delivered, it is listed escalated;
// otherwise expired, decided escalate/parent no-parent, and the manager
// is told it is the last decider. A call an earlier process made and the
// resumed manager runs again answers with its question and outcome, and
// asks nothing again.
func (c *Coordinator) askRootParent(ctx context.Context, a AskArgs) (AskParentResult, error) {
	if prior, ok := c.rerunEscalation(ctx, ""); ok {
		status, reason, guidance := escalationReply(prior)
		if !prior.Delivered {
			guidance = ownLastDecider
		}
		return AskParentResult{QuestionID: prior.QuestionID, Status: status, Reason: reason, Guidance: guidance, To: prior.To, Replayed: true}, nil
	}
	q, _ := c.addQuestion(ctx, a, false, nil)
	c.mu.Lock()
	qq := q.Question
	c.mu.Unlock()
	rec := c.escalate(ctx, qq)
	status, reason, guidance := escalationReply(rec)
	if !rec.Delivered {
		guidance = ownLastDecider
	}
	c.mu.Lock()
	if rec.Delivered {
		q.Status, q.decision = "escalated", &Decision{Kind: "escalate", EscalateTo: "parent", EscalateReason: StatusQueuedForParent}
	} else {
		q.Status, q.decision = "expired", &Decision{Kind: "escalate", EscalateTo: "parent", EscalateReason: StatusNoParent}
	}
	c.mu.Unlock()
	return AskParentResult{QuestionID: q.ID, Status: status, Reason: reason, Guidance: guidance, To: rec.To}, nil
}

// rerunEscalation returns the journaled escalation of the call running
// on ctx (of question questionID, when not empty), when an earlier
// process made that call, escalated its question, and the resumed
// manager runs the call again (its result was not journaled:
// rerunCalls).
func (c *Coordinator) rerunEscalation(ctx context.Context, questionID string) (EscalationRecord, bool) {
	call := kernel.ToolCallID(ctx)
	if call == "" {
		return EscalationRecord{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	prior, ok := c.escalatedCalls[call]
	if !ok || !c.rerunCalls[call] || questionID != "" && prior.QuestionID != questionID {
		return EscalationRecord{}, false
	}
	delete(c.rerunCalls, call)
	delete(c.escalatedCalls, call)
	return prior, true
}

// escalateRootDecision is the run's root manager's answer_question
// escalateTo parent: the question is handed to Options.EscalateQuestion
// (escalate) and stays undecided — listed escalated when delivered, open
// otherwise — so the answer, when the caller gives it to the manager (a
// steer to the root), can still be routed to the asker, and a blocking
// one still holds stop until then.
func (c *Coordinator) escalateRootDecision(ctx context.Context, a AnswerArgs) (AnswerResult, error) {
	if a.Answer != "" || a.DeferReason != "" {
		return AnswerResult{}, &VerbRefusal{Code: "invalid-decision", Reason: "give exactly one of answer, deferReason, escalateTo"}
	}
	if prior, ok := c.rerunEscalation(ctx, a.QuestionID); ok {
		status, reason, guidance := escalationReply(prior)
		return AnswerResult{QuestionID: a.QuestionID, Status: status, Reason: reason, Guidance: guidance, Replayed: true}, nil
	}
	c.mu.Lock()
	var q *question
	for _, x := range c.questionsByID[a.QuestionID] {
		if x.to == c.self {
			q = x
		}
	}
	switch {
	case q == nil:
		c.mu.Unlock()
		return AnswerResult{}, &VerbRefusal{Code: "unknown-question", Reason: "no question " + a.QuestionID}
	case q.decision != nil:
		c.mu.Unlock()
		return AnswerResult{}, &VerbRefusal{Code: "already-decided", Reason: "question " + q.ID + " is " + q.Status}
	}
	qq := q.Question
	c.mu.Unlock()
	rec := c.escalate(ctx, qq)
	status, reason, guidance := escalationReply(rec)
	if rec.Delivered {
		c.mu.Lock()
		if q.decision == nil && q.Status == "open" {
			q.Status = "escalated"
		}
		c.mu.Unlock()
	}
	return AnswerResult{QuestionID: q.ID, Status: status, Reason: reason, Guidance: guidance}, nil
}
