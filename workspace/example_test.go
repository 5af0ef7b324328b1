package workspace_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/workspace"
	"github.com/agentrt/agentrt/workspace/memory"
)

// The host installs the trusted active turn on the context; the tools take
// tenant and member from it, never from their arguments. Every write is a
// compare-and-set: null creates, a revision replaces.
func ExampleMemoryTools() {
	store := memory.New(func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) })
	tools := workspace.MemoryTools(store, workspace.DefaultMemoryPolicy(nil))
	ctx := workspace.WithActiveTurn(context.Background(), workspace.ActiveTurn{Tenant: "acme", Member: "alice"})

	call := func(name, args string) {
		for _, tool := range tools {
			if tool.Name == name {
				v, _ := canonjson.Decode([]byte(args))
				out, err := tool.Run(ctx, v)
				if err != nil {
					fmt.Println("error:", err)
					return
				}
				b, _ := canonjson.Canonical(out)
				fmt.Println(string(b))
			}
		}
	}
	call("memory.remember", `{"scope":"member","key":"style","content":"terse","ifRevision":null}`)
	call("memory.remember", `{"scope":"member","key":"style","content":"verbose","ifRevision":null}`)
	call("memory.remember", `{"scope":"workspace","key":"goal","content":"ship v1","ifRevision":null}`)

	pinned, _ := workspace.PinnedMemory(ctx, store, nil)
	fmt.Print(pinned)
	// Output:
	// {"key":"style","path":"/memories/members/alice/style","revision":1,"scope":"member"}
	// error: workspace: conflict at /memories/members/alice/style: expected absent, found revision 1
	// {"key":"goal","path":"/memories/workspace/goal","revision":1,"scope":"workspace"}
	// # Pinned memory (2)
	// ## /memories/members/alice/style (revision 1)
	// | terse
	// ## /memories/workspace/goal (revision 1)
	// | ship v1
}
