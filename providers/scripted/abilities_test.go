package scripted_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
)

// abilityScript adds to the conformance turns a short slow turn and a
// request whose timeout applies its default.
const abilityScript = `{"turns":[
 {"match":"slow","repeat":true,"steps":[{"text":"slow"},{"delayMs":80},{"text":" done"}]},
 {"match":"defaulted","repeat":true,"steps":[
  {"interaction":{"request":{"id":"go","kind":"question","title":"Go?","timeoutMs":1,"onTimeout":"default",
   "default":{"outcome":"declined"},"answerSpec":{"fields":[{"type":"boolean","name":"go","label":"Go"}]}}}},
  {"text":"went on"}]},
 {"match":"providertest: ask","repeat":true,"steps":[
  {"interaction":{"request":{"id":"colour","kind":"question","title":"Which colour?",
   "answerSpec":{"fields":[{"type":"select","name":"colour","label":"Colour","required":true,"options":[{"value":"red","label":"Red"}]}]}}}},
  {"text":"thanks"}]},
 {"match":"providertest: live","repeat":true,"steps":[{"text":"working"},{"delayMs":60000}]},
 {"repeat":true,"steps":[{"text":"Hello."}]}
],"exec":[
 {"match":"make test","exitCode":2,"stdout":"ran\n","stderr":"1 failed\n"},
 {"match":"/^git (status|diff)$/","stdout":"clean\n"}
]}`

type fixture struct {
	t   *testing.T
	ctx context.Context
	p   *scripted.Provider
	env contract.Environment
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	p := scripted.New(mustScript(t, abilityScript), scripted.Options{})
	env, err := p.Create(ctx, &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Destroy(context.Background()) })
	return &fixture{t: t, ctx: ctx, p: p, env: env}
}

func (f *fixture) dispatch(in *contract.TurnInput) (*contract.SessionRef, contract.Session) {
	f.t.Helper()
	ref, err := f.env.(contract.Dispatcher).Dispatch(f.ctx, in)
	if err != nil {
		f.t.Fatal(err)
	}
	s, err := f.env.(contract.SessionOpener).Session(f.ctx, ref.ID, ref.ControlRef)
	if err != nil {
		f.t.Fatal(err)
	}
	return ref, s
}

