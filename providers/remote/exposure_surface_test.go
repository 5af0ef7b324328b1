package remote

import (
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// exportedMethods is the sorted names of t's exported methods, plus the
// methods of the interfaces extra names.
func exportedMethods(t reflect.Type, extra ...reflect.Type) []string {
	var names []string
	for i := range t.NumMethod() {
		names = append(names, t.Method(i).Name)
	}
	for _, it := range extra {
		for i := range it.NumMethod() {
			if name := it.Method(i).Name; !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// iface is the reflect.Type of interface I.
func iface[I any]() reflect.Type { return reflect.TypeFor[I]() }

// For every mask, the exposed type offers the base's exported methods
// plus exactly the methods of the mask's abilities, nothing more and
// nothing less; its value type has no methods at all (every method is on
// the pointer, the shape that keeps the generated code small), and it
// answers the base's surface with the base's answers (CAP-01: the
// optional methods are present exactly when declared; the rest of the
// surface is the base's own).
func TestExposedTypeIsBaseSurfacePlusAbilities(t *testing.T) {
	envAbilities := []reflect.Type{
		iface[contract.Dispatcher](), iface[contract.SessionOpener](), iface[contract.InteractionResponder](),
		iface[contract.Observer](), iface[contract.WorkspaceReader](), iface[contract.WorkspaceWriter](),
		iface[contract.LegacyCheckpointer](), iface[contract.LegacyForker](), iface[contract.DurableBrancher](),
		iface[contract.CommandExecutor](),
	}
	sessAbilities := []reflect.Type{iface[contract.NativeContinuer](), iface[contract.RunCanceller](), iface[contract.InteractionResponder]()}
	provAbilities := []reflect.Type{
		iface[contract.BranchingProvider](), iface[contract.ContextTransferrer](), iface[contract.ExactProcessHost](), iface[contract.ProfileValidator](),
	}

	caps := &contract.Capabilities{Workspace: contract.WorkspaceCapabilities{Read: true}}
	e := &environment{doc: wire.Environment{ID: "env-1", Provider: "prov", Name: "name", Capabilities: caps}, creation: contract.CreationReplayed}
	s := &session{e: e, id: "sess-1"}
	p := &Provider{}

	families := []struct {
		name      string
		base      reflect.Type
		abilities []reflect.Type
		exposed   func(mask uint) any
		possible  func(mask uint) bool
		// pointerOnly: the family's value types have no methods (the
		// provider's few types embed *Provider itself, whose exported
		// surface is wider than contract.Provider).
		pointerOnly bool
	}{
		{"environment", reflect.TypeFor[*environment](), envAbilities,
			func(m uint) any { return envExposed(e, m) },
			// Dispatcher (streaming.detach) comes only with SessionOpener.
			func(m uint) bool { return m&1 == 0 || m&2 != 0 }, true},
		{"session", reflect.TypeFor[*session](), sessAbilities,
			func(m uint) any { return sessExposed(s, m) }, func(uint) bool { return true }, true},
		{"provider", reflect.TypeFor[*Provider](), provAbilities,
			func(m uint) any { return provExposed(p, m) }, func(uint) bool { return true }, false},
	}
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			for mask := range uint(1) << len(f.abilities) {
				if !f.possible(mask) {
					continue
				}
				x := f.exposed(mask)
				var declared []reflect.Type
				for i, a := range f.abilities {
					if mask&(1<<i) != 0 {
						declared = append(declared, a)
					}
				}
				typ := reflect.TypeOf(x)
				if diff := cmp.Diff(exportedMethods(f.base, declared...), exportedMethods(typ)); diff != "" {
					t.Errorf("mask %b: exposed %v methods (-want +got):\n%s", mask, typ, diff)
				}
				if f.pointerOnly && mask != 0 && typ.Elem().NumMethod() != 0 {
					t.Errorf("mask %b: the value type %v has %d methods; every method belongs on its pointer", mask, typ.Elem(), typ.Elem().NumMethod())
				}
			}
		})
	}

	// The exposed environment and session answer with their base's answers.
	full := envExposed(e, envMask(&contract.Capabilities{
		Streaming: contract.StreamingCapabilities{Detach: true},
		Workspace: contract.WorkspaceCapabilities{Read: true, Write: true, Exec: true},
	}))
	got := []any{full.ID(), full.Provider(), full.Name(), full.Creation(), full.Capabilities()}
	want := []any{e.ID(), e.Provider(), e.Name(), e.Creation(), e.Capabilities()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the exposed environment's surface (-base +exposed):\n%s", diff)
	}
	es := sessExposed(s, sessMask(&contract.Capabilities{RetainedControl: &contract.RetainedControlCapabilities{}}))
	if es.ID() != s.ID() {
		t.Errorf("the exposed session's ID is %q, want %q", es.ID(), s.ID())
	}
}

// BenchmarkEnvExposed is the cost of picking an environment's exposed
// type for a document: one mask and one allocation.
func BenchmarkEnvExposed(b *testing.B) {
	c := &contract.Capabilities{
		Streaming: contract.StreamingCapabilities{Detach: true, Replay: true},
		Workspace: contract.WorkspaceCapabilities{Read: true, Write: true, Exec: true},
	}
	e := &environment{}
	b.ReportAllocs()
	for b.Loop() {
		if envExposed(e, envMask(c)) == nil {
			b.Fatal("nil environment")
		}
	}
}
