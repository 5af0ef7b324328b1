package coordmcp_test

import (
	"context"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/supervise"
)

// BenchmarkDecodeEndpoint: the relay's strict read of the endpoint file.
func BenchmarkDecodeEndpoint(b *testing.B) {
	doc := []byte(endpointDoc("http://127.0.0.1:4000/mcp", goodToken))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := coordmcp.DecodeEndpoint(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRelayedCall: one read_journal call from an MCP client through
// the relay (in process, over pipes) to a live run's HTTP endpoint and
// back: the overhead a harness pays per verb.
func BenchmarkRelayedCall(b *testing.B) {
	runDir := b.TempDir()
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		srv, err := coordmcp.Serve(ctx, c, coordmcp.ServeOptions{})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		defer srv.Close()
		cin, rout := io.Pipe() // relay writes, client reads
		rin, cout := io.Pipe() // client writes, relay reads
		relayed := make(chan error, 1)
		go func() { relayed <- coordmcp.Relay(ctx, runDir, rin, rout, coordmcp.RelayOptions{}) }()
		cl := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := cl.Connect(ctx, &mcp.IOTransport{Reader: cin, Writer: cout}, nil)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: supervise.ToolPrefix + supervise.VerbReadJournal, Arguments: map[string]any{"limit": 1}})
			if err != nil || res.IsError {
				b.Fatalf("read_journal: %v %+v", err, res)
			}
		}
		b.StopTimer()
		cs.Close()
		cout.Close()
		<-relayed
		return supervise.BrainReport{}, nil
	})
	o := runOptions(b, runDir, brain)
	if _, err := supervise.Supervise(context.Background(), cliBase(b), "bench", o); err != nil {
		b.Fatal(err)
	}
}
