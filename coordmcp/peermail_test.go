package coordmcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// mailCall calls one peer mail tool and returns its result object.
func mailCall(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, fmt.Errorf("%s failed: %v", name, res.Content)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, raw, err)
	}
	return m, nil
}

// §9 peer mail for harness workers: with Options.PeerMail and
// KernelExecutor.PeerMailMount = coordmcp.MountPeerMail, each worker's
// profile mounts its own MCP endpoint (supervise.PeerMailAlias) serving
// exactly send_mail and read_mail. A stand-in harness (the scripted
// provider mounting MCP) connects over streamable HTTP: worker A mails
// B as itself, B reads it; another path on the same port (a guessed
// capability) is not served; the endpoint closes when its worker ends.
func TestPeerMailHarnessWorkersOverMCP(t *testing.T) {
	ctx := deadline(t)
	gate := make(chan struct{})
	var mu sync.Mutex
	seen := map[string]any{}
	urls := map[string]string{}
	note := func(k string, v any) {
		mu.Lock()
		seen[k] = v
		mu.Unlock()
	}
	provider := scripted.New(nil, scripted.Options{Name: "stand-in", MountsMCP: true,
		OnPrompt: func(ctx context.Context, prompt string, pc scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
			srv, ok := pc.Input.Profile.MCP[supervise.PeerMailAlias]
			if !ok || srv.URL == nil {
				return nil, errors.New("the worker's profile mounts no peer mail")
			}
			mu.Lock()
			urls[prompt] = *srv.URL
			mu.Unlock()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "stand-in-harness", Version: "1"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: *srv.URL}, nil)
			if err != nil {
				return nil, err
			}
			defer cs.Close()
			lt, err := cs.ListTools(ctx, nil)
			if err != nil {
				return nil, err
			}
			var names []string
			for _, tl := range lt.Tools {
				names = append(names, tl.Name)
			}
			slices.Sort(names)
			note(prompt+"/tools", names)
			var out map[string]any
			switch prompt {
			case "send":
				// A guessed capability on the live server's port is not
				// served.
				guessed := (*srv.URL)[:strings.LastIndex(*srv.URL, "/")+1] + "guessed"
				resp, herr := http.Post(guessed, "application/json", strings.NewReader(`{}`))
				if herr != nil {
					return nil, herr
				}
				resp.Body.Close()
				note("guessed", resp.StatusCode)
				out, err = mailCall(ctx, cs, supervise.VerbSendMail, map[string]any{"to": "run1:s1", "kind": "ask", "subject": "colour", "body": "red or blue?"})
			case "read":
				select {
				case <-gate:
				case <-time.After(30 * time.Second):
					return nil, errors.New("the gate never opened")
				}
				out, err = mailCall(ctx, cs, supervise.VerbReadMail, map[string]any{})
			}
			if err != nil {
				return nil, err
			}
			note(prompt, out)
			return []contract.EnvironmentEvent{{Type: "result", Data: map[string]canonjson.Value{"result": canonjson.StringValue(prompt + " DONE")}}}, nil
		}})
	o := runOptions(t, t.TempDir(), nil)
	o.Profiles["writer"] = parseProfile(t, `{"name": "writer", "harness": "opencode", "model": {"default": "scripted/writer"}}`)
	o.Executor = &supervise.KernelExecutor{Provider: provider, Store: memory.New(nil), PeerMailMount: coordmcp.MountPeerMail}
	o.PeerMail = &supervise.PeerMail{}
	settled := func(ctx context.Context, c *supervise.Coordinator) error {
		_, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{"settled"}, TimeoutMS: 60000})
		return err
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, task := range []string{"read", "send"} {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		if err := settled(ctx, c); err != nil { // the sender
			return supervise.BrainReport{}, err
		}
		close(gate)
		return supervise.BrainReport{}, settled(ctx, c)
	})
	res, err := supervise.Supervise(ctx, cliBase(t), "mail", o)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range res.Tree {
		if n.State != supervise.StateDone {
			t.Errorf("worker %s: %s %s", n.ID, n.State, n.Reason)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, task := range []string{"send", "read"} {
		if got := fmt.Sprint(seen[task+"/tools"]); got != "[read_mail send_mail]" {
			t.Errorf("%s's endpoint serves %s, want only read_mail and send_mail", task, got)
		}
	}
	if sent, _ := seen["send"].(map[string]any); sent["delivered"] != true {
		t.Errorf("A's send_mail: %v", seen["send"])
	}
	read, _ := seen["read"].(map[string]any)
	inbox, _ := read["inbox"].([]any)
	if len(inbox) != 1 {
		t.Fatalf("B's read_mail: %v", read)
	}
	if m, _ := inbox[0].(map[string]any); m["from"] != "run1:s2" || m["body"] != "red or blue?" || read["you"] != "run1:s1" {
		t.Errorf("B's mail: %v", read)
	}
	if urls["send"] == urls["read"] || !strings.Contains(urls["send"], coordmcp.PeerMailPath) {
		t.Errorf("the workers' endpoints: %v, want one capability each", urls)
	}
	if seen["guessed"] != http.StatusNotFound {
		t.Errorf("a guessed capability on a live endpoint's port: %v, want 404", seen["guessed"])
	}
	// An ended worker's endpoint is closed.
	if resp, err := http.Post(urls["send"], "application/json", strings.NewReader(`{}`)); err == nil {
		resp.Body.Close()
		t.Errorf("POST to an ended worker's endpoint: %s, want the connection refused", resp.Status)
	}
}
