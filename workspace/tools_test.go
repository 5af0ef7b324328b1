package workspace_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
	"github.com/agentrt/agentrt/workspace"
	"github.com/agentrt/agentrt/workspace/memory"
)

var fixed = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func newStore() *memory.Store { return memory.New(func() time.Time { return fixed }) }

func asMember(member string) context.Context {
	return workspace.WithActiveTurn(context.Background(), workspace.ActiveTurn{Tenant: "acme", Member: member, Turn: "t1"})
}

func run(t *testing.T, tools []contract.Tool, ctx context.Context, name, args string) (string, error) {
	t.Helper()
	for _, tl := range tools {
		if tl.Name != name {
			continue
		}
		v, err := canonjson.Decode([]byte(args))
		if err != nil {
			t.Fatal(err)
		}
		out, err := tl.Run(ctx, v)
		if err != nil {
			return "", err
		}
		b, err := canonjson.Canonical(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), nil
	}
	t.Fatalf("no tool %s", name)
	return "", nil
}

func mustRun(t *testing.T, tools []contract.Tool, ctx context.Context, name, args string) string {
	t.Helper()
	out, err := run(t, tools, ctx, name, args)
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return out
}

// WST-07, WST-08: the tool sets, by name, with an object schema each.
func TestToolNames(t *testing.T) {
	var names []string
	tools := append(workspace.MemoryTools(newStore(), nil), workspace.FileTools(newStore(), nil)...)
	for _, tl := range tools {
		names = append(names, tl.Name)
		if tl.Description == "" || tl.Run == nil {
			t.Errorf("%s is incomplete", tl.Name)
		}
		if typ, _ := tl.InputSchema.Get("type"); typ.Str() != "object" {
			t.Errorf("%s: input schema type %q", tl.Name, typ.Str())
		}
		if _, err := canonjson.Canonical(tl.InputSchema); err != nil {
			t.Errorf("%s: input schema is not canonical JSON: %v", tl.Name, err)
		}
	}
	want := []string{"memory.remember", "memory.recall", "memory.forget", "files.list", "files.read", "files.write", "files.delete", "files.search"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tool names (-want +got):\n%s", diff)
	}
}

func TestMemoryToolsRoundTrip(t *testing.T) {
	s := newStore()
	tools := workspace.MemoryTools(s, nil)
	alice := asMember("alice")
	cases := []struct {
		tool, args, want string
	}{
		{workspace.ToolRemember, `{"scope":"member","key":"style","content":"terse","ifRevision":null}`,
			`{"key":"style","path":"/memories/members/alice/style","revision":1,"scope":"member"}`},
		{workspace.ToolRemember, `{"scope":"member","key":"style","content":"terse, no emoji","ifRevision":1}`,
			`{"key":"style","path":"/memories/members/alice/style","revision":2,"scope":"member"}`},
		{workspace.ToolRemember, `{"scope":"workspace","key":"goal","content":"ship v1","ifRevision":null}`,
			`{"key":"goal","path":"/memories/workspace/goal","revision":1,"scope":"workspace"}`},
		{workspace.ToolRecall, `{"scope":"member","key":"style"}`,
			`{"memories":[{"content":"terse, no emoji","encoding":"utf8","key":"style","path":"/memories/members/alice/style","revision":2,"scope":"member"}],"truncated":false}`},
		{workspace.ToolRecall, `{"scope":"workspace","key":"missing"}`, `{"memories":[],"truncated":false}`},
		{workspace.ToolRecall, `{"query":"SHIP"}`,
			`{"memories":[{"content":"ship v1","encoding":"utf8","key":"goal","path":"/memories/workspace/goal","revision":1,"scope":"workspace"}],"truncated":false}`},
		{workspace.ToolRecall, `{"limit":1}`,
			`{"memories":[{"content":"terse, no emoji","encoding":"utf8","key":"style","path":"/memories/members/alice/style","revision":2,"scope":"member"}],"truncated":true}`},
		{workspace.ToolRecall, `{"scope":"workspace"}`,
			`{"memories":[{"content":"ship v1","encoding":"utf8","key":"goal","path":"/memories/workspace/goal","revision":1,"scope":"workspace"}],"truncated":false}`},
		{workspace.ToolForget, `{"scope":"member","key":"style","ifRevision":2}`,
			`{"deletedAt":"2026-11-29T12:00:00Z","key":"style","path":"/memories/members/alice/style","revision":2,"scope":"member"}`},
		{workspace.ToolRecall, `{"scope":"member"}`, `{"memories":[],"truncated":false}`},
	}
	for _, c := range cases {
		if got := mustRun(t, tools, alice, c.tool, c.args); got != c.want {
			t.Errorf("%s %s\n got %s\nwant %s", c.tool, c.args, got, c.want)
		}
	}
	// Bob sees the workspace memory but not alice's (erased or not).
	if got := mustRun(t, tools, asMember("bob"), workspace.ToolRecall, `{}`); !strings.Contains(got, "ship v1") || strings.Contains(got, "alice") {
		t.Errorf("bob recalls %s", got)
	}
}