func eventsOf(t *testing.T, seq func(func(contract.EnvironmentEvent, error) bool)) []contract.EnvironmentEvent {
	t.Helper()
	var out []contract.EnvironmentEvent
	for e, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func terminalOf(events []contract.EnvironmentEvent) contract.TerminalKind {
	for _, e := range events {
		if k, ok := contract.EnvironmentEventTerminal(e); ok {
			return k
		}
	}
	return ""
}

func exact(t *testing.T, r *contract.RunControlRef) contract.ExactRunControlRef {
	t.Helper()
	x, ok := exactOf(r)
	if !ok {
		t.Fatalf("control reference %+v is not exact", r)
	}
	return x
}

// Spec A.3, C.1 (turnIdempotency): a turn id admits one turn; the same
// turn again reattaches to its run, a different one is refused before any
// effect.
func TestTurnIdempotency(t *testing.T) {
	f := newFixture(t)
	in := &contract.TurnInput{Prompt: ptr("hi"), TurnID: ptr("turn-1")}
	first, s := f.dispatch(in)
	if _, err := s.Result(f.ctx); err != nil {
		t.Fatal(err)
	}
	turns := f.p.Turns()
	again, err := f.env.(contract.Dispatcher).Dispatch(f.ctx, &contract.TurnInput{Prompt: ptr("hi"), TurnID: ptr("turn-1"), Detach: ptr(true)})
	if err != nil || again.ID != first.ID || !contract.SameRunControlRef(*again.ControlRef, *first.ControlRef) {
		t.Errorf("the same turn again: %+v, %v; want the first run %+v", again, err, first)
	}
	streamed := eventsOf(t, f.env.Stream(f.ctx, &contract.TurnInput{Prompt: ptr("hi"), TurnID: ptr("turn-1")}))
	if terminalOf(streamed) != contract.TerminalCompleted {
		t.Error("streaming an admitted turn id does not follow its run to the end")
	}
	if _, err := f.env.(contract.Dispatcher).Dispatch(f.ctx, &contract.TurnInput{Prompt: ptr("other"), TurnID: ptr("turn-1")}); !errors.Is(err, scripted.ErrTurnConflict) {
		t.Errorf("a different turn under a used turn id: %v, want ErrTurnConflict", err)
	}
	if f.p.Turns() != turns {
		t.Errorf("replays and refusals played %d turns", f.p.Turns()-turns)
	}
}

// A session runs one turn at a time; a control reference reattaches to
// its run; a cursor must name an event of the run.
func TestSessionsAndRuns(t *testing.T) {
	f := newFixture(t)
	ref, s := f.dispatch(&contract.TurnInput{Prompt: ptr("slow"), SessionID: ptr("s1")})
	if _, err := f.env.(contract.Dispatcher).Dispatch(f.ctx, &contract.TurnInput{Prompt: ptr("hi"), SessionID: ptr("s1")}); !errors.Is(err, scripted.ErrSessionBusy) {
		t.Errorf("a second turn into a busy session: %v, want ErrSessionBusy", err)
	}
	if st, ok, _ := s.Status(f.ctx); !ok || st != contract.SessionRunning {
		t.Errorf("a live run's session status %q", st)
	}
	followed := eventsOf(t, f.env.Stream(f.ctx, &contract.TurnInput{ControlRef: ref.ControlRef}))
	replayed := eventsOf(t, s.Events(f.ctx, "", ""))
	if len(followed) != len(replayed) || terminalOf(followed) != contract.TerminalCompleted {
		t.Errorf("reattaching by control reference saw %d events, the session %d", len(followed), len(replayed))
	}
	res, err := s.Result(f.ctx)
	if err != nil || !res.Success || res.Text != "slow done" || res.SessionID == nil || *res.SessionID != "s1" {
		t.Errorf("result %+v, %v", res, err)
	}
	for _, err := range s.Events(f.ctx, "no-such-event", "") {
		if !errors.Is(err, scripted.ErrUnknownEvent) {
			t.Errorf("an unknown cursor: %v, want ErrUnknownEvent", err)
		}
	}
	for _, err := range s.Events(f.ctx, "", "no-such-execution") {
		if !errors.Is(err, scripted.ErrUnknownRun) {
			t.Errorf("an unknown execution: %v, want ErrUnknownRun", err)
		}
	}
	// Prompt continues the session with a new run and binds it.
	next, err := s.Prompt(f.ctx, &contract.TurnInput{Prompt: ptr("hi")})
	if err != nil || !next.Success {
		t.Fatalf("Prompt: %+v, %v", next, err)
	}
	if s.ControlRef().RunID == ref.ControlRef.RunID {
		t.Error("the session is not bound to the prompted run")
	}
	if _, err := f.env.(contract.SessionOpener).Session(f.ctx, "no-such-session", nil); !errors.Is(err, scripted.ErrUnknownSession) {
		t.Errorf("an unknown session: %v", err)
	}
	if _, err := f.env.(contract.SessionOpener).Session(f.ctx, "s1", &contract.RunControlRef{RunID: ref.ControlRef.RunID, Provider: "scripted",
		EnvironmentID: f.env.ID(), RequestDigest: ptr("sha256:" + strings.Repeat("0", 64))}); !errors.Is(err, scripted.ErrCompetingRun) {
		t.Errorf("a reference with another admission digest: %v, want ErrCompetingRun (CTL-03)", err)
	}
	// Turns carrying a transfer or a continuation use their own operations.
	for _, in := range []*contract.TurnInput{{NativeContinuation: &contract.NativeContextContinuationRequest{}}} {
		if _, err := f.env.(contract.Dispatcher).Dispatch(f.ctx, in); !errors.Is(err, contract.ErrUnsupported) {
			t.Errorf("a turn carrying a continuation: %v", err)
		}
	}
}

// INT-06, INT-07: an omitted posture keeps the provider's default (ask);
// an empty one enables no kind, so the step is skipped.
func TestInteractionPosture(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name    string
		posture contract.RequestedInteractions
		asks    bool
	}{
		{"empty", contract.RequestedInteractions{}, false},
		{"other kind", contract.RequestedInteractions{"permission": true}, false},
		{"enabled", contract.RequestedInteractions{"question": true}, true},
		{"omitted", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			for e, err := range f.env.Stream(f.ctx, &contract.TurnInput{Prompt: ptr("providertest: ask"), Interactions: tc.posture}) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Normalized != nil && e.Normalized.Interaction != nil {
					asked = true
					req := e.Normalized.Interaction.Request
					cmd, err := contract.NewInteractionResponseCommand("op-"+tc.name, req.ResponseBinding(),
						contract.InteractionResponse{ID: req.ID, Outcome: contract.InteractionOutcomeAccepted, Data: contract.InteractionData{"colour": contract.ChoiceAnswer("red")}})
					if err != nil {
						t.Fatal(err)
					}
					if ack, err := f.env.(contract.InteractionResponder).RespondToInteraction(f.ctx, cmd); err != nil || ack.Status != contract.InteractionAckAccepted {
						t.Fatalf("answer: %+v, %v", ack, err)
					}
				}
			}
			if asked != tc.asks {
				t.Errorf("asked %v, want %v", asked, tc.asks)
			}
		})
	}
}

