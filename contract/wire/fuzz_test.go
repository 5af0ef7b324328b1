package wire_test

import (
	"bytes"
	"errors"
	"io/fs"
	"reflect"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/contract"

	"github.com/agentrt/agentrt/contract/wire"
)

// FuzzDecoders: every request and response decoder refuses or accepts
// any input without panicking, and an accepted value re-encodes to a
// body the same decoder accepts.
func FuzzDecoders(f *testing.F) {
	for _, s := range []string{
		`{"turnId":"t","input":{"prompt":"hi"}}`,
		`{"operationId":"op","reason":"r"}`,
		`{"profile":{"inline":{"name":"x"}},"idempotencyKey":"k"}`,
		`{"error":{"code":"not_found","message":"m","path":"/a"}}`,
		`{"error":{"code":"cwd_base_refused","message":"m","cwdBase":{"label":"p","want":"repository","got":"host"}}}`,
		`{"error":{"code":"file_too_large","message":"m","fileTooLarge":{"path":"a","size":10,"maxBytes":5}}}`,
		`{"error":{"code":"file_too_large","message":"m","fileTooLarge":{"path":"a","maxBytes":5}}}`,
		`{"error":{"code":"out_of_scope","message":"m"}}`, `{"error":{"code":"environment_destroyed","message":"m"}}`,
		`{"error":{"code":"quota_refused","message":"m","quota":{"provider":"p","stage":1,"retryAfterMs":5,"message":"x"}}}`,
		`{"error":{"code":"quota_refused","message":"m","quota":{"provider":"p","stage":0,"run":{"runId":"r","provider":"p","environmentId":"e","sessionId":"s","executionId":"x","requestDigest":"sha256:abababababababababababababababababababababababababababababababab"}}}}`,
		`{"environment":{"id":"e","provider":"p","name":"n"},"creation":"created"}`,
		`{"type":"text","data":{"text":"x"},"id":"1"}`,
		`{"operationId":"op","binding":{"provider":"p","environmentId":"e","runId":"r","interactionId":"i"},"commandDigest":"sha256:00","response":{"id":"i","outcome":"declined"}}`,
		`{"operationId":"op","binding":{"provider":"p","environmentId":"e","runId":"r","interactionId":"i"},"commandDigest":"sha256:00","status":"accepted"}`,
		`{"subject":{"provider":"p","environmentId":"e"}}`,
		`{"controlRef":{"runId":"r","provider":"p","environmentId":"e","sessionId":"s"}}`,
		`{"since":"ev-1","executionId":"x"}`,
		`{"waitMs":100}`, `{"pending":true}`, `{"result":{"text":"hi","success":true}}`,
		`{"id":"s","controlRef":{"runId":"r","provider":"p","environmentId":"e"}}`,
		`{"status":"running"}`,
		`{"input":{"prompt":"hi"}}`,
		`{"result":{"text":"","success":false,"error":"x"}}`,
		`{"id":"s","provider":"p","controlRef":{"runId":"r","provider":"p","environmentId":"e"}}`,
		`{"prompt":"hi","detach":true,"turnId":"t"}`,
		`{"path":"a/b.txt","sessionId":"s"}`, `{"content":"hello\n"}`,
		`{"path":"a/b.txt","content":"x"}`,
		`{"command":"echo ok","options":{"cwd":"sub","env":{"A":"1"},"timeoutMs":1000}}`,
		`{"exitCode":0,"stdout":"ok\n","stderr":""}`,
		`{"profile":"catalog-id"}`, `{"profile":{"name":"x"}}`,
		`{"ok":false,"issues":[{"level":"error","code":"c","message":"m","path":"/name"}]}`,
		`{"counts":{"transfers":1,"freshSessions":0}}`,
		`{"operationId":"op","request":{"name":"cp"}}`, `{"operationId":"op","from":{"id":"cp"},"request":{}}`,
		`{"id":"cp","provider":"p"}`, `{"result":{"status":"accepted"}}`, `{}`,
		`{"idempotencyKey":"k","requestDigest":"sha256:00"}`,
		`{"id":"e","provider":"p","metadata":{"a":1}}`, `{"environments":[{"id":"e","provider":"p","metadata":{}}]}`,
		`{"path":"/tmp/x","data":"AAEC/w==","mode":416}`, `{"path":"/tmp/x","maxBytes":3}`, `{"data":"AAEC/w=="}`,
		`{"processes":[{"pid":1,"running":false,"exitCode":0,"termination":{"kind":"exit","exitCode":0}}]}`,
		`{"operationId":"op","launch":{"executable":"/bin/true","args":["a"],"cwd":"/tmp","env":{"A":"b"},"timeoutMs":0}}`,
		`{"pid":1,"running":true,"exitCode":-1}`, `{"termination":{"kind":"signal","signal":"SIGKILL"}}`,
		`{"offset":3,"data":"aGk=","end":true}`, `{"data":"not base64!"}`,
		`{"a":`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(name string, parse func([]byte) (any, error)) {
			v, err := parse(data)
			if err != nil {
				return
			}
			b, err := wire.Marshal(v)
			if err != nil {
				t.Fatalf("%s: an accepted value does not re-encode: %v", name, err)
			}
			if _, err := parse(b); err != nil {
				t.Fatalf("%s: re-encoded %s is refused: %v", name, b, err)
			}
		}
		check("turn", func(b []byte) (any, error) { return wire.ParseTurnRequest(b) })
		check("cancel", func(b []byte) (any, error) { return wire.ParseCancelRequest(b) })
		check("create", func(b []byte) (any, error) { return wire.ParseCreateInput(b) })
		check("error", func(b []byte) (any, error) { return wire.ParseErrorBody(b) })
		check("createResult", func(b []byte) (any, error) { return wire.ParseCreateResult(b) })
		check("event", func(b []byte) (any, error) { return wire.ParseEnvironmentEvent(b) })
		check("interaction", func(b []byte) (any, error) { return wire.ParseInteractionResponseCommand(b) })
		check("interactionAck", func(b []byte) (any, error) { return wire.ParseInteractionAcknowledgement(b) })
		check("observation", func(b []byte) (any, error) { return wire.ParseEnvironmentObservation(b) })
		check("capabilities", func(b []byte) (any, error) { return wire.ParseCapabilities(b) })
		check("turnInput", func(b []byte) (any, error) { return wire.ParseTurnInput(b) })
		check("sessionRef", func(b []byte) (any, error) { return wire.ParseSessionRef(b) })
		check("sessionRequest", func(b []byte) (any, error) { return wire.ParseSessionRequest(b) })
		check("session", func(b []byte) (any, error) { return wire.ParseSession(b) })
		check("sessionStatus", func(b []byte) (any, error) { return wire.ParseSessionStatus(b) })
		check("sessionEvents", func(b []byte) (any, error) { return wire.ParseSessionEventsRequest(b) })
		check("sessionResultRequest", func(b []byte) (any, error) { return wire.ParseSessionResultRequest(b) })
		check("sessionResult", func(b []byte) (any, error) { return wire.ParseSessionResult(b) })
		check("sessionPrompt", func(b []byte) (any, error) { return wire.ParseSessionPromptRequest(b) })
		check("promptResult", func(b []byte) (any, error) { return wire.ParsePromptResult(b) })
		check("sessionCancelRun", func(b []byte) (any, error) { return wire.ParseSessionCancelRunRequest(b) })
		check("cancelRunAck", func(b []byte) (any, error) { return wire.ParseRunCancellationAcknowledgement(b) })
		check("sessionInteraction", func(b []byte) (any, error) { return wire.ParseSessionInteractionRequest(b) })
		check("readFile", func(b []byte) (any, error) { return wire.ParseReadFileRequest(b) })
		check("readFileResult", func(b []byte) (any, error) { return wire.ParseReadFileResult(b) })
		check("writeFile", func(b []byte) (any, error) { return wire.ParseWriteFileRequest(b) })
		check("exec", func(b []byte) (any, error) { return wire.ParseExecRequest(b) })
		check("execResult", func(b []byte) (any, error) { return wire.ParseExecResult(b) })
		check("profileValidationRequest", func(b []byte) (any, error) { return wire.ParseProfileValidationRequest(b) })
		check("profileValidation", func(b []byte) (any, error) { return wire.ParseProfileValidation(b) })
		check("effects", func(b []byte) (any, error) { return wire.ParseEffects(b) })
		check("sessionContinue", func(b []byte) (any, error) { return wire.ParseSessionContinueRequest(b) })
		check("boundaryProof", func(b []byte) (any, error) { return wire.ParseNativeContextBoundaryProof(b) })
		check("continuationResult", func(b []byte) (any, error) { return wire.ParseNativeContinuationResult(b) })
		check("transferRequest", func(b []byte) (any, error) { return wire.ParseContextTransferRequest(b) })
		check("transferResult", func(b []byte) (any, error) { return wire.ParseContextTransferResult(b) })
		check("transferLookup", func(b []byte) (any, error) { return wire.ParseContextTransferLookup(b) })
		check("checkpointCall", func(b []byte) (any, error) { return wire.ParseCheckpointCall(b) })
		check("forkCall", func(b []byte) (any, error) { return wire.ParseForkCall(b) })
		check("checkpointRef", func(b []byte) (any, error) { return wire.ParseCheckpointRef(b) })
		check("workspaceCheckpointRequest", func(b []byte) (any, error) { return wire.ParseWorkspaceCheckpointRequest(b) })
		check("workspaceCheckpointResult", func(b []byte) (any, error) { return wire.ParseWorkspaceCheckpointResult(b) })
		check("workspaceCheckpointLookup", func(b []byte) (any, error) { return wire.ParseWorkspaceCheckpointLookupResult(b) })
		check("workspaceForkRequest", func(b []byte) (any, error) { return wire.ParseWorkspaceForkRequest(b) })
		check("workspaceForkResult", func(b []byte) (any, error) { return wire.ParseWorkspaceForkResult(b) })
		check("workspaceForkLookup", func(b []byte) (any, error) { return wire.ParseWorkspaceForkLookupResult(b) })
		check("operationLookup", func(b []byte) (any, error) { return wire.ParseWorkspaceOperationLookupRequest(b) })
		check("cleanupRequest", func(b []byte) (any, error) { return wire.ParseWorkspaceCleanupRequest(b) })
		check("cleanupAck", func(b []byte) (any, error) { return wire.ParseWorkspaceCleanupAcknowledgement(b) })
		check("exactCreate", func(b []byte) (any, error) { return wire.ParseCreateExactProcessInput(b) })
		check("exactQuery", func(b []byte) (any, error) { return wire.ParseExactProcessEnvironmentQuery(b) })
		check("exactEnvironment", func(b []byte) (any, error) { return wire.ParseExactEnvironment(b) })
		check("exactEnvironmentList", func(b []byte) (any, error) { return wire.ParseExactEnvironmentList(b) })
		check("exactFileWrite", func(b []byte) (any, error) { return wire.ParseExactFileWrite(b) })
		check("exactFileRead", func(b []byte) (any, error) { return wire.ParseExactFileRead(b) })
		check("exactFileData", func(b []byte) (any, error) { return wire.ParseExactFileData(b) })
		check("exactProcessList", func(b []byte) (any, error) { return wire.ParseExactProcessList(b) })
		check("exactSpawn", func(b []byte) (any, error) { return wire.ParseExactSpawnCall(b) })
		check("exactStatus", func(b []byte) (any, error) { return wire.ParseExactProcessStatus(b) })
		check("exactWait", func(b []byte) (any, error) { return wire.ParseExactWaitResult(b) })
		check("exactOutput", func(b []byte) (any, error) { return wire.ParseExactOutputChunk(b) })
		checkErrorMapping(t, data)
	})
}

