package mcpserver_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/mcpserver"
	"github.com/agentrt/agentrt/workspace"
	"github.com/agentrt/agentrt/workspace/memory"
)

// A host serves one tenant's workspace to an MCP client, acting as one
// member. The client's memberId argument is ignored.
func ExampleNewWorkspace() {
	ctx := context.Background()
	srv, err := mcpserver.NewWorkspace(memory.New(nil), mcpserver.WorkspaceOptions{
		Turn: workspace.ActiveTurn{Tenant: "acme", Member: "alice"},
	})
	if err != nil {
		log.Fatal(err)
	}
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, serverEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "harness", Version: "1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory.remember", Arguments: map[string]any{
		"scope": "member", "key": "tea", "content": "green", "ifRevision": nil, "memberId": "mallory",
	}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)

	// A refusal is a tool result, not a protocol error.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "files.read", Arguments: map[string]any{"path": "/etc/passwd"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.IsError)
	// Output:
	// {"key":"tea","path":"/memories/members/alice/tea","revision":1,"scope":"member"}
	// true
}
