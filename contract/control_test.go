package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
)

func TestControlVectors(t *testing.T) {
	// Checklist CTL-*, CAN-*: reference verdicts, canonical forms, digests.
	vectors.CheckKind(t, contract.KindRunControlRef, acceptVia[contract.RunControlRef](contract.KindRunControlRef, contract.RunControlRefSchema))
	vectors.CheckKind(t, contract.KindExactRunControlRef, acceptVia[contract.ExactRunControlRef](contract.KindExactRunControlRef, contract.ExactRunControlRefSchema))
	vectors.CheckKind(t, contract.KindRunCancellationRequest, acceptVia[contract.RunCancellationRequest](contract.KindRunCancellationRequest, contract.RunCancellationRequestSchema))
	vectors.CheckKind(t, contract.KindRunCancellationAcknowledgement, acceptVia[contract.RunCancellationAcknowledgement](contract.KindRunCancellationAcknowledgement, contract.RunCancellationAcknowledgementSchema))
}

func TestCancellationRoundTrip(t *testing.T) {
	run := contract.ExactRunControlRef{RunID: "run-1", Provider: "scripted", EnvironmentID: "env-1",
		SessionID: "s-1", ExecutionID: "x-1", RequestDigest: "sha256:" + repeat("a", 64)}
	req, err := contract.NewRunCancellationRequest("cancel-1", run, nil)
	if err != nil {
		t.Fatal(err)
	}
	ack := &contract.RunCancellationAcknowledgement{OperationID: "cancel-1", RequestDigest: req.RequestDigest, Run: run,
		Status: contract.StatusAccepted, Effect: contract.EffectCancelRequested}
	if !contract.CancellationAcknowledgementMatchesRequest(req, ack) {
		t.Fatal("acknowledgement of the same request does not match")
	}
	other := run
	other.RunID = "run-2"
	ack.Run = other
	if contract.CancellationAcknowledgementMatchesRequest(req, ack) {
		t.Fatal("acknowledgement for another run matches")
	}
	reason := "changed"
	changed, _ := contract.NewRunCancellationRequest("cancel-1", run, &reason)
	if changed.RequestDigest == req.RequestDigest {
		t.Fatal("a changed request kept its digest")
	}
	if !contract.SameRunControlRef(run.Ref(), run.Ref()) || contract.SameRunControlRef(run.Ref(), other.Ref()) {
		t.Fatal("SameRunControlRef")
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}
