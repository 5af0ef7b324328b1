package providertest

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// LocalPlan is the reference local planner the portable-context family
// uses by default: it keeps every message and part, estimates one token
// per four bytes of each part's canonical JSON (at least one per part),
// and answers over_limit when the estimate exceeds the request's budget.
// Planning has no side effect.
func LocalPlan(ctx context.Context, req *contract.PortableContextPlanRequest) (*contract.PortableContextPlanResult, error) {
	if req == nil {
		return nil, errors.New("providertest: no plan request")
	}
	if _, err := contract.Validate(contract.KindPortableContextPlanRequest, contract.PortableContextPlanRequestSchema, req); err != nil {
		return nil, err
	}
	var estimate int64
	decisions := make([]contract.PortableContextMessagePlan, 0, len(req.Source.Messages))
	for _, m := range req.Source.Messages {
		parts := make([]contract.PortableContextPartPlan, len(m.Parts))
		for i, part := range m.Parts {
			parts[i] = contract.PortableContextPartPlan{PartIndex: int64(i), Action: contract.ContextActionInclude}
			b, err := canonjson.Canonical(part)
			if err != nil {
				return nil, err
			}
			estimate += max(1, int64(len(b)+3)/4)
		}
		decisions = append(decisions, contract.PortableContextMessagePlan{MessageID: m.ID, Action: contract.ContextActionInclude, Parts: parts})
	}
	res := &contract.PortableContextPlanResult{RequestID: req.RequestID, RequestDigest: req.RequestDigest}
	if req.MaxInputTokens != nil && estimate > *req.MaxInputTokens {
		res.Status, res.EstimatedTokens, res.MaxInputTokens = contract.PlanStatusOverLimit, &estimate, req.MaxInputTokens
		res.Message = ptr("the context needs more input tokens than the budget allows")
		return res, nil
	}
	plan, err := contract.NewPortableContextPlan("plan-"+req.RequestID, &req.Source, req.Destination, decisions, &estimate)
	if err != nil {
		return nil, err
	}
	res.Status, res.Plan = contract.PlanStatusReady, plan
	return res, nil
}

// differentBoundary returns a boundary of the same kind that is not b.
func differentBoundary(b contract.NativeContextBoundary) contract.NativeContextBoundary {
	zero, one := "sha256:"+strings.Repeat("0", 64), "sha256:"+strings.Repeat("1", 64)
	other := func(d *string) *string {
		if d != nil && *d == zero {
			return &one
		}
		return &zero
	}
	switch b.Kind {
	case contract.BoundaryKindToken:
		return contract.NativeContextBoundary{Kind: b.Kind, Token: ptr(*b.Token + "-different")}
	case contract.BoundaryKindRevision:
		return contract.NativeContextBoundary{Kind: b.Kind, Revision: ptr(*b.Revision + "-different")}
	case contract.BoundaryKindDigest:
		return contract.NativeContextBoundary{Kind: b.Kind, Digest: other(b.Digest)}
	default:
		return contract.NativeContextBoundary{Kind: b.Kind, MessageIDs: b.MessageIDs, Digest: other(b.Digest)}
	}
}

// portableContext is the testkit's portable context family (spec L.4, G,
// H; checklist CTX-02, CTX-11, CTX-14, CTX-26..CTX-32, NAT-04..NAT-14;
// seed 003 "context transfer", "native continuation"): planning advances
// nothing in the provider; an over-limit plan and a plan whose acceptance
// names another digest dispatch nothing; an accepted transfer admits the
// context into exactly one fresh session with a receipt both matchers
// accept; a retry replays it and a changed acceptance conflicts; a
// reconnected client recovers it by lookup; a stale native boundary is
// refused; the matching boundary continues the session once with no
// copied history (announcing the new run once when admissionControl is
// declared); a retry replays the original result and reference, and a
// changed turn conflicts — all without dispatch.
func portableContext(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	pc := caps(t, p)
	c := envCaps(t, p, env)
	transfers, native := pc.ContextTransfer != nil, c.NativeContinuation != nil
	if !transfers && !native {
		t.Skip("the provider declares neither contextTransfer nor nativeContinuation")
	}
	if opts.PortableContext.Counters == nil {
		t.Fatal("contextTransfer or nativeContinuation is declared: Options.PortableContext.Counters must read the provider's effects")
	}
	counters := func() ContextCounters { return opts.PortableContext.Counters(p) }
	before := counters()
	noEffect := func(t TB, what string) {
		t.Helper()
		if now := counters(); now != before {
			t.Errorf("%s dispatched: counters went from %+v to %+v", what, before, now)
		}
	}
	ctx := bounded(t)
	if transfers {
		contextTransfer(t, ctx, p, opts, counters, noEffect)
	}
	if native {
		nativeContinuation(t, ctx, c, env, opts, counters)
	}
}

