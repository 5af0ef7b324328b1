package contract_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/schema"
)

// envReadmeCapabilities is the capability document of seed 000's README
// example provider: the compatible declaration (no interactions, no
// native continuation, durable branching flags absent).
const envReadmeCapabilities = `{
	"profile": {"namedProfiles": false, "systemPrompt": {"replace": false, "append": true}, "instructions": true,
		"tools": true, "permissions": true, "mcp": true, "subagents": false,
		"resources": {"files": true, "instructions": true, "tools": true}, "hooks": false, "modes": false,
		"runtimeUpdate": false, "validation": true},
	"streaming": {"live": true, "replay": false, "detach": false, "turnIdempotency": false},
	"sessions": {"continue": false, "list": false, "messages": false},
	"workspace": {"read": true, "write": true, "exec": true, "git": false, "upload": false, "download": false},
	"branching": {"checkpoint": false, "fork": false},
	"placement": false, "usage": true, "confidential": false}`

// envFullCapabilities declares every block, consistently.
const envFullCapabilities = `{
	"profile": {"namedProfiles": true, "systemPrompt": {"replace": true, "append": true}, "instructions": true,
		"tools": true, "permissions": true, "mcp": true, "subagents": true,
		"resources": {"files": true, "instructions": true, "tools": true, "skills": true, "agents": true, "commands": true},
		"hooks": true, "modes": true, "runtimeUpdate": true, "validation": true, "extensions": ["acme.io", "example"]},
	"streaming": {"live": true, "replay": true, "detach": true, "turnIdempotency": true},
	"sessions": {"continue": true, "list": true, "messages": true},
	"retainedControl": {"exactRunIdentity": true, "resultIdentity": true, "eventIdentity": true, "cancellationIdempotency": true},
	"nativeContinuation": {"atomicBoundary": true, "requestIdempotency": true, "admissionControl": true},
	"contextTransfer": {"freshSession": true, "requestIdempotency": true, "lookup": true},
	"interactions": {"kinds": ["permission", "question"], "answerFieldTypes": ["text", "secret"], "responseScopes": ["interaction"],
		"secretAnswers": true, "concurrentRequests": false, "replay": true, "responseIdempotency": true},
	"workspace": {"read": true, "write": true, "exec": true, "git": true, "upload": true, "download": true,
		"cwdBases": {"repository": true, "host": false}},
	"branching": {"checkpoint": true, "fork": true, "confidential": false, "retrySafe": true, "lookup": true, "cleanup": true},
	"placement": true, "usage": true, "confidential": false,
	"exactProcess": {"egress": ["blocked", "strict"]},
	"create": {"egress": ["strict", "blocked"], "billingOwner": true, "runtimeAttachments": {"mcp": true},
		"workspaceCheckpoint": true, "workspaceSnapshot": true},
	"observation": {"identity": true, "lifecycle": true, "endpoint": false, "placement": true, "resources": true,
		"resourceUse": false, "modelUsage": true, "computeBilling": false, "accountUsage": false},
	"interactiveTerminal": {"attach": true, "input": true, "resize": true, "reattach": true},
	"interactiveAgent": {"start": true, "control": true, "status": true, "attach": true, "reattach": true,
		"sendPrompt": true, "input": true, "resize": true, "stop": true}}`

