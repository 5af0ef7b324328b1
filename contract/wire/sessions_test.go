package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

const digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// Every session body decodes strictly: an unknown member, a malformed
// control reference, an out-of-range wait and a result that is both (or
// neither) pending and present are refused at their JSON pointer.
func TestSessionBodiesStrict(t *testing.T) {
	ref := `{"runId":"r","provider":"p","environmentId":"e","sessionId":"s"}`
	tests := []struct {
		name  string
		parse func([]byte) (any, error)
		body  string
		path  string // the refusal's JSON pointer; "ok" accepts
	}{
		{"open", func(b []byte) (any, error) { return wire.ParseSessionRequest(b) }, `{"controlRef":` + ref + `}`, "ok"},
		{"open-empty", func(b []byte) (any, error) { return wire.ParseSessionRequest(b) }, `{}`, "ok"},
		{"open-unknown", func(b []byte) (any, error) { return wire.ParseSessionRequest(b) }, `{"ref":{}}`, ""},
		{"open-bad-ref", func(b []byte) (any, error) { return wire.ParseSessionRequest(b) }, `{"controlRef":{"runId":"r"}}`, "/controlRef/provider"},
		{"open-bad-digest", func(b []byte) (any, error) { return wire.ParseSessionRequest(b) },
			`{"controlRef":{"runId":"r","provider":"p","environmentId":"e","requestDigest":"md5:x"}}`, "/controlRef/requestDigest"},
		{"events", func(b []byte) (any, error) { return wire.ParseSessionEventsRequest(b) }, `{"since":"ev-1","executionId":"x"}`, "ok"},
		{"events-empty-since", func(b []byte) (any, error) { return wire.ParseSessionEventsRequest(b) }, `{"since":""}`, "/since"},
		{"result-wait", func(b []byte) (any, error) { return wire.ParseSessionResultRequest(b) }, `{"waitMs":1000}`, "ok"},
		{"result-wait-negative", func(b []byte) (any, error) { return wire.ParseSessionResultRequest(b) }, `{"waitMs":-1}`, "/waitMs"},
		{"result-wait-fraction", func(b []byte) (any, error) { return wire.ParseSessionResultRequest(b) }, `{"waitMs":1.5}`, "/waitMs"},
		{"result-wait-huge", func(b []byte) (any, error) { return wire.ParseSessionResultRequest(b) }, `{"waitMs":120001}`, "/waitMs"},
		{"answer-pending", func(b []byte) (any, error) { return wire.ParseSessionResult(b) }, `{"pending":true}`, "ok"},
		{"answer-result", func(b []byte) (any, error) { return wire.ParseSessionResult(b) }, `{"result":{"text":"hi","success":true}}`, "ok"},
		{"answer-neither", func(b []byte) (any, error) { return wire.ParseSessionResult(b) }, `{}`, ""},
		{"answer-pending-false", func(b []byte) (any, error) { return wire.ParseSessionResult(b) }, `{"pending":false}`, ""},
		{"answer-both", func(b []byte) (any, error) { return wire.ParseSessionResult(b) }, `{"pending":true,"result":{"text":"","success":true}}`, ""},
		{"prompt-no-input", func(b []byte) (any, error) { return wire.ParseSessionPromptRequest(b) }, `{}`, "/input"},
		{"prompt-bad-input", func(b []byte) (any, error) { return wire.ParseSessionPromptRequest(b) }, `{"input":{"prompt":1}}`, "/input/prompt"},
		{"cancel-run-bad-digest", func(b []byte) (any, error) { return wire.ParseSessionCancelRunRequest(b) },
			`{"request":{"operationId":"op","run":{"runId":"r","provider":"p","environmentId":"e","sessionId":"s","executionId":"x","requestDigest":"` + digest + `"},"requestDigest":"` + digest + `"}}`, "/request/requestDigest"},
		{"interaction-no-command", func(b []byte) (any, error) { return wire.ParseSessionInteractionRequest(b) }, `{"controlRef":` + ref + `}`, "/command"},
		{"session-no-id", func(b []byte) (any, error) { return wire.ParseSession(b) }, `{}`, "/id"},
		{"status-unknown-value", func(b []byte) (any, error) { return wire.ParseSessionStatus(b) }, `{"status":"sleeping"}`, "/status"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.parse([]byte(tc.body))
			if tc.path == "ok" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			d := wire.FromSchemaError(err)
			if d.Code != wire.CodeInvalidRequest || d.Path == nil {
				t.Fatalf("detail %+v, want invalid_request with a path", d)
			}
			if *d.Path != tc.path {
				t.Errorf("path %q, want %q (%v)", *d.Path, tc.path, err)
			}
		})
	}
}

