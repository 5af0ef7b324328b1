package clibridge

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// claudeLine is one line of claude's stream-json output: the fields of
// every line type the normalizer reads (system init, assistant, user,
// result). Unknown members are ignored; a line is only what it says.
type claudeLine struct {
	Type            string         `json:"type"`
	Subtype         string         `json:"subtype"`
	SessionID       string         `json:"session_id"`
	Model           string         `json:"model"`
	Version         string         `json:"claude_code_version"`
	Tools           []string       `json:"tools"`
	PermissionMode  string         `json:"permissionMode"`
	MCPServers      []claudeMCP    `json:"mcp_servers"`
	Message         *claudeMessage `json:"message"`
	ParentToolUseID *string        `json:"parent_tool_use_id"`

	IsError        bool         `json:"is_error"`
	Result         *string      `json:"result"`
	NumTurns       *float64     `json:"num_turns"`
	StopReason     *string      `json:"stop_reason"`
	TerminalReason *string      `json:"terminal_reason"`
	APIErrorStatus *float64     `json:"api_error_status"`
	TotalCostUSD   *float64     `json:"total_cost_usd"`
	Usage          *claudeUsage `json:"usage"`
}

// claudeMCP is one MCP server of the init line.
type claudeMCP struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// claudeMessage is the API message an assistant or user line carries.
type claudeMessage struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
}

// claudeBlock is one content block: text, thinking, tool_use or
// tool_result.
type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// claudeUsage is the result line's usage: the turn's total over every
// API call claude made.
type claudeUsage struct {
	InputTokens   *float64 `json:"input_tokens"`
	OutputTokens  *float64 `json:"output_tokens"`
	CacheRead     *float64 `json:"cache_read_input_tokens"`
	CacheCreation *float64 `json:"cache_creation_input_tokens"`
}

// claudeSyntheticModel is the model claude writes on messages it made up
// itself (an API error rendered as an assistant message); it was served
// by nobody.
const claudeSyntheticModel = "<synthetic>"

// claudeBackend is the backend name raw events carry.
const claudeBackend = "claude-code"

// claudeNormalizer maps one turn's claude stream to environment events.
type claudeNormalizer struct {
	streamBase
	sawInit bool
	// unmounted says which of the profile's MCP servers claude reported
	// not connected at init ("" when all are): the turn would run
	// without their tools, so the bridge stops it (abortReason).
	unmounted string
	calls     map[string]claudeCall
	result    *claudeLine
	resultPE  canonjson.Value
}

// claudeCall is a tool call the stream announced, for its result.
type claudeCall struct {
	tool, messageID string
	input           map[string]canonjson.Value
}

func (claudeDriver) normalizer(t *turnSpec) normalizer {
	return &claudeNormalizer{streamBase: newStreamBase(t, claudeDriver{}), calls: map[string]claudeCall{}}
}

// line implements normalizer.
func (n *claudeNormalizer) line(b []byte) []contract.EnvironmentEvent {
	var l claudeLine
	pe, evs, ok := n.decodeLine(b, &l, func() string { return l.Type })
	if !ok {
		return evs
	}
	switch {
	case l.Type == "system" && l.Subtype == "init":
		evs = n.init(&l)
	case l.Type == "assistant" && l.Message != nil:
		evs = n.assistant(&l)
	case l.Type == "user" && l.Message != nil:
		evs = n.user(&l)
	case l.Type == "result":
		if n.result != nil {
			return []contract.EnvironmentEvent{n.warning("duplicate-result", "claude-code wrote a second result line; the first one stands")}
		}
		n.result, n.resultPE = &l, pe
		return nil
	}
	typ := l.Type
	if l.Subtype != "" {
		typ += "." + l.Subtype
	}
	return n.finish(evs, typ, pe)
}

