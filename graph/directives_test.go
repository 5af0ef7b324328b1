package graph_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
)

// §3.7 "every directive resolves": the built-in registry holds the
// delegates and analyzes directives a graph needs without one of its
// own, every handle <surface>/v<n> with text; BuiltinDirectives hands
// out a copy, so a caller cannot change the registry every run shares.
func TestBuiltinDirectives(t *testing.T) {
	want := []string{"analyze/critique/v1", "analyze/v1", "analyze/verify/v1", "delegate/fix/v1", "delegate/implement/v1",
		"delegate/research/v1", "delegate/review/v1", "delegate/test/v1", "delegate/v1"}
	reg := graph.BuiltinRegistry()
	if diff := cmp.Diff(want, reg.Handles()); diff != "" {
		t.Errorf("built-in handles (-want +got):\n%s", diff)
	}
	for h, text := range graph.BuiltinDirectives() {
		if !graph.ValidHandle(h) || strings.TrimSpace(text) == "" {
			t.Errorf("built-in %q: valid handle %v, text %q", h, graph.ValidHandle(h), text)
		}
		if got, ok := reg.Resolve(h); !ok || got != text {
			t.Errorf("built-in %q resolves to %q, %v", h, got, ok)
		}
	}
	copied := graph.BuiltinDirectives()
	copied["delegate/v1"] = "changed"
	if got, _ := graph.BuiltinRegistry().Resolve("delegate/v1"); got == "changed" {
		t.Error("changing BuiltinDirectives' map changed the built-in registry")
	}
}

