package contract_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

func TestStatuses(t *testing.T) {
	// ENV-15: the seven environment statuses; sessions add completed and
	// cancelled.
	env := []contract.EnvironmentStatus{contract.EnvironmentPending, contract.EnvironmentProvisioning, contract.EnvironmentRunning,
		contract.EnvironmentStopped, contract.EnvironmentFailed, contract.EnvironmentExpired, contract.EnvironmentUnknown}
	for _, s := range env {
		if !s.Valid() || !contract.SessionStatus(s).Valid() {
			t.Fatalf("%q", s)
		}
	}
	if contract.EnvironmentStatus("completed").Valid() || !contract.SessionCompleted.Valid() || !contract.SessionCancelled.Valid() {
		t.Fatal("session-only statuses")
	}
	if contract.EnvironmentStatus("Running").Valid() {
		t.Fatal("statuses are case sensitive")
	}
	_, err := contract.ParseEnvironmentSummary([]byte(`{"id":"e","provider":"p","status":"done"}`))
	envWantIssue(t, err, "/status")
	s, err := contract.ParseEnvironmentSummary([]byte(`{"id":"e","provider":"p","status":"running","metadata":{"owner":"x"}}`))
	if err != nil || *s.Status != contract.EnvironmentRunning {
		t.Fatal(s, err)
	}
}

