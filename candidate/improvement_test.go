package candidate_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

const (
	activationBase = `{"kind":"agent-improvement-activation","proposalDigest":"sha256:1111111111111111111111111111111111111111111111111111111111111111","reviewDigest":"sha256:2222222222222222222222222222222222222222222222222222222222222222","experimentDigest":"sha256:3333333333333333333333333333333333333333333333333333333333333333","candidateDigest":"sha256:4444444444444444444444444444444444444444444444444444444444444444","intent":"activate-candidate","targets":[{"surface":"prompt","identity":"agent-profile:support","expectedBaseDigest":"sha256:5555555555555555555555555555555555555555555555555555555555555555"}],"fundingOwner":"tenant:test","authorizedBy":"policy:tenant-admin","authorizedAt":"2026-07-15T00:00:00.000Z","expiresAt":"2026-07-15T00:05:00.000Z","digest":"sha256:96c39374b4262309f788267851202a3885b60519de3bb187dfbe44b73c86d8c0"}`
	resultBase     = `{"kind":"agent-improvement-activation-result","idempotencyKey":"sha256:96c39374b4262309f788267851202a3885b60519de3bb187dfbe44b73c86d8c0","attemptedAt":"2026-07-15T00:01:00.000Z","completedAt":"2026-07-15T00:01:01.000Z","outcome":{"status":"indeterminate","code":"CONNECTION_LOST","message":"Commit state is unknown."},"digest":"sha256:230100305dbad38560290ba9df74bfb153a7f4b8995f55014a252e4e8deca787"}`
	reviewBase     = `{"kind":"agent-improvement-review","proposalDigest":"sha256:2222222222222222222222222222222222222222222222222222222222222222","decision":"approve","reviewedBy":"operator@example.com","reviewedAt":"2026-07-13T00:01:00.000Z","reason":"Measured winner passed review.","digest":"sha256:4444444444444444444444444444444444444444444444444444444444444444"}`

	profileTarget = `[{"surface":"agent-profile","identity":"agent-profile:support","expectedBaseDigest":"sha256:5555555555555555555555555555555555555555555555555555555555555555"}]`
	executionRef  = `{"kind":"agent-profile-improvement-execution-ref","identity":"  runner:a  ","digest":"sha256:6666666666666666666666666666666666666666666666666666666666666666"}`
	stateTargets  = `[{"surface":"prompt","identity":"p","currentDigest":"sha256:5555555555555555555555555555555555555555555555555555555555555555"},{"surface":"tools","identity":"p","currentDigest":"sha256:5555555555555555555555555555555555555555555555555555555555555555"}]`
)

// improvementCase edits a base document and states the verdict: valid,
// or refused with an issue at path.
type improvementCase struct {
	name  string
	base  string
	edits map[string]string
	path  string // "" means valid
	check func(t *testing.T, v canonjson.Value)
}

