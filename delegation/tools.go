package delegation

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/tools"
)

// Tool names.
const (
	ToolDelegate = "delegate"
	ToolFeedback = "delegate_feedback"
	ToolStatus   = "delegation_status"
	ToolHistory  = "delegation_history"
	ToolCancel   = "delegation_cancel"
)

// ServerName is the name the delegation MCP server announces.
const ServerName = "agentrt-delegation"

// DelegateArgs are the arguments of delegate (§9: intent and runId,
// plus this queue's idempotencyKey, budget and waitSeconds).
type DelegateArgs struct {
	Intent         string         `json:"intent" jsonschema:"what you want accomplished, as an outcome (required)"`
	RunID          string         `json:"runId,omitempty" jsonschema:"your correlation id for this delegation, kept with its record (A-Z a-z 0-9 . _ : -, at most 128)"`
	IdempotencyKey string         `json:"idempotencyKey,omitempty" jsonschema:"makes the call safe to retry: the same key and request return the same delegation (A-Z a-z 0-9 . _ : -, at most 128)"`
	Budget         *BudgetRequest `json:"budget,omitempty" jsonschema:"a budget within the server's caps; omitted fields take the cap"`
	WaitSeconds    *int           `json:"waitSeconds,omitempty" jsonschema:"how long to wait for the delegation to end (default and most 600); 0 returns at once with its taskId"`
}

// Status values of a DelegateResult besides the delegation states
// pending and running (the wait ended first).
const (
	StatusWinner   = "winner"
	StatusNoWinner = "no-winner"
)

// No-winner reasons of a delegation that ended without a supervised
// run's result (DelegateResult.Reason); an ended run's reason is its
// own (§3.6).
const (
	ReasonCancelled   = "cancelled"
	ReasonInterrupted = "interrupted"
	ReasonRunFailed   = "run-failed"
)

// DelegateResult is delegate's answer: §9's arms at the top level —
// {status: winner, out, outRef, spentTotal} or {status: no-winner,
// reason, error?, spentTotal} — with the delegation's taskId, reused,
// state and whole record. When the wait ended before the delegation
// did, Status is its state (pending or running), the arms' fields are
// absent and the caller polls delegation_status with the taskId.
type DelegateResult struct {
	Status string `json:"status"`
	// Out and OutRef are the winner's output (Out clipped to
	// MaxOutBytes, then OutTruncated) and its content address.
	Out          *string `json:"out,omitempty"`
	OutRef       *string `json:"outRef,omitempty"`
	OutTruncated bool    `json:"outTruncated,omitempty"`
	// Reason and Error say why there is no winner.
	Reason string     `json:"reason,omitempty"`
	Error  *ErrorInfo `json:"error,omitempty"`
	// SpentTotal is the run's whole spend once the delegation ended:
	// null when it ended without a run's result (its spend unknown).
	SpentTotal *Spent `json:"spentTotal,omitempty"`

	TaskID     string     `json:"taskId"`
	Reused     bool       `json:"reused"`
	State      State      `json:"state"`
	Delegation Delegation `json:"delegation"`
}

// MarshalJSON writes spentTotal as null, not absent, once the
// delegation ended without a known spend.
func (r DelegateResult) MarshalJSON() ([]byte, error) {
	type plain DelegateResult
	if !r.State.Terminal() || r.SpentTotal != nil {
		return json.Marshal(plain(r))
	}
	return json.Marshal(struct {
		plain
		SpentTotal *Spent `json:"spentTotal"`
	}{plain: plain(r)})
}

