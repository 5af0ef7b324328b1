package sidecar_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/schema"
	"github.com/agentrt/agentrt/sidecar"
)

// refusing is the scripted provider whose Create answers err.
type refusing struct {
	*scripted.Provider
	err atomic.Pointer[error]
}

func (r *refusing) Create(context.Context, *contract.CreateInput) (contract.Environment, error) {
	return nil, *r.err.Load()
}

// every final-refusal sentinel of package contract, for the check that
// a refusal matches its own sentinel and no other.
var refusalSentinels = []error{
	contract.ErrIdempotencyConflict, contract.ErrUnsupported, fs.ErrNotExist, contract.ErrDestroyed,
	contract.ErrOutOfScope, contract.ErrLegacyContextTransferRequest, contract.ErrCreateInput,
	contract.ErrNotCanonical, contract.ErrBranchingMaterial, contract.ErrFileTooLarge, contract.ErrFileMode,
	contract.ErrObservationCredential, contract.ErrPrivateEvent, contract.ErrQuotaRefused,
}

// Issue 14: every final refusal of the contract crosses a real server
// (sidecar over HTTP, providers/remote client) as its own 4xx code, maps
// back to the same contract error (errors.Is, and errors.As for the typed
// ones) and is sent once, never retried; a fault stays a 5xx and is.
func TestFinalRefusalsRoundTripUnretried(t *testing.T) {
	wait := 1500 * time.Millisecond
	legacy := &contract.LegacyContextTransferError{Err: &schema.Error{Kind: contract.KindContextTransferRequest,
		Issues: []schema.Issue{{Path: "/plan", Code: schema.CodeCustom, Message: "a complete local plan"}}}}
	tests := []struct {
		name   string
		err    error
		status int
		code   string
		is     error // the sentinel the client's error matches; nil: none
		as     any   // the typed error errors.As recovers, when there is one
	}{
		{"idempotency conflict", fmt.Errorf("create: %w", contract.ErrIdempotencyConflict), 409, wire.CodeIdempotencyConflict, contract.ErrIdempotencyConflict, nil},
		{"unsupported", fmt.Errorf("egress mode: %w", contract.ErrUnsupported), 422, wire.CodeUnsupported, contract.ErrUnsupported, nil},
		{"file not found", &fs.PathError{Op: "open", Path: "a.txt", Err: fs.ErrNotExist}, 404, wire.CodeFileNotFound, fs.ErrNotExist, nil},
		{"destroyed", fmt.Errorf("env-1: %w", contract.ErrDestroyed), 410, wire.CodeDestroyed, contract.ErrDestroyed, nil},
		{"out of scope (scripted)", fmt.Errorf("%w: checkpoint cp-9", scripted.ErrOutOfScope), 403, wire.CodeOutOfScope, contract.ErrOutOfScope, nil},
		{"legacy context transfer", legacy, 422, wire.CodeLegacyContextTransfer, contract.ErrLegacyContextTransferRequest, nil},
		{"create input", fmt.Errorf("%w: metadata", contract.ErrCreateInput), 400, wire.CodeCreateInput, contract.ErrCreateInput, nil},
		{"not canonical", fmt.Errorf("metadata: %w", contract.ErrNotCanonical), 400, wire.CodeNotCanonical, contract.ErrNotCanonical, nil},
		{"branching material", fmt.Errorf("fork: %w", contract.ErrBranchingMaterial), 422, wire.CodeBranchingMaterial, contract.ErrBranchingMaterial, nil},
		{"file too large", &contract.FileTooLargeError{Path: "big.bin", Size: 10, MaxBytes: 5}, 422, wire.CodeFileTooLarge, contract.ErrFileTooLarge,
			&contract.FileTooLargeError{Path: "big.bin", Size: 10, MaxBytes: 5}},
		{"file too large, size unknown", &contract.FileTooLargeError{Path: "big.bin", Size: -1, MaxBytes: 5}, 422, wire.CodeFileTooLarge, contract.ErrFileTooLarge,
			&contract.FileTooLargeError{Path: "big.bin", Size: -1, MaxBytes: 5}},
		{"file mode", fmt.Errorf("%w: 0o10000", contract.ErrFileMode), 400, wire.CodeFileMode, contract.ErrFileMode, nil},
		{"observation credential", fmt.Errorf("observe: %w", contract.ErrObservationCredential), 422, wire.CodeObservationCredential, contract.ErrObservationCredential, nil},
		{"private event", fmt.Errorf("publish: %w", contract.ErrPrivateEvent), 422, wire.CodePrivateEvent, contract.ErrPrivateEvent, nil},
		{"cwd base", &contract.CwdBaseError{Label: "scripted", Want: "repository", Got: "host"}, 422, wire.CodeCwdBase, nil,
			&contract.CwdBaseError{Label: "scripted", Want: "repository", Got: "host"}},
		{"quota", &contract.QuotaRefusalError{Provider: "scripted", Stage: 2, RetryAfter: &wait, Message: "window used up"}, 429, wire.CodeQuotaRefused, contract.ErrQuotaRefused,
			&contract.QuotaRefusalError{Provider: "scripted", Stage: 2, RetryAfter: &wait, Message: "window used up"}},
		{"fault", errors.New("the backend fell over"), 502, wire.CodeProvider, nil, nil},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.code] = true
	}
	for _, code := range wire.RefusalCodes() {
		if !covered[code] {
			t.Errorf("refusal code %q has no case in this table", code)
		}
	}

	p := &refusing{Provider: newScripted(t)}
	s, err := sidecar.New(p, sidecar.Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	var creates atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == wire.PathEnvironments {
			creates.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { s.Close(); ts.Close() })
	const maxRetries = 2
	client, err := remote.New(remote.Options{BaseURL: ts.URL, Token: testToken, MaxRetries: maxRetries, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.err.Store(&tt.err)
			creates.Store(0)
			env, err := client.Create(t.Context(), createInput(""))
			if err == nil {
				t.Fatalf("create answered %v, want the refusal", env)
			}
			var we *wire.Error
			if !errors.As(err, &we) {
				t.Fatalf("%v (%T) is not a *wire.Error", err, err)
			}
			if we.Status != tt.status || we.Code != tt.code {
				t.Errorf("answered %d %s, want %d %s", we.Status, we.Code, tt.status, tt.code)
			}
			wantCalls := int32(1)
			if tt.status >= 500 {
				wantCalls = 1 + maxRetries
			}
			if got := creates.Load(); got != wantCalls {
				t.Errorf("the server saw %d creates, want %d", got, wantCalls)
			}
			for _, sentinel := range refusalSentinels {
				if got, want := errors.Is(err, sentinel), sentinel == tt.is; got != want {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", err, sentinel, got, want)
				}
			}
			switch want := tt.as.(type) {
			case *contract.FileTooLargeError:
				var got *contract.FileTooLargeError
				if !errors.As(err, &got) {
					t.Fatalf("errors.As finds no *contract.FileTooLargeError in %v", err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("FileTooLargeError (-want +got):\n%s", d)
				}
			case *contract.CwdBaseError:
				var got *contract.CwdBaseError
				if !errors.As(err, &got) {
					t.Fatalf("errors.As finds no *contract.CwdBaseError in %v", err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("CwdBaseError (-want +got):\n%s", d)
				}
			case *contract.QuotaRefusalError:
				var got *contract.QuotaRefusalError
				if !errors.As(err, &got) {
					t.Fatalf("errors.As finds no *contract.QuotaRefusalError in %v", err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("QuotaRefusalError (-want +got):\n%s", d)
				}
			case nil:
			default:
				t.Fatalf("no check for %T", want)
			}
			if tt.code == wire.CodeLegacyContextTransfer && (we.Path == nil || *we.Path != "/plan") {
				t.Errorf("the legacy refusal's path is %v, want /plan", we.Path)
			}
		})
	}
}

// Issue 14 (serve gaps, item 3): a request whose method its route does
// not answer gets the wire's JSON refusal, method_not_allowed (405),
// with an Allow header naming exactly the route's methods — also on the
// routes that answer two methods, which the catch-all used to swallow
// as not_found — and never net/http's plain-text 405. An unknown path is
// the JSON not_found; the token is still checked first.
func TestWrongMethodIsJSONRefusalWithAllow(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	tests := []struct {
		path  string
		allow string
	}{
		{wire.PathHealth, "GET"},
		{wire.PathCapabilities, "GET"},
		{wire.PathEnvironments, "POST"},
		{"/v1/environments/env-1", "DELETE, GET"},
		{"/v1/environments/env-1/turns", "POST"},
		{"/v1/environments/env-1/observation", "GET"},
		{wire.PathExactEnvironments, "POST"},
		{"/v1/exact/environments/x", "DELETE, GET"},
		{"/v1/exact/environments/x/processes", "GET, POST"},
		{"/v1/exact/environments/x/processes/1", "GET"},
		{"/v1/exact/environments/x/processes/1/wait", "POST"},
		{"/v1/exact/environments/x/processes/1/output/stdout", "GET"},
	}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions, "BREW"}
	for _, tt := range tests {
		for _, m := range methods {
			if strings.Contains(", "+tt.allow+", ", ", "+m+", ") {
				continue
			}
			t.Run(m+" "+tt.path, func(t *testing.T) {
				req, err := http.NewRequest(m, ts.URL+tt.path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+testToken)
				resp, err := ts.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				if ct := resp.Header.Get("Content-Type"); ct != wire.ContentTypeJSON {
					t.Errorf("Content-Type %q, want %q", ct, wire.ContentTypeJSON)
				}
				if got := resp.Header.Get("Allow"); got != tt.allow {
					t.Errorf("Allow %q, want %q", got, tt.allow)
				}
				wantError(t, resp.StatusCode, body, http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, nil)
			})
		}
	}
	status, body := do(t, ts, http.MethodPut, "/v1/no/such/route", "", nil)
	wantError(t, status, body, http.StatusNotFound, wire.CodeNotFound, nil)
	status, body = do(t, ts, http.MethodPut, "/v1/exact/environments/x/processes", "", map[string]string{"Authorization": ""})
	wantError(t, status, body, http.StatusUnauthorized, wire.CodeUnauthorized, nil)
}
