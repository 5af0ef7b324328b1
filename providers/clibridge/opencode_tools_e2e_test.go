package clibridge

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/google/go-cmp/cmp"
)

// runScript answers a prompt "run: CMD" with a bash call of CMD first and
// "ran" after its result.
func runScript(req fakeRequest) fakeReply {
	if cmd, ok := strings.CutPrefix(req.LastUser, "run: "); ok && !req.HasResult {
		input, _ := json.Marshal(map[string]string{"command": cmd, "description": "probe"})
		return fakeReply{ToolName: "bash", ToolInput: string(input), In: 5, Out: 2}
	}
	return fakeReply{Text: "ran", In: 6, Out: 1}
}

// The profile's tools and permissions reach the real opencode binary:
// a tool set false and a permission "deny" remove those tools from the
// model call (permission edit removes edit and write); bash command
// patterns let an allowed command run and deny a denied one (the model
// is told a rule prevents it, the command never runs); a command both an
// allow and a deny pattern match is denied, whatever the patterns'
// alphabetical order; the receipt records the rules.
func TestOpencodeToolsAndPermissions(t *testing.T) {
	f := newFakeServer(t, chatCompletionsAPI{}, runScript)
	env := newTestEnv(t, newOpencodeProvider(t, f), nil)
	work := env.(*Environment).WorkDir()
	// turn runs the prompt under pr and returns the tools the first model
	// call offered, the tool result the second one carried (or "") and
	// the tool part's final state.
	turn := func(pr *profile.Profile, prompt string) (tools []string, result string, part contract.Part) {
		t.Helper()
		before := len(f.messages())
		evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: &prompt, Profile: pr})
		if kind, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); kind != contract.TerminalCompleted {
			t.Fatalf("%s: terminal %q", prompt, kind)
		}
		msgs := f.messages()[before:]
		tools = chatTools(t, msgs[0])
		if len(msgs) > 1 {
			var b struct {
				Messages []struct{ Role, Content string }
			}
			json.Unmarshal(msgs[1].Body, &b)
			for _, m := range b.Messages {
				if m.Role == "tool" {
					result = m.Content
				}
			}
		}
		for _, ev := range evs {
			if ev.Normalized != nil && ev.Normalized.MessagePartUpdated != nil && ev.Normalized.MessagePartUpdated.Part.IsTool() {
				part = ev.Normalized.MessagePartUpdated.Part
			}
		}
		return tools, result, part
	}

	pr := &profile.Profile{
		Tools: map[string]bool{"webfetch": false, "read": true},
		Permissions: map[string]profile.Permission{
			"edit": {Value: profile.Deny},
			"bash": {Patterns: map[string]profile.PermissionValue{"echo *": profile.Allow, "touch *": profile.Deny}},
		},
	}
	tools, result, part := turn(pr, "run: echo hi")
	for _, gone := range []string{"webfetch", "edit", "write"} {
		if slices.Contains(tools, gone) {
			t.Errorf("tools %v: %s was removed by the profile", tools, gone)
		}
	}
	if !slices.Contains(tools, "bash") || !slices.Contains(tools, "read") {
		t.Errorf("tools %v: bash and read stay", tools)
	}
	if result != "hi\n" || part.State.Status != contract.ToolStatusCompleted {
		t.Errorf("allowed echo: result %q, part %s", result, part.State.Status)
	}
	recs := env.(*Environment).Turns()
	ap := recs[len(recs)-1].Receipt.Applied
	if !slices.Equal(ap.AllowedTools, []string{"read", "bash(echo *)"}) || !slices.Equal(ap.DisallowedTools, []string{"webfetch", "bash(touch *)", "edit"}) {
		t.Errorf("receipt rules allowed %v denied %v", ap.AllowedTools, ap.DisallowedTools)
	}

	_, result, part = turn(pr, "run: touch pwned")
	if _, err := os.Stat(filepath.Join(work, "pwned")); err == nil {
		t.Error("a denied command ran")
	}
	if !strings.Contains(result, "prevents you from using this specific tool call") || part.State.Status != contract.ToolStatusError {
		t.Errorf("denied touch: result %q, part %s", result, part.State.Status)
	}

	// "e*" (deny) sorts before "echo *" (allow): written in that order
	// opencode's last matching rule would allow "echo hi"; the bridge
	// writes allow patterns first, so deny wins.
	overlap := &profile.Profile{Permissions: map[string]profile.Permission{
		"bash": {Patterns: map[string]profile.PermissionValue{"e*": profile.Deny, "echo *": profile.Allow}}}}
	_, result, part = turn(overlap, "run: echo hi")
	if !strings.Contains(result, "prevents you from using this specific tool call") || part.State.Status != contract.ToolStatusError {
		t.Errorf("overlapping patterns: result %q, part %s; want the deny pattern to win", result, part.State.Status)
	}
}

// The tools and permissions the configuration carries: tools as given,
// permissions in key order with each tool's allow patterns before its
// deny patterns; the receipt's rules in claude-code's form.
func TestOpencodeMaterializeTools(t *testing.T) {
	root := t.TempDir()
	d := dirs{root: root, home: root + "/home", bridge: root + "/bridge"}
	for _, c := range []struct {
		name              string
		pr                *profile.Profile
		tools, permission string // the configuration's values, compact JSON ("" absent)
		allowed, denied   []string
	}{
		{name: "none", pr: &profile.Profile{}},
		{name: "tools", pr: &profile.Profile{Tools: map[string]bool{"write": false, "bash": true}},
			tools: `{"bash":true,"write":false}`, allowed: []string{"bash"}, denied: []string{"write"}},
		{name: "values", pr: &profile.Profile{Permissions: map[string]profile.Permission{"webfetch": {Value: profile.Deny}, "bash": {Value: profile.Allow}}},
			permission: `{"bash":"allow","webfetch":"deny"}`, allowed: []string{"bash"}, denied: []string{"webfetch"}},
		{name: "patterns", pr: &profile.Profile{Permissions: map[string]profile.Permission{"bash": {Patterns: map[string]profile.PermissionValue{
			"*": profile.Deny, "git *": profile.Allow, "e*": profile.Deny, "echo *": profile.Allow}}}},
			permission: `{"bash":{"echo *":"allow","git *":"allow","*":"deny","e*":"deny"}}`,
			allowed:    []string{"bash(echo *)", "bash(git *)"}, denied: []string{"bash(*)", "bash(e*)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if errs := (opencodeDriver{}).check(c.pr); len(errs) > 0 {
				t.Fatal(errs)
			}
			pl, err := opencodeDriver{}.materialize(&turnSpec{turn: 1, profile: c.pr, dirs: d, baseURL: "http://h/v1", model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			var cfg struct {
				Tools      json.RawMessage `json:"tools"`
				Permission json.RawMessage `json:"permission"`
			}
			if err := json.Unmarshal(pl.files[0].content, &cfg); err != nil {
				t.Fatal(err)
			}
			compact := func(raw json.RawMessage) string {
				if raw == nil {
					return ""
				}
				var b bytes.Buffer
				json.Compact(&b, raw)
				return b.String()
			}
			got := []string{compact(cfg.Tools), compact(cfg.Permission)}
			if diff := cmp.Diff([]string{c.tools, c.permission}, got); diff != "" {
				t.Errorf("tools, permission (-want +got):\n%s", diff)
			}
			ap := pl.receipt.Applied
			if diff := cmp.Diff([][]string{c.allowed, c.denied}, [][]string{ap.AllowedTools, ap.DisallowedTools}); diff != "" {
				t.Errorf("receipt allowed, denied (-want +got):\n%s", diff)
			}
		})
	}
}
