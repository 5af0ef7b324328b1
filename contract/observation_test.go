package contract_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

func obsPtr[T any](v T) *T { return &v }

func TestTokenUsageKeepsUnknownUnknown(t *testing.T) {
	// RTP-09, KB-32, CHD-06: a count the provider did not report stays
	// absent through parsing and encoding; it never becomes 0.
	u, err := contract.ParseTokenUsage([]byte(`{"inputTokens":10,"outputTokens":0}`))
	if err != nil {
		t.Fatal(err)
	}
	if u.TotalTokens != nil || u.CacheReadInputTokens != nil || u.CacheCreationInputTokens != nil || u.ReasoningTokens != nil || u.Cost != nil {
		t.Fatalf("absent counts were filled in: %+v", u)
	}
	v, err := canonjson.ToValue(u)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(canonjson.Marshal(v)); got != `{"inputTokens":10,"outputTokens":0}` {
		t.Fatalf("encoded %s", got)
	}
	// A reported zero is kept as a reported zero.
	u, err = contract.ParseTokenUsage([]byte(`{"inputTokens":1,"outputTokens":2,"reasoningTokens":0,"cost":0}`))
	if err != nil || u.ReasoningTokens == nil || *u.ReasoningTokens != 0 || u.Cost == nil {
		t.Fatalf("reported zeros lost: %+v %v", u, err)
	}

	for _, bad := range []string{
		`{"inputTokens":1}`,
		`{"inputTokens":-1,"outputTokens":0}`,
		`{"inputTokens":1.5,"outputTokens":0}`,
		`{"inputTokens":9007199254740992,"outputTokens":0}`,
		`{"inputTokens":1,"outputTokens":0,"cost":-0.01}`,
		`{"inputTokens":1,"outputTokens":0,"totalTokens":null}`,
		`{"inputTokens":1,"outputTokens":0,"extra":1}`,
	} {
		if _, err := contract.ParseTokenUsage([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	// ModelUsage is the same shape.
	var m contract.ModelUsage = contract.TokenUsage{InputTokens: 1, OutputTokens: 2}
	if _, err := contract.Validate(contract.KindModelUsage, contract.ModelUsageSchema, m); err != nil {
		t.Fatal(err)
	}
}

func TestObservationGet(t *testing.T) {
	// A value is read only from known and stale observations.
	known := &contract.Observation[contract.ComputeBilling]{State: contract.ObservationKnown,
		Value: &contract.ComputeBilling{Amount: 0, Currency: "USD"}}
	if v, ok := known.Get(); !ok || v.Currency != "USD" {
		t.Fatal("known value not returned")
	}
	stale := *known
	stale.State = contract.ObservationStale
	if _, ok := stale.Get(); !ok {
		t.Fatal("stale value not returned")
	}
	for _, state := range []string{contract.ObservationUnavailable, contract.ObservationRedacted, contract.ObservationUnknown, "future"} {
		o := &contract.Observation[contract.ComputeBilling]{State: state, Value: known.Value}
		if _, ok := o.Get(); ok {
			t.Errorf("%s: returned a value", state)
		}
	}
	var none *contract.Observation[string]
	if _, ok := none.Get(); ok {
		t.Error("nil observation returned a value")
	}

	// The schema refuses a value on a state that has none.
	for _, bad := range []string{
		`{"state":"unknown","value":1}`,
		`{"state":"unavailable"}`,
		`{"state":"redacted","reason":""}`,
		`{"state":"known","value":"pro"}`,
		`{"state":"stale","value":"pro","provenance":{"origin":"reported","observedAt":"2026-01-01T00:00:00Z"}}`,
	} {
		raw := `{"subject":{"provider":"p","environmentId":"e"},"capturedAt":"2026-01-01T00:00:00Z","accountUsage":{"plan":` + bad + `}}`
		if _, err := contract.ParseEnvironmentObservation([]byte(raw)); err == nil {
			t.Errorf("accepted plan %s", bad)
		}
	}
}

func TestSafeEndpoint(t *testing.T) {
	cases := []struct {
		endpoint string
		path     string // "" means valid
	}{
		{`{"host":"api.example.com","scheme":"https","port":443}`, ""},
		{`{"host":"10.0.0.1:8080"}`, ""},
		{`{"host":"user:pw@api.example.com"}`, "/host"},
		{`{"host":"api.example.com/v1"}`, "/host"},
		{`{"host":"https://api.example.com"}`, "/host"},
		{`{"host":"api example"}`, "/host"},
		{`{"host":"api\u3000example"}`, "/host"},
		{`{"host":"api\ufeffexample"}`, "/host"},
		{`{"host":"h","scheme":"https:"}`, "/scheme"},
		{`{"host":"h","scheme":"a@b"}`, "/scheme"},
		{`{"host":"h","scheme":"h\u00a0s"}`, "/scheme"},
		{`{"host":"h","port":0}`, "/port"},
		{`{"host":"h","port":65536}`, "/port"},
		{`{"host":"h","user":"u"}`, ""},
	}
	for _, c := range cases {
		_, err := contract.ParseSafeEndpoint([]byte(c.endpoint))
		switch {
		case c.path == "" && strings.Contains(c.endpoint, `"user"`):
			if !brIssueAt(err, "") {
				t.Errorf("%s: a credential field was accepted: %v", c.endpoint, err)
			}
		case c.path == "" && err != nil:
			t.Errorf("%s: %v", c.endpoint, err)
		case c.path != "" && !brIssueAt(err, c.path):
			t.Errorf("%s: want issue at %s, got %v", c.endpoint, c.path, err)
		}
	}
}

func obsObservation() *contract.EnvironmentObservation {
	return &contract.EnvironmentObservation{
		Subject:    contract.ProviderIdentity{Provider: "tangle", EnvironmentID: "env-1", SessionID: obsPtr("s-1")},
		CapturedAt: "2026-08-01T20:00:00.000Z",
		Identity: &contract.Observation[contract.ProviderIdentity]{State: contract.ObservationKnown,
			Value:      &contract.ProviderIdentity{Provider: "tangle", EnvironmentID: "env-1", Backend: obsPtr("firecracker")},
			Provenance: &contract.ObservationProvenance{Origin: contract.OriginReported, ObservedAt: "2026-08-01T20:00:00.000Z", Source: obsPtr("api")}},
	}
}

func TestEnvironmentObservationIdentityMatches(t *testing.T) {
	cases := []struct {
		name   string
		change func(o *contract.EnvironmentObservation)
		want   bool
	}{
		{"same", func(*contract.EnvironmentObservation) {}, true},
		{"later capture and observation", func(o *contract.EnvironmentObservation) {
			o.CapturedAt = "2026-08-02T00:00:00Z"
			o.Identity.Provenance.ObservedAt = "2026-08-01T21:00:00Z"
			o.Identity.Provenance.Origin = contract.OriginMeasured
		}, true},
		{"identity now stale", func(o *contract.EnvironmentObservation) {
			o.Identity.State, o.Identity.Reason = contract.ObservationStale, obsPtr("cached")
		}, false},
		{"other session", func(o *contract.EnvironmentObservation) { o.Subject.SessionID = obsPtr("s-2") }, false},
		{"session dropped", func(o *contract.EnvironmentObservation) { o.Subject.SessionID = nil }, false},
		{"other backend", func(o *contract.EnvironmentObservation) { o.Identity.Value.Backend = obsPtr("docker") }, false},
		{"other source", func(o *contract.EnvironmentObservation) { o.Identity.Provenance.Source = nil }, false},
		{"identity not observed", func(o *contract.EnvironmentObservation) { o.Identity = nil }, false},
		{"identity now unknown", func(o *contract.EnvironmentObservation) {
			o.Identity = &contract.Observation[contract.ProviderIdentity]{State: contract.ObservationUnknown}
		}, false},
		{"invalid replay", func(o *contract.EnvironmentObservation) { o.CapturedAt = "yesterday" }, false},
	}
	for _, c := range cases {
		replay := obsObservation()
		c.change(replay)
		if got := contract.EnvironmentObservationIdentityMatches(obsObservation(), replay); got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
	}
	a, b := obsObservation(), obsObservation()
	a.Identity, b.Identity = &contract.Observation[contract.ProviderIdentity]{State: contract.ObservationRedacted, Reason: obsPtr("policy")},
		&contract.Observation[contract.ProviderIdentity]{State: contract.ObservationRedacted, Reason: obsPtr("other reason")}
	if !contract.EnvironmentObservationIdentityMatches(a, b) {
		t.Error("two redacted identities do not match")
	}
	if contract.EnvironmentObservationIdentityMatches(nil, b) {
		t.Error("nil matches")
	}
}

func TestObservationContainsCredential(t *testing.T) {
	cases := []struct {
		json string
		want bool
	}{
		{`{"inputTokens":1,"outputTokens":2,"reasoningTokens":3}`, false},
		{`{"apiKey":"x"}`, true},
		{`{"API_KEY":"x"}`, true},
		{`{"authToken":"x"}`, true},
		{`{"myKEY":"x"}`, true},
		{`{"passwordHash":"x"}`, true},
		{`{"x-secrets":1}`, true},
		{`{"Bearer":null}`, true},
		{`{"keyboard":"x","monkey":"y","tokens":3,"tokenizer":"t"}`, false},
		{`{"nested":[{"deep":{"client_credentials":true}}]}`, true},
		{`{"url":"https://user:pw@example.com/x"}`, true},
		{`{"url":"HTTPS://u@example.com"}`, true},
		{`["ssh+git://git@github.com/a/b"]`, true},
		{`{"url":"https://example.com/@user"}`, false},
		{`{"url":"https://exa mple@x"}`, false},
		{`{"url":"mailto:someone@example.com"}`, false},
		{`{"url":"1://a@b"}`, false},
		{`{"url":"see a1://a@b"}`, true},
		{`{"url":"x://@"}`, true},
		{`{"url":"é://a@b"}`, false},
		{`"plain"`, false},
	}
	for _, c := range cases {
		v, err := canonjson.Decode([]byte(c.json))
		if err != nil {
			t.Fatal(err)
		}
		if got := contract.ObservationContainsCredential(v); got != c.want {
			t.Errorf("%s: %v, want %v", c.json, got, c.want)
		}
		if err := contract.AssertObservationCredentialFree(v); (err != nil) != c.want || err != nil && !errors.Is(err, contract.ErrObservationCredential) {
			t.Errorf("%s: assert %v", c.json, err)
		}
	}
	// Go values are inspected through their JSON form: usage counts are not
	// credentials.
	if contract.ObservationContainsCredential(obsObservation()) {
		t.Error("a plain observation carries a credential")
	}
	if !contract.ObservationContainsCredential(func() {}) {
		t.Error("a value without a JSON form was not refused")
	}
}

func TestExecutionLimits(t *testing.T) {
	limits := contract.ExecutionLimits{TimeoutMs: 1000, MaxSteps: 10, MaxModelCalls: 5, MaxInputTokens: 100,
		MaxOutputTokens: 50, MaxCostUSD: 0.5}
	within := contract.ExecutionLimitObservation{DurationMs: 1000, Steps: 10,
		Usage: contract.FixedSpend{InputTokens: 100, OutputTokens: 50, ModelCalls: 5, CostUSDNanos: 500_000_000, CostProvenance: contract.CostObserved}}
	if err := contract.CheckExecutionWithinLimits(limits, within); err != nil {
		t.Fatalf("at the limits: %v", err)
	}
	cases := []struct {
		name   string
		change func(l *contract.ExecutionLimits, o *contract.ExecutionLimitObservation)
		labels string
	}{
		{"duration", func(_ *contract.ExecutionLimits, o *contract.ExecutionLimitObservation) { o.DurationMs = 1000.5 }, "durationMs"},
		{"steps", func(_ *contract.ExecutionLimits, o *contract.ExecutionLimitObservation) { o.Steps = 11 }, "steps"},
		{"calls and cost", func(_ *contract.ExecutionLimits, o *contract.ExecutionLimitObservation) {
			o.Usage.ModelCalls, o.Usage.CostUSDNanos = 6, 500_000_001
		}, "modelCalls,costUsd"},
		{"total only when limited", func(l *contract.ExecutionLimits, _ *contract.ExecutionLimitObservation) {
			l.MaxTotalTokens = obsPtr[int64](149)
		}, "totalTokens"},
		{"total at limit", func(l *contract.ExecutionLimits, _ *contract.ExecutionLimitObservation) {
			l.MaxTotalTokens = obsPtr[int64](150)
		}, ""},
		{"tokens", func(_ *contract.ExecutionLimits, o *contract.ExecutionLimitObservation) {
			o.Usage.InputTokens, o.Usage.OutputTokens = 101, 51
		}, "inputTokens,outputTokens"},
	}
	for _, c := range cases {
		l, o := limits, within
		c.change(&l, &o)
		var labels []string
		for _, v := range contract.ExecutionLimitViolations(l, o) {
			labels = append(labels, v.Label)
		}
		if got := strings.Join(labels, ","); got != c.labels {
			t.Errorf("%s: violations %q, want %q", c.name, got, c.labels)
		}
		if err := contract.CheckExecutionWithinLimits(l, o); (err != nil) != (c.labels != "") {
			t.Errorf("%s: check %v", c.name, err)
		}
	}
	o := within
	o.Usage.CostUSDNanos = 750_000_000
	err := contract.CheckExecutionWithinLimits(limits, o)
	if err == nil || err.Error() != "execution costUsd 0.75 exceeds frozen limit 0.5" {
		t.Fatalf("message: %v", err)
	}
	// Invalid inputs are refused before comparing.
	bad := within
	bad.Usage.CostProvenance = "guessed"
	if err := contract.CheckExecutionWithinLimits(limits, bad); !brIssueAt(err, "/usage/costProvenance") {
		t.Errorf("invalid observation: %v", err)
	}
	badLimits := limits
	badLimits.TimeoutMs = 0
	if err := contract.CheckExecutionWithinLimits(badLimits, within); !brIssueAt(err, "/timeoutMs") {
		t.Errorf("invalid limits: %v", err)
	}
}