// checkErrorMapping: an accepted error body, as the client's error,
// matches at most one contract refusal; a refusal code is never a 5xx
// (which the client would retry); errors.As never panics, and a typed
// refusal it recovers re-encodes to the same detail.
func checkErrorMapping(t *testing.T, data []byte) {
	eb, err := wire.ParseErrorBody(data)
	if err != nil {
		return
	}
	we := &wire.Error{Status: wire.Status(eb.Error.Code), ErrorDetail: eb.Error}
	matched := 0
	for _, s := range []error{contract.ErrIdempotencyConflict, contract.ErrUnsupported, fs.ErrNotExist, contract.ErrDestroyed,
		contract.ErrOutOfScope, contract.ErrLegacyContextTransferRequest, contract.ErrCreateInput, contract.ErrNotCanonical,
		contract.ErrBranchingMaterial, contract.ErrFileTooLarge, contract.ErrFileMode, contract.ErrObservationCredential,
		contract.ErrPrivateEvent, contract.ErrQuotaRefused, wire.ErrNotFound} {
		if errors.Is(we, s) {
			matched++
		}
	}
	if matched > 1 {
		t.Fatalf("%s matches %d contract errors", data, matched)
	}
	if slices.Contains(wire.RefusalCodes(), eb.Error.Code) && we.Status >= 500 {
		t.Fatalf("refusal code %s has status %d", eb.Error.Code, we.Status)
	}
	var cwd *contract.CwdBaseError
	if errors.As(we, &cwd) {
		if d, ok := wire.Refusal(cwd); !ok || d.CwdBase == nil || *d.CwdBase != *eb.Error.CwdBase {
			t.Fatalf("%s: the recovered %#v re-encodes to %#v", data, cwd, d)
		}
	}
	var big *contract.FileTooLargeError
	if errors.As(we, &big) {
		if d, ok := wire.Refusal(big); !ok || !reflect.DeepEqual(d.FileTooLarge, eb.Error.FileTooLarge) {
			t.Fatalf("%s: the recovered %#v re-encodes to %#v", data, big, d)
		}
	}
	var quota *contract.QuotaRefusalError
	_ = errors.As(we, &quota)
}

// FuzzSSEReader: the event reader never panics, never returns data over
// the limit, and terminates on any input.
func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("id: 1\ndata: {}\n\n"))
	f.Add([]byte(": c\r\nevent: end\r\ndata: x\r\n\r\n"))
	f.Add([]byte("data: a\ndata: b\n\nid: 2"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := wire.NewSSEReader(bytes.NewReader(data))
		for i := 0; i <= len(data); i++ {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if len(ev.Data) > wire.MaxBodyBytes {
				t.Fatalf("event data of %d bytes", len(ev.Data))
			}
		}
		t.Fatal("the reader returned more events than the input has bytes")
	})
}
