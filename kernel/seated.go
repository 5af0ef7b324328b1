package kernel

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// KindSeated is the kind of a seated run's record: the logical run and
// every seat stage it tried.
const KindSeated = "seated"

// ReasonQuota: every stage left to try refused for quota, the last with
// the *contract.QuotaRefusalError the run ends with.
const ReasonQuota = "quota-refused"

// Outcomes of one seat stage.
const (
	StageCompleted    = "completed"
	StageFailed       = "failed"
	StageQuotaRefused = "quota-refused"
	StageUnresolved   = "unresolved"
	// StageUnsupported: the stage's provider cannot honor the stage's
	// projection; the run was refused before any stage ran (PRF-07).
	StageUnsupported = "unsupported"
	// StageRunning: the stage is continuing a native session right now
	// (recorded before the continuation is sent). A record that still
	// says so after its run was interrupted names a stage whose process
	// died mid-turn; a resumption reads it as StageInterrupted.
	StageRunning = "running"
	// StageInterrupted: the process running the stage died mid-turn; a
	// resumption went on with the same stage.
	StageInterrupted = "interrupted"
)

// ContinuityFresh is a stage's continuity when it started a new session
// of its own: no earlier conversation is claimed to go on in it.
const ContinuityFresh = "fresh"

// AccountManager resolves a seat stage to the provider that runs it.
// The provider's account owner binds the stage's credential from the
// credential request each create and turn carry; the manager never hands
// a credential to the runtime (RG-10).
type AccountManager interface {
	ProviderFor(ctx context.Context, stage int, seat profile.Seat) (contract.Provider, error)
}

// AccountManagerFunc adapts a function to AccountManager.
type AccountManagerFunc func(ctx context.Context, stage int, seat profile.Seat) (contract.Provider, error)

// ProviderFor implements AccountManager.
func (f AccountManagerFunc) ProviderFor(ctx context.Context, stage int, seat profile.Seat) (contract.Provider, error) {
	return f(ctx, stage, seat)
}

// SeatedRequest is a run of a profile's seat chain.
type SeatedRequest struct {
	// Request is the run: Profile is the authored profile with its
	// seats, Stage the first stage to try, RunID the logical run's id
	// (each stage runs as RunID.stage-K). Its Provider is unused: the
	// Accounts resolve each stage's.
	Request
	Accounts AccountManager
	// ProfileSource, optional, says where the caller read Profile (the
	// CLI: the profile file's absolute path), recorded so that a process
	// resuming the run can read it again; it must name no account.
	ProfileSource string
	// FreshTask, when set, is the task of a stage that starts a fresh
	// session after the chain moved on to it — a session holding none of
	// what came before — for a caller whose Task assumes a session that
	// holds it (agentrt chat sends only the new turn to a session that
	// saw the earlier ones, and the whole conversation to one that did
	// not). "" is Task. The stage the walk starts at, and a stage that
	// continues a session natively, are given Task.
	FreshTask string
	// Node is the logical node the run is: the one agent that goes on,
	// stage after stage, across quota refusals and resumptions (RG-11).
	// A supervised worker's is its node id; "" is SeatedNode(RunID), so
	// a standalone run has one too. It is recorded for the run and for
	// every stage it tries; a resumption keeps the recorded one.
	Node string
}

// SeatedNode is the logical node id of a standalone seated run runID:
// derived from the id alone, so every process names the same node.
func SeatedNode(runID string) string { return "node-" + runID }

