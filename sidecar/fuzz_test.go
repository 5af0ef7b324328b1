package sidecar_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/sidecar"
)

// FuzzRequestDecoders: any body sent to the create, turn, cancel,
// dispatch, session (native continuation included), workspace, branching
// (legacy and durable), context transfer, exact-process and
// profile-validation routes is answered (never a panic, never a 5xx for bad input), and
// every refusal is an ErrorBody.
func FuzzRequestDecoders(f *testing.F) {
	for _, s := range []string{
		`{"profile":{"name":"t"}}`,
		`{"profile":{"name":"t"},"idempotencyKey":"k"}`,
		`{"turnId":"t","input":{"prompt":"hi"}}`,
		`{"operationId":"op"}`,
		`{"prompt":"hi","detach":true}`,
		`{"controlRef":{"runId":"r","provider":"scripted","environmentId":"e","sessionId":"s"}}`,
		`{"since":"x","executionId":"y"}`, `{"waitMs":5}`, `{"input":{"prompt":"hi"}}`,
		`{"path":"a.txt","content":"x"}`, `{"path":"a.txt","sessionId":"s"}`,
		`{"command":"echo ok","options":{"timeoutMs":10,"env":{"A":"b"}}}`, `{"profile":"catalog-id"}`,
		`{"request":{"operationId":"op","requestDigest":"sha256:00","turnDigest":"sha256:00","run":{},"expectedBoundary":{}},"turn":{"prompt":"go"}}`,
		`{"operationId":"op","request":{"name":"cp"}}`, `{"operationId":"op","from":{"id":"cp"},"request":{}}`,
		`{"idempotencyKey":"k","requestDigest":"sha256:00"}`,
		`{"operationId":"op","kind":"checkpoint","targetId":"cp","provider":"scripted","requestDigest":"sha256:00"}`,
		`{"image":"r@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","egress":{"mode":"blocked"},"maxLifetimeMs":1000,"resources":{"cpu":1,"memoryMb":1,"diskMb":1},"metadata":{},"idempotencyKey":"k"}`,
		`{"metadata":{"a":1}}`, `{"path":"/tmp/x","data":"AAEC/w==","mode":416}`, `{"path":"/tmp/x","maxBytes":3}`,
		`{"operationId":"op","launch":{"executable":"/bin/true","args":[],"cwd":"/tmp","env":{},"timeoutMs":0}}`,
		`{"profile":`, `[]`, `{"a":1,"a":2}`, "\"\xff\"",
	} {
		f.Add([]byte(s))
	}
	p := newScripted(f)
	s, err := sidecar.New(p, sidecar.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{wire.PathEnvironments, "/v1/environments/none/turns", "/v1/environments/none/turns/t/cancel",
			"/v1/environments/none/dispatch", "/v1/environments/none/sessions/s", "/v1/environments/none/sessions/s/status",
			"/v1/environments/none/sessions/s/events", "/v1/environments/none/sessions/s/result", "/v1/environments/none/sessions/s/prompt",
			"/v1/environments/none/sessions/s/cancel", "/v1/environments/none/sessions/s/cancel-run",
			"/v1/environments/none/sessions/s/interactions", "/v1/environments/none/sessions/s/boundary",
			"/v1/environments/none/sessions/s/continue", "/v1/environments/none/workspace/read",
			"/v1/environments/none/workspace/write", "/v1/environments/none/workspace/exec", wire.PathProfileValidation,
			wire.PathContextTransferLookup, "/v1/environments/none/checkpoints", "/v1/environments/none/forks",
			"/v1/environments/none/branching/checkpoint", "/v1/environments/none/branching/checkpoint-lookup",
			"/v1/environments/none/branching/checkpoint-delete", "/v1/environments/none/branching/fork",
			"/v1/environments/none/branching/fork-lookup", "/v1/environments/none/branching/fork-destroy",
			wire.PathExactEnvironments, wire.PathExactEnvironmentList, "/v1/exact/environments/none/file-write",
			"/v1/exact/environments/none/file-read", "/v1/exact/environments/none/processes",
			"/v1/exact/environments/none/processes/1/wait", "/v1/exact/environments/none/processes/1/kill"} {
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			req.Header.Set("Content-Type", wire.ContentTypeJSON)
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %q: status %d %s", path, body, rec.Code, rec.Body)
			}
			if rec.Code >= 400 {
				if _, err := wire.ParseErrorBody(rec.Body.Bytes()); err != nil {
					t.Fatalf("%s: the refusal %s is not an ErrorBody: %v", path, rec.Body, err)
				}
			}
		}
		// The exact output route reads its offset from the query.
		req := httptest.NewRequest(http.MethodGet, "/v1/exact/environments/none/processes/1/output/stdout?offset="+url.QueryEscape(string(body)), nil)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("output offset %q: status %d %s", body, rec.Code, rec.Body)
		}
	})
}