// A timeout with onTimeout "default" applies the default and the turn
// goes on; a later answer is expired. A response echoing answer values in
// its problems is redacted (INT-11).
func TestInteractionTimeoutAndRedaction(t *testing.T) {
	f := newFixture(t)
	var req contract.InteractionRequest
	events := eventsOf(t, func(yield func(contract.EnvironmentEvent, error) bool) {
		for e, err := range f.env.Stream(f.ctx, &contract.TurnInput{Prompt: ptr("defaulted")}) {
			if e.Normalized != nil && e.Normalized.Interaction != nil {
				req = e.Normalized.Interaction.Request
			}
			if !yield(e, err) {
				return
			}
		}
	})
	if terminalOf(events) != contract.TerminalCompleted {
		t.Fatalf("a defaulted interaction did not let the turn complete: %+v", events)
	}
	respond := f.env.(contract.InteractionResponder).RespondToInteraction
	cmd, _ := contract.NewInteractionResponseCommand("late", req.ResponseBinding(),
		contract.InteractionResponse{ID: req.ID, Outcome: contract.InteractionOutcomeAccepted, Data: contract.InteractionData{"go": contract.BooleanAnswer(true)}})
	if ack, err := respond(f.ctx, cmd); err != nil || ack.Status != contract.InteractionAckExpired {
		t.Errorf("an answer after the default applied: %+v, %v; want expired", ack, err)
	}

	next, stop := pull(f.env.Stream(f.ctx, &contract.TurnInput{Prompt: ptr("providertest: ask")}))
	defer stop()
	for {
		e, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("no interaction: %v", err)
		}
		if e.Normalized != nil && e.Normalized.Interaction != nil {
			req = e.Normalized.Interaction.Request
			break
		}
	}
	secret := "my-sekret-colour-value"
	bad, _ := contract.NewInteractionResponseCommand("bad", req.ResponseBinding(),
		contract.InteractionResponse{ID: req.ID, Outcome: contract.InteractionOutcomeAccepted, Data: contract.InteractionData{"colour": contract.ChoiceAnswer(secret)}})
	ack, err := respond(f.ctx, bad)
	if err != nil || ack.Status != contract.InteractionAckInvalidResponse || ack.Message == nil {
		t.Fatalf("an invalid option: %+v, %v", ack, err)
	}
	if strings.Contains(*ack.Message, secret) {
		t.Errorf("the acknowledgement repeats the answer: %s", *ack.Message)
	}
	// An invalid command is refused, not acknowledged.
	tampered := *bad
	tampered.CommandDigest = "sha256:" + strings.Repeat("0", 64)
	if _, err := respond(f.ctx, &tampered); err == nil {
		t.Error("a command whose digest does not match was acknowledged")
	}
}

func pull(seq func(func(contract.EnvironmentEvent, error) bool)) (func() (contract.EnvironmentEvent, error, bool), func()) {
	ch := make(chan struct {
		e   contract.EnvironmentEvent
		err error
	})
	done := make(chan struct{})
	go func() {
		defer close(ch)
		for e, err := range seq {
			select {
			case ch <- struct {
				e   contract.EnvironmentEvent
				err error
			}{e, err}:
			case <-done:
				return
			}
		}
	}()
	return func() (contract.EnvironmentEvent, error, bool) {
			v, ok := <-ch
			return v.e, v.err, ok
		}, func() {
			select {
			case <-done:
			default:
				close(done)
			}
		}
}