func TestMemoryToolErrors(t *testing.T) {
	s := newStore()
	tools := workspace.MemoryTools(s, nil)
	alice := asMember("alice")
	mustRun(t, tools, alice, workspace.ToolRemember, `{"scope":"workspace","key":"goal","content":"a","ifRevision":null}`)
	mustRun(t, tools, alice, workspace.ToolRemember, `{"scope":"workspace","key":"goal","content":"b","ifRevision":1}`)

	_, err := run(t, tools, alice, workspace.ToolRemember, `{"scope":"workspace","key":"goal","content":"c","ifRevision":1}`)
	var ce *workspace.ConflictError
	if !errors.As(err, &ce) || ce.Actual != 2 {
		t.Errorf("stale remember: %v, want a conflict reporting revision 2", err)
	}
	_, err = run(t, tools, alice, workspace.ToolRemember, `{"scope":"workspace","key":"goal","content":"c","ifRevision":null}`)
	if !errors.As(err, &ce) || ce.Actual != 2 {
		t.Errorf("create over an existing memory: %v", err)
	}
	_, err = run(t, tools, alice, workspace.ToolForget, `{"scope":"workspace","key":"goal","ifRevision":1}`)
	if !errors.As(err, &ce) || ce.Actual != 2 {
		t.Errorf("stale forget: %v", err)
	}
	big := `{"scope":"member","key":"big","content":"` + strings.Repeat("x", workspace.MaxMemoryBytes+1) + `","ifRevision":null}`
	if _, err := run(t, tools, alice, workspace.ToolRemember, big); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("oversized memory: %v", err)
	}
	badArgs := []struct{ tool, args string }{
		{workspace.ToolRemember, `{"scope":"member","key":"k","content":"x"}`},                     // ifRevision required
		{workspace.ToolRemember, `{"scope":"team","key":"k","content":"x","ifRevision":null}`},     // unknown scope
		{workspace.ToolRemember, `{"scope":"member","key":"","content":"x","ifRevision":null}`},    // empty key
		{workspace.ToolRemember, `{"scope":"member","key":"k","content":"x","ifRevision":0}`},      // revisions start at 1
		{workspace.ToolRemember, `{"scope":"member","key":"k","content":"x","ifRevision":1.5}`},    // integers only
		{workspace.ToolRemember, `{"scope":"member","key":"k","content":"\ud800","ifRevision":1}`}, // lone surrogate
		{workspace.ToolRemember, `[]`},
		{workspace.ToolForget, `{"scope":"member","key":"k","ifRevision":null}`}, // forget needs a revision
		{workspace.ToolRecall, `{"key":"k"}`},                                    // key needs a scope
		{workspace.ToolRecall, `{"scope":"member","key":"k","query":"q"}`},
		{workspace.ToolRecall, `{"query":"  "}`},
		{workspace.ToolRecall, `{"limit":201}`},
	}
	for _, b := range badArgs {
		var se *schema.Error
		if _, err := run(t, tools, alice, b.tool, b.args); !errors.As(err, &se) {
			t.Errorf("%s %s: %v, want a *schema.Error", b.tool, b.args, err)
		}
	}
	for _, key := range []string{"a/b", "..", " k", "a\\b"} {
		args := `{"scope":"member","key":"` + strings.ReplaceAll(key, `\`, `\\`) + `","content":"x","ifRevision":null}`
		if _, err := run(t, tools, alice, workspace.ToolRemember, args); !errors.Is(err, workspace.ErrInvalid) {
			t.Errorf("key %q: %v, want ErrInvalid", key, err)
		}
	}
	// A missing arguments value is an empty object.
	if out, err := tools[1].Run(alice, canonjson.Value{}); err != nil || !strings.Contains(string(canonjson.Marshal(out)), `"memories"`) {
		t.Errorf("recall with absent arguments: %s, %v", canonjson.Marshal(out), err)
	}
}

