package cli

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// bridgeLike declares no native continuation, as a CLI bridge does.
type bridgeLike struct{ *scripted.Provider }

func (p bridgeLike) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	caps, err := p.Provider.Capabilities(ctx)
	if err != nil {
		return nil, err
	}
	c := *caps
	c.NativeContinuation = nil
	return &c, nil
}

// §3.6 Continuity through the graph CLI's per-node executor: it claims
// continuity resume only when every node's KernelExecutor can honour it
// (all or nothing), and it releases what each keeps at run end.
func TestNodeExecutorResumesSessionsAllOrNothing(t *testing.T) {
	native := func() *supervise.KernelExecutor {
		return &supervise.KernelExecutor{Provider: scripted.New(scripted.DefaultScript(), scripted.Options{}), Store: memory.New(nil)}
	}
	bridge := &supervise.KernelExecutor{Provider: bridgeLike{scripted.New(scripted.DefaultScript(), scripted.Options{})}, Store: memory.New(nil)}
	for _, tc := range []struct {
		name string
		exec *nodeExecutor
		want bool
	}{
		{"every node native", &nodeExecutor{def: native(), byNode: map[string]*supervise.KernelExecutor{"writer": native()}}, true},
		{"one node a bridge", &nodeExecutor{def: native(), byNode: map[string]*supervise.KernelExecutor{"writer": bridge}}, false},
		{"the default a bridge", &nodeExecutor{def: bridge, byNode: map[string]*supervise.KernelExecutor{"writer": native()}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var exec supervise.Executor = tc.exec
			rs, ok := exec.(interface{ ResumesSessions() bool })
			if !ok || rs.ResumesSessions() != tc.want {
				t.Errorf("ResumesSessions = %v (implemented %v), want %v", ok && rs.ResumesSessions(), ok, tc.want)
			}
			rel, ok := exec.(supervise.SessionReleaser)
			if !ok {
				t.Fatal("nodeExecutor does not release kept sessions")
			}
			if got := rel.ReleaseSessions(context.Background(), "run", nil); len(got) != 0 {
				t.Errorf("nothing kept, yet unreleased: %+v", got)
			}
		})
	}
}