// StageAttempt is one seat stage a seated run tried, and how it ended.
type StageAttempt struct {
	Stage int `json:"stage"`
	// Node is the logical node the stage ran as: the seated run's, the
	// same for every stage (RG-11); "" in a record from before nodes
	// were recorded.
	Node     string `json:"node,omitzero"`
	Harness  string `json:"harness"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// RunID is the stage's exact run ("" when the stage never ran).
	RunID   string `json:"runId,omitzero"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitzero"`
	// RetryAfterMs is when the refusing provider said the quota may
	// allow the stage again.
	RetryAfterMs *int64 `json:"retryAfterMs,omitzero"`
	// Continuity says how the stage's conversation relates to the
	// logical agent's: ContinuityNative when it went on in the native
	// session the refused stage before left (the provider proved the
	// boundary and admitted a native continuation), ContinuityFresh when
	// it started a new session of its own, "" for a stage that reached
	// no environment (refused before, or at, its create).
	Continuity string `json:"continuity,omitzero"`
	// ContinuityReason says why a stage that followed a session it
	// could not prove continuity from started fresh.
	ContinuityReason string `json:"continuityReason,omitzero"`
	// NativeSessionID is the provider's own conversation id the stage's
	// run is bound to (NSO-02); "" when none was observed. Stages that
	// continued natively name the same one.
	NativeSessionID string `json:"nativeSessionId,omitzero"`
	// KeptRun is the exact run whose session the stage left for the next
	// one (a quota refusal broke its turn off): its environment is kept,
	// and a process resuming the seated run looks it up and continues
	// there (ResumeSeated). Ids only, never a secret.
	KeptRun *contract.ExactRunControlRef `json:"keptRun,omitzero"`
	// KeptCreated says the runtime created the environment of the
	// session the stage left or continues (its create was answered
	// CreationCreated): a process resuming the run finds it by lookup,
	// which carries no creation verdict, and this record is what proves
	// it may destroy it when the run ends (ENV-06).
	KeptCreated bool `json:"keptCreated,omitzero"`
	// Continuation is the native continuation a stage continuing a
	// session sent, recorded before it was sent (StageRunning): a process
	// resuming the run after this one died mid-turn sends the same
	// request again, which the provider answers replayed with the turn it
	// admitted, never a second continuation (RG-11, RG-12). Ids and
	// digests only, never a secret.
	Continuation *contract.NativeContextContinuationRequest `json:"continuation,omitzero"`
}

// SeatedRecord is a seated run's document.
type SeatedRecord struct {
	Task string `json:"task"`
	// Node is the run's logical node (SeatedRequest.Node), which a
	// resumption keeps; "" in a record from before nodes were recorded.
	Node   string         `json:"node,omitzero"`
	Stages []StageAttempt `json:"stages"`
	// DeadlineUnixMs is the run's original deadline (Unix milliseconds),
	// which a resumed run keeps (RG-11); nil when it had none.
	DeadlineUnixMs *int64 `json:"deadlineUnixMs,omitzero"`
	// ResumeOf names the interrupted seated run this one resumes; its
	// stages open this record's.
	ResumeOf string    `json:"resumeOf,omitzero"`
	Terminal *Terminal `json:"terminal,omitzero"`
	// CancelRequested is a cancel request another process recorded.
	CancelRequested *CancelRequest `json:"cancelRequested,omitzero"`
	// TeardownUnconfirmed is SeatedResult.TeardownUnconfirmed, recorded
	// with the run's end.
	TeardownUnconfirmed string `json:"teardownUnconfirmed,omitzero"`
	// ProfileDigest is the identity of the authored profile the run
	// runs: a resumption with another profile is refused. The profile
	// itself is never recorded — its seat selectors name accounts, which
	// agentrt never records — only ProfileSource, where the caller read
	// it, so a resumption can read it again and check it against this
	// digest. Both are absent from a run recorded before they were.
	ProfileDigest string `json:"profileDigest,omitzero"`
	ProfileSource string `json:"profileSource,omitzero"`
}

// authoredDigest is p's identity, as a seated record keeps it.
func authoredDigest(p *profile.Profile) (string, error) {
	d, err := profile.Digest(p)
	if err != nil {
		return "", &OptionsError{Field: "Profile", Problem: "the profile has no identity: " + err.Error()}
	}
	return d, nil
}

// DecodeSeatedRecord reads a seated run's document.
func DecodeSeatedRecord(doc canonjson.Value) (*SeatedRecord, error) {
	var r SeatedRecord
	if err := canonjson.FromValue(doc, &r); err != nil {
		return nil, fmt.Errorf("kernel: the run document is not a seated run's record: %w", err)
	}
	return &r, nil
}