// Outcome is d as delegate answers it.
func Outcome(d Delegation, reused bool) DelegateResult {
	out := DelegateResult{Status: string(d.State), TaskID: d.TaskID, Reused: reused, State: d.State, Delegation: d}
	if !d.State.Terminal() {
		return out
	}
	res := d.Result
	switch {
	case res != nil && res.Status == StatusWinner && d.State == StateCompleted:
		out.Status = StatusWinner
		text, ref := res.Out, res.OutRef
		out.Out, out.OutRef, out.OutTruncated = &text, &ref, res.OutTruncated
	case res != nil:
		out.Status, out.Reason, out.Error = StatusNoWinner, res.Reason, res.Error
		if d.State == StateCancelled {
			// Cancelled while the run delivered: the record keeps the
			// result, the caller is told it was cancelled.
			out.Reason = ReasonCancelled
		}
	default:
		out.Status = StatusNoWinner
		switch d.State {
		case StateCancelled:
			out.Reason = ReasonCancelled
			msg := "the delegation was cancelled"
			if c := d.Cancellation; c != nil && c.Reason != "" {
				msg += ": " + c.Reason
			}
			out.Error = &ErrorInfo{Name: "Cancelled", Message: msg}
		case StateInterrupted:
			out.Reason = ReasonInterrupted
			out.Error = &ErrorInfo{Name: "Interrupted", Message: d.Failure}
		default:
			out.Reason = ReasonRunFailed
			out.Error = &ErrorInfo{Name: "RunFailed", Message: d.Failure}
		}
	}
	if res != nil {
		spent := res.SpentTotal
		out.SpentTotal = &spent
	}
	return out
}

// StatusArgs are the arguments of delegation_status.
type StatusArgs struct {
	TaskID      string `json:"taskId" jsonschema:"the taskId delegate returned"`
	WaitSeconds int    `json:"waitSeconds,omitempty" jsonschema:"wait up to this many seconds (at most 600) for the delegation to end; 0 answers at once"`
}

// HistoryArgs are the arguments of delegation_history.
type HistoryArgs struct {
	Limit int    `json:"limit,omitempty" jsonschema:"how many delegations, newest first (default 20, at most 100)"`
	Since string `json:"since,omitempty" jsonschema:"only delegations created at or after this RFC 3339 time"`
}

// HistoryResult is delegation_history's answer.
type HistoryResult struct {
	Delegations []Delegation `json:"delegations"`
	Count       int          `json:"count"`
}

// FeedbackArgs are the arguments of delegate_feedback.
type FeedbackArgs struct {
	TaskID string     `json:"taskId" jsonschema:"the taskId of the delegation rated"`
	Rating RatingArgs `json:"rating"`
	By     string     `json:"by" jsonschema:"who rates: agent, user or downstream-judge"`
}

// RatingArgs is a rating.
type RatingArgs struct {
	Score float64 `json:"score" jsonschema:"0 (useless) to 1 (exactly right)"`
	Label string  `json:"label,omitempty" jsonschema:"good, bad, neutral or mixed"`
	Notes string  `json:"notes" jsonschema:"why, in a sentence or two"`
}

// FeedbackResult is delegate_feedback's answer.
type FeedbackResult struct {
	TaskID   string `json:"taskId"`
	Recorded bool   `json:"recorded"`
	Ratings  int    `json:"ratings"`
}

// CancelArgs are the arguments of delegation_cancel.
type CancelArgs struct {
	TaskID string `json:"taskId" jsonschema:"the taskId delegate returned"`
	Reason string `json:"reason,omitempty" jsonschema:"why, kept with the record"`
}

// CancelResult is delegation_cancel's answer.
type CancelResult struct {
	TaskID string `json:"taskId"`
	State  State  `json:"state"`
	// Effect is cancelled (it had not started), cancel_requested (its
	// run is being stopped; the record already says cancelled) or
	// not_live (it had already ended).
	Effect kernel.Effect `json:"effect"`
}