func TestFileToolsRoundTrip(t *testing.T) {
	s := newStore()
	tools := workspace.FileTools(s, nil)
	bob := asMember("bob")
	cases := []struct {
		tool, args, want string
	}{
		{workspace.ToolFilesWrite, `{"path":"/files/notes/plan.md","content":"# Plan\nship","ifRevision":null}`,
			`{"path":"/files/notes/plan.md","revision":1,"size":11}`},
		{workspace.ToolFilesWrite, `{"path":"/files/bin/blob","content":"AP8BAg==","encoding":"base64","ifRevision":null}`,
			`{"path":"/files/bin/blob","revision":1,"size":4}`},
		{workspace.ToolFilesWrite, `{"path":"/knowledge/specs/api.md","content":"the API","ifRevision":null}`,
			`{"path":"/knowledge/specs/api.md","revision":1,"size":7}`},
		{workspace.ToolFilesRead, `{"path":"/files/notes/plan.md"}`,
			`{"content":"# Plan\nship","encoding":"utf8","path":"/files/notes/plan.md","revision":1,"size":11,"updatedAt":"2026-11-29T12:00:00Z","updatedBy":"bob"}`},
		{workspace.ToolFilesRead, `{"path":"/files/bin/blob"}`,
			`{"content":"AP8BAg==","encoding":"base64","path":"/files/bin/blob","revision":1,"size":4,"updatedAt":"2026-11-29T12:00:00Z","updatedBy":"bob"}`},
		{workspace.ToolFilesRead, `{"path":"/files/notes/plan.md","encoding":"base64"}`,
			`{"content":"IyBQbGFuCnNoaXA=","encoding":"base64","path":"/files/notes/plan.md","revision":1,"size":11,"updatedAt":"2026-11-29T12:00:00Z","updatedBy":"bob"}`},
		{workspace.ToolFilesList, `{}`,
			`{"entries":[` +
				`{"path":"/files/bin/blob","revision":1,"size":4,"updatedAt":"2026-11-29T12:00:00Z","updatedBy":"bob"},` +
				`{"path":"/files/notes/plan.md","revision":1,"size":11,"updatedAt":"2026-11-29T12:00:00Z","updatedBy":"bob"},` +
				`{"path":"/knowledge/specs/api.md","revision":1,"size":7,"updatedAt":"2026-11-29T12:00:00Z","updatedBy":"bob"}],"truncated":false}`},
		{workspace.ToolFilesList, `{"prefix":"/files/notes/","limit":1}`,
			`{"entries":[{"path":"/files/notes/plan.md","revision":1,"size":11,"updatedAt":"2026-11-29T12:00:00Z","updatedBy":"bob"}],"truncated":false}`},
		{workspace.ToolFilesList, `{"limit":1}`,
			`{"entries":[{"path":"/files/bin/blob","revision":1,"size":4,"updatedAt":"2026-11-29T12:00:00Z","updatedBy":"bob"}],"truncated":true}`},
		{workspace.ToolFilesSearch, `{"query":"plan SHIP"}`,
			`{"matches":[{"path":"/files/notes/plan.md","revision":1,"size":11,"updatedAt":"2026-11-29T12:00:00Z","updatedBy":"bob"}],"truncated":false}`},
		{workspace.ToolFilesSearch, `{"query":"api","prefix":"/files"}`, `{"matches":[],"truncated":false}`},
		{workspace.ToolFilesDelete, `{"path":"/files/notes/plan.md","ifRevision":1}`,
			`{"deletedAt":"2026-11-29T12:00:00Z","path":"/files/notes/plan.md","revision":1}`},
		{workspace.ToolFilesSearch, `{"query":"plan"}`, `{"matches":[],"truncated":false}`},
	}
	for _, c := range cases {
		if got := mustRun(t, tools, bob, c.tool, c.args); got != c.want {
			t.Errorf("%s %s\n got %s\nwant %s", c.tool, c.args, got, c.want)
		}
	}
	if _, err := run(t, tools, bob, workspace.ToolFilesRead, `{"path":"/files/notes/plan.md"}`); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("read after delete: %v", err)
	}
	if _, err := run(t, tools, bob, workspace.ToolFilesRead, `{"path":"/files/bin/blob","encoding":"utf8"}`); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("binary read as utf8: %v", err)
	}
	if _, err := run(t, tools, bob, workspace.ToolFilesWrite, `{"path":"/files/x","content":"not base64!","encoding":"base64","ifRevision":null}`); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("bad base64: %v", err)
	}
	var ce *workspace.ConflictError
	if _, err := run(t, tools, bob, workspace.ToolFilesWrite, `{"path":"/files/bin/blob","content":"x","ifRevision":null}`); !errors.As(err, &ce) || ce.Actual != 1 {
		t.Errorf("create over an existing file: %v", err)
	}
}

