package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

func natRun() contract.ExactRunControlRef {
	return contract.ExactRunControlRef{RunID: "run-1", Provider: "cli-bridge", EnvironmentID: "env-1",
		SessionID: "session-1", ExecutionID: "exec-1", RequestDigest: pcDigestOf("a")}
}

func natProof(run contract.ExactRunControlRef, observedAt string) contract.NativeContextBoundaryProof {
	return contract.NativeContextBoundaryProof{RunID: run.RunID, Provider: run.Provider, EnvironmentID: run.EnvironmentID,
		SessionID: run.SessionID, ExecutionID: run.ExecutionID, RequestDigest: run.RequestDigest,
		Boundary:   contract.NativeContextBoundary{Kind: contract.BoundaryKindMessages, MessageIDs: []string{"m-1", "m-2"}, Digest: pcPtr(pcDigestOf("b"))},
		ObservedAt: observedAt}
}

func natTurn() contract.NativeContextContinuationTurn {
	return contract.NativeContextContinuationTurn{Prompt: pcPtr("Continue."), Parts: []contract.InputPart{contract.TextInputPart("and check the log")},
		Context: map[string]canonjson.Value{"ticket": canonjson.StringValue("T-1")}}
}

func natRequest(t *testing.T) *contract.NativeContextContinuationRequest {
	t.Helper()
	req, err := contract.NewNativeContextContinuationRequest("continue-1", natTurn(), natRun(), natProof(natRun(), "2026-08-01T20:00:00.000Z"))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestNativeTurnDigest: the turn digest binds the exact JSON-stable turn
// (NAT-02); timeout and abort controls are not part of it (NAT-03).
func TestNativeTurnDigest(t *testing.T) {
	base, err := contract.NativeContextContinuationTurnDigest(natTurn())
	if err != nil {
		t.Fatal(err)
	}
	again, _ := contract.NativeContextContinuationTurnDigest(natTurn())
	if again != base {
		t.Fatal("the turn digest is not stable")
	}
	for name, edit := range map[string]func(tn *contract.NativeContextContinuationTurn){
		"prompt":      func(tn *contract.NativeContextContinuationTurn) { tn.Prompt = pcPtr("Continue!") },
		"no-prompt":   func(tn *contract.NativeContextContinuationTurn) { tn.Prompt = nil },
		"empty-parts": func(tn *contract.NativeContextContinuationTurn) { tn.Parts = []contract.InputPart{} },
		"model":       func(tn *contract.NativeContextContinuationTurn) { tn.Model = pcPtr("gpt") },
		"context":     func(tn *contract.NativeContextContinuationTurn) { tn.Context["ticket"] = canonjson.StringValue("T-2") },
	} {
		tn := natTurn()
		edit(&tn)
		d, err := contract.NativeContextContinuationTurnDigest(tn)
		if err != nil || d == base {
			t.Errorf("%s: digest %s, err %v", name, d, err)
		}
	}
	if _, err := contract.ParseNativeContextContinuationTurn([]byte(`{"prompt":"x","timeoutMs":1000}`)); err == nil {
		t.Fatal("a turn accepted a timeout")
	}
	bad := natTurn()
	bad.Model = pcPtr(" padded")
	if _, err := contract.NativeContextContinuationTurnDigest(bad); err == nil {
		t.Fatal("digested an invalid turn")
	}
	lone := natTurn()
	lone.Prompt = pcPtr("\xed\xa0\x80")
	if _, err := contract.NativeContextContinuationTurnDigest(lone); err == nil {
		t.Fatal("digested a turn without canonical form")
	}
}

// TestNativeRequest: the proof includes the exact run identity (NAT-01)
// and the request digest binds turn, operation, run and boundary (NAT-02).
func TestNativeRequest(t *testing.T) {
	req := natRequest(t)
	data := pcMarshal(t, req)
	if _, err := contract.ParseNativeContextContinuationRequest([]byte(data)); err != nil {
		t.Fatal(err)
	}
	other := natTurn()
	other.Prompt = pcPtr("Something else.")
	changed, err := contract.NewNativeContextContinuationRequest("continue-1", other, natRun(), natProof(natRun(), "2026-08-01T20:00:00.000Z"))
	if err != nil {
		t.Fatal(err)
	}
	if changed.TurnDigest == req.TurnDigest || changed.RequestDigest == req.RequestDigest {
		t.Fatal("a changed turn kept its digests")
	}
	tampered := pcClone(t, req)
	tampered.TurnDigest = changed.TurnDigest
	_, err = contract.ParseNativeContextContinuationRequest([]byte(pcMarshal(t, tampered)))
	pcRefusedAt(t, err, "/requestDigest")

	elsewhere := natRun()
	elsewhere.SessionID = "session-2"
	_, err = contract.NewNativeContextContinuationRequest("continue-1", natTurn(), natRun(), natProof(elsewhere, "2026-08-01T20:00:00.000Z"))
	pcRefusedAt(t, err, "/expectedBoundary")

	if _, err := contract.ParseNativeContextBoundaryProof([]byte(`{"provider":"p","environmentId":"e","sessionId":"s","executionId":"x","requestDigest":"` +
		pcDigestOf("a") + `","boundary":{"kind":"token","token":"t"},"observedAt":"2026-08-01T20:00:00Z"}`)); err == nil {
		t.Fatal("a proof without its run was accepted")
	}
	_, err = contract.ParseNativeContextBoundaryProof([]byte(`{"runId":"r","provider":"p","environmentId":"e","sessionId":"s","executionId":"x","requestDigest":"` +
		pcDigestOf("a") + `","boundary":{"kind":"messages","messageIds":["a","a"],"digest":"` + pcDigestOf("b") + `"},"observedAt":"2026-08-01T20:00:00Z"}`))
	pcRefusedAt(t, err, "/boundary/messageIds")
}

func natAck(req *contract.NativeContextContinuationRequest, status string) *contract.NativeContextContinuationAcknowledgement {
	actual := natProof(req.Run, "2026-08-01T20:00:05.000Z")
	return &contract.NativeContextContinuationAcknowledgement{OperationID: req.OperationID, RequestDigest: req.RequestDigest,
		Status: status, ActualBoundary: &actual}
}

// TestNativeAcknowledgement: acknowledgement status rules and the exact
// acknowledgement match (NAT-04, NAT-05, NAT-06, NAT-11, NAT-14).
func TestNativeAcknowledgement(t *testing.T) {
	req := natRequest(t)
	with := func(status string, edit func(a *contract.NativeContextContinuationAcknowledgement)) *contract.NativeContextContinuationAcknowledgement {
		a := natAck(req, status)
		if edit != nil {
			edit(a)
		}
		return a
	}
	laterRun := req.Run
	laterRun.SessionID = "session-9"
	for _, tc := range []struct {
		name string
		ack  *contract.NativeContextContinuationAcknowledgement
		want bool
	}{
		{"accepted", with(contract.ContinuationStatusAccepted, nil), true},
		{"replayed", with(contract.ContinuationStatusReplayed, nil), true},
		{"same-instant", with(contract.ContinuationStatusAccepted, func(a *contract.NativeContextContinuationAcknowledgement) {
			a.ActualBoundary.ObservedAt = "2026-08-01T20:00:00Z"
		}), true},
		{"history-sent", with(contract.ContinuationStatusAccepted, func(a *contract.NativeContextContinuationAcknowledgement) { a.HistoryMessagesSent = 1 }), false},
		{"other-operation", with(contract.ContinuationStatusAccepted, func(a *contract.NativeContextContinuationAcknowledgement) { a.OperationID = "continue-2" }), false},
		{"other-digest", with(contract.ContinuationStatusAccepted, func(a *contract.NativeContextContinuationAcknowledgement) { a.RequestDigest = pcDigestOf("9") }), false},
		{"boundary-mismatch", with(contract.ContinuationStatusBoundaryMismatch, nil), false},
		{"other-session", with(contract.ContinuationStatusAccepted, func(a *contract.NativeContextContinuationAcknowledgement) {
			p := natProof(laterRun, "2026-08-01T20:00:05.000Z")
			a.ActualBoundary = &p
		}), false},
		{"observed-earlier", with(contract.ContinuationStatusAccepted, func(a *contract.NativeContextContinuationAcknowledgement) {
			a.ActualBoundary.ObservedAt = "2026-08-01T19:59:59.999Z"
		}), false},
		{"moved-boundary", with(contract.ContinuationStatusAccepted, func(a *contract.NativeContextContinuationAcknowledgement) {
			a.ActualBoundary.Boundary.MessageIDs = []string{"m-1", "m-2", "m-3"}
		}), false},
		{"no-boundary", with(contract.ContinuationStatusAccepted, func(a *contract.NativeContextContinuationAcknowledgement) { a.ActualBoundary = nil }), false},
		{"conflict", with(contract.ContinuationStatusConflict, func(a *contract.NativeContextContinuationAcknowledgement) {
			a.ExistingRequestDigest = pcPtr(pcDigestOf("7"))
		}), false},
	} {
		if got := contract.NativeContextContinuationAcknowledgementMatches(req, tc.ack); got != tc.want {
			t.Errorf("%s: match=%v, want %v", tc.name, got, tc.want)
		}
	}

	for _, tc := range []struct {
		name string
		ack  *contract.NativeContextContinuationAcknowledgement
		path string
	}{
		{"conflict-without-existing", with(contract.ContinuationStatusConflict, nil), "/existingRequestDigest"},
		{"conflict-same", with(contract.ContinuationStatusConflict, func(a *contract.NativeContextContinuationAcknowledgement) {
			a.ExistingRequestDigest = &a.RequestDigest
		}), "/existingRequestDigest"},
		{"existing-without-conflict", with(contract.ContinuationStatusAccepted, func(a *contract.NativeContextContinuationAcknowledgement) {
			a.ExistingRequestDigest = pcPtr(pcDigestOf("7"))
		}), "/existingRequestDigest"},
		{"transport-without-message", with(contract.ContinuationStatusTransportFailure, func(a *contract.NativeContextContinuationAcknowledgement) {
			a.Retryable = pcPtr(true)
		}), "/message"},
		{"transport-without-retryable", with(contract.ContinuationStatusTransportFailure, func(a *contract.NativeContextContinuationAcknowledgement) {
			a.Message = pcPtr("reset")
		}), "/retryable"},
		{"mismatch-without-boundary", with(contract.ContinuationStatusBoundaryMismatch, func(a *contract.NativeContextContinuationAcknowledgement) {
			a.ActualBoundary = nil
		}), "/actualBoundary"},
		{"history-over-limit", with(contract.ContinuationStatusAccepted, func(a *contract.NativeContextContinuationAcknowledgement) {
			a.HistoryMessagesSent = 1025
		}), "/historyMessagesSent"},
	} {
		_, err := contract.ParseNativeContextContinuationAcknowledgement([]byte(pcMarshal(t, tc.ack)))
		pcRefusedAt(t, err, tc.path)
	}

	// A changed request under the same operation id conflicts and names
	// the original digest (NAT-14); the conflict never matches.
	other := natTurn()
	other.Prompt = pcPtr("A different turn.")
	changed, err := contract.NewNativeContextContinuationRequest(req.OperationID, other, req.Run, req.ExpectedBoundary)
	if err != nil {
		t.Fatal(err)
	}
	conflict := &contract.NativeContextContinuationAcknowledgement{OperationID: changed.OperationID, RequestDigest: changed.RequestDigest,
		Status: contract.ContinuationStatusConflict, ExistingRequestDigest: &req.RequestDigest}
	if _, err := contract.ParseNativeContextContinuationAcknowledgement([]byte(pcMarshal(t, conflict))); err != nil {
		t.Fatal(err)
	}
	if contract.NativeContextContinuationAcknowledgementMatches(changed, conflict) {
		t.Fatal("a conflict matched")
	}
	if !contract.BoundaryProofMatchesRun(req.Run, &req.ExpectedBoundary) || contract.BoundaryProofMatchesRun(laterRun, &req.ExpectedBoundary) {
		t.Fatal("BoundaryProofMatchesRun")
	}
}