// Tools returns the delegation tools, to mount behind mcpserver.New:
// delegate, delegate_feedback, delegation_status, delegation_history and
// delegation_cancel. A refused request is the tool's result
// {error, reason, path} (a *Refusal), not a failure; a store failure is
// the tool's error.
func (q *Queue) Tools() ([]contract.Tool, error) {
	var out []contract.Tool
	add := func(t contract.Tool, err error) error {
		if err != nil {
			return err
		}
		out = append(out, t)
		return nil
	}
	err := errors.Join(
		add(tools.NewTool(ToolDelegate, "Delegate an intent to this server's manager agent, which runs workers under one budget and delivers only when the server's check passed. Synchronous: waits for the delegation to end (at most 600 s; waitSeconds shortens it, 0 returns at once) and returns {status: \"winner\", out, outRef, spentTotal} or {status: \"no-winner\", reason, error, spentTotal}, with taskId, reused, state and the record. When the wait ends first, status is pending or running: poll delegation_status with the taskId. The manager, workers, provider and check are fixed by the server.", q.delegateTool)),
		add(tools.NewTool(ToolStatus, "The state and, once it ended, the result of one delegation (pending, running, completed, failed, cancelled or interrupted). Unknown spend is null.", q.statusTool)),
		add(tools.NewTool(ToolHistory, "Past delegations, newest first.", q.historyTool)),
		add(tools.NewTool(ToolFeedback, "Rate a delegation's result; the rating is kept with the delegation and shown in delegation_history.", q.feedbackTool)),
		add(tools.NewTool(ToolCancel, "Cancel a pending or running delegation.", q.cancelTool)),
	)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// answer turns a *Refusal into the tool's result.
func answer[T any](v T, err error) (any, error) {
	if r, ok := errors.AsType[*Refusal](err); ok {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// delegateWait is delegate's wait: MaxWaitSeconds when waitSeconds is
// absent.
func delegateWait(s *int) (time.Duration, error) {
	if s == nil {
		return MaxWaitSeconds * time.Second, nil
	}
	return checkWait(*s)
}

func checkWait(s int) (time.Duration, error) {
	if s < 0 || s > MaxWaitSeconds {
		return 0, refuse(CodeInvalidArguments, "/waitSeconds", "waitSeconds must be between 0 and %d", MaxWaitSeconds)
	}
	return time.Duration(s) * time.Second, nil
}

func (q *Queue) delegateTool(ctx context.Context, a DelegateArgs) (any, error) {
	return answer(q.delegate(ctx, a))
}

func (q *Queue) delegate(ctx context.Context, a DelegateArgs) (DelegateResult, error) {
	wait, err := delegateWait(a.WaitSeconds)
	if err != nil {
		return DelegateResult{}, err
	}
	s, err := q.Submit(ctx, Request{Intent: a.Intent, RunID: a.RunID, IdempotencyKey: a.IdempotencyKey, Budget: a.Budget})
	if err != nil {
		return DelegateResult{}, err
	}
	d := s.Delegation
	if wait > 0 && !d.State.Terminal() {
		if d, err = q.Wait(ctx, s.TaskID, wait); err != nil {
			return DelegateResult{}, err
		}
	}
	return Outcome(d, s.Reused), nil
}

func (q *Queue) statusTool(ctx context.Context, a StatusArgs) (any, error) {
	wait, err := checkWait(a.WaitSeconds)
	if err != nil {
		return answer(Delegation{}, err)
	}
	if wait == 0 {
		return answer(q.Get(ctx, a.TaskID))
	}
	return answer(q.Wait(ctx, a.TaskID, wait))
}

func (q *Queue) historyTool(ctx context.Context, a HistoryArgs) (any, error) {
	var since time.Time
	if a.Since != "" {
		var err error
		if since, err = time.Parse(time.RFC3339Nano, a.Since); err != nil {
			return answer(HistoryResult{}, refuse(CodeInvalidArguments, "/since", "since is not an RFC 3339 time such as 2026-01-02T15:04:05Z"))
		}
	}
	ds, err := q.History(ctx, HistoryOptions{Limit: a.Limit, Since: since})
	return answer(HistoryResult{Delegations: ds, Count: len(ds)}, err)
}

func (q *Queue) feedbackTool(ctx context.Context, a FeedbackArgs) (any, error) {
	d, err := q.AddFeedback(ctx, a.TaskID, Feedback{Score: a.Rating.Score, Label: a.Rating.Label, Notes: a.Rating.Notes, By: a.By})
	return answer(FeedbackResult{TaskID: d.TaskID, Recorded: err == nil, Ratings: len(d.Feedback)}, err)
}

func (q *Queue) cancelTool(ctx context.Context, a CancelArgs) (any, error) {
	d, effect, err := q.Cancel(ctx, a.TaskID, a.Reason)
	return answer(CancelResult{TaskID: d.TaskID, State: d.State, Effect: effect}, err)
}