// Registry.With adds a caller's directives to a registry and overrides
// one of the same handle, leaving the registry it extends as it was; a
// handle that is not <surface>/v<n> is a *ValidationError naming it.
func TestRegistryWith(t *testing.T) {
	base := graph.BuiltinRegistry()
	builtin, _ := base.Resolve("delegate/v1")
	for _, tc := range []struct {
		name    string
		entries map[string]string
		handle  string
		want    string
		badPath string
	}{
		{name: "adds", entries: map[string]string{"delegate/coder/v1": "Code."}, handle: "delegate/coder/v1", want: "Code."},
		{name: "overrides", entries: map[string]string{"delegate/v1": "Mine."}, handle: "delegate/v1", want: "Mine."},
		{name: "keeps", entries: nil, handle: "analyze/v1", want: mustResolve(t, base, "analyze/v1")},
		{name: "bad handle", entries: map[string]string{"delegate/v1": "ok", "Delegate": "x", "z/v0": "y"}, badPath: `registry["Delegate"]`},
		// The reference refuses a directive with no text: the edge would
		// cross nothing while the ledger names a directive.
		{name: "no text", entries: map[string]string{"delegate/coder/v1": ""}, badPath: `registry["delegate/coder/v1"]`},
		{name: "blank text", entries: map[string]string{"delegate/coder/v1": " \n\t"}, badPath: `registry["delegate/coder/v1"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := base.With(tc.entries)
			if tc.badPath != "" {
				var ve *graph.ValidationError
				if !errors.As(err, &ve) || ve.Path != tc.badPath {
					t.Fatalf("With: %v, want a *ValidationError at %s", err, tc.badPath)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := r.Resolve(tc.handle); !ok || got != tc.want {
				t.Errorf("%s resolves to %q, %v; want %q", tc.handle, got, ok, tc.want)
			}
			if r.Len() != base.Len()+len(tc.entries)-overlap(base, tc.entries) {
				t.Errorf("Len %d", r.Len())
			}
		})
	}
	if got, _ := base.Resolve("delegate/v1"); got != builtin {
		t.Errorf("With changed the registry it extends: delegate/v1 is %q", got)
	}
	var nilReg *graph.Registry
	r, err := nilReg.With(map[string]string{"a/v1": "A"})
	if err != nil || r.Len() != 1 {
		t.Errorf("a nil registry With one entry: %v, %d entries", err, r.Len())
	}
}

// A graph naming only built-in handles validates against the built-in
// registry, and one naming a handle it lacks is refused at that edge.
func TestBuiltinRegistryValidatesGraph(t *testing.T) {
	g := starGraph(t)
	g.Edges[0].Directive = "delegate/implement/v1"
	g.Edges[1].Directive = "delegate/review/v1"
	o := options(t, &resumingWorkers{}, router(turn(final("done"))))
	o.Registry = graph.BuiltinRegistry()
	if err := graph.Validate(g, o); err != nil {
		t.Fatalf("a graph of built-in directives: %v", err)
	}
	g.Edges[1].Directive = "delegate/reviewer/v1"
	var ve *graph.ValidationError
	if err := graph.Validate(g, o); !errors.As(err, &ve) || ve.Path != "edges[1].directive" {
		t.Errorf("a handle the built-ins lack: %v, want a *ValidationError at edges[1].directive", err)
	}
}

func mustResolve(t *testing.T, r *graph.Registry, h string) string {
	t.Helper()
	s, ok := r.Resolve(h)
	if !ok {
		t.Fatalf("%s does not resolve", h)
	}
	return s
}

func overlap(r *graph.Registry, entries map[string]string) int {
	n := 0
	for h := range entries {
		if _, ok := r.Resolve(h); ok {
			n++
		}
	}
	return n
}

// DecodeDirectives is strict: an object of strings by valid handle, each
// handle once, nothing after it; every refusal a *ValidationError naming
// where.
func TestDecodeDirectives(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      map[string]string
		path      string
	}{
		{name: "object", doc: `{"delegate/coder/v1": "Code.", "analyze/v2": "Look."}`, want: map[string]string{"delegate/coder/v1": "Code.", "analyze/v2": "Look."}},
		{name: "no text", doc: `{"delegate/coder/v1": "Code.", "analyze/v2": ""}`, path: `directives["analyze/v2"]`},
		{name: "blank text", doc: `{"analyze/v2": "  \n"}`, path: `directives["analyze/v2"]`},
		{name: "empty", doc: ` {} `, want: map[string]string{}},
		{name: "array", doc: `["delegate/v1"]`, path: "directives"},
		{name: "null", doc: `null`, path: "directives"},
		{name: "not json", doc: `{"delegate/v1": "x",`, path: "directives"},
		{name: "number text", doc: `{"delegate/v1": 3}`, path: `directives["delegate/v1"]`},
		{name: "null text", doc: `{"delegate/v1": null}`, path: `directives["delegate/v1"]`},
		{name: "object text", doc: `{"delegate/v1": {"text": "x"}}`, path: `directives["delegate/v1"]`},
		{name: "bad handle", doc: `{"Delegate": "x"}`, path: `directives["Delegate"]`},
		{name: "no version", doc: `{"delegate/coder": "x"}`, path: `directives["delegate/coder"]`},
		{name: "twice", doc: `{"delegate/v1": "a", "delegate/v1": "b"}`, path: `directives["delegate/v1"]`},
		{name: "trailing", doc: `{"delegate/v1": "a"} {}`, path: "directives"},
		{name: "too large", doc: `{"delegate/v1": "` + strings.Repeat("x", graph.MaxDirectivesLen) + `"}`, path: "directives"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := graph.DecodeDirectives([]byte(tc.doc))
			if tc.path != "" {
				var ve *graph.ValidationError
				if !errors.As(err, &ve) || ve.Path != tc.path {
					t.Fatalf("DecodeDirectives: %v, want a *ValidationError at %s", err, tc.path)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzDecodeDirectives: no input makes DecodeDirectives panic; what it
// accepts is all valid handles and builds a registry resolving each.
func FuzzDecodeDirectives(f *testing.F) {
	for _, seed := range []string{`{}`, `{"delegate/v1": "Do it."}`, `{"a/b/v2": "x", "c/v9": ""}`, `{"delegate/v1": 1}`,
		`{"x": "y"}`, `[]`, `{"delegate/v1": "a", "delegate/v1": "b"}`, `{"a/v1":"\u00e9\n"}`, `{`, `"str"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := graph.DecodeDirectives(data)
		if err != nil {
			var ve *graph.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("a refusal that is not a *ValidationError: %v", err)
			}
			return
		}
		r, err := graph.BuiltinRegistry().With(m)
		if err != nil {
			t.Fatalf("decoded directives the registry refuses: %v", err)
		}
		for h, text := range m {
			if got, ok := r.Resolve(h); !ok || got != text {
				t.Fatalf("%q resolves to %q, %v; want %q", h, got, ok, text)
			}
		}
	})
}
