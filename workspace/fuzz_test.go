package workspace_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
	"github.com/agentrt/agentrt/workspace"
	"github.com/agentrt/agentrt/workspace/storetest"
)

// FuzzValidatePath: the path validator never panics, and what it accepts
// is an absolute path under a root with clean segments, which is also a
// valid prefix of itself.
func FuzzValidatePath(f *testing.F) {
	for _, p := range append([]string{"/files/a", "/memories/workspace/x", "/memories/members/m/x", "/knowledge/a/b"}, storetest.BadPaths...) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := workspace.ValidatePath(p)
		if err != nil {
			var pe *workspace.PathError
			if !errors.As(err, &pe) || !errors.Is(err, workspace.ErrInvalid) {
				t.Fatalf("ValidatePath(%q) = %v: not a *PathError", p, err)
			}
			return
		}
		if !workspace.InPrefix(workspace.RootFiles, p) && !workspace.InPrefix(workspace.RootKnowledge, p) && !workspace.InPrefix(workspace.RootMemories, p) {
			t.Fatalf("accepted %q outside the roots", p)
		}
		for _, seg := range strings.Split(p[1:], "/") {
			if err := workspace.ValidateSegment(seg); err != nil {
				t.Fatalf("accepted %q with segment %q: %v", p, seg, err)
			}
		}
		if got, err := workspace.ValidatePrefix(p); err != nil || got != p {
			t.Fatalf("valid path %q is not its own prefix: %q, %v", p, got, err)
		}
	})
}

// FuzzValidatePrefix: never panics; a normalized prefix normalizes to
// itself.
func FuzzValidatePrefix(f *testing.F) {
	for _, p := range []string{"", "/", "/files/", "/memories/members/a", "//", "/files/../x", "/memories/workspace/a/b"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := workspace.ValidatePrefix(p)
		if err != nil {
			if !errors.Is(err, workspace.ErrInvalid) {
				t.Fatalf("ValidatePrefix(%q) = %v", p, err)
			}
			return
		}
		again, err := workspace.ValidatePrefix(got)
		if err != nil || again != got {
			t.Fatalf("ValidatePrefix(%q) = %q, which normalizes to %q, %v", p, got, again, err)
		}
	})
}

// FuzzToolArguments feeds arbitrary JSON to every memory and file tool
// (tool arguments are external input from a model). No call panics, every
// failure is one of the documented kinds, and every result is canonical
// JSON.
func FuzzToolArguments(f *testing.F) {
	seeds := []string{
		`{"scope":"member","key":"k","content":"c","ifRevision":null}`,
		`{"scope":"workspace","key":"k","content":"c","ifRevision":1}`,
		`{"scope":"member","key":"k"}`, `{"query":"a b"}`, `{"limit":3}`, `{}`,
		`{"scope":"member","key":"k","ifRevision":1}`,
		`{"path":"/files/a","content":"AA==","encoding":"base64","ifRevision":null}`,
		`{"path":"/files/a"}`, `{"prefix":"/knowledge"}`, `{"query":"x","prefix":"/files","limit":1}`,
		`{"path":"/files/a","ifRevision":1}`, `{"memberId":"bob"}`, `[]`, `null`, `{"path":"/memories/workspace/k"}`,
	}
	for i, s := range seeds {
		for tool := range 8 {
			if tool == i%8 || i < 2 {
				f.Add(uint8(tool), []byte(s))
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		v, err := canonjson.Decode(args)
		if err != nil {
			return
		}
		s := newStore()
		ctx := workspace.WithActiveTurn(context.Background(), workspace.ActiveTurn{Tenant: "acme", Member: "alice"})
		seed := context.Background()
		s.Put(seed, "acme", "/files/a", []byte("alpha"), workspace.ExpectAbsent(), "x")
		s.Put(seed, "acme", "/memories/members/alice/k", []byte("kappa"), workspace.ExpectAbsent(), "x")
		tools := append(workspace.MemoryTools(s, nil), workspace.FileTools(s, nil)...)
		tool := tools[int(which)%len(tools)]
		out, err := tool.Run(ctx, v)
		if err != nil {
			var se *schema.Error
			var tr *contract.ToolRefusal
			var ce *workspace.ConflictError
			if !errors.As(err, &se) && !errors.As(err, &tr) && !errors.As(err, &ce) &&
				!errors.Is(err, workspace.ErrInvalid) && !errors.Is(err, workspace.ErrNotFound) {
				t.Fatalf("%s(%s): undocumented failure %T: %v", tool.Name, args, err, err)
			}
			return
		}
		if _, err := canonjson.Canonical(out); err != nil {
			t.Fatalf("%s(%s): result is not canonical JSON: %v", tool.Name, args, err)
		}
	})
}
