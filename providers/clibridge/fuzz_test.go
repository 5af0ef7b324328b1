package clibridge

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/agentrt/agentrt/contract"
)

// FuzzClaudeLine: whatever line claude writes, the normalizer never
// panics, every event it yields is a valid AgentEnvironmentEvent, and a
// turn ends in exactly one terminal event — completed only for a
// successful result line and exit 0.
func FuzzClaudeLine(f *testing.F) {
	fuzzLines(f, claudeSuite, []string{
		`{"type":"result","subtype":"success","is_error":false,"result":"x","usage":{"input_tokens":1e300,"output_tokens":-1}}`,
		`{"type":"assistant","message":{"id":" padded ","model":"<synthetic>","content":"plain string"}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"","content":[{"type":"text","text":"a"}],"is_error":true}]}}`,
		`{"type":"system","subtype":"init","session_id":"has space","model":"m[1m]"}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":[1,2]}]},"parent_tool_use_id":"p"}`,
	})
}

// FuzzCodexLine: the same for codex exec --json lines — completed only
// for a turn.completed line (with no turn.failed) and exit 0.
func FuzzCodexLine(f *testing.F) {
	fuzzLines(f, codexSuite, []string{
		`{"type":"turn.completed","usage":{"input_tokens":1e300,"output_tokens":-1}}`,
		`{"type":"turn.failed","error":null}`,
		`{"type":"thread.started","thread_id":"has space"}`,
		`{"type":"item.completed","item":{"id":" padded ","type":"mcp_tool_call","server":"s","tool":"t","arguments":[1],"result":{"a":1},"error":{"message":"x"},"status":"failed"}}`,
		`{"type":"item.started","item":{"type":"file_change","changes":[{"path":"a","kind":"add"}],"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"type":"x.completed"}}`,
		`{"type":"item.completed","item":{"type":"command_execution","exit_code":1.5,"aggregated_output":"\u0000"}}`,
		`{"type":"item.completed","item":{"type":"web_search","query":"q"}}`,
		`{"type":"error","message":"Reconnecting... 1/5"}`,
	})
}

// FuzzOpencodeLine: the same for opencode run --format json lines —
// completed only for exit 0 after a finished step and no error line.
func FuzzOpencodeLine(f *testing.F) {
	fuzzLines(f, opencodeSuite, []string{
		`{"type":"step_finish","sessionID":"ses_1","part":{"reason":"stop","tokens":{"input":9007199254740991,"output":1,"total":-1,"cache":{"read":1.5}},"cost":1e308}}`,
		`{"type":"step_finish","part":{"reason":"error","tokens":{"input":"1"}}}`,
		`{"type":"tool_use","sessionID":" ","part":{"type":"tool","callID":"","tool":"","state":{"status":"error","input":[1],"error":{"x":1}}}}`,
		`{"type":"tool_use","part":{"state":{"status":"pending","input":{},"output":"\u0000"}}}`,
		`{"type":"text","sessionID":"has space","part":{"id":"","messageID":"\n","text":"\ud800"}}`,
		`{"type":"reasoning","part":{"text":"think"}}`,
		`{"type":"error","error":{"name":"APIError","data":{"message":"m","statusCode":400}}}`,
		`{"type":"error","error":null}`, `{"type":"step_start","part":null}`,
		`{"type":"x.completed","part":{"deep":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}}`,
	})
}

// fuzzLines seeds the fuzzer with every recorded stream line of the
// suite, generic shapes and seeds, and checks what the suite driver's
// normalizer makes of a line written twice, then the process's exit.
func fuzzLines(f *testing.F, s transcriptSuite, seeds []string) {
	files, _ := filepath.Glob(filepath.Join(s.dir, "*.txtar"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range txtar.Parse(b).Files {
			if file.Name != "stream.jsonl" {
				continue
			}
			for _, l := range bytes.Split(file.Data, []byte("\n")) {
				f.Add(l, 0)
			}
		}
	}
	seeds = append(seeds, `null`, `[]`, `{"type":1}`, "\xff\xfe", `{"type":"stream_event","event":{"deep":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}}`)
	for _, l := range seeds {
		f.Add([]byte(l), 1)
	}
	provider := "clibridge-" + string(s.driver.harness())
	f.Fuzz(func(t *testing.T, line []byte, code int) {
		n := s.driver.normalizer(&turnSpec{provider: provider, turn: 1, apiKey: "sk-secret"})
		evs := n.line(line)
		evs = append(evs, n.line(line)...)
		evs = append(evs, n.end(exit{code: code})...)
		terminals := 0
		for _, ev := range evs {
			if _, err := contract.Validate(contract.KindEnvironmentEvent, contract.EnvironmentEventSchema, ev); err != nil {
				t.Fatalf("event %s is invalid: %v", ev.Type, err)
			}
			if kind, ok := contract.EnvironmentEventTerminal(ev); ok {
				terminals++
				if kind == contract.TerminalCompleted && code != 0 {
					t.Fatal("a non-zero exit completed the turn")
				}
			}
		}
		if terminals != 1 {
			t.Fatalf("%d terminal events", terminals)
		}
		out := n.outcome()
		if out.NativeSessionID != "" {
			if _, err := contract.NewNativeSessionObserved(provider, out.NativeSessionID); err != nil {
				t.Fatalf("native session %q: %v", out.NativeSessionID, err)
			}
		}
		if out.Usage != nil && out.Terminal != contract.TerminalCompleted {
			t.Fatal("usage on a turn that did not complete")
		}
	})
}