// Destroying an environment cancels its live runs and their outstanding
// interactions.
func TestDestroyCancelsRuns(t *testing.T) {
	f := newFixture(t)
	_, s := f.dispatch(&contract.TurnInput{Prompt: ptr("providertest: ask")})
	var req contract.InteractionRequest
	for e, err := range s.Events(f.ctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		if e.Normalized != nil && e.Normalized.Interaction != nil {
			req = e.Normalized.Interaction.Request
			break
		}
	}
	f.env.Destroy(f.ctx)
	events := eventsOf(t, s.Events(f.ctx, "", ""))
	if terminalOf(events) != contract.TerminalCancelled {
		t.Errorf("a destroyed environment's run ended %q", terminalOf(events))
	}
	cmd, _ := contract.NewInteractionResponseCommand("after-destroy", req.ResponseBinding(),
		contract.InteractionResponse{ID: req.ID, Outcome: contract.InteractionOutcomeDeclined})
	if ack, err := s.(contract.InteractionResponder).RespondToInteraction(f.ctx, cmd); err != nil || ack.Status != contract.InteractionAckCancelled {
		t.Errorf("answering a destroyed run's request: %+v, %v; want cancelled", ack, err)
	}
	if _, err := f.env.(contract.CommandExecutor).Exec(f.ctx, "echo hi", nil); !errors.Is(err, scripted.ErrDestroyed) {
		t.Errorf("exec after destroy: %v", err)
	}
}

// Exec answers from the script's rules, then the built-ins, with no
// process; anything else is not found.
func TestExec(t *testing.T) {
	f := newFixture(t)
	if err := f.env.(contract.WorkspaceWriter).WriteFile(f.ctx, "notes.txt", "hello\n", ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		command        string
		exit           int64
		stdout, stderr string
	}{
		{"make test", 2, "ran\n", "1 failed\n"},
		{"git status", 0, "clean\n", ""},
		{"git log", 127, "", "scripted: git: command not found\n"},
		{"echo hello   world", 0, "hello world\n", ""},
		{"true", 0, "", ""},
		{"false", 1, "", ""},
		{"cat notes.txt", 0, "hello\n", ""},
		{"cat missing.txt", 1, "", "cat: missing.txt: No such file or directory\n"},
		{"", 127, "", "scripted: empty command\n"},
	} {
		res, err := f.env.(contract.CommandExecutor).Exec(f.ctx, tc.command, &contract.ExecRequest{})
		if err != nil {
			t.Fatalf("%q: %v", tc.command, err)
		}
		if res.ExitCode != tc.exit || res.Stdout != tc.stdout || res.Stderr != tc.stderr {
			t.Errorf("%q = %d %q %q; want %d %q %q", tc.command, res.ExitCode, res.Stdout, res.Stderr, tc.exit, tc.stdout, tc.stderr)
		}
	}
}

