package contract_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
)

// evContinuation builds a successful continuation outcome for req.
func evContinuation(t *testing.T, req *contract.NativeContextContinuationRequest) *contract.NativeContinuationResult {
	t.Helper()
	next := req.Run
	next.RunID, next.ExecutionID, next.RequestDigest = "run-2", "exec-2", pcDigestOf("d")
	return &contract.NativeContinuationResult{
		Acknowledgement: *natAck(req, contract.ContinuationStatusAccepted),
		Result:          &contract.TurnResult{Text: "continued", Success: true, SessionID: pcPtr(req.Run.SessionID)},
		ControlRef:      &next,
	}
}

// TestNativeContinuationResult: the result shape (NAT-12) and the match
// against its request and retained session (NAT-13).
func TestNativeContinuationResult(t *testing.T) {
	req := natRequest(t)
	ok := evContinuation(t, req)
	text := pcMarshal(t, ok)
	parsed, err := contract.ParseNativeContinuationResult([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if pcMarshal(t, parsed) != text || !parsed.Succeeded() {
		t.Fatal("round trip")
	}
	if !contract.NativeContinuationResultMatchesRequest(req, ok) {
		t.Fatal("a matching result does not match")
	}
	for name, edit := range map[string]func(r *contract.NativeContinuationResult){
		"other session":        func(r *contract.NativeContinuationResult) { r.ControlRef.SessionID = "session-2" },
		"other environment":    func(r *contract.NativeContinuationResult) { r.ControlRef.EnvironmentID = "env-2" },
		"other provider":       func(r *contract.NativeContinuationResult) { r.ControlRef.Provider = "other" },
		"result other session": func(r *contract.NativeContinuationResult) { r.Result.SessionID = pcPtr("session-2") },
		"history sent":         func(r *contract.NativeContinuationResult) { r.Acknowledgement.HistoryMessagesSent = 1 },
		"other operation":      func(r *contract.NativeContinuationResult) { r.Acknowledgement.OperationID = "continue-2" },
		"no control ref":       func(r *contract.NativeContinuationResult) { r.ControlRef = nil },
		"invalid control ref":  func(r *contract.NativeContinuationResult) { r.ControlRef.RunID = " padded" },
		"boundary of other run": func(r *contract.NativeContinuationResult) {
			r.Acknowledgement.ActualBoundary.RunID = "run-2"
		},
		"failure": func(r *contract.NativeContinuationResult) {
			r.Acknowledgement = contract.NativeContextContinuationAcknowledgement{OperationID: req.OperationID, RequestDigest: req.RequestDigest,
				Status: contract.ContinuationStatusUnknownSession}
			r.Result, r.ControlRef = nil, nil
		},
	} {
		r := pcClone(t, ok)
		edit(r)
		if contract.NativeContinuationResultMatchesRequest(req, r) {
			t.Errorf("%s: matches", name)
		}
	}
	noSession := pcClone(t, ok)
	noSession.Result.SessionID = nil
	if !contract.NativeContinuationResultMatchesRequest(req, noSession) {
		t.Error("a result without a session id does not match")
	}
	if contract.NativeContinuationResultMatchesRequest(nil, ok) || contract.NativeContinuationResultMatchesRequest(req, nil) {
		t.Error("nil matches")
	}

	// Shape rules.
	failure := func(status, extra string) string {
		return `{"acknowledgement":{"operationId":"continue-1","requestDigest":"` + req.RequestDigest + `","status":"` + status +
			`","historyMessagesSent":0` + extra + `}}`
	}
	if _, err := contract.ParseNativeContinuationResult([]byte(failure("transport_failure", `,"message":"lost","retryable":true`))); err != nil {
		t.Fatalf("retryable transport failure refused: %v", err)
	}
	_, err = contract.ParseNativeContinuationResult([]byte(failure("transport_failure", `,"message":"lost","retryable":false`)))
	evRefusedAt(t, "transport failure not retryable", err, "/acknowledgement/retryable")
	_, err = contract.ParseNativeContinuationResult([]byte(failure("accepted", "")))
	evRefusedAt(t, "success without result", err, "")

	// A receipt of portable context never comes back from a native
	// continuation.
	receipt := pcReceipt(t, pcRequest(t, pcPlan(t), contract.ContextTransferInputs{}))
	withReceipt := pcClone(t, ok)
	withReceipt.Result.ContextTransferReceipt = receipt
	_, err = contract.ParseNativeContinuationResult([]byte(pcMarshal(t, withReceipt)))
	evRefusedAt(t, "receipt", err, "/result/contextTransferReceipt")

	// A missing bounded-JSON member is a failed check, not a shape error,
	// so the union still reports it where it is (as the reference does).
	noData := strings.Replace(text, `"success":true`, `"success":true,"events":[{"type":"x"}]`, 1)
	_, err = contract.ParseNativeContinuationResult([]byte(noData))
	evRefusedAt(t, "event without data", err, "/result/events/0/data")

	// As in the reference, members the acknowledgement does not declare
	// are dropped inside a result rather than refused.
	extra := strings.Replace(text, `"historyMessagesSent":0`, `"historyMessagesSent":0,"note":"x"`, 1)
	dropped, err := contract.ParseNativeContinuationResult([]byte(extra))
	if err != nil || pcMarshal(t, dropped) != text {
		t.Fatalf("unknown acknowledgement member: %v", err)
	}
	_, err = contract.ParseNativeContinuationResult([]byte(strings.Replace(text, `"controlRef":{`, `"controlRef":{"note":"x",`, 1)))
	evRefusedAt(t, "unknown control ref member", err, "")
}

// A definite refusal of a native continuation (conflict,
// boundary_mismatch, unverified, unknown_session) is recognised as
// exactly the request's; a success, a transport failure (outcome
// unknown) or an acknowledgement of another request is not.
func TestNativeContinuationRefusalMatchesRequest(t *testing.T) {
	req := natRequest(t)
	refusal := func(status string) *contract.NativeContinuationResult {
		res := &contract.NativeContinuationResult{Acknowledgement: contract.NativeContextContinuationAcknowledgement{
			OperationID: req.OperationID, RequestDigest: req.RequestDigest, Status: status}}
		switch status {
		case contract.ContinuationStatusConflict:
			existing := req.TurnDigest // any other digest
			res.Acknowledgement.ExistingRequestDigest = &existing
		case contract.ContinuationStatusBoundaryMismatch:
			actual := natProof(req.Run, "2026-08-01T20:00:05.000Z")
			res.Acknowledgement.ActualBoundary = &actual
		}
		return res
	}
	for _, status := range []string{contract.ContinuationStatusConflict, contract.ContinuationStatusBoundaryMismatch,
		contract.ContinuationStatusUnverified, contract.ContinuationStatusUnknownSession} {
		if !contract.NativeContinuationRefusalMatchesRequest(req, refusal(status)) {
			t.Errorf("a %s refusal of the request does not match", status)
		}
	}
	other := refusal(contract.ContinuationStatusUnverified)
	other.Acknowledgement.OperationID = "another-operation"
	retryable := true
	lost := refusal(contract.ContinuationStatusTransportFailure)
	msg := "lost"
	lost.Acknowledgement.Message, lost.Acknowledgement.Retryable = &msg, &retryable
	for name, res := range map[string]*contract.NativeContinuationResult{
		"a success": evContinuation(t, req), "another request's": other, "a transport failure": lost, "nil": nil,
	} {
		if contract.NativeContinuationRefusalMatchesRequest(req, res) {
			t.Errorf("%s matches as a refusal", name)
		}
	}
}