func TestExecResult(t *testing.T) {
	// A result with no finite exit status is refused, never read as 0.
	_, err := contract.ParseExecResult([]byte(`{"stdout":"ok","stderr":""}`))
	envWantIssue(t, err, "/exitCode")
	r, err := contract.ParseExecResult([]byte(`{"exitCode":0,"stdout":"ok\n","stderr":""}`))
	if err != nil || !r.Succeeded() {
		t.Fatal(r, err)
	}
	for _, tc := range []struct {
		in   string
		want *contract.ExecResult
	}{
		{`{"exitCode":2,"stdout":"o","stderr":"e"}`, &contract.ExecResult{ExitCode: 2, Stdout: "o", Stderr: "e"}},
		{`{"code":0,"output":"o","error":"e"}`, &contract.ExecResult{ExitCode: 0, Stdout: "o", Stderr: "e"}},
		{`{"exitCode":"0","code":1}`, &contract.ExecResult{ExitCode: 1}},
		{`{"exitCode":137}`, &contract.ExecResult{ExitCode: 137}},
		{`{"stdout":"ok"}`, nil},
		{`{"exitCode":null}`, nil},
		{`{"exitCode":"0"}`, nil},
		{`{"exitCode":1.5}`, nil},
		{`"done"`, nil},
		{`null`, nil},
	} {
		v, err := canonjson.Decode([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		got, err := contract.ExecResultFromUnknown(v, "sandbox.commands.run")
		if tc.want == nil {
			if err == nil || !strings.Contains(err.Error(), "sandbox.commands.run") {
				t.Errorf("%s: accepted %+v (%v)", tc.in, got, err)
			}
			continue
		}
		if err != nil || *got != *tc.want {
			t.Errorf("%s: %+v %v", tc.in, got, err)
		}
	}
	req, err := contract.ParseExecRequest([]byte(`{"cwd":"/work","env":{"A":"1"},"timeoutMs":1000}`))
	if err != nil || *req.TimeoutMs != 1000 {
		t.Fatal(req, err)
	}
	_, err = contract.ParseExecRequest([]byte(`{"timeoutMs":0}`))
	envWantIssue(t, err, "/timeoutMs")
}

func TestAuxiliaryShapes(t *testing.T) {
	ref, err := contract.ParseSessionRef([]byte(`{"id":"s","provider":"p","controlRef":{"runId":"r","provider":"p","environmentId":"e"},"metadata":{}}`))
	if err != nil || ref.ControlRef.RunID != "r" || ref.Metadata == nil {
		t.Fatal(ref, err)
	}
	_, err = contract.ParseSessionRef([]byte(`{"id":"s","controlRef":{"runId":"r"}}`))
	envWantIssue(t, err, "/controlRef/provider")

	if _, err := contract.ParseCheckpointRef([]byte(`{"id":"c","provider":"p","metadata":{"a":1}}`)); err != nil {
		t.Fatal(err)
	}
	_, err = contract.ParseCheckpointRef([]byte(`{"provider":"p"}`))
	envWantIssue(t, err, "/id")
	for _, parse := range []func([]byte) error{
		func(b []byte) error { _, err := contract.ParseCheckpointRequest(b); return err },
		func(b []byte) error { _, err := contract.ParseForkRequest(b); return err },
	} {
		if err := parse([]byte(`{"name":"n","metadata":{}}`)); err != nil {
			t.Fatal(err)
		}
		envWantIssue(t, parse([]byte(`{"name":"n","placement":{}}`)), "")
	}
	if _, err := contract.ParseEnvironmentQuery([]byte(`{"name":"n","metadata":{"a":1},"providerOptions":{}}`)); err != nil {
		t.Fatal(err)
	}

	v, err := contract.ParseProfileValidation([]byte(`{"ok":false,"issues":[{"level":"error","code":"unsupported","message":"no hooks","path":"/hooks"},
		{"level":"info","code":"note","message":"m"}],"normalizedProfile":{"name":"p"}}`))
	if err != nil || !v.HasErrors() || *v.NormalizedProfile.Name != "p" {
		t.Fatal(v, err)
	}
	_, err = contract.ParseProfileValidation([]byte(`{"ok":true,"issues":[{"level":"fatal","code":"c","message":"m"}]}`))
	envWantIssue(t, err, "/issues/0/level")
}

func TestExecutionError(t *testing.T) {
	in, out := int64(120), int64(7)
	receipt := contract.ExecutionFailureReceipt{
		TokenUsage: &contract.PartialTokenUsage{InputTokens: &in, OutputTokens: &out},
		Timing:     &contract.ExecutionTiming{StartedAt: 1000, CompletedAt: 1500, DurationMs: 500},
	}
	cause := io.ErrUnexpectedEOF
	e, err := contract.NewExecutionError("adapter stream ended", receipt, cause)
	if err != nil {
		t.Fatal(err)
	}
	// ERR-01: a typed error, matched with errors.As, unwrapping to its
	// cause.
	var wrapped error = envErrorsJoin(e)
	var got *contract.ExecutionError
	if !errors.As(wrapped, &got) || !errors.Is(wrapped, io.ErrUnexpectedEOF) || got.Error() != "adapter stream ended" {
		t.Fatal("errors.As/Is")
	}
	// ERR-02: the receipt is a copy taken at construction.
	in = 999
	r := got.Receipt()
	if *r.TokenUsage.InputTokens != 120 {
		t.Fatal("the receipt follows the caller's later changes")
	}
	*r.TokenUsage.OutputTokens = 0
	r.Timing = nil
	if again := got.Receipt(); *again.TokenUsage.OutputTokens != 7 || again.Timing == nil {
		t.Fatal("changing a returned receipt changed the error")
	}
	// ERR-03: absent members stay absent, never zero.
	r = got.Receipt()
	if r.TokenUsage.TotalTokens != nil || r.TokenUsage.Cost != nil {
		t.Fatal("unreported counts became present")
	}
	empty, err := contract.NewExecutionError("refused before inference", contract.ExecutionFailureReceipt{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := canonjson.ToValue(empty.Receipt()); string(canonjson.Marshal(v)) != `{}` || empty.Unwrap() != nil {
		t.Fatalf("empty receipt %s", canonjson.Marshal(v))
	}
	// Impossible numbers are refused at construction.
	neg := int64(-1)
	_, err = contract.NewExecutionError("x", contract.ExecutionFailureReceipt{TokenUsage: &contract.PartialTokenUsage{ReasoningTokens: &neg}}, nil)
	envWantIssue(t, err, "/tokenUsage/reasoningTokens")
	_, err = contract.NewExecutionError("x", contract.ExecutionFailureReceipt{Timing: &contract.ExecutionTiming{DurationMs: -5}}, nil)
	envWantIssue(t, err, "/timing/durationMs")
	_, err = contract.ParseExecutionFailureReceipt([]byte(`{"tokenUsage":{"inputTokens":1.5}}`))
	envWantIssue(t, err, "/tokenUsage/inputTokens")
	_, err = contract.ParseExecutionFailureReceipt([]byte(`{"timing":{"startedAt":1}}`))
	envWantIssue(t, err, "/timing/completedAt")
	_, err = contract.ParseExecutionFailureReceipt([]byte(`{"usage":{}}`))
	envWantIssue(t, err, "")
}

// envErrorsJoin wraps err the way a host would before publishing it.
func envErrorsJoin(err error) error { return errors.Join(errors.New("run failed"), err) }

func TestExactProcessShapes(t *testing.T) {
	const input = `{"image":"registry.example.com/img@sha256:` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `",
		"egress":{"mode":"strict","allowDomains":["pypi.org"]},"maxLifetimeMs":600000,
		"resources":{"cpu":0.5,"memoryMb":1024,"diskMb":2048},"metadata":{"candidate":"c-1"},"idempotencyKey":"exact-1"}`
	in, err := contract.ParseCreateExactProcessInput([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	d1, err := contract.CreateExactProcessInputDigest(in)
	if err != nil {
		t.Fatal(err)
	}
	// EXP-11: the key is not part of the identity; every input is.
	other := *in
	other.IdempotencyKey = "exact-2"
	if d, _ := contract.CreateExactProcessInputDigest(&other); d != d1 {
		t.Fatal("the key changed the identity")
	}
	other.MaxLifetimeMs += 1000
	if d, _ := contract.CreateExactProcessInputDigest(&other); d == d1 {
		t.Fatal("a changed lifetime kept the identity")
	}
	for _, tc := range []struct{ id, name, from, to, path string }{
		{"EXP-10", "open egress", `{"mode":"strict","allowDomains":["pypi.org"]}`, `{"mode":"open"}`, "/egress/mode"},
		{"EXP-10", "strict without list", `{"mode":"strict","allowDomains":["pypi.org"]}`, `{"mode":"strict"}`, "/egress/allowDomains"},
		{"EXP-05", "resources missing", `"resources":{"cpu":0.5,"memoryMb":1024,"diskMb":2048},`, ``, "/resources"},
		{"EXP-05", "fractional memory", `"memoryMb":1024`, `"memoryMb":1024.5`, "/resources/memoryMb"},
		{"EXP-05", "zero cpu", `"cpu":0.5`, `"cpu":0`, "/resources/cpu"},
		{"EXP-11", "key missing", `,"idempotencyKey":"exact-1"`, ``, "/idempotencyKey"},
		{"EXP-11", "metadata missing", `"metadata":{"candidate":"c-1"},`, ``, "/metadata"},
		{"EXP-04", "lifetime zero", `"maxLifetimeMs":600000`, `"maxLifetimeMs":0`, "/maxLifetimeMs"},
	} {
		changed := strings.Replace(input, tc.from, tc.to, 1)
		if changed == input {
			t.Fatalf("%s: fixture unchanged", tc.name)
		}
		_, err := contract.ParseCreateExactProcessInput([]byte(changed))
		t.Run(tc.id+" "+tc.name, func(t *testing.T) { envWantIssue(t, err, tc.path) })
	}

	// EXP-07, EXP-08: a shell-free launch with a replacement environment.
	l, err := contract.ParseExactProcessLaunch([]byte(`{"executable":"/bin/echo","args":["$HOME; ls"],"cwd":"/work","env":{},"timeoutMs":0}`))
	if err != nil || l.Args[0] != "$HOME; ls" || l.Env == nil {
		t.Fatal(l, err)
	}
	_, err = contract.ParseExactProcessLaunch([]byte(`{"executable":"/bin/echo","cwd":"/work","env":{},"timeoutMs":0}`))
	envWantIssue(t, err, "/args")
	_, err = contract.ParseExactProcessLaunch([]byte(`{"executable":"/bin/echo","args":[],"cwd":"/work","env":{},"timeoutMs":-1}`))
	envWantIssue(t, err, "/timeoutMs")

	// EXP-09: a terminal reason that stays distinct from an exit.
	for _, doc := range []string{
		`{"pid":10,"running":true,"exitCode":-1}`,
		`{"pid":10,"running":false,"exitCode":0,"termination":{"kind":"exit","exitCode":0}}`,
		`{"pid":10,"running":false,"exitCode":-1,"exitSignal":"SIGKILL","termination":{"kind":"signal","signal":"SIGKILL"}}`,
		`{"pid":10,"running":false,"exitCode":-1,"termination":{"kind":"timeout","timeoutMs":30000}}`,
		`{"pid":10,"running":false,"exitCode":-1,"termination":{"kind":"cancelled"}}`,
	} {
		if _, err := contract.ParseExactProcessStatus([]byte(doc)); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
	}
	for _, tc := range []struct{ doc, path string }{
		{`{"pid":10,"running":true,"exitCode":0}`, "/exitCode"},
		{`{"pid":10,"running":true,"exitCode":-1,"termination":{"kind":"cancelled"}}`, "/termination"},
		{`{"pid":10,"running":false,"exitCode":0}`, "/termination"},
		{`{"pid":10,"running":false,"exitCode":0,"termination":{"kind":"signal","signal":"kill"}}`, "/termination/signal"},
		{`{"pid":10,"running":false,"exitCode":0,"termination":{"kind":"exit"}}`, "/termination/exitCode"},
		{`{"pid":10,"running":false,"exitCode":0,"termination":{"kind":"oom"}}`, "/termination/kind"},
	} {
		_, err := contract.ParseExactProcessStatus([]byte(tc.doc))
		envWantIssue(t, err, tc.path)
	}
	if _, err := contract.ParseExactProcessEnvironmentQuery([]byte(`{"metadata":{"candidate":"c-1"}}`)); err != nil {
		t.Fatal(err)
	}
}
