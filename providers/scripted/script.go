package scripted

import (
	"fmt"
	"math"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Script says what the scripted provider does for each turn. Turns are
// matched in order: the first unused turn whose Match fits the prompt
// plays; a turn with Repeat plays every time it matches.
type Script struct {
	// ServedModel is the model the provider reports it served. Empty
	// means the model the profile requested (an honest provider).
	ServedModel string `json:"servedModel,omitzero"`
	// Turns are the scripted turns.
	Turns []Turn `json:"turns"`
	// Exec are the scripted results of workspace commands (optional): the
	// first rule whose match fits a command answers it. Commands no rule
	// matches fall to the built-ins (see Environment.Exec).
	Exec []ExecRule `json:"exec,omitzero"`
	// Processes are the scripted exact processes (optional): a launch in
	// an exact-process environment plays the first rule that matches it,
	// and a launch no rule matches is refused (ErrUnscriptedLaunch), never
	// answered by a default. A script with processes makes the provider
	// offer and declare exact-process execution (see Provider.ExactProcess).
	Processes []ProcessRule `json:"processes,omitzero"`
	// Accounts, when present, make the provider a subscription provider
	// with an account owner: every create and every new turn must carry
	// the seat stage's credential request, which binds one of these
	// accounts by name (see Account); an exhausted account refuses for
	// quota.
	Accounts map[string]Account `json:"accounts,omitzero"`
}

// ProcessRule is one scripted exact process: which launches it answers,
// what they print, and how they end. No real process runs and nothing
// reaches any network.
type ProcessRule struct {
	// Executable is the absolute path a launch must run, compared
	// exactly; a launch naming a bare command is resolved against its
	// env's PATH first (the first directory whose path some rule names).
	Executable string `json:"executable"`
	// Args, when present, must equal the launch's argv exactly ([] for
	// none): no shell, no patterns. Absent, any argv matches.
	Args []string `json:"args,omitzero"`
	// Image, when set, limits the rule to environments created from
	// exactly this digest-pinned image.
	Image string `json:"image,omitzero"`
	// Output plays in order: chunks of stdout or stderr and pauses.
	Output []ProcessStep `json:"output"`
	// ExitCode is the exit code once the output played (default 0).
	ExitCode int64 `json:"exitCode,omitzero"`
	// Signal, instead of an exit code, makes the process die of this
	// signal (a SIG name) once the output played.
	Signal string `json:"signal,omitzero"`
	// Hang, instead, keeps the process running after its output until
	// it is killed, its launch times out, or its environment goes.
	Hang bool `json:"hang,omitzero"`
}

// ProcessStep is one thing a scripted process does; exactly one field is
// set. In Stdout and Stderr, "{{stdin}}" is replaced by the launch's
// stdin and "{{env:NAME}}" by the launch's value of NAME ("" when the
// launch does not set it: the process sees only the launch's replacement
// environment, never the provider's).
type ProcessStep struct {
	Stdout *string `json:"stdout,omitzero"`
	Stderr *string `json:"stderr,omitzero"`
	// DelayMS pauses the process (milliseconds).
	DelayMS *int64 `json:"delayMs,omitzero"`
}

// ExecRule is the scripted result of matching workspace commands; no
// process runs.
type ExecRule struct {
	// Match selects commands: a substring, or a regular expression
	// written /like this/. It is never empty.
	Match string `json:"match"`
	// ExitCode, Stdout and Stderr are the command's result.
	ExitCode int64  `json:"exitCode,omitzero"`
	Stdout   string `json:"stdout,omitzero"`
	Stderr   string `json:"stderr,omitzero"`
}

// Turn is one scripted turn.
type Turn struct {
	// Match selects the turn: a substring of the prompt, or a regular
	// expression written /like this/. Empty matches every prompt.
	Match string `json:"match,omitzero"`
	// Repeat lets the turn play more than once.
	Repeat bool `json:"repeat,omitzero"`
	// Steps play in order.
	Steps []Step `json:"steps"`
	// End is how the turn ends: "completed" (default), "failed" (an
	// in-band error event carrying Error), "cancelled", "no-terminal"
	// (the stream just stops — a misbehaving provider), "die" (the
	// stream breaks with a transport error mid-turn) or "quota" (the
	// account runs out mid-turn: EndQuota).
	End string `json:"end,omitzero"`
	// Error is the failure message for End "failed", "die" or "quota".
	Error string `json:"error,omitzero"`
	// ServedModel overrides Script.ServedModel for this turn.
	ServedModel string `json:"servedModel,omitzero"`
}

// Step is one thing a turn does. Exactly one of its fields is set.
type Step struct {
	// Text streams assistant text; "{{prompt}}" in it is replaced by the
	// turn's prompt, "{{outcome:ID}}" by the outcome interaction ID of
	// the run resolved with ("" while unresolved) and "{{answer:ID.FIELD}}"
	// by its accepted answer to FIELD (choices joined by ", "; "" for a
	// secret, an unanswered field or an unaccepted outcome).
	Text *string `json:"text,omitzero"`
	// Usage reports token usage, with Mode "delta", "cumulative" or ""
	// (no usageMode: unknown aggregation).
	Usage *contract.TokenUsage `json:"usage,omitzero"`
	Mode  *string              `json:"mode,omitzero"`
	// ToolCall asks the caller's tool loop to run a tool.
	ToolCall *ToolCall `json:"toolCall,omitzero"`
	// Result sets the turn's structured result (canonical JSON).
	Result *canonjson.Value `json:"result,omitzero"`
	// DelayMS pauses the stream (milliseconds), to exercise cancellation
	// and kills mid-turn.
	DelayMS *int64 `json:"delayMs,omitzero"`
	// Interaction originates a typed interaction request and waits for it
	// to resolve (see InteractionStep).
	Interaction *InteractionStep `json:"interaction,omitzero"`
}

// InteractionStep is a scripted interaction request. The provider binds
// the request to the run (its binding and digest are the provider's to
// set), emits it as an interaction event, and waits: an accepted,
// declined or cancelled answer lets the turn continue; a timeout applies
// the request's default (onTimeout "default") or expires the request and
// fails the turn; a cancelled run cancels it. A turn whose interaction
// posture does not enable the request's kind skips the step.
type InteractionStep struct {
	// Request is an InteractionRequest without binding and requestDigest:
	// id, kind, title, answerSpec and the optional members. Its kind is
	// well-known (permission, question, plan) or namespaced (vendor.kind).
	Request canonjson.Value `json:"request"`
	// Unreachable simulates a broken answer channel: every response is
	// acknowledged transport_failure (retryable) and the request stays
	// outstanding.
	Unreachable bool `json:"unreachable,omitzero"`
}

// ToolCall is a scripted tool call.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments canonjson.Value `json:"arguments"`
}

