package kernel_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/workspace"
	wsmemory "github.com/agentrt/agentrt/workspace/memory"
)

// The tool loop checks every call against its tool's input schema, and
// the workspace tools' schemas accept and ignore the identity arguments a
// model may forge (spec runtime §3.11 IdentityIgnoredFromArguments,
// WST-10): the call runs as the active turn's member, while an unknown
// argument is refused before the tool runs.
func TestToolLoopWorkspaceIdentityIgnored(t *testing.T) {
	ws := wsmemory.New(nil)
	ctx := workspace.WithActiveTurn(context.Background(), workspace.ActiveTurn{Tenant: "t1", Member: "alice", Turn: "turn-1"})
	m := model(
		turn(scripted.Call("c1", workspace.ToolRemember, `{"scope":"member","key":"k","content":"mine","ifRevision":null,"memberId":"bob"}`),
			scripted.Call("c2", workspace.ToolRemember, `{"scope":"member","key":"k2","content":"x","ifRevision":null,"bogus":1}`)),
		answer("done"),
	)
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: m, User: "remember", Tools: workspace.MemoryTools(ws, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolResults) != 2 {
		t.Fatalf("%d tool results", len(res.ToolResults))
	}
	if out := res.ToolResults[0].Outcome; !out.OK {
		t.Errorf("a forged memberId was refused (%s: %s); it is ignored", out.Code, out.Message)
	}
	if out := res.ToolResults[1].Outcome; out.OK || out.Code != kernel.CodeInvalidArguments {
		t.Errorf("an unknown argument: %+v; want invalid_arguments", out)
	}
	doc, err := ws.Get(context.Background(), "t1", "/memories/members/alice/k")
	if err != nil || doc.UpdatedBy != "alice" {
		t.Errorf("stored %+v (%v); want alice's memory, written by alice", doc.Meta, err)
	}
	if _, err := ws.Get(context.Background(), "t1", "/memories/members/bob/k"); err == nil {
		t.Error("the forged memberId wrote bob's memory")
	}
}
