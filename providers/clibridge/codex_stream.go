package clibridge

import (
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// codexLine is one line of codex exec --json: the fields of every event
// type the normalizer reads (thread.started, item.*, turn.completed,
// turn.failed, error). Unknown members are ignored.
type codexLine struct {
	Type     string      `json:"type"`
	ThreadID string      `json:"thread_id"`
	Item     *codexItem  `json:"item"`
	Usage    *codexUsage `json:"usage"`
	// Error is turn.failed's error; Message an error line's text.
	Error   *codexError `json:"error"`
	Message string      `json:"message"`
}

// codexError is turn.failed's (or an MCP call's) error.
type codexError struct {
	Message string `json:"message"`
}

// codexItem is one thread item: agent_message, reasoning,
// command_execution, file_change, mcp_tool_call, web_search, todo_list
// or error.
type codexItem struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Text   string `json:"text"`
	Status string `json:"status"`
	// Message is an error item's text.
	Message string `json:"message"`
	// command_execution
	Command          string   `json:"command"`
	AggregatedOutput string   `json:"aggregated_output"`
	ExitCode         *float64 `json:"exit_code"`
	// file_change
	Changes json.RawMessage `json:"changes"`
	// mcp_tool_call
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	Error     *codexError     `json:"error"`
	// web_search
	Query string `json:"query"`
}

// codexUsage is turn.completed's usage: the turn's total over every
// model call. input_tokens includes the cached ones and output_tokens
// the reasoning ones, as the Responses API reports them.
type codexUsage struct {
	InputTokens     *float64 `json:"input_tokens"`
	CachedInput     *float64 `json:"cached_input_tokens"`
	CacheWriteInput *float64 `json:"cache_write_input_tokens"`
	OutputTokens    *float64 `json:"output_tokens"`
	ReasoningOutput *float64 `json:"reasoning_output_tokens"`
}

// codexNormalizer maps one turn's codex stream to environment events.
type codexNormalizer struct {
	streamBase
	sawThread bool
	// completed and failed are the turn's end lines, held until the
	// process exits; lastError is the last error line's text.
	completed, failed *codexLine
	resultPE          canonjson.Value
	lastError         string
}

// said implements lastWorder: codex's last word is its turn end line.
func (n *codexNormalizer) said() bool { return n.completed != nil || n.failed != nil }

func (codexDriver) normalizer(t *turnSpec) normalizer {
	return &codexNormalizer{streamBase: newStreamBase(t, codexDriver{})}
}

// line implements normalizer.
func (n *codexNormalizer) line(b []byte) []contract.EnvironmentEvent {
	var l codexLine
	pe, evs, ok := n.decodeLine(b, &l, func() string { return l.Type })
	if !ok {
		return evs
	}
	switch l.Type {
	case "thread.started":
		evs = n.thread(&l)
	case "item.started", "item.updated", "item.completed":
		if l.Item != nil {
			evs = n.item(l.Type, l.Item)
		}
	case "error":
		n.lastError = bounded(l.Message, 2000)
		evs = []contract.EnvironmentEvent{n.warning("codex-error", "codex: "+l.Message)}
	case "turn.completed", "turn.failed":
		if n.completed != nil || n.failed != nil {
			return []contract.EnvironmentEvent{n.warning("duplicate-result", "codex wrote a second turn end line; the first one stands")}
		}
		if l.Type == "turn.completed" {
			n.completed = &l
		} else {
			n.failed = &l
		}
		n.resultPE = pe
		return nil
	}
	return n.finish(evs, l.Type, pe)
}

// thread maps thread.started: the private native session observation
// (the thread id, which codex also sends the API as its session id),
// then a public started status.
func (n *codexNormalizer) thread(l *codexLine) []contract.EnvironmentEvent {
	var evs []contract.EnvironmentEvent
	if n.sawThread {
		evs = append(evs, n.warning("duplicate-thread", "codex wrote a second thread.started line"))
	}
	n.sawThread = true
	evs = append(evs, n.observeSession(l.ThreadID)...)
	started := contract.StatusStreamEvent(contract.StreamStatusStarted, nil)
	return append(evs, n.event("thread.started", map[string]canonjson.Value{"harness": canonjson.StringValue(n.backend)}, &started))
}