// Ends of a scripted turn.
const (
	EndCompleted  = "completed"
	EndFailed     = "failed"
	EndCancelled  = "cancelled"
	EndNoTerminal = "no-terminal"
	EndDie        = "die"
	// EndQuota: the account serving the turn runs out part way: after
	// the turn's steps the stream breaks with a *contract.QuotaRefusalError
	// naming the run (its Error is the refusal's message); what ran stays
	// in the session's native history.
	EndQuota = "quota"
)

// MaxDelayMS is the longest delayMs a script may ask for: the longest
// time.Duration in whole milliseconds (about 292 years). A longer one would
// wrap around to a negative or short delay when converted.
const MaxDelayMS = math.MaxInt64 / int64(time.Millisecond)

// delayInRange refuses a delayMs that does not fit a time.Duration.
var delayInRange = schema.Rule[float64]{Code: schema.CodeTooBig,
	Message: fmt.Sprintf("must be at most %d (the longest delay a time.Duration holds)", MaxDelayMS),
	Test:    func(f float64) bool { return f <= float64(MaxDelayMS) }}

var (
	stepSchema = schema.Object(
		schema.Opt("text", schema.String()),
		schema.Opt("usage", contract.TokenUsageSchema),
		schema.Opt("mode", schema.Enum("delta", "cumulative", "")),
		schema.Opt("toolCall", schema.Object(
			schema.Req("id", schema.String(schema.MinLen(1))),
			schema.Req("name", schema.String(schema.MinLen(1))),
			schema.Req("arguments", schema.Record(schema.Any())),
		)),
		schema.Opt("result", schema.Any()),
		schema.Opt("delayMs", schema.Number(schema.Int, schema.NonNegative, delayInRange)),
		schema.Opt("interaction", interactionStepSchema),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		n := 0
		for _, m := range v.Members() {
			if m.Name != "mode" {
				n++
			}
		}
		if n != 1 {
			c.Custom("a step does exactly one thing: text, usage, toolCall, result, delayMs or interaction")
		}
		if _, hasMode := v.Get("mode"); hasMode {
			if _, hasUsage := v.Get("usage"); !hasUsage {
				c.Custom("mode belongs to a usage step", "mode")
			}
		}
	})

	// interactionStepSchema checks the request material by binding it to
	// a placeholder run and validating the whole request with the
	// contract's schema (digest included).
	interactionStepSchema = schema.Object(
		schema.Req("request", schema.Record(schema.Any())),
		schema.Opt("unreachable", schema.Bool()),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		material, _ := v.Get("request")
		if _, err := bindInteraction(material, placeholderBinding); err != nil {
			c.Custom("the interaction request is invalid: "+err.Error(), "request")
			return
		}
		if kind, _ := material.Get("kind"); !contract.IsWellKnownInteractionKind(kind.Str()) && !contract.IsNamespacedInteractionKind(kind.Str()) {
			c.Custom("an interaction kind is permission, question, plan or namespaced (vendor.kind)", "request", "kind")
		}
	})

	// ScriptSchema validates a script document.
	ScriptSchema = schema.Object(
		schema.Opt("servedModel", schema.String(schema.MinLen(1))),
		schema.Req("turns", schema.Array(schema.Object(
			schema.Opt("match", schema.String()),
			schema.Opt("repeat", schema.Bool()),
			schema.Req("steps", schema.Array(stepSchema)),
			schema.Opt("end", schema.Enum(EndCompleted, EndFailed, EndCancelled, EndNoTerminal, EndDie, EndQuota)),
			schema.Opt("error", schema.String()),
			schema.Opt("servedModel", schema.String(schema.MinLen(1))),
		).Refine(checkMatch).Refine(checkInteractionIDs))),
		schema.Opt("exec", schema.Array(schema.Object(
			schema.Req("match", schema.String(schema.MinLen(1))),
			schema.Opt("exitCode", schema.Number(schema.Int)),
			schema.Opt("stdout", schema.String()),
			schema.Opt("stderr", schema.String()),
		).Refine(checkMatch))),
		schema.Opt("processes", schema.Array(processRuleSchema)),
		schema.Opt("accounts", schema.Record(schema.Object(
			schema.Opt("exhausted", schema.Bool()),
			schema.Opt("retryAfterMs", schema.Number(schema.Int, schema.NonNegative, schema.Max(canonjson.MaxSafeInteger))),
		)).Keys(contract.BoundedIdentifier)),
	)

	// processRuleSchema validates one scripted exact process.
	processRuleSchema = schema.Object(
		schema.Req("executable", schema.String(schema.MinLen(1), schema.MaxLen(contract.MaxStringLength),
			schema.Matches("must be an absolute, clean path", isExactPath))),
		schema.Opt("args", schema.Array(contract.BoundedString).MaxItems(contract.MaxArrayLength)),
		schema.Opt("image", schema.String(schema.Matches("must be a digest-pinned image (name@sha256:<64 hex>)", isPinnedImage))),
		schema.Req("output", schema.Array(schema.Object(
			schema.Opt("stdout", schema.String()),
			schema.Opt("stderr", schema.String()),
			schema.Opt("delayMs", schema.Number(schema.Int, schema.NonNegative, delayInRange)),
		).Refine(func(c *schema.Context, v canonjson.Value) {
			if len(v.Members()) != 1 {
				c.Custom("an output step does exactly one thing: stdout, stderr or delayMs")
			}
		}))),
		schema.Opt("exitCode", schema.Number(schema.Int, schema.Min(-2147483648), schema.Max(2147483647))),
		schema.Opt("signal", schema.String(schema.Matches("must be a signal name (SIG…)", isSignalName))),
		schema.Opt("hang", schema.Bool()),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		ends := 0
		for _, name := range []string{"exitCode", "signal"} {
			if _, ok := v.Get(name); ok {
				ends++
			}
		}
		if h, ok := v.Get("hang"); ok && h.Bool() {
			ends++
		}
		if ends > 1 {
			c.Custom("a process ends one way: exitCode, signal or hang")
		}
	})

	placeholderBinding = contract.InteractionExecutionBinding{RunID: "script", Provider: "scripted", EnvironmentID: "script",
		SessionID: "script", ExecutionID: "script"}
)

