package sidecar_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/sidecar"
)

// Workspace reads, writes and commands and profile validation are routed
// to the provider; a missing environment, a malformed body and an
// oversized one are refused with the usual codes and paths.
func TestWorkspaceAndProfileValidationRoutes(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	status, body := do(t, ts, http.MethodPost, wire.PathEnvironments, createBody, nil)
	env := createResult(t, status, body).Environment
	base := "/v1/environments/" + env.ID + "/workspace/"

	status, body = do(t, ts, http.MethodPost, base+"write", `{"path":"notes/a.txt","content":"hello\n"}`, nil)
	if status != http.StatusNoContent {
		t.Fatalf("write: %d %s", status, body)
	}
	status, body = do(t, ts, http.MethodPost, base+"read", `{"path":"notes/a.txt"}`, nil)
	if res, err := wire.ParseReadFileResult(body); status != http.StatusOK || err != nil || res.Content != "hello\n" {
		t.Fatalf("read: %d %s (%v)", status, body, err)
	}
	status, body = do(t, ts, http.MethodPost, base+"exec", `{"command":"cat notes/a.txt","options":{"timeoutMs":1000}}`, nil)
	if res, err := wire.ParseExecResult(body); status != http.StatusOK || err != nil || res.ExitCode != 0 || res.Stdout != "hello\n" {
		t.Fatalf("exec: %d %s (%v)", status, body, err)
	}
	status, body = do(t, ts, http.MethodPost, base+"exec", `{"command":"false"}`, nil)
	if res, err := wire.ParseExecResult(body); status != http.StatusOK || err != nil || res.ExitCode != 1 {
		t.Fatalf("exec false: %d %s (%v)", status, body, err)
	}

	status, body = do(t, ts, http.MethodPost, base+"read", `{"path":"missing.txt"}`, nil)
	wantError(t, status, body, http.StatusNotFound, wire.CodeFileNotFound, nil)
	status, body = do(t, ts, http.MethodPost, "/v1/environments/none/workspace/read", `{"path":"a"}`, nil)
	wantError(t, status, body, http.StatusNotFound, wire.CodeNotFound, nil)
	status, body = do(t, ts, http.MethodPost, base+"write", `{"path":"a"}`, nil)
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/content"))
	status, body = do(t, ts, http.MethodPost, base+"exec", `{"command":"echo","options":{"timeoutMs":0}}`, nil)
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/options/timeoutMs"))
	status, body = do(t, ts, http.MethodGet, base+"read", "", nil)
	wantError(t, status, body, http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, nil)
	big := `{"path":"a","content":"` + strings.Repeat("x", wire.MaxBodyBytes) + `"}`
	status, body = do(t, ts, http.MethodPost, base+"write", big, nil)
	wantError(t, status, body, http.StatusRequestEntityTooLarge, wire.CodeTooLarge, nil)

	status, body = do(t, ts, http.MethodPost, wire.PathProfileValidation, `{"profile":{"name":"t"}}`, nil)
	if res, err := wire.ParseProfileValidation(body); status != http.StatusOK || err != nil || !res.OK {
		t.Fatalf("validate: %d %s (%v)", status, body, err)
	}
	status, body = do(t, ts, http.MethodPost, wire.PathProfileValidation, `{"profile":7}`, nil)
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/profile"))
	status, body = do(t, ts, http.MethodPost, wire.PathProfileValidation, `{"profile":{"name":"t"}}`, map[string]string{"Authorization": ""})
	wantError(t, status, body, http.StatusUnauthorized, wire.CodeUnauthorized, nil)
}

// plainProvider serves a provider's environments without any workspace
// ability or profile validation, declaring none of them.
type plainProvider struct{ contract.Provider }

func (p plainProvider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	c, err := p.Provider.Capabilities(ctx)
	if err != nil {
		return nil, err
	}
	kept := *c
	kept.Workspace.Read, kept.Workspace.Write, kept.Workspace.Exec = false, false, false
	kept.Profile.Validation = false
	return &kept, nil
}

func (p plainProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return plainEnvironment{env}, nil
}

type plainEnvironment struct{ contract.Environment }

// A provider that declares no workspace ability and no profile
// validation is served without them: the document declares none, the
// routes refuse as unsupported and the remote client offers none.
func TestUndeclaredWorkspaceAbilitiesAreNotServed(t *testing.T) {
	s, err := sidecar.New(plainProvider{newScripted(t)}, sidecar.Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptestServer(t, s)
	status, body := do(t, ts, http.MethodPost, wire.PathEnvironments, createBody, nil)
	env := createResult(t, status, body).Environment
	for _, r := range []struct{ path, body string }{
		{"/v1/environments/" + env.ID + "/workspace/read", `{"path":"a"}`},
		{"/v1/environments/" + env.ID + "/workspace/write", `{"path":"a","content":""}`},
		{"/v1/environments/" + env.ID + "/workspace/exec", `{"command":"true"}`},
		{wire.PathProfileValidation, `{"profile":"catalog-id"}`},
	} {
		status, body := do(t, ts, http.MethodPost, r.path, r.body, nil)
		wantError(t, status, body, http.StatusUnprocessableEntity, wire.CodeUnsupported, nil)
	}

	ctx := context.Background()
	p, err := newRemote(t, ts.URL).Exposed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	caps, err := p.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w := caps.Workspace; w.Read || w.Write || w.Exec || caps.Profile.Validation {
		t.Fatalf("served document declares workspace %+v, profile validation %v", w, caps.Profile.Validation)
	}
	if err := contract.CheckProviderExposure(caps, p); err != nil {
		t.Error(err)
	}
	renv, err := p.Create(ctx, createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.CheckExposure(caps, renv); err != nil {
		t.Error(err)
	}
}

// hangingProvider's commands never end on their own.
type hangingProvider struct{ contract.Provider }

func (p hangingProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return hangingEnvironment{env}, nil
}

type hangingEnvironment struct{ contract.Environment }

func (hangingEnvironment) Exec(ctx context.Context, command string, req *contract.ExecRequest) (*contract.ExecResult, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A command that does not end is cut at the server's exec deadline and
// answered as unavailable, through the wire and the remote client.
func TestExecBoundedByDeadline(t *testing.T) {
	s, err := sidecar.New(hangingProvider{newScripted(t)}, sidecar.Options{Token: testToken, ExecTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptestServer(t, s)
	status, body := do(t, ts, http.MethodPost, wire.PathEnvironments, createBody, nil)
	env := createResult(t, status, body).Environment
	start := time.Now()
	status, body = do(t, ts, http.MethodPost, "/v1/environments/"+env.ID+"/workspace/exec", `{"command":"sleep forever"}`, nil)
	wantError(t, status, body, http.StatusServiceUnavailable, wire.CodeUnavailable, nil)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the command was cut after %v", d)
	}

	ctx := context.Background()
	p, err := newRemote(t, ts.URL).Exposed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	renv, err := p.Create(ctx, createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	x, ok := renv.(contract.CommandExecutor)
	if !ok {
		t.Fatal("the remote environment offers no Exec")
	}
	if _, err := x.Exec(ctx, "sleep forever", &contract.ExecRequest{}); err == nil {
		t.Fatal("a command cut at the deadline succeeded")
	}
}

func httptestServer(t *testing.T, s *sidecar.Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); ts.Close() })
	return ts
}