// init maps the init line: the private native session observation, then
// a public started status with the served model.
func (n *claudeNormalizer) init(l *claudeLine) []contract.EnvironmentEvent {
	var evs []contract.EnvironmentEvent
	if n.sawInit {
		evs = append(evs, n.warning("duplicate-init", "claude-code wrote a second init line"))
	}
	n.sawInit = true
	evs = append(evs, n.observeSession(l.SessionID)...)
	if l.Version != "" {
		n.out.HarnessVersion = bounded(l.Version, 200)
	}
	data := map[string]canonjson.Value{"harness": canonjson.StringValue(claudeBackend)}
	if n.out.HarnessVersion != "" {
		data["harnessVersion"] = canonjson.StringValue(n.out.HarnessVersion)
	}
	if l.PermissionMode != "" {
		data["permissionMode"] = canonjson.StringValue(bounded(l.PermissionMode, 200))
	}
	if len(l.Tools) > 0 {
		data["tools"] = stringsValue(l.Tools)
	}
	if len(l.MCPServers) > 0 {
		var items []canonjson.Value
		for i, s := range l.MCPServers {
			if i == contract.MaxArrayLength {
				break
			}
			items = append(items, canonjson.ObjectValue([]canonjson.Member{
				{Name: "name", Value: canonjson.StringValue(bounded(s.Name, 512))},
				{Name: "status", Value: canonjson.StringValue(bounded(s.Status, 200))}}))
			if s.Status != "connected" && n.unmounted == "" {
				n.unmounted = fmt.Sprintf("the profile's MCP server %q did not connect (claude-code reported it %q), so the turn would run without its tools",
					bounded(s.Name, 512), bounded(s.Status, 200))
			}
		}
		data["mcpServers"] = canonjson.ArrayValue(items)
	}
	n.served(claudeAPIModel(l.Model), data)
	started := contract.StatusStreamEvent(contract.StreamStatusStarted, nil)
	return append(evs, n.event("system.init", data, &started))
}

// abortReason implements aborter: claude started with one of the
// profile's MCP servers not connected (--strict-mcp-config: every server
// it lists is the profile's; the bridge has it wait MCPStartTimeout).
func (n *claudeNormalizer) abortReason() string { return n.unmounted }

// served records a model the stream reports serving and marks data with
// effectiveBackend, the kernel's served-identity member. Claude's own
// synthetic messages and empty names are not a served model.
func (n *claudeNormalizer) served(model string, data map[string]canonjson.Value) {
	if model == "" || model == claudeSyntheticModel || !isIdent(model) {
		return
	}
	n.out.ServedModel = model
	data["effectiveBackend"] = canonjson.ObjectValue([]canonjson.Member{
		{Name: "provider", Value: canonjson.StringValue("anthropic")},
		{Name: "model", Value: canonjson.StringValue(model)},
		{Name: "source", Value: canonjson.StringValue(claudeBackend)},
	})
}

// claudeAPIModel is the model name claude sends the API for the model
// its init line names: claude marks a context-window variant with a
// bracketed suffix ("claude-opus-4-8[1m]") that the API request does not
// carry (it asks for "claude-opus-4-8").
func claudeAPIModel(model string) string {
	if i := strings.LastIndexByte(model, '['); i > 0 && strings.HasSuffix(model, "]") {
		return model[:i]
	}
	return model
}

// blocks decodes a message's content: an array of blocks, or a string
// (one text block).
func blocks(raw json.RawMessage) []claudeBlock {
	var bs []claudeBlock
	if json.Unmarshal(raw, &bs) == nil {
		return bs
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []claudeBlock{{Type: "text", Text: s}}
	}
	return nil
}

// assistant maps an assistant message: text and thinking become message
// parts, tool_use a running tool part. A subagent's messages (with a
// parent tool use) never establish the served model.
func (n *claudeNormalizer) assistant(l *claudeLine) []contract.EnvironmentEvent {
	m := l.Message
	msgID := identOr(m.ID, fmt.Sprintf("turn-%d-message-%d", n.turn, n.seq+1))
	var evs []contract.EnvironmentEvent
	for i, b := range blocks(m.Content) {
		data := map[string]canonjson.Value{}
		if l.ParentToolUseID == nil {
			n.served(m.Model, data)
		} else if isIdent(m.Model) {
			data["subagentModel"] = canonjson.StringValue(m.Model)
		}
		partID := fmt.Sprintf("%s-%d", msgID, i)
		switch b.Type {
		case "text", "thinking":
			text, kind := b.Text, contract.PartTypeText
			if b.Type == "thinking" {
				text, kind = b.Thinking, contract.PartTypeReasoning
			}
			if m.Model == claudeSyntheticModel {
				data["synthetic"] = canonjson.BoolValue(true)
			}
			evs = append(evs, n.textEvents("assistant."+b.Type, kind, text, msgID, partID, data)...)
		case "tool_use":
			callID := identOr(b.ID, partID)
			call := claudeCall{tool: identOr(b.Name, "unknown"), messageID: msgID, input: jsonRecord(b.Input)}
			n.calls[callID] = call
			evs = append(evs, n.toolEvent("assistant.tool_use", callID, msgID, call.tool,
				&contract.ToolState{Status: contract.ToolStatusRunning, Input: call.input}, data))
		}
	}
	return evs
}