// checkMatch refuses a match written as an invalid regular expression.
func checkMatch(c *schema.Context, v canonjson.Value) {
	if m, ok := v.Get("match"); ok && isRegexp(m.Str()) {
		if _, err := regexp.Compile(m.Str()[1 : len(m.Str())-1]); err != nil {
			c.Custom("match is not a valid regular expression: "+err.Error(), "match")
		}
	}
}

// checkInteractionIDs refuses a turn that originates two interactions
// with one id: a response could not tell them apart.
func checkInteractionIDs(c *schema.Context, v canonjson.Value) {
	steps, _ := v.Get("steps")
	seen := map[string]bool{}
	for _, step := range steps.Items() {
		in, ok := step.Get("interaction")
		if !ok {
			continue
		}
		req, _ := in.Get("request")
		id, _ := req.Get("id")
		if seen[id.Str()] {
			c.Custom("interaction id "+strconv.Quote(id.Str())+" is used twice in one turn", "steps")
		}
		seen[id.Str()] = true
	}
}

var (
	pinnedImage = regexp.MustCompile(`^[^\s@]+@sha256:[a-f0-9]{64}$`)
	signalName  = regexp.MustCompile(`^SIG[A-Z0-9]+$`)
)

// isPinnedImage reports whether s names an image by its content digest
// (name@sha256:<64 lowercase hex>): an immutable identity, unlike a tag.
func isPinnedImage(s string) bool { return pinnedImage.MatchString(s) }

func isSignalName(s string) bool { return signalName.MatchString(s) }

// isExactPath reports whether p is an absolute, clean path other than
// the root.
func isExactPath(p string) bool {
	return path.IsAbs(p) && path.Clean(p) == p && p != "/"
}

func isRegexp(s string) bool {
	return len(s) >= 2 && strings.HasPrefix(s, "/") && strings.HasSuffix(s, "/")
}

// ParseScript decodes and validates a script.
func ParseScript(data []byte) (*Script, error) {
	return contract.Parse[Script]("ScriptedScript", ScriptSchema, data)
}

// LoadScript reads a script file.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	return ParseScript(data)
}

// DefaultScript is what the provider plays when no script is given: every
// turn answers with the prompt it was given, as a note, and reports no
// usage (a scripted provider has no real usage to report).
func DefaultScript() *Script {
	text := "Done: {{prompt}}"
	return &Script{Turns: []Turn{{Repeat: true, Steps: []Step{{Text: &text}}}}}
}