func TestFileToolRefusals(t *testing.T) {
	s := newStore()
	ro := workspace.FileTools(s, &workspace.FileOptions{ReadOnlyKnowledge: true})
	bob := asMember("bob")
	s.Put(context.Background(), "acme", "/knowledge/k", []byte("k"), workspace.ExpectAbsent(), "admin")
	refusals := []struct{ tool, args string }{
		{workspace.ToolFilesWrite, `{"path":"/knowledge/k","content":"x","ifRevision":1}`},
		{workspace.ToolFilesDelete, `{"path":"/knowledge/k","ifRevision":1}`},
		{workspace.ToolFilesWrite, `{"path":"/memories/workspace/k","content":"x","ifRevision":null}`},
		{workspace.ToolFilesRead, `{"path":"/memories/workspace/k"}`},
		{workspace.ToolFilesList, `{"prefix":"/memories/members"}`},
		{workspace.ToolFilesSearch, `{"query":"x","prefix":"/memories"}`},
	}
	for _, r := range refusals {
		var tr *contract.ToolRefusal
		if _, err := run(t, ro, bob, r.tool, r.args); !errors.As(err, &tr) || tr.Tool != r.tool {
			t.Errorf("%s %s: %v, want a refusal by %s", r.tool, r.args, err, r.tool)
		}
	}
	if got := mustRun(t, ro, bob, workspace.ToolFilesRead, `{"path":"/knowledge/k"}`); !strings.Contains(got, `"content":"k"`) {
		t.Errorf("read-only knowledge is not readable: %s", got)
	}
	if _, err := run(t, ro, bob, workspace.ToolFilesList, `{"prefix":"/etc"}`); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("list /etc: %v", err)
	}
	if got := mustRun(t, ro, bob, workspace.ToolFilesList, `{"prefix":"/"}`); !strings.Contains(got, "/knowledge/k") {
		t.Errorf("list /: %s", got)
	}
}

func TestActiveTurn(t *testing.T) {
	ctx := context.Background()
	if _, ok := workspace.ActiveTurnFrom(ctx); ok {
		t.Error("a bare context has an active turn")
	}
	turn := workspace.ActiveTurn{Tenant: "acme", Member: "alice", Turn: "t-7"}
	got, ok := workspace.ActiveTurnFrom(workspace.WithActiveTurn(ctx, turn))
	if !ok || got != turn {
		t.Errorf("ActiveTurnFrom = %+v, %v", got, ok)
	}
	for _, bad := range []workspace.ActiveTurn{{}, {Tenant: "acme"}, {Member: "alice"}, {Tenant: "acme", Member: "a/b"},
		{Tenant: "acme", Member: ".."}, {Tenant: "acme", Member: "alice", Turn: "t\x00"}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

func TestDefaultPolicyAdmit(t *testing.T) {
	ctx := context.Background()
	turn := workspace.ActiveTurn{Tenant: "acme", Member: "alice"}
	if err := workspace.DefaultMemoryPolicy(nil).Admit(ctx, turn, "/memories/workspace/x", []byte("anything")); err != nil {
		t.Errorf("no hook: %v", err)
	}
	veto := errors.New("no")
	pol := workspace.DefaultMemoryPolicy(func(context.Context, workspace.ActiveTurn, string, []byte) error { return veto })
	if err := pol.Admit(ctx, turn, "/memories/workspace/x", nil); !errors.Is(err, veto) {
		t.Errorf("hook veto: %v", err)
	}
	if err := pol.Authorize(turn, workspace.Write, "/memories/members/bob/x"); !errors.Is(err, workspace.ErrNotAuthorized) {
		t.Errorf("other member: %v", err)
	}
	if err := pol.Authorize(turn, workspace.Access(9), "/memories/workspace/x"); !errors.Is(err, workspace.ErrNotAuthorized) {
		t.Errorf("unknown access: %v", err)
	}
	if err := pol.Authorize(turn, workspace.Read, "/etc/passwd"); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("bad path: %v", err)
	}
}

// WST-10: a forged identity argument is ignored, never trusted: the write
// lands under the active turn's member.
func TestForgedIdentityIgnored(t *testing.T) {
	s := newStore()
	tools := workspace.MemoryTools(s, nil)
	alice := asMember("alice")
	mustRun(t, tools, alice, workspace.ToolRemember, `{"scope":"member","key":"k","content":"mine","ifRevision":null,"memberId":"bob","tenant":"evil"}`)
	if got := mustRun(t, tools, asMember("bob"), workspace.ToolRecall, `{"scope":"member","key":"k"}`); strings.Contains(got, "mine") {
		t.Errorf("bob sees alice's memory through a forged memberId: %s", got)
	}
	if got := mustRun(t, tools, alice, workspace.ToolRecall, `{"scope":"member","key":"k"}`); !strings.Contains(got, "mine") {
		t.Errorf("alice's memory is not under alice: %s", got)
	}
	// Other unknown arguments are still refused.
	var se *schema.Error
	if _, err := run(t, tools, alice, workspace.ToolRecall, `{"scope":"member","key":"k","colour":"red"}`); !errors.As(err, &se) {
		t.Errorf("unknown argument: %v", err)
	}
}