// TestImprovementRecordRules covers the production-path records'
// rules beyond the visible vectors (runtime §3.9 production path; RTP-04,
// RTP-13: activation is a separate, explicitly authorized record).
func TestImprovementRecordRules(t *testing.T) {
	cases := []improvementCase{
		{name: "activation/base", base: activationBase},
		{name: "activation/profile target needs executionRef", base: activationBase,
			edits: map[string]string{"targets": profileTarget}, path: "/executionRef"},
		{name: "activation/profile target with executionRef, identity trimmed", base: activationBase,
			edits: map[string]string{"targets": profileTarget, "executionRef": executionRef},
			check: func(t *testing.T, v canonjson.Value) {
				id, _ := v.Get("executionRef")
				if got := mustGet(t, id, "identity").Str(); got != "runner:a" {
					t.Errorf("identity = %q, want trimmed", got)
				}
			}},
		{name: "activation/blank executionRef identity", base: activationBase,
			edits: map[string]string{"targets": profileTarget, "executionRef": strings.Replace(executionRef, "  runner:a  ", "   ", 1)}, path: "/executionRef/identity"},
		{name: "activation/expiry equal to authorization", base: activationBase,
			edits: map[string]string{"expiresAt": `"2026-07-15T00:00:00Z"`}, path: "/expiresAt"},
		{name: "activation/expiry a millisecond later", base: activationBase,
			edits: map[string]string{"expiresAt": `"2026-07-15T00:00:00.001Z"`}},
		{name: "activation/offset timestamps are refused", base: activationBase,
			edits: map[string]string{"expiresAt": `"2026-07-15T00:05:00+00:00"`}, path: "/expiresAt"},
		{name: "activation/same identity on two surfaces", base: activationBase,
			edits: map[string]string{"targets": strings.Replace(stateTargets, "currentDigest", "expectedBaseDigest", 2)}},
		{name: "activation/unknown surface", base: activationBase,
			edits: map[string]string{"targets": `[{"surface":"voice","identity":"p","expectedBaseDigest":"sha256:5555555555555555555555555555555555555555555555555555555555555555"}]`}, path: "/targets/0/surface"},
		{name: "activation/funding owner too long", base: activationBase,
			edits: map[string]string{"fundingOwner": `"` + strings.Repeat("x", 501) + `"`}, path: "/fundingOwner"},
		{name: "activation/restore intent", base: activationBase,
			edits: map[string]string{"intent": `"restore-baseline"`}},

		{name: "result/base", base: resultBase},
		{name: "result/completion before attempt", base: resultBase,
			edits: map[string]string{"completedAt": `"2026-07-15T00:00:59.999Z"`}, path: "/completedAt"},
		{name: "result/completion equal to attempt", base: resultBase,
			edits: map[string]string{"completedAt": `"2026-07-15T00:01:00Z"`}},
		{name: "result/expired carries nothing", base: resultBase,
			edits: map[string]string{"outcome": `{"status":"expired","code":"X"}`}, path: "/outcome"},
		{name: "result/expired", base: resultBase, edits: map[string]string{"outcome": `{"status":"expired"}`}},
		{name: "result/conflict targets", base: resultBase,
			edits: map[string]string{"outcome": `{"status":"conflict","targets":` + stateTargets + `}`}},
		{name: "result/conflict duplicate targets", base: resultBase,
			edits: map[string]string{"outcome": `{"status":"already-applied","targets":` + strings.Replace(stateTargets, `"tools"`, `"prompt"`, 1) + `}`}, path: "/outcome/targets"},
		{name: "result/applied needs transitions", base: resultBase,
			edits: map[string]string{"outcome": `{"status":"applied","transactionId":"tx","targets":` + stateTargets + `}`}, path: "/outcome/targets/0"},
		{name: "result/failure code too long", base: resultBase,
			edits: map[string]string{"outcome": `{"status":"failed","code":"` + strings.Repeat("C", 101) + `","message":"m"}`}, path: "/outcome/code"},
		{name: "result/unknown status", base: resultBase,
			edits: map[string]string{"outcome": `{"status":"pending"}`}, path: "/outcome/status"},

		{name: "review/base", base: reviewBase},
		{name: "review/empty feedback is kept", base: reviewBase, edits: map[string]string{"feedback": `""`},
			check: func(t *testing.T, v canonjson.Value) { mustGet(t, v, "feedback") }},
		{name: "review/blank reason", base: reviewBase, edits: map[string]string{"reason": `""`}, path: "/reason"},
		{name: "review/unknown decision", base: reviewBase, edits: map[string]string{"decision": `"defer"`}, path: "/decision"},
	}
	parsers := map[string]func([]byte) (any, error){
		"activation": func(b []byte) (any, error) { return candidate.ParseImprovementActivation(b) },
		"result":     func(b []byte) (any, error) { return candidate.ParseImprovementActivationResult(b) },
		"review":     func(b []byte) (any, error) { return candidate.ParseImprovementReview(b) },
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runImprovementCase(t, tc, parsers[strings.SplitN(tc.name, "/", 2)[0]])
		})
	}
}