// SeatedResult is what a seated run did.
type SeatedResult struct {
	// RunID is the logical run's id: the same for every stage.
	RunID  string
	Stages []StageAttempt
	// Final is the result of the last stage that ran; nil when none did.
	// Its usage is that stage's only.
	Final *Result
	// Usage is what every stage spent together (SeatedUsage): the run's
	// spend. Unknown (the zero Usage) when a stage's record could not be
	// read.
	Usage ledger.Usage
	// TeardownUnconfirmed says which environments of the run — a stage's
	// own, or a session a refused stage left that no stage took over —
	// could not be confirmed destroyed (Destroy failed or did not answer
	// within the cleanup timeout), each as Result.TeardownUnconfirmed
	// says it, joined by "; ": they may still exist and cost, and
	// whoever reports the run should say so. Empty when every one was
	// destroyed or was not the run's to destroy. The run's outcome does
	// not change.
	TeardownUnconfirmed string
}

// ExecuteSeated runs a profile's seat chain (seed 000's seats; PRF-03,
// PRF-07, PRF-11, RG-07..RG-11). Starting at req.Stage, it resolves the
// stage's provider through Accounts and runs the stage's projection there
// as one exact run, the stage's credential request on its create and
// turn. A typed quota refusal (*contract.QuotaRefusalError) moves on to
// the next authored stage, under the same context — the original
// deadline —, the same logical run id and the same logical node
// (SeatedRequest.Node, recorded for the run and every stage); every other outcome ends the
// run: there is no implicit failover, and no provider outside the chain
// is ever asked.
//
// A refusal that broke a turn off part way names the run (its Run): the
// session holds what ran, so the environment is kept, and the next stage
// continues that native session when its provider is the one holding it
// and proves continuity — it opens the session, proves its boundary
// bound to exactly that run and sends a native continuation of the task
// under the next stage's model and credential request, with no copied
// history (RG-08, RG-11; recorded ContinuityNative with the same native
// session id). Where continuity cannot be proven the stage starts fresh
// in a new environment, recorded ContinuityFresh with the reason, and
// the kept environment is destroyed. A refusal before anything was
// admitted leaves no session to keep: the next stage starts fresh.
//
// The logical run is recorded (kind KindSeated) with every stage tried
// and why it moved on; each stage's run is recorded as usual. A stage
// whose provider cannot be resolved refuses the run before any stage
// runs — every stage from req.Stage on is resolved first (PRF-07) — with
// a *RunError (ErrRefused) caused by a *SeatUnresolvedError naming the
// stage; so does a stage whose provider cannot honor its projection,
// with a *StageUnsupportedError naming the stage and every missing
// capability (ProjectStage). Quota refusals on every stage left end the
// run with ReasonQuota.
func ExecuteSeated(ctx context.Context, req SeatedRequest) (*SeatedResult, error) {
	lo, err := checkSeated(&req)
	if err != nil {
		return nil, err
	}
	if req.RunID == "" {
		req.RunID = NewID("seated")
	}
	lo.RunID = req.RunID
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if req.Node == "" {
		req.Node = SeatedNode(req.RunID)
	}
	rec := SeatedRecord{Task: req.Task, Node: req.Node, Stages: []StageAttempt{}}
	if rec.ProfileDigest, err = authoredDigest(req.Profile); err != nil {
		return nil, err
	}
	rec.ProfileSource = req.ProfileSource
	if d, ok := ctx.Deadline(); ok {
		ms := d.UnixMilli()
		rec.DeadlineUnixMs = &ms
	}
	l, err := startLife(ctx, lo, seatedDoc(rec), cancel)
	if err != nil {
		return nil, err
	}
	defer l.release()
	return walkSeats(ctx, req, lo, l, rec, req.Stage, nil)
}

// checkSeated refuses a seated request that cannot be honored, naming
// each field, and returns its record options.
func checkSeated(req *SeatedRequest) (lifeOptions, error) {
	var errs optionErrors
	if req.Accounts == nil {
		errs.add("Accounts", "an account manager is required: it resolves each stage's provider")
	}
	if req.Profile == nil {
		errs.add("Profile", "a profile is required")
	} else if len(req.Profile.Seats) == 0 {
		errs.add("Profile", "the profile has no seats (use Execute)")
	} else if req.Stage < 0 || req.Stage >= len(req.Profile.Seats) {
		errs.add("Stage", "stage %d does not exist (the profile has %d)", req.Stage, len(req.Profile.Seats))
	}
	lo := lifeOptions{Store: req.Store, Kind: KindSeated, LeaseTTL: req.LeaseTTL, CleanupTimeout: req.CleanupTimeout, Logger: req.Logger}
	lo.check(&errs)
	return lo, errs.err()
}

