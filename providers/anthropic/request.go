package anthropic

import (
	"encoding/json"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// emptyObject is the input of a call without arguments, and objectSchema
// the input_schema of a tool that has none.
var (
	emptyObject  = json.RawMessage(`{}`)
	objectSchema = json.RawMessage(`{"type":"object"}`)
)

// params builds the Messages API request of one turn: system messages go
// to the top-level system parameter (in order, empty ones left out),
// assistant messages become text and tool_use blocks (after the thinking
// blocks the model wrote before those calls, when this Model saw them),
// tool messages become tool_result blocks of a user message, and
// consecutive messages of one API role are merged into one message, as
// the API requires. Empty text is left out (the API refuses empty text
// blocks), and so is a message left with no block.
func (m *Model) params(messages []contract.ChatMessage, tools []contract.Tool) sdk.MessageNewParams {
	p := sdk.MessageNewParams{
		Model:     sdk.Model(m.o.Model),
		MaxTokens: m.o.MaxTokens,
	}
	if m.budget > 0 {
		p.Thinking = sdk.ThinkingConfigParamOfEnabled(m.budget)
	}
	for _, msg := range messages {
		var (
			assistant bool
			blocks    []sdk.ContentBlockParamUnion
		)
		switch msg.Role {
		case contract.ChatSystem:
			if text := str(msg.Content); text != "" {
				p.System = append(p.System, sdk.TextBlockParam{Text: text})
			}
			continue
		case contract.ChatAssistant:
			assistant = true
			if len(msg.ToolCalls) > 0 {
				blocks = append(blocks, m.thoughts.replay(msg.ToolCalls[0].ID)...)
			}
			if text := strings.TrimSpace(str(msg.Content)); text != "" {
				blocks = append(blocks, sdk.NewTextBlock(text))
			}
			for _, c := range msg.ToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, argsJSON(c.Args), c.Name))
			}
		case contract.ChatTool:
			result := sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
			if text := str(msg.Content); text != "" {
				result.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: text}}}
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &result})
		default: // user, and any role the contract may add: the person's side
			if text := str(msg.Content); text != "" {
				blocks = append(blocks, sdk.NewTextBlock(text))
			}
		}
		if len(blocks) == 0 {
			continue
		}
		n := len(p.Messages)
		switch {
		case assistant && n > 0 && p.Messages[n-1].OfAssistant != nil:
			last := p.Messages[n-1].OfAssistant
			last.Content = append(last.Content, blocks...)
		case !assistant && n > 0 && p.Messages[n-1].OfUser != nil:
			last := p.Messages[n-1].OfUser
			last.Content = append(last.Content, blocks...)
		case assistant:
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		default:
			p.Messages = append(p.Messages, sdk.NewUserMessage(blocks...))
		}
	}
	for i := range tools {
		t := &tools[i]
		tp := sdk.ToolParam{Name: t.Name, InputSchema: inputSchema(t.InputSchema)}
		if t.Description != "" {
			tp.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	return p
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// argsJSON is a call's arguments as the API's tool_use input: the JSON of
// an object, and {} for absent arguments or arguments that were not an
// object (the API accepts only an object).
func argsJSON(args canonjson.Value) json.RawMessage {
	if args.Kind() != canonjson.Object {
		return emptyObject
	}
	return json.RawMessage(canonjson.Marshal(args))
}

// inputSchema is a tool's JSON Schema as the API's input_schema, sent as
// written; an absent schema is {"type":"object"}.
func inputSchema(schema canonjson.Value) sdk.ToolInputSchemaParam {
	raw := objectSchema
	if schema.Kind() == canonjson.Object {
		raw = json.RawMessage(canonjson.Marshal(schema))
	}
	return param.Override[sdk.ToolInputSchemaParam](raw)
}
