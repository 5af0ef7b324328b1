package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// planModel is the default plan's manager model: the plan's script
// played from the conversation it is given (as a real model answers, so
// a manager resumed from its journaled transcript goes on where it
// was), and one thing a fixed script cannot do — redo lost work. When
// the conversation's last await found the run idle (nothing live,
// nothing queued) while a worker the plan spawned never settled, that
// worker's work was lost with a process that died (it is in doubt or
// was never recovered): the plan spawns it again, as it first did, then
// awaits it, and goes on with its script (a respawn refused, say by a
// spent edge cap, is not asked again). An uninterrupted run never gets
// there — a spawned worker always settles before the run is idle.
type planModel struct {
	script scripted.ChatScript
}

var _ contract.ChatModel = planModel{}

// recoveryPrefix starts the call ids of the plan's recovery turns,
// which the script's own (s…, a…) never do.
const recoveryPrefix = "r"

// Turn implements contract.ChatModel.
func (m planModel) Turn(ctx context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	events, err := m.next(messages)
	return func(yield func(contract.ChatEvent, error) bool) {
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			yield(contract.ChatEvent{}, err)
			return
		}
		for _, e := range events {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// next is the plan's turn for the conversation messages.
func (m planModel) next(messages []contract.ChatMessage) ([]contract.ChatEvent, error) {
	// A spawn is known by its arguments: the worker its latest call
	// spawned is the one whose settlement counts.
	args := map[string]string{}   // spawn call id → its arguments (JSON)
	var order []string            // spawn arguments, first spawned first
	latest := map[string]string{} // spawn arguments → the worker spawned last
	calls := map[string]string{}  // call id → tool name
	settled := map[string]bool{}
	refused := map[string]bool{} // spawn arguments a spawn of which was refused: not asked again
	idle := false                // the last tool message is an await that found the run idle
	turns, recoveries := 0, 0
	var lastRecovery []contract.ToolCall
	for _, msg := range messages {
		switch msg.Role {
		case contract.ChatAssistant:
			turns++
			lastRecovery = nil
			if len(msg.ToolCalls) > 0 && strings.HasPrefix(msg.ToolCalls[0].ID, recoveryPrefix) {
				recoveries++
				lastRecovery = msg.ToolCalls
			}
			for _, c := range msg.ToolCalls {
				calls[c.ID] = c.Name
				if c.Name == supervise.ToolPrefix+supervise.VerbSpawnWorker {
					a := string(canonjson.Marshal(c.Args))
					if _, ok := latest[a]; !ok {
						latest[a] = ""
						order = append(order, a)
					}
					args[c.ID] = a
				}
			}
		case contract.ChatTool:
			idle = false
			if msg.Content == nil {
				continue
			}
			_, result, ok := strings.Cut(*msg.Content, " → ok: ")
			if !ok {
				if calls[msg.ToolCallID] == supervise.ToolPrefix+supervise.VerbSpawnWorker {
					refused[args[msg.ToolCallID]] = true
				}
				continue
			}
			var r struct {
				WorkerID string `json:"workerId"`
				Idle     bool   `json:"idle"`
				Event    *struct {
					WorkerID string `json:"workerId"`
				} `json:"event"`
			}
			if json.Unmarshal([]byte(result), &r) != nil {
				continue
			}
			switch calls[msg.ToolCallID] {
			case supervise.ToolPrefix + supervise.VerbSpawnWorker:
				if r.WorkerID != "" {
					latest[args[msg.ToolCallID]] = r.WorkerID
				}
			case supervise.ToolPrefix + supervise.VerbAwaitEvent:
				idle = r.Idle
				if r.Event != nil {
					settled[r.Event.WorkerID] = true
				}
			}
		}
	}
	if len(lastRecovery) > 0 && lastRecovery[0].Name == supervise.ToolPrefix+supervise.VerbSpawnWorker {
		// Await what the recovery spawned.
		var awaits []contract.ChatEvent
		for i := range lastRecovery {
			awaits = append(awaits, managerCall(fmt.Sprintf("%s%d.a%d", recoveryPrefix, recoveries, i+1), supervise.VerbAwaitEvent,
				map[string]any{"timeoutMs": supervise.MaxAwaitTimeout.Milliseconds()}))
		}
		return awaits, nil
	}
	if idle {
		var lost []contract.ChatEvent
		for _, a := range order {
			if w := latest[a]; w != "" && !settled[w] && !refused[a] {
				id := fmt.Sprintf("%s%d.s%d", recoveryPrefix, recoveries+1, len(lost)+1)
				lost = append(lost, scripted.Call(id, supervise.ToolPrefix+supervise.VerbSpawnWorker, a))
			}
		}
		if len(lost) > 0 {
			return lost, nil
		}
	}
	i := turns - recoveries
	if i >= len(m.script.Turns) {
		return nil, scripted.ErrScriptExhausted
	}
	return m.script.Turns[i].Events, nil
}