// walkSeats runs the seat chain from stage k0 under the seated run's
// record l, whose document rec already names the stages tried before
// (a resumed run's). left, when set, is the exact run whose session the
// stage before k0 left in another process: stage k0 looks its
// environment up through its own provider (a cold lookup) and continues
// there when continuity is proven.
func walkSeats(ctx context.Context, req SeatedRequest, lo lifeOptions, l *life, rec SeatedRecord, k0 int, left *StageAttempt) (*SeatedResult, error) {
	res := &SeatedResult{RunID: req.RunID}
	status, reason, detail, runErr := store.StatusFailed, "", "", error(nil)
	// kept is the session a refused stage left for the next one; the
	// seated run destroys it once no stage takes it over. unconfirmed
	// are the teardowns not confirmed: the kept environments' and each
	// stage's own.
	var kept *keptSession
	var unconfirmed []string
	teardown := func(why string) {
		if why != "" {
			unconfirmed = append(unconfirmed, why)
		}
	}
	if k0 >= len(req.Profile.Seats) && left != nil {
		// The run died after its last stage's refusal was recorded.
		reason, detail = ReasonQuota, left.Reason
		runErr = &contract.QuotaRefusalError{Provider: left.Provider, Stage: left.Stage, Message: "recorded before the run was resumed: " + left.Reason}
	}
	// Every stage the walk may reach is resolved before the first one
	// runs (PRF-07): a stage no account can serve refuses the run before
	// anything is created, sent or reserved, rather than after the stages
	// before it spent. The walk runs each stage on the provider resolved
	// here; the manager is asked once per stage (it binds no credential:
	// each create and turn carries the stage's credential request).
	providers, unresolved := resolveSeats(ctx, req, k0)
	last := len(req.Profile.Seats)
	if unresolved != nil {
		unresolved.attempt.Node = rec.Node
		rec.Stages = append(rec.Stages, unresolved.attempt)
		reason, detail, runErr = ReasonRefused, unresolved.err.Error(), unresolved.err
		if ce := contextError(ctx, req.RunID); ce != nil {
			// The caller's context ended while the manager was asked:
			// the run was cancelled or timed out, not refused.
			status, reason, detail, runErr = ce.Status, ce.Reason, ce.Detail, ce.Cause
		}
		last = k0 // no stage runs
	} else if err := CheckStages(ctx, req.Profile, k0, providers); err != nil {
		// Every stage the walk may reach must be one its provider can
		// honor (PRF-07): a later stage's missing capability refuses the
		// run before an earlier stage spends.
		at := StageAttempt{Node: rec.Node, Outcome: StageUnsupported, Reason: err.Error()}
		reason, detail, runErr = ReasonRefused, err.Error(), err
		if su, ok := errors.AsType[*StageUnsupportedError](err); ok {
			seat := req.Profile.Seats[su.Stage]
			at.Stage, at.Harness, at.Provider, at.Model = su.Stage, string(seat.Harness), seat.Provider, seat.Model
		} else {
			// A provider that cannot say what it honors is failing, not
			// refusing.
			at.Stage, at.Outcome, reason = k0, StageFailed, ReasonProvider
		}
		rec.Stages = append(rec.Stages, at)
		if ce := contextError(ctx, req.RunID); ce != nil {
			status, reason, detail, runErr = ce.Status, ce.Reason, ce.Detail, ce.Cause
		}
		last = k0 // no stage runs
	}
	for k := k0; k < last; k++ {
		seat := req.Profile.Seats[k]
		at := StageAttempt{Stage: k, Node: rec.Node, Harness: string(seat.Harness), Provider: seat.Provider, Model: seat.Model}
		provider := providers[k-k0]
		lookup := ""
		if k == k0 && left != nil && left.KeptRun != nil {
			kept, lookup = lookUpKept(ctx, provider, left)
		}
		stage := req.Request
		stage.Provider, stage.Stage, stage.RunID = provider, k, fmt.Sprintf("%s.stage-%d", req.RunID, k)
		ss := &seatStage{from: kept}
		if k > k0 || left != nil {
			ss.freshTask = req.FreshTask
		}
		stage.seat = ss
		at.RunID = stage.RunID
		ss.sending = func(c *contract.NativeContextContinuationRequest, from *keptSession) {
			// Recorded before it is sent: a process resuming this run
			// after this one died mid-turn sends the same request again.
			p := at
			p.Outcome, p.Continuity, p.Continuation = StageRunning, ContinuityNative, c
			p.KeptCreated, p.NativeSessionID = from.created, from.nativeSessionID
			r := rec
			r.Stages = append(rec.Stages[:len(rec.Stages):len(rec.Stages)], p)
			if err := l.updateDoc(seatedDoc(r)); err != nil {
				l.log.Warn("recording a seat stage's native continuation", "run", req.RunID, "err", err)
			}
		}
		out, err := Execute(ctx, stage)
		res.Final = out
		if out != nil {
			teardown(out.TeardownUnconfirmed)
		}
		if kept != nil && ss.continuity != ContinuityNative {
			// The stage did not take the session over: nothing will
			// continue it.
			teardown(destroyKept(ctx, kept, lo.CleanupTimeout, l.log))
		}
		kept = nil
		if ss.keepEnv {
			kept = ss.kept
		}
		at.Continuity, at.ContinuityReason = ss.continuity, ss.reason
		if at.Continuity == "" && out != nil && out.EnvironmentID != "" {
			at.Continuity, at.ContinuityReason = ContinuityFresh, lookup
		}
		if ss.keepEnv && ss.kept != nil {
			run := ss.kept.run
			at.KeptRun, at.KeptCreated = &run, ss.kept.created
		}
		if out != nil {
			at.NativeSessionID = out.NativeSessionID
		}
		switch EndStage(&at, err) {
		case StageCompleted:
			status, reason, detail, runErr = store.StatusCompleted, "", "", nil
		case StageQuotaRefused:
			reason, detail, runErr = ReasonQuota, at.Reason, err
		default:
			reason, detail, runErr = ReasonProvider, fmt.Sprintf("stage %d: %v", k, err), err
			status = store.StatusFailed
			if re, ok := errors.AsType[*RunError](err); ok {
				status, reason = re.Status, re.Reason
			}
		}
		rec.Stages = append(rec.Stages, at)
		if at.Outcome != StageQuotaRefused {
			break
		}
		if err := l.updateDoc(seatedDoc(rec)); err != nil {
			l.log.Warn("recording a seated run's stage", "run", req.RunID, "err", err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	// No stage is left to take a kept session over.
	teardown(destroyKept(ctx, kept, lo.CleanupTimeout, l.log))
	kept = nil
	if len(unconfirmed) > 0 {
		res.TeardownUnconfirmed = strings.Join(unconfirmed, "; ")
		rec.TeardownUnconfirmed = res.TeardownUnconfirmed
	}
	res.Stages = rec.Stages
	if u, err := SeatedUsage(context.WithoutCancel(ctx), req.Store, rec.Stages); err != nil {
		l.log.Warn("reading the spend of a seated run's stages", "run", req.RunID, "err", err)
	} else {
		res.Usage = u
	}
	if status != store.StatusCompleted {
		if ce := contextError(ctx, req.RunID); ce != nil && reason == ReasonQuota {
			status, reason, detail, runErr = ce.Status, ce.Reason, ce.Detail, ce.Cause
		}
	}
	rec.Terminal = &Terminal{Status: status, Reason: reason, Detail: detail}
	if _, err := l.end(status, func(lost *LeaseLostError) canonjson.Value {
		if lost != nil {
			r := rec
			r.Terminal = &Terminal{Status: store.StatusInterrupted, Reason: ReasonLeaseLost, Detail: lost.Error()}
			return seatedDoc(r)
		}
		return seatedDoc(rec)
	}); err != nil {
		if lost, ok := errors.AsType[*LeaseLostError](err); ok {
			return res, &RunError{RunID: req.RunID, Status: store.StatusInterrupted, Reason: ReasonLeaseLost, Detail: lost.Error(), Cause: lost}
		}
		return res, err
	}
	if status == store.StatusCompleted {
		return res, nil
	}
	return res, &RunError{RunID: req.RunID, Status: status, Reason: reason, Detail: detail, Cause: runErr}
}

// EndStage records in at how seat stage at.Stage ended with err (nil:
// it completed) and returns the outcome: StageCompleted, StageFailed,
// or StageQuotaRefused — the one outcome on which a seat chain moves on
// to the next authored stage (PRF-11; there is no implicit failover).
// A quota refusal's retry-after is recorded, and its Stage is set to
// at.Stage: the runtime knows which stage it ran, and a provider that
// left Stage unset (0) or -1 is not believed over it. Every walk of a
// seat chain — ExecuteSeated's, a retained run's — ends its stages here.
func EndStage(at *StageAttempt, err error) string {
	var quota *contract.QuotaRefusalError
	switch {
	case err == nil:
		at.Outcome, at.Reason = StageCompleted, ""
	case errors.As(err, &quota):
		quota.Stage = at.Stage
		q := *quota
		at.Outcome, at.Reason = StageQuotaRefused, q.Error()
		if quota.RetryAfter != nil {
			ms := quota.RetryAfter.Milliseconds()
			at.RetryAfterMs = &ms
		}
	default:
		at.Outcome, at.Reason = StageFailed, err.Error()
	}
	return at.Outcome
}

// SeatUnresolvedError is a seat stage the account manager resolved no
// provider for. A seated run refuses with it (the *RunError's cause,
// ErrRefused) before any stage runs (PRF-07).
type SeatUnresolvedError struct {
	// Stage is the stage's index in the profile's seats; Pointer its
	// JSON pointer in the profile ("/seats/1").
	Stage   int
	Pointer string
	Model   string
	// Provider is the seat's provider name.
	Provider string
	// Err is the account manager's error.
	Err error
}

func (e *SeatUnresolvedError) Error() string {
	return fmt.Sprintf("stage %d (%s: %s on %s): the account manager resolved no provider: %v; give the seat an account that can serve it, or start the run at a later stage",
		e.Stage, e.Pointer, e.Model, e.Provider, e.Err)
}

// Unwrap returns the account manager's error.
func (e *SeatUnresolvedError) Unwrap() error { return e.Err }

// unresolvedSeat is the first stage resolveSeats could not resolve: the
// attempt the record names and the refusal.
type unresolvedSeat struct {
	attempt StageAttempt
	err     *SeatUnresolvedError
}

// resolveSeats asks the account manager for the provider of every stage
// from k0 on, in order, stopping at the first it cannot resolve.
// providers[i] is stage k0+i's.
func resolveSeats(ctx context.Context, req SeatedRequest, k0 int) ([]contract.Provider, *unresolvedSeat) {
	seats := req.Profile.Seats
	providers := make([]contract.Provider, 0, max(len(seats)-k0, 0))
	for k := k0; k < len(seats); k++ {
		seat := seats[k]
		p, err := req.Accounts.ProviderFor(ctx, k, seat)
		if err == nil && p == nil {
			err = errors.New("no provider")
		}
		if err != nil {
			at := StageAttempt{Stage: k, Harness: string(seat.Harness), Provider: seat.Provider, Model: seat.Model, Outcome: StageUnresolved, Reason: err.Error()}
			return nil, &unresolvedSeat{attempt: at, err: &SeatUnresolvedError{Stage: k, Pointer: fmt.Sprintf("/seats/%d", k), Model: seat.Model, Provider: seat.Provider, Err: err}}
		}
		providers = append(providers, p)
	}
	return providers, nil
}

func seatedDoc(rec SeatedRecord) canonjson.Value {
	// Every member is a string, a number or a struct of them: it always
	// has a JSON form.
	v, _ := canonjson.ToValue(rec)
	return v
}
