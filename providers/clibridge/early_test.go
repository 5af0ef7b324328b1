package clibridge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
)

const (
	initLine   = `echo '{"type":"system","subtype":"init","session_id":"11111111-2222-3333-4444-555555555555","model":"claude-x","claude_code_version":"2.1.197"}'`
	textLine   = `echo '{"type":"assistant","message":{"id":"msg_1","model":"claude-x","content":[{"type":"text","text":"partial"}]},"parent_tool_use_id":null}'`
	resultLine = `echo '{"type":"result","subtype":"success","is_error":false,"result":"done","usage":{"input_tokens":5,"output_tokens":2}}'`
)

// A harness turn that ends early, or badly, ends in exactly one terminal
// event that says why, with the process group reaped (spec/runtime.md
// §2.4: a turn without a successful end is a failure, never an empty
// success; ERR-04): exit 0 without a result line; a JSON line cut off at
// exit; a result line and then more lines and a second result (the first
// stands); a result and then a harness that never exits (killed after the
// exit grace, failed); a flood of standard error (the log on disk capped,
// the reported tail still the real end).
func TestHarnessTurnEndingEarly(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		terminal contract.TerminalKind
		detail   []string
		usage    bool
	}{
		{"exit 0 without a result line", "cat >/dev/null\n" + initLine + "\n" + textLine + "\nexit 0",
			contract.TerminalFailed, []string{"without a result line", "exit status 0"}, false},
		{"exit mid JSON line", "cat >/dev/null\n" + initLine + "\nprintf '%s' '{\"type\":\"result\",\"subtype\":\"succ'\nexit 0",
			contract.TerminalFailed, []string{"without a result line"}, false},
		{"result then more lines", "cat >/dev/null\n" + initLine + "\n" + resultLine + "\n" + textLine +
			"\necho '{\"type\":\"result\",\"subtype\":\"error_during_execution\",\"is_error\":true}'\nexit 0",
			contract.TerminalCompleted, nil, true},
		{"result then never exits", "cat >/dev/null\n" + initLine + "\n" + resultLine + "\nsleep 300",
			contract.TerminalFailed, []string{"had not exited 300ms after its result"}, false},
		{"stderr flood", "cat >/dev/null\nhead -c 20000000 /dev/zero | tr '\\0' x >&2\necho THE-END >&2\nexit 1",
			contract.TerminalFailed, []string{"without a result line", "THE-END"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := fakeProvider(t, tc.body)
			p.cfg.hooks.exitGrace = 300 * time.Millisecond
			pgids := make(chan int, 1)
			p.cfg.hooks.onSpawn = func(pgid int) { pgids <- pgid }
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a guard: no case may need it
			defer cancel()
			start := time.Now()
			evs, env := collectTurn(t, ctx, p, "hi")
			if d := time.Since(start); d > time.Minute {
				t.Errorf("the turn took %s", d)
			}
			terminals := 0
			var last contract.EnvironmentEvent
			for _, ev := range evs {
				if _, ok := contract.EnvironmentEventTerminal(ev); ok {
					terminals++
					last = ev
				}
			}
			if terminals != 1 || evs[len(evs)-1].ID == nil || *evs[len(evs)-1].ID != *last.ID {
				t.Fatalf("%d terminal events, the last event is not the terminal", terminals)
			}
			kind, _ := contract.EnvironmentEventTerminal(last)
			if kind != tc.terminal {
				t.Fatalf("terminal %q, want %q", kind, tc.terminal)
			}
			if tc.terminal == contract.TerminalFailed {
				detail := *last.Normalized.Status.Detail
				for _, want := range tc.detail {
					if !strings.Contains(detail, want) {
						t.Errorf("detail %q does not say %q", detail, want)
					}
				}
				if len(detail) > 8<<10 {
					t.Errorf("detail of %d bytes: the stderr tail is not bounded", len(detail))
				}
			}
			if (last.Usage != nil) != tc.usage {
				t.Errorf("usage %+v on a %s turn", last.Usage, kind)
			}
			if err := groupGone(<-pgids, 10*time.Second); err != nil {
				t.Error(err)
			}
			logs, _ := filepath.Glob(filepath.Join(env.st.dirs.bridge, "stderr-*.log"))
			if len(logs) == 0 {
				t.Error("no stderr log kept")
			}
			for _, l := range logs {
				if info, err := os.Stat(l); err == nil && info.Size() > maxStderrLog {
					t.Errorf("stderr log of %d bytes, over the %d cap", info.Size(), maxStderrLog)
				}
			}
		})
	}
}