// NAT-09, NAT-10: OnAdmission announces the continued run once, while it
// runs, and its reference cancels it; a turn that is not the one the
// request binds is refused; a boundary cannot be proven while a run is in
// progress.
func TestNativeContinuationAdmission(t *testing.T) {
	f := newFixture(t)
	_, s := f.dispatch(&contract.TurnInput{Prompt: ptr("hi")})
	if _, err := s.Result(f.ctx); err != nil {
		t.Fatal(err)
	}
	nc := s.(contract.NativeContinuer)
	proof, err := nc.ContextBoundary(f.ctx)
	if err != nil || proof == nil {
		t.Fatal(proof, err)
	}
	run := exact(t, s.ControlRef())
	turn := contract.NativeContextContinuationTurn{Prompt: ptr("providertest: live")}
	req, err := contract.NewNativeContextContinuationRequest("continue", turn, run, *proof)
	if err != nil {
		t.Fatal(err)
	}
	before := f.p.Counters().NativeContinuations
	if _, err := nc.ContinueNative(f.ctx, req, contract.NativeContinuationOptions{Turn: contract.NativeContextContinuationTurn{Prompt: ptr("else")}}); err == nil {
		t.Error("a turn the request does not bind was run")
	}
	if f.p.Counters().NativeContinuations != before {
		t.Error("a refused continuation was dispatched")
	}
	admitted := 0
	var statusAtAdmission contract.SessionStatus
	res, err := nc.ContinueNative(f.ctx, req, contract.NativeContinuationOptions{Turn: turn, OnAdmission: func(ref contract.ExactRunControlRef) {
		admitted++
		rs, err := f.env.(contract.SessionOpener).Session(f.ctx, ref.SessionID, ptr(ref.Ref()))
		if err != nil {
			t.Error(err)
			return
		}
		statusAtAdmission, _, _ = rs.Status(f.ctx)
		if live, _ := nc.ContextBoundary(f.ctx); live != nil {
			t.Error("a boundary was proven while the continued run is in progress")
		}
		cancel, _ := contract.NewRunCancellationRequest("stop-continued", ref, nil)
		if ack, err := rs.(contract.RunCanceller).CancelRun(f.ctx, cancel); err != nil || ack.Effect != contract.EffectCancelRequested {
			t.Errorf("cancelling the admitted run: %+v, %v", ack, err)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if admitted != 1 || statusAtAdmission != contract.SessionRunning {
		t.Errorf("OnAdmission ran %d times, seeing the run %q; want once while running", admitted, statusAtAdmission)
	}
	if res.Acknowledgement.Status != contract.ContinuationStatusAccepted || res.Result.Success {
		t.Errorf("a continued run cancelled through its admission reference: %s, success %v", res.Acknowledgement.Status, res.Result.Success)
	}
	other := run
	other.SessionID = "elsewhere"
	foreign, err := contract.NewNativeContextContinuationRequest("foreign", turn, other, func() contract.NativeContextBoundaryProof {
		p := *proof
		p.SessionID = "elsewhere"
		return p
	}())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := nc.ContinueNative(f.ctx, foreign, contract.NativeContinuationOptions{Turn: turn}); err != nil || res.Acknowledgement.Status != contract.ContinuationStatusUnknownSession {
		t.Errorf("continuing another session's run: %+v, %v; want unknown_session", res, err)
	}
}

// The context transfer refuses, before any effect, a destination it
// cannot serve.
func TestTransferRefusals(t *testing.T) {
	f := newFixture(t)
	source, _ := contract.NewPortableConversationContext(contract.PortableContextSourceBoundary{RunID: "r", MessageID: "m1",
		Provider: "other", EnvironmentID: "e", SessionID: "s", ExecutionID: "x", RequestDigest: "sha256:" + strings.Repeat("a", 64)},
		contract.CompletenessComplete, []contract.BackendMessage{{ID: "m1", Role: contract.MessageRoleUser,
			Parts: []canonjson.Value{mustValue(t, contract.TextInputPart("hi"))}, Timestamp: "2026-01-01T00:00:00.000Z"}}, nil)
	include := []contract.PortableContextMessagePlan{{MessageID: "m1", Action: contract.ContextActionInclude,
		Parts: []contract.PortableContextPartPlan{{PartIndex: 0, Action: contract.ContextActionInclude}}}}
	for _, tc := range []struct {
		name, why string
		dest      contract.PortableContextDestination
	}{
		{"another provider", "names provider elsewhere", contract.PortableContextDestination{Runner: "r", Provider: "elsewhere", EnvironmentID: ptr(f.env.ID()),
			SessionID: "fresh", RunID: "fresh-run", ExecutionID: "fresh-x", ProfileDigest: "sha256:" + strings.Repeat("b", 64)}},
		{"the source's session", "needs a fresh session", contract.PortableContextDestination{Runner: "r", Provider: "scripted", EnvironmentID: ptr(f.env.ID()),
			SessionID: "s", RunID: "fresh-run", ExecutionID: "fresh-x", ProfileDigest: "sha256:" + strings.Repeat("b", 64)}},
	} {
		plan, err := contract.NewPortableContextPlan("plan", source, tc.dest, include, nil)
		if err != nil {
			t.Fatal(err)
		}
		req, err := contract.CreateContextTransferRequest("op-"+tc.name, plan, contract.ContextPlanAcceptance{PlanDigest: plan.Digest,
			AcceptedAt: "2026-01-01T00:00:00.000Z", AcceptedBy: contract.AcceptedBySystem}, contract.ContextTransferInputs{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.p.TransferContext(f.ctx, req); err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v; want a refusal because %s", tc.name, err, tc.why)
		}
	}
	if c := f.p.Counters(); c.Transfers != 0 || c.FreshSessions != 0 {
		t.Errorf("refused transfers had effects: %+v", c)
	}
}

func mustValue(t *testing.T, x any) canonjson.Value {
	t.Helper()
	v, err := canonjson.ToValue(x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Durable branching refuses what it cannot honor before any effect, and
// a fork starts from the checkpoint's workspace, independent of later
// source changes.
func TestBranchingSemantics(t *testing.T) {
	f := newFixture(t)
	w := f.env.(contract.WorkspaceWriter)
	if err := w.WriteFile(f.ctx, "a.txt", "v1", ""); err != nil {
		t.Fatal(err)
	}
	ref, s := f.dispatch(&contract.TurnInput{Prompt: ptr("hi")})
	if _, err := s.Result(f.ctx); err != nil {
		t.Fatal(err)
	}
	run := exact(t, ref.ControlRef)
	ops := f.env.(contract.DurableBrancher).WorkspaceBranching()
	cpReq, _ := contract.NewWorkspaceCheckpointRequest("cp", contract.WorkspaceCheckpointMaterial{Source: run})
	cp, err := ops.Checkpoint(f.ctx, cpReq)
	if err != nil || cp.Status != contract.BranchingCreated {
		t.Fatal(cp, err)
	}
	if err := w.WriteFile(f.ctx, "a.txt", "v2", ""); err != nil {
		t.Fatal(err)
	}
	creates := f.p.Creates()
	for _, tc := range []struct {
		name string
		m    contract.WorkspaceForkMaterial
	}{
		{"sandbox placement", contract.WorkspaceForkMaterial{Checkpoint: *cp.Checkpoint, Placement: contract.PlacementInfo{Kind: "sandbox"}}},
	} {
		r, err := contract.NewWorkspaceForkRequest("fork-"+tc.name, tc.m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ops.Fork(f.ctx, r); !errors.Is(err, contract.ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", tc.name, err)
		}
	}
	unknownRun := run
	unknownRun.RunID = "no-such-run"
	if r, _ := contract.NewWorkspaceCheckpointRequest("cp-unknown", contract.WorkspaceCheckpointMaterial{Source: unknownRun}); r != nil {
		if _, err := ops.Checkpoint(f.ctx, r); !errors.Is(err, scripted.ErrUnknownRun) {
			t.Errorf("a checkpoint of an unknown run: %v", err)
		}
	}
	if f.p.Creates() != creates {
		t.Error("refused forks provisioned environments")
	}
	forkReq, _ := contract.NewWorkspaceForkRequest("fork", contract.WorkspaceForkMaterial{Checkpoint: *cp.Checkpoint, Placement: contract.PlacementInfo{Kind: "local"}})
	fork, err := ops.Fork(f.ctx, forkReq)
	if err != nil || fork.Status != contract.BranchingCreated {
		t.Fatal(fork, err)
	}
	forked, err := f.p.Get(f.ctx, fork.Environment.EnvironmentID)
	if err != nil || forked == nil {
		t.Fatal(forked, err)
	}
	if got, err := forked.(contract.WorkspaceReader).ReadFile(f.ctx, "a.txt", ""); err != nil || got != "v1" {
		t.Errorf("the fork reads %q, %v; want the checkpointed v1", got, err)
	}
	// A fork destroyed directly no longer blocks its checkpoint.
	forked.Destroy(f.ctx)
	del, _ := contract.NewWorkspaceCleanupRequest("del", contract.WorkspaceCleanupMaterial{Kind: contract.WorkspaceCleanupCheckpoint,
		TargetID: cp.Checkpoint.CheckpointID, Provider: "scripted"})
	if ack, err := ops.DeleteCheckpoint(f.ctx, del); err != nil || ack.Status != contract.WorkspaceCleanupDeleted {
		t.Errorf("deleting a checkpoint whose fork was destroyed: %+v, %v", ack, err)
	}
	if again, err := ops.Checkpoint(f.ctx, cpReq); err != nil || again.Status != contract.BranchingUnknown || again.Retryable == nil || *again.Retryable {
		t.Errorf("a checkpoint retry after cleanup: %+v, %v; want unknown, not retryable", again, err)
	}
	if _, err := ops.DeleteCheckpoint(f.ctx, &contract.WorkspaceCleanupRequest{OperationID: "x", WorkspaceCleanupMaterial: contract.WorkspaceCleanupMaterial{
		Kind: contract.WorkspaceCleanupFork, TargetID: "y", Provider: "scripted"}}); err == nil {
		t.Error("an invalid cleanup request was acknowledged")
	}
}

// An in-process worker originates no interactions: the provider does not
// declare them and its environments and sessions do not answer them.
func TestInProcessDeclaresNoInteractions(t *testing.T) {
	ctx := context.Background()
	p := scripted.InProcess(func(ctx context.Context, prompt string, pc scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
		return []contract.EnvironmentEvent{{Type: "done"}}, nil
	})
	caps, _ := p.Capabilities(ctx)
	if caps.Interactions != nil || caps.Usage {
		t.Errorf("an in-process worker declares interactions %v, usage %v", caps.Interactions, caps.Usage)
	}
	env, err := p.Create(ctx, &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := env.(contract.InteractionResponder); ok {
		t.Error("an in-process environment answers interactions")
	}
	ref, err := env.(contract.Dispatcher).Dispatch(ctx, &contract.TurnInput{Prompt: ptr("x")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := env.(contract.SessionOpener).Session(ctx, ref.ID, ref.ControlRef)
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.CheckSessionExposure(caps, s); err != nil {
		t.Error(err)
	}
	if err := contract.CheckExposure(caps, env); err != nil {
		t.Error(err)
	}
}

// ENV-14: a requested id that is taken is refused.
func TestRequestedIDTaken(t *testing.T) {
	p := scripted.New(hello(), scripted.Options{})
	in := &contract.CreateInput{RequestedID: ptr("mine")}
	if _, err := p.Create(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(context.Background(), in); !errors.Is(err, scripted.ErrIDTaken) {
		t.Errorf("a taken id: %v, want ErrIDTaken", err)
	}
}

// CTL-01, CAN-02, INT-17: a control reference survives JSON and a
// restarted client — the reconnected provider finds the run, cancels it,
// and both clients see the same durable acknowledgements.
func TestReconnectedControl(t *testing.T) {
	f := newFixture(t)
	ref, s := f.dispatch(&contract.TurnInput{Prompt: ptr("providertest: live")})
	wire := canonjson.Marshal(mustValue(t, ref.ControlRef))
	parsed, err := contract.Parse[contract.RunControlRef](contract.KindRunControlRef, contract.RunControlRefSchema, wire)
	if err != nil {
		t.Fatal(err)
	}
	restarted := f.p.Reconnect()
	env, err := restarted.Get(f.ctx, f.env.ID())
	if err != nil || env == nil {
		t.Fatal(env, err)
	}
	s2, err := env.(contract.SessionOpener).Session(f.ctx, ref.ID, parsed)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := contract.NewRunCancellationRequest("stop", exact(t, parsed), nil)
	ack, err := s2.(contract.RunCanceller).CancelRun(f.ctx, req)
	if err != nil || ack.Status != contract.StatusAccepted || ack.Effect != contract.EffectCancelRequested {
		t.Fatalf("cancel through the restarted client: %+v, %v", ack, err)
	}
	if got := terminalOf(eventsOf(t, s.Events(f.ctx, "", ""))); got != contract.TerminalCancelled {
		t.Errorf("the original client sees the run end %q", got)
	}
	again, err := s.(contract.RunCanceller).CancelRun(f.ctx, req)
	if err != nil || again.Status != contract.StatusReplayed || again.Effect != ack.Effect {
		t.Errorf("the same cancellation through the first client: %+v, %v; want replayed", again, err)
	}
}

// INT-17: the same response command sent again through a restarted
// client returns the byte-identical acknowledgement.
func TestInteractionAckSurvivesRestart(t *testing.T) {
	f := newFixture(t)
	_, s := f.dispatch(&contract.TurnInput{Prompt: ptr("providertest: ask")})
	var cmd *contract.InteractionResponseCommand
	for e, err := range s.Events(f.ctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		if e.Normalized != nil && e.Normalized.Interaction != nil {
			req := e.Normalized.Interaction.Request
			cmd, err = contract.NewInteractionResponseCommand("answer", req.ResponseBinding(),
				contract.InteractionResponse{ID: req.ID, Outcome: contract.InteractionOutcomeAccepted, Data: contract.InteractionData{"colour": contract.ChoiceAnswer("red")}})
			if err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	first, err := s.(contract.InteractionResponder).RespondToInteraction(f.ctx, cmd)
	if err != nil || first.Status != contract.InteractionAckAccepted {
		t.Fatal(first, err)
	}
	env, _ := f.p.Reconnect().Get(f.ctx, f.env.ID())
	again, err := env.(contract.InteractionResponder).RespondToInteraction(f.ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := canonjson.Marshal(mustValue(t, first)), canonjson.Marshal(mustValue(t, again)); string(a) != string(b) {
		t.Errorf("after a restart the same command is acknowledged\n%s\nnot\n%s", b, a)
	}
}