// item maps one item event (phase item.started, item.updated or
// item.completed). Messages and reasoning are taken when completed;
// tool items (command_execution, file_change, mcp_tool_call,
// web_search) are running until completed, then completed or error.
// Anything else (todo lists, unknown items) is passed on raw.
func (n *codexNormalizer) item(phase string, it *codexItem) []contract.EnvironmentEvent {
	id := identOr(it.ID, fmt.Sprintf("turn-%d-item-%d", n.turn, n.seq+1))
	done := phase == "item.completed"
	switch it.Type {
	case "agent_message", "reasoning":
		if !done {
			return nil
		}
		kind := contract.PartTypeText
		if it.Type == "reasoning" {
			kind = contract.PartTypeReasoning
		} else {
			n.out.Text = it.Text
		}
		return n.textEvents("item."+it.Type, kind, it.Text, id, id, nil)
	case "error":
		return []contract.EnvironmentEvent{n.warning("codex-error", "codex: "+it.Message)}
	}
	tool, input, output, ok := codexTool(it)
	if !ok {
		return nil
	}
	state := &contract.ToolState{Status: contract.ToolStatusRunning, Input: input}
	if done {
		failed := it.Status == "failed" || it.Status == "declined" || it.Error != nil ||
			(it.ExitCode != nil && *it.ExitCode != 0)
		if failed {
			msg := output
			if it.Error != nil {
				msg = bounded(it.Error.Message, contract.MaxStringLength/2)
			}
			state = &contract.ToolState{Status: contract.ToolStatusError, Input: input, Error: &msg}
		} else {
			state = &contract.ToolState{Status: contract.ToolStatusCompleted, Input: input, Output: canonjson.StringValue(output)}
		}
	}
	data := map[string]canonjson.Value{}
	if it.ExitCode != nil && canonjson.IsFinite(*it.ExitCode) {
		data["exitCode"] = canonjson.NumberValue(*it.ExitCode)
	}
	if it.Status != "" {
		data["itemStatus"] = canonjson.StringValue(bounded(it.Status, 200))
	}
	return []contract.EnvironmentEvent{n.toolEvent("item."+it.Type, id, id, tool, state, data)}
}

// codexTool is a tool item as a tool name, input and output text; ok is
// false for an item that is not a tool call.
func codexTool(it *codexItem) (tool string, input map[string]canonjson.Value, output string, ok bool) {
	str := func(s string) canonjson.Value { return canonjson.StringValue(bounded(s, contract.MaxStringLength/2)) }
	switch it.Type {
	case "command_execution":
		return it.Type, map[string]canonjson.Value{"command": str(it.Command)}, bounded(it.AggregatedOutput, contract.MaxStringLength/2), true
	case "file_change":
		return it.Type, map[string]canonjson.Value{"changes": rawValue(it.Changes)}, "", true
	case "web_search":
		return it.Type, map[string]canonjson.Value{"query": str(it.Query)}, "", true
	case "mcp_tool_call":
		name := "mcp__" + it.Server + "__" + it.Tool
		return identOr(name, "mcp"), jsonRecord(it.Arguments), bounded(string(it.Result), contract.MaxStringLength/2), true
	}
	return "", nil, "", false
}

// rawValue is raw as a bounded JSON value, else null.
func rawValue(raw json.RawMessage) canonjson.Value {
	if v, err := canonjson.Decode(raw); err == nil && contract.IsBoundedJSON(v) {
		return v
	}
	return canonjson.NullValue()
}

// end implements normalizer: the turn's one terminal event. A cancelled
// turn is cancelled whatever the stream said; a turn is completed only
// when codex wrote turn.completed (and no turn.failed) and exited 0;
// anything else is failed, with no usage.
func (n *codexNormalizer) end(x exit) []contract.EnvironmentEvent {
	if x.cancelled {
		return n.cancelled()
	}
	if n.completed == nil && n.failed == nil {
		return n.noResult(x, "a turn.completed or turn.failed line")
	}
	ok := n.completed != nil && x.code == 0 && x.err == nil
	data := map[string]canonjson.Value{"exitCode": canonjson.NumberValue(float64(x.code))}
	if n.out.Text != "" {
		data["finalText"] = canonjson.StringValue(bounded(n.out.Text, contract.MaxStringLength/2))
	}
	detail := ""
	if !ok {
		what := "turn.completed"
		if n.failed != nil {
			what = "turn.failed"
			if n.failed.Error != nil {
				what += ": " + n.failed.Error.Message
			} else if n.lastError != "" {
				what += ": " + n.lastError
			}
		}
		detail = fmt.Sprintf("codex reported %s and exited (%s)", what, x.describe())
		if x.stderr != "" && x.code != 0 {
			detail += "; stderr: " + x.stderr
		}
	}
	var usage *contract.TokenUsage
	if n.completed != nil {
		usage = n.completed.Usage.token()
	}
	return []contract.EnvironmentEvent{n.terminal(ok, detail, data, n.resultPE, usage)}
}

// token converts codex's usage: input and output counts must be present,
// whole and non-negative, or the usage is unknown (nil).
func (u *codexUsage) token() *contract.TokenUsage {
	if u == nil {
		return nil
	}
	return tokenUsage(u.InputTokens, u.OutputTokens, u.CachedInput, u.CacheWriteInput, u.ReasoningOutput)
}
