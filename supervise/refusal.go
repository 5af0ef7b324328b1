package supervise

import (
	"errors"
	"strconv"
)

// Code is a spawn refusal's spec code (§3.6 "Rejections" and
// "Continuity").
type Code string

// The refusal codes of §3.6.
const (
	// CodeUSDUnbudgeted: more than $0 was requested from a root (or a
	// nested manager's grant) without a dollar ceiling; retrying smaller
	// never helps (Refusal.Hint says so).
	CodeUSDUnbudgeted Code = "usd-unbudgeted"
	// CodeBudgetExhausted: the merged reservation does not fit what is
	// free, the dollar balance is unknowable, or the deadline passed.
	CodeBudgetExhausted Code = "budget-exhausted"
	// CodeDepthExceeded: the child would sit deeper than MaxDepth.
	CodeDepthExceeded Code = "depth-exceeded"
	// CodeDuplicateKey: the key's earlier spawn is still live.
	CodeDuplicateKey Code = "duplicate-key"
	// CodeInDoubt: the key's earlier spawn started and its outcome is
	// unknown; recover that exact execution first.
	CodeInDoubt Code = "in-doubt"
	// CodeInvalidIdentity: the request names no profile, an unknown or
	// settled parent, a malformed key or label, or a model outside
	// AllowedModels; or it authors a profile that is invalid (cause
	// "profile-invalid") or not accepted (cause "authored-profile").
	CodeInvalidIdentity Code = "invalid-identity"
	// CodeKeyConflict: the key was used before with a different request.
	CodeKeyConflict Code = "key-conflict"
	// CodeMaxLiveWorkers: MaxLiveWorkers nodes are live; checked before
	// any reservation.
	CodeMaxLiveWorkers Code = "max-live-workers"
	// CodeScopeAborted: the scope was aborted.
	CodeScopeAborted Code = "scope-aborted"
	// CodeScopeSettled: the driver already returned (Close).
	CodeScopeSettled Code = "scope-settled"
	// CodePreflightRefused: AuthorizeSpawn, Preflight or request
	// validation refused; Cause says which.
	CodePreflightRefused Code = "preflight-refused"
	// CodeResumeNoPrior: continuity resume with no settled worker to
	// re-attach to.
	CodeResumeNoPrior Code = "resume-no-prior"
	// CodeResumeWhileLive: continuity resume while a worker of that label
	// is live (steer is the live channel).
	CodeResumeWhileLive Code = "resume-while-live"
	// CodeResumeWithKey: continuity resume combined with an idempotency
	// key.
	CodeResumeWithKey Code = "resume-with-key"
)

// Refusal is a refused spawn. A refusal changes nothing in the scope or
// its pool. Like a reply it carries Live and FreeSlots.
type Refusal struct {
	Code Code
	// Cause refines Code (preflight-refused: "not-authorized",
	// "preflight", "invalid-budget"; budget-exhausted: the ledger channel,
	// "usd-tainted" or "deadline").
	Cause string
	// Detail is a human-readable explanation.
	Detail string
	// Live is the number of live nodes; FreeSlots is nil when
	// MaxLiveWorkers is not set.
	Live      int
	FreeSlots *int
	// Shortfall, on a budget-exhausted refusal, names the channel that
	// did not fit, what the spawn asked and what was free, so the driver
	// can size its next request in one step. Nil on every other refusal
	// and on a deadline refusal.
	Shortfall *Shortfall
	// Hint, on a usd-unbudgeted refusal, says what will be admitted
	// instead: no maxUsd at all, since no smaller one ever fits.
	Hint string
	// Err is the underlying error (a ledger error or a hook's), if any.
	Err error
}

// Shortfall is the channel a refused reservation fell short on, in the
// units spawn_worker's budget spells: whole tokens, iterations and
// resource units, and US dollars (as maxUsd is) for "usd".
type Shortfall struct {
	// Channel is "tokens", "iterations", "usd" or "resource:<name>".
	Channel string `json:"channel"`
	// Requested is what the spawn's merged budget asked of the channel.
	Requested float64 `json:"requested"`
	// Free is what the pool had free on it when the spawn was refused:
	// a snapshot (running workers return what they do not spend, and
	// the driver's own turns draw tokens and dollars from the same pool).
	Free float64 `json:"free"`
	// ClosedByUnknownSpend: work whose dollar cost went unreported ran
	// under the dollar ceiling, so the channel admits nothing for the
	// rest of the run, at any size.
	ClosedByUnknownSpend bool `json:"closedByUnknownSpend,omitzero"`
}

func (r *Refusal) Error() string {
	s := "supervise: spawn refused: " + string(r.Code)
	if r.Cause != "" {
		s += " (" + r.Cause + ")"
	}
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	s += " [live " + strconv.Itoa(r.Live)
	if r.FreeSlots != nil {
		s += ", free slots " + strconv.Itoa(*r.FreeSlots)
	}
	return s + "]"
}

// Unwrap returns the underlying error.
func (r *Refusal) Unwrap() error { return r.Err }

// CodeOf returns the refusal code carried by err, if err is or wraps a
// *Refusal.
func CodeOf(err error) (Code, bool) {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code, true
	}
	return "", false
}