// A cancel-run body carries a cancellation whose digest matches its
// content, and it survives the wire unchanged.
func TestSessionCancelRunRoundTrip(t *testing.T) {
	run := contract.ExactRunControlRef{RunID: "r", Provider: "p", EnvironmentID: "e", SessionID: "s", ExecutionID: "x", RequestDigest: digest}
	req, err := contract.NewRunCancellationRequest("op", run, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := run.Ref()
	b, err := wire.Marshal(wire.SessionCancelRunRequest{ControlRef: &ref, Request: *req})
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.ParseSessionCancelRunRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wire.SessionCancelRunRequest{ControlRef: &ref, Request: *req}, *got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// A session event's own id is its SSE id; an id a frame or header cannot
// carry is refused, and "" frames the event without an id.
func TestAppendSSEID(t *testing.T) {
	b, err := wire.AppendSSEID(nil, "ev-1", "", []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if b, err = wire.AppendSSEID(b, "", "", []byte(`{"b":2}`)); err != nil {
		t.Fatal(err)
	}
	r := wire.NewSSEReader(bytes.NewReader(b))
	for _, want := range []wire.SSEEvent{{ID: "ev-1", Data: []byte(`{"a":1}`)}, {Data: []byte(`{"b":2}`)}} {
		got, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("frame (-want +got):\n%s", diff)
		}
	}
	for _, id := range []string{"a\nb", "a\rb", "a\x00b", " a", "a "} {
		if wire.SSEIDSafe(id) {
			t.Errorf("SSEIDSafe(%q) = true", id)
		}
		if _, err := wire.AppendSSEID(nil, id, "", []byte(`{}`)); !errors.Is(err, wire.ErrSSEID) {
			t.Errorf("AppendSSEID(%q): %v, want ErrSSEID", id, err)
		}
	}
	if _, err := wire.AppendSSEID(nil, "x", "", []byte("a\nb")); err == nil {
		t.Error("data with a line break was framed")
	}
}

// Served carries detach, replay, turn idempotency, session continuation,
// retained control, workspace read/write/exec, profile validation,
// native continuation (without admissionControl), context transfer and
// branching (legacy and durable) exactly as the provider declares them,
// and never what the wire does not carry (workspace git/upload/download,
// placement).
func TestServedSessionAbilities(t *testing.T) {
	yes := true
	full := contract.Capabilities{
		Streaming:          contract.StreamingCapabilities{Live: true, Replay: true, Detach: true, TurnIdempotency: true},
		Sessions:           contract.SessionCapabilities{Continue: true, List: true, Messages: true},
		RetainedControl:    &contract.RetainedControlCapabilities{ExactRunIdentity: true, ResultIdentity: true, EventIdentity: true, CancellationIdempotency: true},
		NativeContinuation: &contract.NativeContinuationCapabilities{AtomicBoundary: true, RequestIdempotency: true, AdmissionControl: &yes},
		ContextTransfer:    &contract.ContextTransferCapabilities{FreshSession: true, RequestIdempotency: true, Lookup: true},
		Workspace:          contract.WorkspaceCapabilities{Read: true, Write: true, Exec: true, Git: true, Upload: true, Download: true},
		Profile:            contract.ProfileCapabilities{Validation: true},
		Branching:          contract.BranchingCapabilities{Checkpoint: true, Fork: true, RetrySafe: &yes, Lookup: &yes, Cleanup: &yes},
		Placement:          true,
	}
	got := wire.Served(&full)
	want := contract.Capabilities{
		Streaming:          full.Streaming,
		Sessions:           contract.SessionCapabilities{Continue: true},
		RetainedControl:    full.RetainedControl,
		Workspace:          contract.WorkspaceCapabilities{Read: true, Write: true, Exec: true},
		Profile:            contract.ProfileCapabilities{Validation: true},
		NativeContinuation: &contract.NativeContinuationCapabilities{AtomicBoundary: true, RequestIdempotency: true},
		ContextTransfer:    full.ContextTransfer,
		Branching:          full.Branching,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Served(full) (-want +got):\n%s", diff)
	}
	if got.RetainedControl == full.RetainedControl || got.ContextTransfer == full.ContextTransfer {
		t.Error("Served shares a block with its input")
	}
	if _, err := contract.Validate(contract.KindEnvironmentCapabilities, contract.CapabilitiesSchema, got); err != nil {
		t.Errorf("the served document is invalid: %v", err)
	}
	live := contract.Capabilities{Streaming: contract.StreamingCapabilities{Live: true}}
	if diff := cmp.Diff(live, wire.Served(&live)); diff != "" {
		t.Errorf("Served(live only) (-want +got):\n%s", diff)
	}
}
