package workspace

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Tool names.
const (
	ToolRemember    = "memory.remember"
	ToolRecall      = "memory.recall"
	ToolForget      = "memory.forget"
	ToolFilesList   = "files.list"
	ToolFilesRead   = "files.read"
	ToolFilesWrite  = "files.write"
	ToolFilesDelete = "files.delete"
	ToolFilesSearch = "files.search"
)

// Tool limits.
const (
	// MaxMemoryBytes bounds one memory's content (UTF-8 bytes).
	MaxMemoryBytes = 64 << 10
	// DefaultResultLimit is how many memories or search matches a tool
	// returns when the call sets no limit; MaxResultLimit is the most a
	// call may ask for.
	DefaultResultLimit = 50
	MaxResultLimit     = 200
)

// maxQueryUnits bounds a tool's query text in UTF-16 units (the JSON
// Schema's maxLength); 1024 units are at most 3072 UTF-8 bytes, within
// MaxQueryBytes.
const maxQueryUnits = 1024

// Content encodings the tools speak.
const (
	EncodingUTF8   = "utf8"
	EncodingBase64 = "base64"
)

// toolSpec is one tool's argument contract: the schema node that checks
// arguments strictly and the JSON Schema the model is shown. A test keeps
// the two in agreement.
type toolSpec struct {
	name        string
	description string
	node        *schema.ObjectNode
	jsonSchema  canonjson.Value
}

func mustSchema(text string) canonjson.Value {
	v, err := canonjson.Decode([]byte(text))
	if err != nil {
		panic("workspace: bad tool JSON Schema: " + err.Error())
	}
	// The identity arguments a model may send are accepted and ignored
	// (see identityArgs), so a checker of the schema alone — the tool
	// loop's — agrees with the tool's own rule; they are not advertised
	// as properties.
	v = v.With("patternProperties", canonjson.ObjectValue([]canonjson.Member{
		{Name: "^(" + strings.Join(identityArgs, "|") + ")$", Value: canonjson.ObjectValue(nil)},
	}))
	if _, err := canonjson.Canonical(v); err != nil {
		panic("workspace: bad tool JSON Schema: " + err.Error())
	}
	return v
}

// identityArgs are argument names a model may send to claim an identity.
// They are dropped unread (WST-10: identity comes from the trusted active
// turn, never from arguments), so a forged memberId writes under the
// active turn's member; every other unknown argument is refused.
var identityArgs = []string{"tenant", "tenantId", "member", "memberId", "userId", "turn", "turnId"}

// parseArgs checks args against spec strictly and decodes the accepted
// value into T. Refusals are *schema.Error.
func parseArgs[T any](spec *toolSpec, args canonjson.Value) (T, error) {
	var out T
	if !args.IsValid() {
		args = canonjson.ObjectValue(nil)
	}
	if args.Kind() == canonjson.Object {
		for _, name := range identityArgs {
			if _, ok := args.Get(name); ok {
				args = args.Without(name)
			}
		}
	}
	accepted, err := schema.Run(spec.name+" arguments", spec.node, args)
	if err != nil {
		return out, err
	}
	if err := canonjson.FromValue(accepted, &out); err != nil {
		return out, &schema.Error{Kind: spec.name + " arguments", Issues: []schema.Issue{{Path: "", Code: schema.CodeInvalidType, Message: err.Error()}}}
	}
	return out, nil
}

func (spec *toolSpec) tool(run func(ctx context.Context, turn ActiveTurn, args canonjson.Value) (any, error)) contract.Tool {
	return contract.Tool{
		Name:        spec.name,
		Description: spec.description,
		InputSchema: spec.jsonSchema,
		Run: func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
			turn, err := activeTurn(ctx)
			if err != nil {
				return canonjson.Value{}, fmt.Errorf("%w: %w", &contract.ToolRefusal{Tool: spec.name, Reason: "no trusted active turn"}, err)
			}
			out, err := run(ctx, turn, args)
			if err != nil {
				return canonjson.Value{}, err
			}
			return canonjson.ToValue(out)
		},
	}
}

// refuse turns a policy decision into a *contract.ToolRefusal that still
// wraps the policy's error.
func refuse(tool string, err error) error {
	return fmt.Errorf("%w: %w", &contract.ToolRefusal{Tool: tool, Reason: err.Error()}, err)
}

// expectFrom maps the tools' checked ifRevision argument: null means the
// path must not exist, a number is the revision it must be at.
func expectFrom(ifRevision canonjson.Value) Expect {
	switch ifRevision.Kind() {
	case canonjson.Number:
		return ExpectRevision(int64(ifRevision.Float()))
	case canonjson.Null:
		return ExpectAbsent()
	}
	return Expect{} // no precondition: every store refuses it
}

// encodeContent returns content as text when it is UTF-8 (unless base64
// is asked for) and as base64 otherwise.
func encodeContent(body []byte, want string) (encoding, text string, err error) {
	switch {
	case want == EncodingBase64, want == "" && !utf8.Valid(body):
		return EncodingBase64, base64.StdEncoding.EncodeToString(body), nil
	case !utf8.Valid(body):
		return "", "", fmt.Errorf("%w: the content is not UTF-8 text; read it with encoding base64", ErrInvalid)
	}
	return EncodingUTF8, string(body), nil
}

func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Shared argument nodes.
var (
	ifRevisionNode = schema.Union(schema.Number(schema.Int, schema.Min(1)), schema.Literal(canonjson.NullValue()))
	revisionNode   = schema.Number(schema.Int, schema.Min(1))
	limitNode      = schema.Number(schema.Int, schema.Min(1), schema.Max(MaxResultLimit))
	textNode       = schema.String(schema.WellFormed)
	nonEmptyNode   = schema.String(schema.MinLen(1), schema.WellFormed)
	queryNode      = schema.String(schema.MinLen(1), schema.MaxLen(maxQueryUnits), schema.NonBlank, schema.WellFormed)
)