func runImprovementCase(t *testing.T, tc improvementCase, parse func([]byte) (any, error)) {
	t.Helper()
	v, err := canonjson.Decode([]byte(tc.base))
	if err != nil {
		t.Fatal(err)
	}
	for path, raw := range tc.edits {
		v = edit(t, v, strings.Split(path, "/"), raw)
	}
	got, err := parse(canonjson.Marshal(v))
	if tc.path == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		if tc.check != nil {
			back, err := canonjson.ToValue(got)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, back)
		}
		return
	}
	var se *schema.Error
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *schema.Error at %s", err, tc.path)
	}
	if !slices.ContainsFunc(se.Issues, func(is schema.Issue) bool { return is.Path == tc.path }) {
		t.Fatalf("issues %v, want one at %s", se.Issues, tc.path)
	}
}

func mustGet(t *testing.T, v canonjson.Value, name string) canonjson.Value {
	t.Helper()
	x, ok := v.Get(name)
	if !ok {
		t.Fatalf("member %q missing", name)
	}
	return x
}

// TestChangedSurfaces maps profile diffs to improvement surfaces as the
// reference does: resource collections are their own surfaces, every
// other axis is agent-profile, and a step that changes nothing or
// patches a resource by reference is refused (RTP-12: the surface handed
// to a method is exactly what the change alters).
func TestChangedSurfaces(t *testing.T) {
	cases := []struct {
		name string
		step string
		want []string
		path string // a refused step's issue path
	}{
		{name: "prompt", step: `{"kind":"agent-profile-diff","set":{"prompt":{"systemPrompt":"x"}}}`, want: []string{"prompt"}},
		{name: "identity is agent-profile", step: `{"kind":"agent-profile-diff","set":{"name":"n"}}`, want: []string{"agent-profile"}},
		{name: "inline skill", step: `{"kind":"agent-profile-diff","set":{"resources":{"skills":[{"kind":"inline","name":"s","content":"c"}]}}}`, want: []string{"skills"}},
		{name: "agents are subagents", step: `{"kind":"agent-profile-diff","set":{"resources":{"agents":[{"kind":"inline","name":"a","content":"c"}]}}}`, want: []string{"subagents"}},
		{name: "empty resources set is agent-profile", step: `{"kind":"agent-profile-diff","set":{"resources":{}}}`, want: []string{"agent-profile"}},
		{name: "remove all resources", step: `{"kind":"agent-profile-diff","remove":{"resources":true}}`, want: []string{"skills", "tools", "subagents", "agent-profile"}},
		{name: "remove named tools resources", step: `{"kind":"agent-profile-diff","remove":{"resources":{"tools":["t"],"skills":[]}}}`, want: []string{"tools"}},
		{name: "order is canonical", step: `{"kind":"agent-profile-diff","set":{"harness":"codex","hooks":{},"prompt":{"systemPrompt":"x"}}}`, want: []string{"prompt", "hooks", "agent-profile"}},
		{name: "empty removal changes nothing", step: `{"kind":"agent-profile-diff","remove":{"tools":[]}}`, path: ""},
		{name: "no change", step: `{"kind":"agent-profile-diff"}`, path: ""},
		{name: "referenced skill", step: `{"kind":"agent-profile-diff","set":{"resources":{"skills":[{"kind":"github","repository":"o/r","path":"s","ref":"main"}]}}}`, path: "/set/resources/skills/0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := candidate.ParseProfileChangeStep([]byte(tc.step))
			if tc.want == nil {
				var se *schema.Error
				if !errors.As(err, &se) || !slices.ContainsFunc(se.Issues, func(is schema.Issue) bool { return is.Path == tc.path }) {
					t.Fatalf("err = %v, want an issue at %q", err, tc.path)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := candidate.ChangedSurfaces([]profile.Diff{*d})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("surfaces (-want +got):\n%s", diff)
			}
		})
	}
}