// user maps a user message's tool results to completed (or error) tool
// parts of the call they answer.
func (n *claudeNormalizer) user(l *claudeLine) []contract.EnvironmentEvent {
	var evs []contract.EnvironmentEvent
	for _, b := range blocks(l.Message.Content) {
		if b.Type != "tool_result" {
			continue
		}
		callID := identOr(b.ToolUseID, fmt.Sprintf("turn-%d-call-%d", n.turn, n.seq+1))
		call, ok := n.calls[callID]
		if !ok {
			call = claudeCall{tool: "unknown", messageID: identOr(l.Message.ID, callID), input: map[string]canonjson.Value{}}
		}
		output := toolOutput(b.Content)
		state := &contract.ToolState{Status: contract.ToolStatusCompleted, Input: call.input, Output: canonjson.StringValue(output)}
		if b.IsError {
			state = &contract.ToolState{Status: contract.ToolStatusError, Input: call.input, Error: &output}
		}
		evs = append(evs, n.toolEvent("user.tool_result", callID, call.messageID, call.tool, state, nil))
	}
	return evs
}

// said implements lastWorder: claude's last word is its result line.
func (n *claudeNormalizer) said() bool { return n.result != nil }

// end implements normalizer: the turn's one terminal event. A cancelled
// turn is cancelled whatever the stream said; a turn is completed only
// when claude wrote a successful result line and exited 0; anything else
// is failed. Usage is reported only with a completed result (a failed
// turn's total is claude's own partial account: unknown).
func (n *claudeNormalizer) end(x exit) []contract.EnvironmentEvent {
	if x.cancelled {
		return n.cancelled()
	}
	r := n.result
	if r == nil {
		return n.noResult(x, "a result line")
	}
	ok := !r.IsError && r.Subtype == "success" && x.code == 0 && x.err == nil
	data := map[string]canonjson.Value{"exitCode": canonjson.NumberValue(float64(x.code)),
		"subtype": canonjson.StringValue(bounded(r.Subtype, 200)), "isError": canonjson.BoolValue(r.IsError)}
	if r.Result != nil {
		n.out.Text = *r.Result
		data["finalText"] = canonjson.StringValue(bounded(*r.Result, contract.MaxStringLength/2))
	}
	for name, v := range map[string]*float64{"numTurns": r.NumTurns, "apiErrorStatus": r.APIErrorStatus, "reportedCostUsd": r.TotalCostUSD} {
		if v != nil && canonjson.IsFinite(*v) {
			data[name] = canonjson.NumberValue(*v)
		}
	}
	for name, v := range map[string]*string{"stopReason": r.StopReason, "terminalReason": r.TerminalReason} {
		if v != nil {
			data[name] = canonjson.StringValue(bounded(*v, 200))
		}
	}
	detail := ""
	if !ok {
		detail = fmt.Sprintf("claude reported %s (is_error %t) and exited (%s)", bounded(r.Subtype, 200), r.IsError, x.describe())
		if r.Result != nil && r.IsError {
			detail += ": " + *r.Result
		}
		if x.stderr != "" && x.code != 0 {
			detail += "; stderr: " + x.stderr
		}
	}
	return []contract.EnvironmentEvent{n.terminal(ok, detail, data, n.resultPE, r.Usage.token())}
}

// token converts claude's usage: both counts must be present, whole and
// non-negative, or the usage is unknown (nil). claude reports the
// Messages API's counts, whose input_tokens excludes the cache reads and
// writes reported beside it; InputTokens adds them back (the whole
// prompt), and they stay broken out.
func (u *claudeUsage) token() *contract.TokenUsage {
	if u == nil {
		return nil
	}
	return withCacheInInput(tokenUsage(u.InputTokens, u.OutputTokens, u.CacheRead, u.CacheCreation, nil))
}

// toolOutput is a tool result's content as bounded text: a string, or
// the text blocks of an array, joined.
func toolOutput(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return bounded(s, contract.MaxStringLength/2)
	}
	var parts []string
	for _, b := range blocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return bounded(strings.Join(parts, "\n"), contract.MaxStringLength/2)
}
