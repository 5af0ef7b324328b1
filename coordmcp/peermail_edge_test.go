package coordmcp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/supervise"
)

// §9 peer mail endpoint bounds: a worker's endpoint serves its exact
// capability path only (a prefix of it, a longer path, another case or
// another capability are 404), and a request body far over what one
// mail can hold (2 MiB) is refused at the transport (413) before any
// tool runs.
func TestPeerMailEndpointBounds(t *testing.T) {
	ctx := deadline(t)
	calls := 0
	run := func(context.Context, canonjson.Value) (canonjson.Value, error) {
		calls++
		return canonjson.ToValue(map[string]any{"delivered": false})
	}
	schema, err := canonjson.Decode([]byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	w := supervise.Work{Node: "run1:s1", RunID: "run1", PeerMail: []contract.Tool{
		{Name: supervise.VerbSendMail, InputSchema: schema, Run: run},
		{Name: supervise.VerbReadMail, InputSchema: schema, Run: run}}}
	srv, release, err := coordmcp.MountPeerMail(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	url := *srv.URL
	i := strings.LastIndex(url, coordmcp.PeerMailPath)
	base, capability := url[:i+len(coordmcp.PeerMailPath)], url[i+len(coordmcp.PeerMailPath):]
	post := func(u, body string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for name, u := range map[string]string{
		"prefix":  base + capability[:len(capability)-1],
		"longer":  url + "0",
		"subpath": url + "/x",
		"upper":   base + strings.ToUpper(capability),
		"other":   base + strings.Repeat("0", len(capability)),
	} {
		if got := post(u, initialize); got != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", name, got)
		}
	}
	if got := post(url, initialize); got != http.StatusOK {
		t.Errorf("the capability itself: %d, want 200", got)
	}
	huge := `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}`
	if got := post(url, huge); got != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 MiB request: %d, want 413", got)
	}
	if calls != 0 {
		t.Errorf("%d tool calls, want none", calls)
	}
}