func contextTransfer(t TB, ctx context.Context, p contract.Provider, opts Options, counters func() ContextCounters, noEffect func(TB, string)) {
	in := opts.createInput("")
	prof := in.Profile.Inline
	if prof == nil {
		t.Fatal("the portable-context family needs an inline profile in Options.CreateInput (an unbound destination carries it)")
	}
	profileDigest, err := profile.Digest(prof)
	if err != nil {
		t.Fatal(err)
	}
	planner := opts.PortableContext.Plan
	if planner == nil {
		planner = LocalPlan
	}
	plans := 0
	plan := func(req *contract.PortableContextPlanRequest) (*contract.PortableContextPlanResult, error) {
		plans++
		return planner(ctx, req)
	}
	now := time.Now().UTC()
	stamp := func(t time.Time) string { return t.Format("2006-01-02T15:04:05.000Z") }
	text := func(s string) canonjson.Value {
		v, _ := canonjson.ToValue(contract.TextInputPart(s))
		return v
	}
	digestOf := func(s string) string { d, _ := contract.DigestOf(s); return d }
	source, err := contract.NewPortableConversationContext(contract.PortableContextSourceBoundary{
		RunID: "providertest-source-run", MessageID: "providertest-m2", Provider: "providertest-source",
		EnvironmentID: "providertest-source-environment", SessionID: "providertest-source-session",
		ExecutionID: "providertest-source-execution", RequestDigest: digestOf("providertest-source"),
	}, contract.CompletenessComplete, []contract.BackendMessage{
		{ID: "providertest-m1", Role: contract.MessageRoleUser, Parts: []canonjson.Value{text("Remember the word ostrich.")}, Timestamp: stamp(now.Add(-2 * time.Minute))},
		{ID: "providertest-m2", Role: contract.MessageRoleAssistant, Parts: []canonjson.Value{text("I will remember it.")}, Timestamp: stamp(now.Add(-time.Minute))},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	destination := contract.PortableContextDestination{Runner: "providertest", Provider: p.Name(), SessionID: "providertest-transfer-session",
		RunID: "providertest-transfer-run", ExecutionID: "providertest-transfer-execution", ProfileDigest: profileDigest}
	req, err := contract.NewPortableContextPlanRequest("providertest-plan", *source, destination, ptr(int64(100000)))
	if err != nil {
		t.Fatal(err)
	}
	rejection, err := contract.NewPortableContextPlanRequest("providertest-plan-over-limit", *source, destination, ptr(int64(1)))
	if err != nil {
		t.Fatal(err)
	}
	var ready *contract.PortableContextPlanResult
	ok := t.Step("side-effect-free-plan", func(t TB) {
		res, err := plan(req)
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		if plans != 1 {
			t.Errorf("planning ran %d times, want 1", plans)
		}
		noEffect(t, "planning")
		if res.Status != contract.PlanStatusReady || res.Plan == nil {
			t.Fatalf("the plan is %s, want ready", res.Status)
		}
		if !contract.PortableContextPlanResultMatchesRequest(req, res) {
			t.Fatal("the ready plan does not match its request or token budget")
		}
		if digest(t, res.Plan.Source) != digest(t, req.Source) || digest(t, res.Plan.Destination) != digest(t, req.Destination) {
			t.Error("the plan's source or destination differs from the request")
		}
		decided := map[string]int{}
		for _, m := range res.Plan.Messages {
			decided[m.MessageID] = len(m.Parts)
		}
		for _, m := range req.Source.Messages {
			if n, ok := decided[m.ID]; !ok || n != len(m.Parts) {
				t.Errorf("the plan does not decide every part of message %s", m.ID)
			}
		}
		ready = res
	})
	if !ok {
		return
	}
	t.Step("rejected-plan-zero-dispatch", func(t TB) {
		res, err := plan(rejection)
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		if res.Status != contract.PlanStatusOverLimit || !contract.PortableContextPlanResultMatchesRequest(rejection, res) {
			t.Errorf("an oversized context planned %s, want an exact over_limit", res.Status)
		}
		if contract.PortableContextPlanResultMatchesRequest(req, res) || contract.PortableContextPlanResultMatchesRequest(rejection, ready) {
			t.Error("a plan result matches a different request")
		}
		noEffect(t, "an over-limit plan")
	})
	acceptance := contract.ContextPlanAcceptance{PlanDigest: ready.Plan.Digest, AcceptedAt: stamp(time.Now().UTC().Add(-time.Second)), AcceptedBy: contract.AcceptedByUser}
	inputs := contract.ContextTransferInputs{Profile: prof}
	t.Step("mismatched-plan-zero-dispatch", func(t TB) {
		wrong := acceptance
		wrong.PlanDigest = source.Digest
		if _, err := contract.CreateContextTransferRequest("providertest-transfer-mismatch", ready.Plan, wrong, inputs); err == nil {
			t.Error("an acceptance of another digest became a transfer request")
		}
		noEffect(t, "a mismatched acceptance")
	})
	tr := ability[contract.ContextTransferrer](t, p, "ContextTransferrer", "contextTransfer")
	transfer, err := contract.CreateContextTransferRequest("providertest-transfer", ready.Plan, acceptance, inputs)
	if err != nil {
		t.Fatalf("CreateContextTransferRequest: %v", err)
	}
	check := func(t TB, req *contract.ContextTransferRequest, res *contract.ContextTransferResult, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("TransferContext: %v", err)
		}
		if res == nil {
			t.Fatal("TransferContext returned no result")
		}
		if _, err := contract.Validate(contract.KindContextTransferResult, contract.ContextTransferResultSchema, res); err != nil {
			t.Fatalf("the transfer result is invalid: %v", err)
		}
		if !contract.ContextTransferResultMatchesRequest(req, res) {
			t.Error("the transfer result does not match its request")
		}
	}
	var receipt *contract.ContextTransferReceipt
	start := counters()
	ok = t.Step("accepted-transfer-receipt", func(t TB) {
		res, err := tr.TransferContext(ctx, transfer)
		if err == nil && res != nil && res.Receipt != nil {
			id := res.Receipt.EnvironmentID
			t.Cleanup(func() { destroyByID(p, id) })
		}
		check(t, transfer, res, err)
		if res.Status() != contract.TransferStatusAccepted || res.Receipt == nil || !contract.ContextTransferReceiptMatches(transfer, res.Receipt) {
			t.Fatalf("the transfer answered %s, want an accepted receipt matching the request", res.Status())
		}
		receipt = res.Receipt
		now := counters()
		if now.Transfers != start.Transfers+1 || now.FreshSessions != start.FreshSessions+1 || now.NativeContinuations != start.NativeContinuations {
			t.Errorf("an accepted transfer must admit once into one fresh session: counters went from %+v to %+v", start, now)
		}
	})
	if !ok {
		return
	}
	after := counters()
	t.Step("transfer-replay-conflict", func(t TB) {
		res, err := tr.TransferContext(ctx, transfer)
		check(t, transfer, res, err)
		if res.Status() != contract.TransferStatusReplayed || res.Receipt == nil || !contract.ContextTransferReceiptMatches(transfer, res.Receipt) ||
			res.Receipt.EnvironmentID != receipt.EnvironmentID || res.Receipt.SessionID != receipt.SessionID {
			t.Errorf("a transfer retry answered %s, want replayed with the original fresh session", res.Status())
		}
		changedAcceptance := acceptance
		changedAcceptance.AcceptedBy = contract.AcceptedByPolicy
		changed, err := contract.CreateContextTransferRequest(transfer.OperationID, ready.Plan, changedAcceptance, inputs)
		if err != nil {
			t.Fatal(err)
		}
		res, err = tr.TransferContext(ctx, changed)
		check(t, changed, res, err)
		if res.Conflict == nil || res.Conflict.ExistingRequestDigest != transfer.RequestDigest {
			t.Errorf("a changed transfer under the same operation id answered %s, want conflict naming %s", res.Status(), transfer.RequestDigest)
		}
		if now := counters(); now != after {
			t.Errorf("a transfer retry or conflict dispatched: counters went from %+v to %+v", after, now)
		}
	})
	t.Step("transfer-lookup", func(t TB) {
		rtr := ability[contract.ContextTransferrer](t, opts.reconnect(p), "ContextTransferrer", "contextTransfer")
		res, err := rtr.LookupContextTransfer(ctx, transfer)
		if err != nil {
			t.Fatalf("LookupContextTransfer: %v", err)
		}
		if res == nil {
			t.Fatal("a reconnected client does not find the admitted transfer")
		}
		check(t, transfer, res, nil)
		if res.Receipt == nil || res.Receipt.EnvironmentID != receipt.EnvironmentID || res.Receipt.SessionID != receipt.SessionID {
			t.Error("the looked-up transfer names another session")
		}
		unknown, err := contract.CreateContextTransferRequest("providertest-transfer-never-sent", ready.Plan, acceptance, inputs)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := rtr.LookupContextTransfer(ctx, unknown); err != nil || res != nil {
			t.Errorf("looking up a transfer never sent answered %v, %v; want nothing", res, err)
		}
		if now := counters(); now != after {
			t.Errorf("a lookup dispatched: counters went from %+v to %+v", after, now)
		}
	})
}

func nativeContinuation(t TB, ctx context.Context, c *contract.Capabilities, env contract.Environment, opts Options, counters func() ContextCounters) {
	s := session(t, ctx, env, opts.prompt(), "providertest-native")
	nc := ability[contract.NativeContinuer](t, s, "NativeContinuer", "nativeContinuation")
	run, ok := exactRef(s.ControlRef())
	if !ok {
		t.Fatal("native continuation needs the session's exact control reference")
	}
	proof, err := nc.ContextBoundary(ctx)
	if err != nil || proof == nil {
		t.Fatalf("ContextBoundary of an ended run: %v, %v", proof, err)
	}
	if _, err := contract.Validate(contract.KindNativeContextBoundaryProof, contract.NativeContextBoundaryProofSchema, proof); err != nil {
		t.Fatalf("the boundary proof is invalid: %v", err)
	}
	if !contract.BoundaryProofMatchesRun(run, proof) {
		t.Fatal("the boundary proof is not bound to the session's run")
	}
	turn := contract.NativeContextContinuationTurn{Prompt: ptr(opts.prompt())}
	if opts.PortableContext.Turn != nil {
		turn = *opts.PortableContext.Turn
	}
	request, err := contract.NewNativeContextContinuationRequest("providertest-continue", turn, run, *proof)
	if err != nil {
		t.Fatal(err)
	}
	var admissions []contract.ExactRunControlRef
	continueNative := func(t TB, req *contract.NativeContextContinuationRequest, turn contract.NativeContextContinuationTurn) *contract.NativeContinuationResult {
		t.Helper()
		res, err := nc.ContinueNative(ctx, req, contract.NativeContinuationOptions{Turn: turn,
			OnAdmission: func(r contract.ExactRunControlRef) { admissions = append(admissions, r) }})
		if err != nil {
			t.Fatalf("ContinueNative: %v", err)
		}
		if _, err := contract.Validate(contract.KindNativeContinuationResult, contract.NativeContinuationResultSchema, res); err != nil {
			t.Fatalf("the continuation result is invalid: %v", err)
		}
		return res
	}
	start := counters()
	t.Step("continuation-boundary-rejection", func(t TB) {
		stale := *proof
		stale.Boundary = differentBoundary(proof.Boundary)
		mismatch, err := contract.NewNativeContextContinuationRequest(request.OperationID+"-mismatch", turn, run, stale)
		if err != nil {
			t.Fatal(err)
		}
		res := continueNative(t, mismatch, turn)
		ack := res.Acknowledgement
		if ack.Status != contract.ContinuationStatusBoundaryMismatch || contract.NativeContextContinuationAcknowledgementMatches(mismatch, &ack) {
			t.Errorf("a stale boundary answered %s, want boundary_mismatch that does not match", ack.Status)
		}
		if now := counters(); now.NativeContinuations != start.NativeContinuations || len(admissions) != 0 {
			t.Error("a boundary mismatch dispatched a continuation")
		}
	})
	var original *contract.NativeContinuationResult
	ok = t.Step("verified-native-continuation", func(t TB) {
		res := continueNative(t, request, turn)
		if res.Acknowledgement.Status != contract.ContinuationStatusAccepted || res.Result == nil || res.ControlRef == nil {
			t.Fatalf("the matching boundary answered %s, want accepted with a result and a control reference", res.Acknowledgement.Status)
		}
		if !contract.NativeContinuationResultMatchesRequest(request, res) || res.Acknowledgement.HistoryMessagesSent != 0 {
			t.Error("the continuation result does not match its request, or copied history")
		}
		if now := counters(); now.NativeContinuations != start.NativeContinuations+1 {
			t.Errorf("a verified continuation must continue exactly once: %d → %d", start.NativeContinuations, now.NativeContinuations)
		}
		admission := c.NativeContinuation.AdmissionControl != nil && *c.NativeContinuation.AdmissionControl
		switch {
		case admission && len(admissions) != 1:
			t.Errorf("admissionControl is declared: OnAdmission ran %d times, want once", len(admissions))
		case admission && !contract.SameRunControlRef(admissions[0], *res.ControlRef):
			t.Error("OnAdmission named another run than the result's control reference")
		case !admission && len(admissions) != 0:
			t.Errorf("admissionControl is not declared, yet OnAdmission ran %d times", len(admissions))
		}
		original = res
	})
	if !ok {
		return
	}
	t.Step("continuation-replay-conflict", func(t TB) {
		afterContinuation, admitted := counters(), len(admissions)
		res := continueNative(t, request, turn)
		if res.Acknowledgement.Status != contract.ContinuationStatusReplayed || !contract.NativeContinuationResultMatchesRequest(request, res) {
			t.Errorf("a continuation retry answered %s, want replayed matching the request", res.Acknowledgement.Status)
		}
		if res.Result == nil || res.ControlRef == nil || digest(t, res.Result) != digest(t, original.Result) || digest(t, res.ControlRef) != digest(t, original.ControlRef) {
			t.Error("a continuation retry did not return the original result and control reference")
		}
		changedTurn := turn
		changedTurn.Prompt = ptr(stringOr(turn.Prompt) + " changed")
		changed, err := contract.NewNativeContextContinuationRequest(request.OperationID, changedTurn, run, *proof)
		if err != nil {
			t.Fatal(err)
		}
		conflict := continueNative(t, changed, changedTurn).Acknowledgement
		if conflict.Status != contract.ContinuationStatusConflict || conflict.ExistingRequestDigest == nil ||
			*conflict.ExistingRequestDigest != request.RequestDigest || contract.NativeContextContinuationAcknowledgementMatches(changed, &conflict) {
			t.Errorf("a changed continuation under the same operation id answered %s, want conflict naming %s", conflict.Status, request.RequestDigest)
		}
		if now := counters(); now != afterContinuation || len(admissions) != admitted {
			t.Error("a continuation retry or conflict dispatched")
		}
	})
}

func stringOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
