package coordmcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/supervise"
)

// maxShownBytes bounds what a refused hostile call may send back: the
// JSON of its result, which the harness shows its model.
const maxShownBytes = 16 << 10

// §9 through the relay, as a harness's model may call the verbs: every
// verb, with every string member it takes set to a 2 MiB string, a
// lone-surrogate escape or control characters, with an unknown key,
// with arguments nested 5000 deep, and with a 2 MiB string where an
// integer belongs, answers a tool result (never a protocol error) of at
// most maxShownBytes; a refusal by the schema is {error, reason} naming
// the JSON pointer. The session, the relay and the run go on: a spawn
// after the barrage is admitted, and the journal still reads.
func TestRelayHostileArguments(t *testing.T) {
	agentrtBinary(t) // build before the run's clock starts
	const secret = "sk-ant-hostile-test-secret-7f3a"
	t.Setenv("ANTHROPIC_API_KEY", secret) // the relay processes inherit it
	ctx := deadline(t)
	runDir := t.TempDir()
	var shownAll bytes.Buffer
	big := strings.Repeat("x", 2<<20)
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	var spawned map[string]any
	var journalErr error
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		srv, err := coordmcp.Serve(ctx, c, coordmcp.ServeOptions{})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		defer srv.Close()
		cs := relaySession(t, ctx, runDir)
		listed, err := cs.ListTools(ctx, nil)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		for _, tl := range listed.Tools {
			if tl.Name == supervise.ToolPrefix+supervise.VerbStop {
				continue // it would end the run; its hostile calls are the schema's
			}
			var schema struct {
				Properties map[string]struct {
					Type any `json:"type"`
				} `json:"properties"`
			}
			b, _ := json.Marshal(tl.InputSchema)
			if err := json.Unmarshal(b, &schema); err != nil {
				t.Fatalf("%s: input schema: %v", tl.Name, err)
			}
			var strs []string
			for k, p := range schema.Properties {
				if ty, _ := p.Type.(string); ty == "string" {
					strs = append(strs, k)
				}
			}
			slices.Sort(strs)
			cases := map[string]string{
				"unknown key": `{"bogus": 1}`,
				"deep":        `{"bogus": ` + deep + `}`,
			}
			for name, lit := range map[string]string{"2 MiB": `"` + big + `"`, "lone surrogate": `"a\ud800b"`, "controls": `"\u0000\u001b[31m"`} {
				if len(strs) > 0 {
					var ms []string
					for _, k := range strs {
						ms = append(ms, `"`+k+`": `+lit)
					}
					cases[name] = "{" + strings.Join(ms, ", ") + "}"
				}
			}
			for name, args := range cases {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tl.Name, Arguments: json.RawMessage(args)})
				if err != nil {
					t.Errorf("%s, %s: a protocol error %v, want a tool result", tl.Name, name, err)
					cs = relaySession(t, ctx, runDir)
					continue
				}
				shown, _ := json.Marshal(res.StructuredContent)
				shownAll.Write(shown)
				if len(shown) > maxShownBytes {
					t.Errorf("%s, %s: a result of %d bytes (%.120s…), want at most %d", tl.Name, name, len(shown), shown, maxShownBytes)
				}
				m, _ := res.StructuredContent.(map[string]any)
				if res.IsError && (m["error"] == nil || m["reason"] == nil) {
					t.Errorf("%s, %s: a failed result %s, want {error, reason}", tl.Name, name, shown)
				}
				if name == "unknown key" || name == "deep" {
					if !res.IsError || !strings.Contains(m["reason"].(string), "bogus") && !strings.Contains(m["reason"].(string), "/bogus") {
						t.Errorf("%s, %s: %.300s, want a refusal naming bogus", tl.Name, name, shown)
					}
				}
			}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: supervise.ToolPrefix + supervise.VerbAwaitEvent, Arguments: json.RawMessage(`{"timeoutMs": "` + big + `"}`)})
		if err != nil {
			t.Errorf("await_event with a 2 MiB timeoutMs: %v", err)
		} else if m, _ := res.StructuredContent.(map[string]any); !res.IsError || !strings.HasPrefix(m["reason"].(string), "the arguments at /timeoutMs ") || len(m["reason"].(string)) > maxShownBytes {
			t.Errorf("await_event with a 2 MiB timeoutMs: %.300v", m)
		}
		spawned, err = callVerb(ctx, cs, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha"})
		if err != nil {
			t.Errorf("the spawn after: %v", err)
		}
		if _, err := callVerb(ctx, cs, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}); err != nil {
			t.Errorf("await after: %v", err)
		}
		_, journalErr = callVerb(ctx, cs, supervise.VerbReadJournal, map[string]any{})
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(ctx, cliBase(t), "write alpha", runOptions(t, runDir, brain))
	if err != nil {
		t.Fatal(err)
	}
	if spawned["workerId"] != "run1:s1" || journalErr != nil {
		t.Errorf("after the hostile calls: spawn %v, read_journal %v", spawned, journalErr)
	}
	if res.Status != supervise.StatusWinner {
		t.Errorf("status %s, want the spawned worker's winner", res.Status)
	}
	// The API key in the environment reaches no result and no file of
	// the run (journal, progress, logs).
	if bytes.Contains(shownAll.Bytes(), []byte(secret)) {
		t.Error("a result carries the API key")
	}
	err = filepath.WalkDir(runDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s carries the API key", path)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
