package contract_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

func intPtr[T any](v T) *T { return &v }

func intExecution() contract.InteractionExecutionBinding {
	return contract.InteractionExecutionBinding{RunID: "run-1", Provider: "scripted", EnvironmentID: "env-1", SessionID: "sess-1", ExecutionID: "exec-1"}
}

// intQuestion builds a valid question request with a text, a secret, a
// number, a boolean and a select field.
func intQuestion(t *testing.T) *contract.InteractionRequest {
	t.Helper()
	req, err := contract.NewInteractionRequest(contract.InteractionRequest{
		ID: "q-1", Kind: contract.InteractionKindQuestion, Title: "Configure",
		AnswerSpec: contract.InteractionAnswerSpec{Fields: []contract.InteractionField{
			{Type: contract.InteractionFieldTypeText, Name: "note", Label: "Note", MaxLength: intPtr(5)},
			{Type: contract.InteractionFieldTypeSecret, Name: "token", Label: "Token", Required: intPtr(true), MaxLength: intPtr(8)},
			{Type: contract.InteractionFieldTypeNumber, Name: "count", Label: "Count", Min: intPtr(1.0), Max: intPtr(10.0)},
			{Type: contract.InteractionFieldTypeBoolean, Name: "ok", Label: "OK"},
			{Type: contract.InteractionFieldTypeSelect, Name: "pick", Label: "Pick", Options: []contract.InteractionFieldOption{{Value: "a", Label: "A"}, {Value: "b", Label: "B"}}},
			{Type: contract.InteractionFieldTypeSelect, Name: "tags", Label: "Tags", Multi: intPtr(true), AllowCustom: intPtr(true), Options: []contract.InteractionFieldOption{{Value: "x", Label: "X"}}},
		}},
		Binding: intExecution().ForInteraction("q-1"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func intPermission(t *testing.T, id string, scopes []contract.InteractionResponseScope) *contract.InteractionRequest {
	t.Helper()
	req, err := contract.NewInteractionRequest(contract.InteractionRequest{
		ID: id, Kind: contract.InteractionKindPermission, Title: "Run command?",
		Subject:        &contract.InteractionSubject{Type: contract.InteractionSubjectCommand, Command: intPtr("rm -rf build")},
		AnswerSpec:     contract.PermissionAnswerSpec(contract.PermissionAnswerSpecOptions{ResponseScopes: []contract.InteractionResponseScope{contract.ResponseScopeInteraction, contract.ResponseScopeSession, contract.ResponseScopePersistent}}),
		ResponseScopes: scopes,
		Binding:        intExecution().ForInteraction(id),
	})
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestValidateInteractionResponse(t *testing.T) {
	q := intQuestion(t)
	once := intPermission(t, "p-once", nil)
	session := intPermission(t, "p-session", []contract.InteractionResponseScope{contract.ResponseScopeSession})
	all := intPermission(t, "p-all", []contract.InteractionResponseScope{contract.ResponseScopeInteraction, contract.ResponseScopeSession, contract.ResponseScopePersistent})
	accepted := func(id string, data contract.InteractionData) *contract.InteractionResponse {
		return &contract.InteractionResponse{ID: id, Outcome: contract.InteractionOutcomeAccepted, Data: data}
	}
	grant := func(id string, g contract.PermissionGrant) *contract.InteractionResponse {
		return accepted(id, contract.InteractionData{contract.PermissionGrantField: contract.ChoiceAnswer(string(g))})
	}
	tests := []struct {
		name    string
		req     *contract.InteractionRequest
		resp    *contract.InteractionResponse
		wantErr string // "" = valid
	}{
		{"INT-12 minimal answer", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("s3cret")}), ""},
		{"secret as one-use handle", q, accepted("q-1", contract.InteractionData{"token": contract.SecretAnswer("h-1")}), ""},
		{"all fields", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t"), "note": contract.TextAnswer("hi"),
			"count": contract.NumberAnswer(3), "ok": contract.BooleanAnswer(false), "pick": contract.ChoiceAnswer("b"), "tags": contract.ChoiceAnswer("x", "write-in")}), ""},
		{"INT-12 stale id", q, accepted("q-2", contract.InteractionData{"token": contract.TextAnswer("t")}), "response id does not match"},
		{"INT-13 undeclared field", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t"), "extra": contract.TextAnswer("x")}), `unknown field "extra"`},
		{"reserved key", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t"), "constructor": contract.TextAnswer("x")}), `unknown field "constructor"`},
		{"required missing", q, accepted("q-1", nil), `missing required field "token"`},
		{"empty string is absent", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("")}), `missing required field "token"`},
		{"text over maxLength", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t"), "note": contract.TextAnswer("😀😀😀")}), `exceeds maxLength 5`},
		{"secret over maxLength", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("123456789")}), `exceeds maxLength 8`},
		{"text of wrong type", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t"), "note": contract.NumberAnswer(1)}), "must be a string"},
		{"secret of wrong type", q, accepted("q-1", contract.InteractionData{"token": contract.BooleanAnswer(true)}), "one-use secret handle"},
		{"number below min", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t"), "count": contract.NumberAnswer(0.5)}), "below min 1"},
		{"number above max", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t"), "count": contract.NumberAnswer(11)}), "above max 10"},
		{"boolean of wrong type", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t"), "ok": contract.TextAnswer("yes")}), "must be a boolean"},
		{"select must be an array", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t"), "pick": contract.TextAnswer("a")}), "must be an array"},
		{"single select takes one", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t"), "pick": contract.ChoiceAnswer("a", "b")}), "accepts a single value"},
		{"select unknown option", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t"), "pick": contract.ChoiceAnswer("c")}), `invalid option "c"`},
		{"blank write-in", q, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t"), "tags": contract.ChoiceAnswer(" \u00a0")}), "blank write-in"},
		{"declined carries no answer", q, &contract.InteractionResponse{ID: "q-1", Outcome: contract.InteractionOutcomeDeclined}, ""},
		{"declined with data", q, &contract.InteractionResponse{ID: "q-1", Outcome: contract.InteractionOutcomeDeclined, Data: contract.InteractionData{"note": contract.TextAnswer("x")}}, "cannot carry answer fields"},
		{"cancelled with a secret", q, &contract.InteractionResponse{ID: "q-1", Outcome: contract.InteractionOutcomeCancelled, Data: contract.InteractionData{"token": contract.TextAnswer("x")}}, "is secret and cannot ride a cancelled resolution"},
		{"INT-15 omitted scopes allow once", once, grant("p-once", contract.GrantAllowOnce), ""},
		{"INT-15 omitted scopes deny", once, grant("p-once", contract.GrantDeny), ""},
		{"INT-15 omitted scopes refuse session", once, grant("p-once", contract.GrantAllowSession), `grant "allow_session" exceeds`},
		{"INT-15 omitted scopes refuse always", once, grant("p-once", contract.GrantAllowAlways), `grant "allow_always" exceeds`},
		{"INT-14 session scope refuses once", session, grant("p-session", contract.GrantAllowOnce), `grant "allow_once" exceeds`},
		{"INT-14 session scope allows session", session, grant("p-session", contract.GrantAllowSession), ""},
		{"INT-14 deny always permitted", session, grant("p-session", contract.GrantDeny), ""},
		{"INT-14 all scopes allow always", all, grant("p-all", contract.GrantAllowAlways), ""},
		{"permission needs one grant", all, accepted("p-all", contract.InteractionData{"grant": contract.ChoiceAnswer()}), `exactly one "grant"`},
		{"permission grant must be known", all, accepted("p-all", contract.InteractionData{"grant": contract.ChoiceAnswer("allow_forever")}), `invalid grant "allow_forever"`},
		{"permission feedback", all, accepted("p-all", contract.InteractionData{"grant": contract.ChoiceAnswer("deny"), "feedback": contract.TextAnswer("no")}), ""},
	}
	for _, tc := range tests {
		ok, errs := contract.ValidateInteractionResponse(tc.req, tc.resp)
		if tc.wantErr == "" {
			if !ok {
				t.Errorf("%s: refused: %v", tc.name, errs)
			}
			continue
		}
		if ok || !strings.Contains(strings.Join(errs, "\n"), tc.wantErr) {
			t.Errorf("%s: got %v %q, want an error containing %q", tc.name, ok, errs, tc.wantErr)
		}
	}

	// allowedOutcomes restricts the outcome.
	restricted := *q
	restricted.AllowedOutcomes = []contract.InteractionOutcome{contract.InteractionOutcomeAccepted}
	r2, err := contract.NewInteractionRequest(restricted)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := contract.ValidateInteractionResponse(r2, &contract.InteractionResponse{ID: "q-1", Outcome: contract.InteractionOutcomeDeclined}); ok {
		t.Error("a declined response passed a request that allows only accepted")
	}
	// A request with a wrong digest is refused before the response is looked at.
	tampered := *q
	tampered.Title = "Changed"
	if ok, errs := contract.ValidateInteractionResponse(&tampered, accepted("q-1", contract.InteractionData{"token": contract.TextAnswer("t")})); ok || !strings.Contains(errs[0], "digest") {
		t.Errorf("tampered request: %v %v", ok, errs)
	}
}

func TestValidateInteractionResponseValueShape(t *testing.T) {
	req, _ := canonjson.ToValue(intQuestion(t))
	good, _ := canonjson.Decode([]byte(`{"id":"q-1","outcome":"accepted","data":{"token":"t"}}`))
	if got := canonjson.Marshal(contract.ValidateInteractionResponseValue(req, good)); string(got) != `{"ok":true}` {
		t.Errorf("valid: %s", got)
	}
	// A raw "__proto__" answer key is refused as an unknown field, never dropped.
	proto, _ := canonjson.Decode([]byte(`{"id":"q-1","outcome":"accepted","data":{"token":"t","__proto__":"x"}}`))
	if got, _ := canonjson.Canonical(contract.ValidateInteractionResponseValue(req, proto)); string(got) != `{"errors":["unknown field \"__proto__\""],"ok":false}` {
		t.Errorf("proto: %s", got)
	}
	if got := contract.ValidateInteractionResponseValue(canonjson.Value{}, good); !strings.Contains(string(canonjson.Marshal(got)), `"ok":false`) {
		t.Errorf("absent request: %s", canonjson.Marshal(got))
	}
}

func TestValidateInteractionResponseCommand(t *testing.T) {
	// INT-09, INT-12: a command applies only to the exact request.
	q := intQuestion(t)
	resp := contract.InteractionResponse{ID: "q-1", Outcome: contract.InteractionOutcomeAccepted, Data: contract.InteractionData{"token": contract.SecretAnswer("h-1")}}
	cmd, err := contract.NewInteractionResponseCommand("op-1", q.ResponseBinding(), resp)
	if err != nil {
		t.Fatal(err)
	}
	if ok, errs := contract.ValidateInteractionResponseCommand(q, cmd); !ok {
		t.Fatalf("exact command refused: %v", errs)
	}
	noSession := q.ResponseBinding()
	noSession.SessionID = nil
	if c, err := contract.NewInteractionResponseCommand("op-1", noSession, resp); err != nil {
		t.Fatal(err)
	} else if ok, errs := contract.ValidateInteractionResponseCommand(q, c); !ok {
		t.Errorf("a binding without the optional session refused: %v", errs)
	}
	for name, change := range map[string]func(*contract.InteractionBinding){
		"run":           func(b *contract.InteractionBinding) { b.RunID = "run-2" },
		"provider":      func(b *contract.InteractionBinding) { b.Provider = "other" },
		"environment":   func(b *contract.InteractionBinding) { b.EnvironmentID = "env-2" },
		"session":       func(b *contract.InteractionBinding) { b.SessionID = intPtr("sess-2") },
		"execution":     func(b *contract.InteractionBinding) { b.ExecutionID = "exec-2" },
		"requestDigest": func(b *contract.InteractionBinding) { b.RequestDigest = "sha256:" + strings.Repeat("0", 64) },
	} {
		b := q.ResponseBinding()
		change(&b)
		c, err := contract.NewInteractionResponseCommand("op-1", b, resp)
		if err != nil {
			t.Fatal(err)
		}
		if ok, errs := contract.ValidateInteractionResponseCommand(q, c); ok || errs[0] != "response command binding is stale" {
			t.Errorf("wrong %s: %v %v", name, ok, errs)
		}
	}
	// The interaction id must match the response id, so a command for
	// another interaction cannot even be built.
	b := q.ResponseBinding()
	b.InteractionID = "q-2"
	if _, err := contract.NewInteractionResponseCommand("op-1", b, resp); err == nil {
		t.Error("command whose response answers another interaction was built")
	}
	// A changed response under the same digest is refused.
	tampered := *cmd
	tampered.Response.Data = contract.InteractionData{"token": contract.SecretAnswer("h-2")}
	if ok, _ := contract.ValidateInteractionResponseCommand(q, &tampered); ok {
		t.Error("changed response under an old command digest accepted")
	}
}

func TestInteractionRequestDigest(t *testing.T) {
	q := intQuestion(t)
	d, err := contract.InteractionRequestDigest(q)
	if err != nil || d != q.RequestDigest {
		t.Fatalf("digest %s %v, want %s", d, err, q.RequestDigest)
	}
	// Round trip through the wire keeps the digest.
	v, _ := canonjson.ToValue(q)
	back, err := contract.ParseInteractionRequest(canonjson.Marshal(v))
	if err != nil || back.RequestDigest != q.RequestDigest {
		t.Fatalf("round trip: %v", err)
	}
	changed := *q
	changed.Body = intPtr("")
	if d2, _ := contract.InteractionRequestDigest(&changed); d2 == d {
		t.Error("a present empty body did not change the digest")
	}
	// A default may not embed a secret answer: no digest, no request.
	secret := *q
	secret.Default = &contract.InteractionResolution{Outcome: contract.InteractionOutcomeAccepted, Data: contract.InteractionData{"token": contract.TextAnswer("t")}}
	if _, err := contract.InteractionRequestDigest(&secret); err == nil {
		t.Error("digest of a request with a secret default")
	}
	if _, err := contract.NewInteractionRequest(secret); err == nil {
		t.Error("request with a secret default built")
	}
	// The request rules are enforced when it is built.
	for name, change := range map[string]func(*contract.InteractionRequest){
		"binding names another id": func(r *contract.InteractionRequest) { r.Binding.InteractionID = "other" },
		"duplicate scopes": func(r *contract.InteractionRequest) {
			r.ResponseScopes = []contract.InteractionResponseScope{"session", "session"}
		},
		"duplicate outcomes": func(r *contract.InteractionRequest) {
			r.AllowedOutcomes = []contract.InteractionOutcome{"declined", "declined"}
		},
		"onTimeout default, none": func(r *contract.InteractionRequest) { r.OnTimeout = intPtr(contract.OnTimeoutDefault) },
		"default outcome disallowed": func(r *contract.InteractionRequest) {
			r.AllowedOutcomes = []contract.InteractionOutcome{"accepted"}
			r.Default = &contract.InteractionResolution{Outcome: "cancelled"}
		},
		"invalid default answer": func(r *contract.InteractionRequest) {
			r.Default = &contract.InteractionResolution{Outcome: "accepted", Data: contract.InteractionData{"nope": contract.TextAnswer("x")}}
		},
		"zero timeout": func(r *contract.InteractionRequest) { r.TimeoutMs = intPtr(int64(0)) },
	} {
		r := *q
		change(&r)
		if _, err := contract.NewInteractionRequest(r); err == nil {
			t.Errorf("%s: built", name)
		}
	}
	// A permission default beyond the scopes is refused (reference test).
	p := intPermission(t, "p-1", nil)
	p.OnTimeout = intPtr(contract.OnTimeoutDefault)
	p.Default = &contract.InteractionResolution{Outcome: "accepted", Data: contract.InteractionData{"grant": contract.ChoiceAnswer("allow_always")}}
	if _, err := contract.NewInteractionRequest(*p); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("over-scoped default: %v", err)
	}
	p.Default.Data = contract.InteractionData{"grant": contract.ChoiceAnswer("deny")}
	if _, err := contract.NewInteractionRequest(*p); err != nil {
		t.Errorf("deny default: %v", err)
	}
}

func TestInteractionAcknowledgement(t *testing.T) {
	q := intQuestion(t)
	resp := contract.InteractionResponse{ID: "q-1", Outcome: contract.InteractionOutcomeAccepted, Data: contract.InteractionData{"token": contract.TextAnswer("hunter2-low-entropy")}}
	cmd, err := contract.NewInteractionResponseCommand("op-1", q.ResponseBinding(), resp)
	if err != nil {
		t.Fatal(err)
	}
	// INT-10: ten statuses; invalid_response needs a message,
	// transport_failure a message and retryable.
	for _, s := range []contract.InteractionAcknowledgementStatus{
		contract.InteractionAckAccepted, contract.InteractionAckAlreadyResolvedSame, contract.InteractionAckAlreadyResolvedDifferent,
		contract.InteractionAckExpired, contract.InteractionAckCancelled, contract.InteractionAckUnknownInteraction,
		contract.InteractionAckUnknownRun, contract.InteractionAckBindingMismatch,
	} {
		ack, err := contract.NewInteractionAcknowledgement(cmd, s, nil, nil)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		if !contract.InteractionAcknowledgementMatchesCommand(cmd, ack) {
			t.Errorf("%s: ack does not match its command", s)
		}
		// INT-11: the acknowledgement never carries the answer.
		v, _ := canonjson.ToValue(ack)
		if strings.Contains(string(canonjson.Marshal(v)), "hunter2") {
			t.Errorf("%s: answer value in acknowledgement", s)
		}
	}
	if _, err := contract.NewInteractionAcknowledgement(cmd, contract.InteractionAckInvalidResponse, nil, nil); err == nil {
		t.Error("invalid_response without a message")
	}
	if _, err := contract.NewInteractionAcknowledgement(cmd, contract.InteractionAckInvalidResponse, intPtr("undeclared field"), nil); err != nil {
		t.Error(err)
	}
	if _, err := contract.NewInteractionAcknowledgement(cmd, contract.InteractionAckTransportFailure, intPtr("closed"), nil); err == nil {
		t.Error("transport_failure without retryable")
	}
	if _, err := contract.NewInteractionAcknowledgement(cmd, contract.InteractionAckTransportFailure, intPtr("closed"), intPtr(true)); err != nil {
		t.Error(err)
	}
	if _, err := contract.NewInteractionAcknowledgement(cmd, "conflict", nil, nil); err == nil {
		t.Error("unknown status accepted")
	}
	// INT-11: the acknowledgement type has no answer member at all.
	names, _ := canonjson.StructFields(reflect.TypeFor[contract.InteractionAcknowledgement]())
	want := []string{"binding", "commandDigest", "message", "operationId", "retryable", "status"}
	if !slices.Equal(names, want) {
		t.Errorf("acknowledgement members %v, want %v", names, want)
	}
	// An ack of another operation or command does not match.
	ack, _ := contract.NewInteractionAcknowledgement(cmd, contract.InteractionAckAccepted, nil, nil)
	other := *ack
	other.OperationID = "op-2"
	if contract.InteractionAcknowledgementMatchesCommand(cmd, &other) {
		t.Error("ack of another operation matches")
	}
	other = *ack
	other.Binding.SessionID = nil
	if contract.InteractionAcknowledgementMatchesCommand(cmd, &other) {
		t.Error("ack with another binding matches")
	}
}

func TestRequestedInteractions(t *testing.T) {
	// INT-02, INT-04: well-known and namespaced kinds only, at most 256.
	for _, in := range []string{`{}`, `{"permission":true,"question":false,"plan":true}`, `{"vendor.kind":true,"a.b.c":false}`} {
		if _, err := contract.ParseRequestedInteractions([]byte(in)); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
	for _, in := range []string{`{"approval":true}`, `{" approval ":true}`, `{".x":true}`, `{"x.":true}`, `{"a..b":true}`, `{"question":"enabled"}`, `[]`, `{"":true}`} {
		_, err := contract.ParseRequestedInteractions([]byte(in))
		var se *schema.Error
		if !errors.As(err, &se) {
			t.Errorf("%s: accepted (%v)", in, err)
		}
	}
	var b strings.Builder
	b.WriteString("{")
	for i := range 257 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"custom.` + canonjson.IndexToken(i) + `":true`)
	}
	b.WriteString("}")
	if _, err := contract.ParseRequestedInteractions([]byte(b.String())); err == nil {
		t.Error("257 kinds accepted")
	}
	// INT-05..INT-07: omitted posture defers to the provider, an empty
	// posture enables nothing, a present one exactly its true kinds.
	empty, _ := contract.ParseRequestedInteractions([]byte(`{}`))
	some, _ := contract.ParseRequestedInteractions([]byte(`{"permission":true,"question":false}`))
	var omitted contract.RequestedInteractions
	for _, tc := range []struct {
		p    contract.RequestedInteractions
		kind string
		def  bool
		want bool
	}{
		{omitted, "permission", true, true}, {omitted, "permission", false, false},
		{empty, "permission", true, false}, {some, "permission", false, true},
		{some, "question", true, false}, {some, "plan", true, false},
	} {
		if got := tc.p.Allows(tc.kind, tc.def); got != tc.want {
			t.Errorf("%v.Allows(%s, %v) = %v", tc.p, tc.kind, tc.def, got)
		}
	}
	if empty == nil {
		t.Error("an empty posture decoded as omitted")
	}
}

func TestInteractionCapabilities(t *testing.T) {
	// INT-08: strict, every member required, secretAnswers agrees with
	// the secret field type, no duplicates.
	good := `{"kinds":["question","permission","plan"],"answerFieldTypes":["text","select","secret"],"responseScopes":["interaction","session","persistent"],"secretAnswers":true,"concurrentRequests":true,"replay":true,"responseIdempotency":true}`
	c, err := contract.ParseInteractionCapabilities([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if !c.SupportsKind("plan") || c.SupportsKind("vendor.x") || (*contract.InteractionCapabilities)(nil).SupportsKind("plan") {
		t.Error("SupportsKind")
	}
	v, _ := canonjson.Decode([]byte(good))
	for _, m := range v.Members() {
		var members []canonjson.Member
		for _, o := range v.Members() {
			if o.Name != m.Name {
				members = append(members, o)
			}
		}
		if _, err := contract.FromValue[contract.InteractionCapabilities](contract.KindInteractionCapabilities, contract.InteractionCapabilitiesSchema, canonjson.ObjectValue(members)); err == nil {
			t.Errorf("capabilities without %s accepted", m.Name)
		}
	}
	for name, in := range map[string]string{
		"unknown member":     strings.Replace(good, `"replay"`, `"extra":1,"replay"`, 1),
		"secret disagrees":   strings.Replace(good, `"secretAnswers":true`, `"secretAnswers":false`, 1),
		"secret claimed":     strings.Replace(good, `"text","select","secret"`, `"text","select"`, 1),
		"duplicate kind":     strings.Replace(good, `"question","permission"`, `"question","question"`, 1),
		"duplicate type":     strings.Replace(good, `"text","select"`, `"text","text"`, 1),
		"duplicate scope":    strings.Replace(good, `"interaction","session"`, `"session","session"`, 1),
		"empty kinds":        strings.Replace(good, `["question","permission","plan"]`, `[]`, 1),
		"unknown field type": strings.Replace(good, `"select"`, `"date"`, 1),
		"unknown scope":      strings.Replace(good, `"persistent"`, `"forever"`, 1),
	} {
		if _, err := contract.ParseInteractionCapabilities([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPermissionAnswerSpec(t *testing.T) {
	values := func(s contract.InteractionAnswerSpec) []string {
		var out []string
		for _, o := range s.Fields[0].Options {
			out = append(out, o.Value)
		}
		return out
	}
	for _, tc := range []struct {
		scopes []contract.InteractionResponseScope
		want   []string
	}{
		{nil, []string{"allow_once", "deny"}},
		{[]contract.InteractionResponseScope{}, []string{"deny"}},
		{[]contract.InteractionResponseScope{"session"}, []string{"allow_session", "deny"}},
		{[]contract.InteractionResponseScope{"persistent", "interaction", "session"}, []string{"allow_once", "allow_session", "allow_always", "deny"}},
	} {
		s := contract.PermissionAnswerSpec(contract.PermissionAnswerSpecOptions{ResponseScopes: tc.scopes})
		if got := values(s); !slices.Equal(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.scopes, got, tc.want)
		}
		if len(s.Fields) != 2 || s.Fields[1].Name != contract.PermissionFeedbackField {
			t.Errorf("%v: no feedback field", tc.scopes)
		}
		if _, err := contract.Validate(contract.KindInteractionAnswerSpec, contract.InteractionAnswerSpecSchema, s); err != nil {
			t.Error(err)
		}
	}
	if s := contract.PermissionAnswerSpec(contract.PermissionAnswerSpecOptions{NoFeedback: true}); len(s.Fields) != 1 {
		t.Error("feedback field despite NoFeedback")
	}
	// A nil field list is written as an empty one.
	if v, err := contract.Validate(contract.KindInteractionAnswerSpec, contract.InteractionAnswerSpecSchema, contract.InteractionAnswerSpec{}); err != nil || string(canonjson.Marshal(v)) != `{"fields":[]}` {
		t.Errorf("empty spec: %v", err)
	}
}

func TestInteractionFieldRules(t *testing.T) {
	for _, tc := range []struct {
		in    string
		valid bool
	}{
		{`{"type":"text","name":"a","label":"A","maxLength":2,"default":"😀"}`, true},
		{`{"type":"text","name":"a","label":"A","maxLength":1,"default":"😀"}`, false},
		{`{"type":"text","name":"a","label":"A","maxLength":1.5}`, false},
		{`{"type":"text","name":"a","label":""}`, false},
		{`{"type":"text","name":" a","label":"A"}`, false},
		{`{"type":"number","name":"a","label":"A","min":2,"max":1}`, false},
		{`{"type":"number","name":"a","label":"A","min":1,"max":1,"default":1}`, true},
		{`{"type":"number","name":"a","label":"A","min":1,"default":0}`, false},
		{`{"type":"boolean","name":"a","label":"A","default":false}`, true},
		{`{"type":"boolean","name":"a","label":"A","default":"false"}`, false},
		{`{"type":"secret","name":"a","label":"A","default":"x"}`, false},
		{`{"type":"select","name":"a","label":"A","options":[{"value":"x","label":"X"}],"default":["x","y"],"multi":true,"allowCustom":true}`, true},
		{`{"type":"select","name":"a","label":"A","options":[{"value":"x","label":"X"}],"default":["x","y"]}`, false},
		{`{"type":"select","name":"a","label":"A","options":[{"value":"x","label":"X"}],"default":[],"required":true}`, false},
		{`{"type":"select","name":"a","label":"A","options":[{"value":"x","label":"X"}],"default":[" "],"allowCustom":true}`, false},
		{`{"type":"select","name":"constructor","label":"A","options":[{"value":"x","label":"X"}]}`, false},
		{`{"type":"date","name":"a","label":"A"}`, false},
	} {
		_, err := contract.ParseInteractionField([]byte(tc.in))
		if (err == nil) != tc.valid {
			t.Errorf("%s: err %v, want valid=%v", tc.in, err, tc.valid)
		}
	}
}

func TestInteractionDataValue(t *testing.T) {
	in := `{"a":"x","b":1.5,"c":true,"d":[],"e":["p","q"],"f":{"handleId":"h","kind":"secret_handle","oneUse":true}}`
	d, err := contract.ParseInteractionData([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if d["d"].Choices == nil || len(d["d"].Choices) != 0 || *d["f"].Secret != contract.NewInteractionSecretReference("h") {
		t.Errorf("decoded %+v", d)
	}
	v, err := canonjson.ToValue(d)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := canonjson.Canonical(v); string(c) != in {
		t.Errorf("round trip %s", c)
	}
	if _, err := canonjson.ToValue(contract.InteractionDataValue{Text: intPtr("x"), Boolean: intPtr(true)}); err == nil {
		t.Error("two members marshalled")
	}
	for _, bad := range []string{`{"a":null}`, `{"a":{"kind":"secret_handle","handleId":"h","oneUse":false}}`, `{"a":[1]}`, `{"prototype":"x"}`, `{"__proto__":"x"}`, `[]`} {
		if _, err := contract.ParseInteractionData([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