// envMutate decodes doc, applies mutate to it and re-encodes it.
func envMutate(t *testing.T, doc string, mutate func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(m)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// envObj returns the object member at a dotted path, creating none.
func envObj(m map[string]any, path string) map[string]any {
	for _, p := range strings.Split(path, ".") {
		m = m[p].(map[string]any)
	}
	return m
}

// envWantIssue checks that err is a *schema.Error with an issue at path.
func envWantIssue(t *testing.T, err error, path string) {
	t.Helper()
	var se *schema.Error
	if !errors.As(err, &se) {
		t.Fatalf("want a *schema.Error with an issue at %q, got %v", path, err)
	}
	for _, is := range se.Issues {
		if is.Path == path {
			return
		}
	}
	t.Fatalf("no issue at %q: %v", path, se.Issues)
}

func TestCapabilitiesAccepted(t *testing.T) {
	for name, doc := range map[string]string{
		// CAP-04, CAP-05, CAP-06: the README example is the compatible
		// declaration.
		"readme example": envReadmeCapabilities,
		// CAP-10 (cwdBases), CAP-11, CAP-13: every optional block declared
		// consistently (seed 004's create.workspaceSnapshot included).
		"every block": envFullCapabilities,
	} {
		t.Run(name, func(t *testing.T) {
			c, err := contract.ParseCapabilities([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("a parsed document does not re-validate: %v", err)
			}
			back, err := canonjson.ToValue(c)
			if err != nil {
				t.Fatal(err)
			}
			in, _ := canonjson.Decode([]byte(doc))
			if !canonjson.Equal(back, in) {
				t.Fatalf("the Go type loses presence:\n got %s\nwant %s", canonjson.Marshal(back), canonjson.Marshal(in))
			}
		})
	}
	full, _ := contract.ParseCapabilities([]byte(envFullCapabilities))
	if !full.Branching.Durable() || !full.Create.Accepts(contract.EgressStrict) || full.Create.Accepts(contract.EgressOpen) ||
		!full.Workspace.CwdBases.Accepts(contract.CwdRepository) || full.Workspace.CwdBases.Accepts(contract.CwdHost) {
		t.Fatal("capability helpers disagree with the document")
	}
	readme, _ := contract.ParseCapabilities([]byte(envReadmeCapabilities))
	if readme.Branching.Durable() || readme.Create.Accepts(contract.EgressOpen) {
		t.Fatal("the README example declares no durable branching and no create block")
	}
	if readme.Profile.SystemPrompt != (harness.SystemPromptIntents{Append: true}) {
		t.Fatalf("systemPrompt intents %+v", readme.Profile.SystemPrompt)
	}
}

func TestCapabilitiesRefused(t *testing.T) {
	cases := []struct {
		name, id string
		doc      string
		mutate   func(m map[string]any)
		path     string
	}{
		// Strictness at every level (CAP-01), including the blocks newer
		// than the reference build.
		{"unknown root member", "CAP-01", envFullCapabilities, func(m map[string]any) { m["providerNativeBypass"] = true }, ""},
		{"unknown create member", "CAP-01", envFullCapabilities, func(m map[string]any) { envObj(m, "create")["x"] = true }, "/create"},
		{"unknown contextTransfer member", "CAP-01", envFullCapabilities, func(m map[string]any) { envObj(m, "contextTransfer")["x"] = true }, "/contextTransfer"},
		{"unknown cwdBases member", "CAP-10", envFullCapabilities, func(m map[string]any) { envObj(m, "workspace.cwdBases")["x"] = true }, "/workspace/cwdBases"},
		{"cwdBases member missing", "CAP-10", envFullCapabilities, func(m map[string]any) { delete(envObj(m, "workspace.cwdBases"), "host") }, "/workspace/cwdBases/host"},
		{"workspace member missing", "CAP-10", envReadmeCapabilities, func(m map[string]any) { delete(envObj(m, "workspace"), "download") }, "/workspace/download"},
		{"streaming member missing", "CAP-08", envReadmeCapabilities, func(m map[string]any) { delete(envObj(m, "streaming"), "turnIdempotency") }, "/streaming/turnIdempotency"},
		{"sessions member missing", "CAP-09", envReadmeCapabilities, func(m map[string]any) { delete(envObj(m, "sessions"), "messages") }, "/sessions/messages"},
		{"resources tools not boolean", "CAP-07", envReadmeCapabilities, func(m map[string]any) { envObj(m, "profile.resources")["tools"] = "yes" }, "/profile/resources/tools"},
		{"placement not boolean", "CAP-12", envReadmeCapabilities, func(m map[string]any) { m["placement"] = 1 }, "/placement"},
		{"branching.confidential not boolean", "CAP-11", envFullCapabilities, func(m map[string]any) { envObj(m, "branching")["confidential"] = "no" }, "/branching/confidential"},
		// SYS-01, SYS-07: the two-bit object, never the legacy boolean.
		{"systemPrompt boolean", "SYS-07", envReadmeCapabilities, func(m map[string]any) { envObj(m, "profile")["systemPrompt"] = true }, "/profile/systemPrompt"},
		{"systemPrompt without replace", "SYS-01", envReadmeCapabilities, func(m map[string]any) { delete(envObj(m, "profile.systemPrompt"), "replace") }, "/profile/systemPrompt/replace"},
		{"systemPrompt extra bit", "SYS-01", envReadmeCapabilities, func(m map[string]any) { envObj(m, "profile.systemPrompt")["prepend"] = true }, "/profile/systemPrompt"},
		// Rule 1: retained control (CTL-08).
		{"retained control member false", "CTL-08", envFullCapabilities, func(m map[string]any) { envObj(m, "retainedControl")["eventIdentity"] = false }, "/retainedControl"},
		{"retained control without replay", "CTL-08", envFullCapabilities, func(m map[string]any) { envObj(m, "streaming")["replay"] = false }, "/retainedControl"},
		{"retained control without session continue", "CTL-08", envFullCapabilities, func(m map[string]any) {
			envObj(m, "sessions")["continue"] = false
			delete(m, "nativeContinuation")
		}, "/retainedControl"},
		// Rule 2: native continuation (NAT-07).
		{"native continuation guarantee false", "NAT-07", envFullCapabilities, func(m map[string]any) { envObj(m, "nativeContinuation")["atomicBoundary"] = false }, "/nativeContinuation"},
		{"native continuation without session continue", "NAT-07", envFullCapabilities, func(m map[string]any) {
			envObj(m, "sessions")["continue"] = false
			delete(m, "retainedControl")
			delete(envObj(m, "nativeContinuation"), "admissionControl")
		}, "/nativeContinuation"},
		{"admission control without retained control", "NAT-07", envFullCapabilities, func(m map[string]any) { delete(m, "retainedControl") }, "/nativeContinuation/admissionControl"},
		// Rule 3: context transfer (CTX-32).
		{"context transfer without lookup", "CTX-32", envFullCapabilities, func(m map[string]any) { envObj(m, "contextTransfer")["lookup"] = false }, "/contextTransfer"},
		// Rule 4: durable branching (CAP-02).
		{"retrySafe alone", "CAP-02", envReadmeCapabilities, func(m map[string]any) {
			envObj(m, "branching")["checkpoint"], envObj(m, "branching")["fork"] = true, true
			envObj(m, "branching")["retrySafe"] = true
		}, "/branching"},
		{"durable flags without fork", "CAP-02", envFullCapabilities, func(m map[string]any) { envObj(m, "branching")["fork"] = false }, "/branching"},
		{"cleanup false", "CAP-02", envFullCapabilities, func(m map[string]any) { envObj(m, "branching")["cleanup"] = false }, "/branching"},
		// Rule 5: egress lists and the create block (EXP-13, CAP-13).
		{"exact egress duplicate", "EXP-13", envFullCapabilities, func(m map[string]any) { envObj(m, "exactProcess")["egress"] = []any{"strict", "strict"} }, "/exactProcess/egress"},
		{"exact egress open", "EXP-13", envFullCapabilities, func(m map[string]any) { envObj(m, "exactProcess")["egress"] = []any{"open"} }, "/exactProcess/egress/0"},
		{"exact egress empty", "EXP-13", envFullCapabilities, func(m map[string]any) { envObj(m, "exactProcess")["egress"] = []any{} }, "/exactProcess/egress"},
		{"create egress duplicate", "CAP-13", envFullCapabilities, func(m map[string]any) { envObj(m, "create")["egress"] = []any{"open", "open"} }, "/create/egress"},
		{"create egress empty", "CAP-13", envFullCapabilities, func(m map[string]any) { envObj(m, "create")["egress"] = []any{} }, "/create/egress"},
		{"create block empty", "CAP-13", envFullCapabilities, func(m map[string]any) { m["create"] = map[string]any{} }, "/create"},
		{"runtime attachments mcp false", "CAP-13", envFullCapabilities, func(m map[string]any) { envObj(m, "create.runtimeAttachments")["mcp"] = false }, "/create/runtimeAttachments/mcp"},
		{"workspaceSnapshot not boolean", "WSP-21", envFullCapabilities, func(m map[string]any) { envObj(m, "create")["workspaceSnapshot"] = "true" }, "/create/workspaceSnapshot"},
		// Rule 6 and 7: interactive surfaces.
		{"terminal input without attach", "CAP-13", envFullCapabilities, func(m map[string]any) { envObj(m, "interactiveTerminal")["attach"] = false }, "/interactiveTerminal"},
		{"agent status without start", "CAP-13", envFullCapabilities, func(m map[string]any) { envObj(m, "interactiveAgent")["start"] = false }, "/interactiveAgent"},
		{"agent mutation without control", "CAP-13", envFullCapabilities, func(m map[string]any) { envObj(m, "interactiveAgent")["control"] = false }, "/interactiveAgent/control"},
		{"agent input without attach", "CAP-13", envFullCapabilities, func(m map[string]any) { envObj(m, "interactiveAgent")["attach"] = false }, "/interactiveAgent"},
		// Rule 8: extension namespaces.
		{"duplicate extension", "CAP-06", envFullCapabilities, func(m map[string]any) { envObj(m, "profile")["extensions"] = []any{"a", "a"} }, "/profile/extensions"},
		{"padded extension", "CAP-06", envFullCapabilities, func(m map[string]any) { envObj(m, "profile")["extensions"] = []any{" a"} }, "/profile/extensions/0"},
		// Rule 9: the interactions block's own rules (INT-01).
		{"secretAnswers disagrees with field types", "INT-01", envFullCapabilities, func(m map[string]any) { envObj(m, "interactions")["secretAnswers"] = false }, "/interactions/secretAnswers"},
	}
	for _, tc := range cases {
		t.Run(tc.id+" "+tc.name, func(t *testing.T) {
			_, err := contract.ParseCapabilities(envMutate(t, tc.doc, tc.mutate))
			envWantIssue(t, err, tc.path)
		})
	}
}

func TestCapabilitiesAllowedDeclarations(t *testing.T) {
	// Compatible and partial declarations the rules allow.
	for _, tc := range []struct {
		name   string
		doc    string
		mutate func(m map[string]any)
	}{
		// CAP-02: all three durable flags false is the compatible form.
		{"durable flags false", envReadmeCapabilities, func(m map[string]any) {
			b := envObj(m, "branching")
			b["retrySafe"], b["lookup"], b["cleanup"] = false, false, false
		}},
		// A create block may state a single honored field (seed 004).
		{"create states only workspaceSnapshot", envReadmeCapabilities, func(m map[string]any) { m["create"] = map[string]any{"workspaceSnapshot": true} }},
		{"create states only billingOwner false", envReadmeCapabilities, func(m map[string]any) { m["create"] = map[string]any{"billingOwner": false} }},
		// Native continuation without admission control needs no retained
		// control.
		{"native continuation alone", envFullCapabilities, func(m map[string]any) {
			delete(m, "retainedControl")
			delete(envObj(m, "nativeContinuation"), "admissionControl")
		}},
		{"interactive agent start only", envReadmeCapabilities, func(m map[string]any) {
			m["interactiveAgent"] = map[string]any{"start": true, "control": false, "status": false, "attach": false, "reattach": false,
				"sendPrompt": false, "input": false, "resize": false, "stop": false}
		}},
		{"empty extension list", envReadmeCapabilities, func(m map[string]any) { envObj(m, "profile")["extensions"] = []any{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := contract.ParseCapabilities(envMutate(t, tc.doc, tc.mutate)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCapabilitiesPresence(t *testing.T) {
	// Presence matters: an explicit false and an absent optional flag are
	// different documents with different digests.
	absent, err := contract.ParseCapabilities([]byte(envReadmeCapabilities))
	if err != nil {
		t.Fatal(err)
	}
	explicit := *absent
	f := false
	explicit.Branching.RetrySafe = &f
	d1, _ := contract.DigestOf(absent)
	d2, _ := contract.DigestOf(&explicit)
	if d1 == d2 {
		t.Fatal("an explicit false kept the digest of an absent flag")
	}
	if err := explicit.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestExecOnlyCapabilities(t *testing.T) {
	// The reference's exec-only document: everything false but file
	// resources, placement and the caller's workspace block.
	ws := contract.WorkspaceCapabilities{Read: true, Write: true, Exec: true, CwdBases: &contract.CwdBases{Repository: true}}
	caps := contract.ExecOnlyCapabilities(ws)
	if err := caps.Validate(); err != nil {
		t.Fatal(err)
	}
	v, err := canonjson.ToValue(caps)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := canonjson.Canonical(v)
	want := `{"branching":{"checkpoint":false,"fork":false},"confidential":false,"placement":true,` +
		`"profile":{"hooks":false,"instructions":false,"mcp":false,"modes":false,"namedProfiles":false,"permissions":false,` +
		`"resources":{"agents":false,"commands":false,"files":true,"instructions":false,"skills":false,"tools":false},` +
		`"runtimeUpdate":false,"subagents":false,"systemPrompt":{"append":false,"replace":false},"tools":false,"validation":false},` +
		`"sessions":{"continue":false,"list":false,"messages":false},` +
		`"streaming":{"detach":false,"live":false,"replay":false,"turnIdempotency":false},"usage":false,` +
		`"workspace":{"cwdBases":{"host":false,"repository":true},"download":false,"exec":true,"git":false,"read":true,"upload":false,"write":true}}`
	if string(got) != want {
		t.Fatalf("exec-only document\n got %s\nwant %s", got, want)
	}
	ws.CwdBases.Host = true
	if caps.Workspace.CwdBases.Host {
		t.Fatal("the document shares the caller's cwdBases")
	}
}
