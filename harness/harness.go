package harness

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
)

// Type names the execution runner for an agent: which runtime materializes
// and runs a profile. Later minor versions of the contract may add values.
type Type string

// The harnesses of the contract. CLIBase is direct model execution with no
// agent harness; Prime is a fork of Pi and not interchangeable with it.
const (
	ClaudeCode    Type = "claude-code"
	NanoClaw      Type = "nanoclaw"
	Codex         Type = "codex"
	OpenCode      Type = "opencode"
	KimiCode      Type = "kimi-code"
	Pi            Type = "pi"
	Prime         Type = "prime"
	Gemini        Type = "gemini"
	Hermes        Type = "hermes"
	OpenClaw      Type = "openclaw"
	Amp           Type = "amp"
	FactoryDroids Type = "factory-droids"
	Forge         Type = "forge"
	Cursor        Type = "cursor"
	ACP           Type = "acp"
	CLIBase       Type = "cli-base"
)

var all = []Type{ClaudeCode, NanoClaw, Codex, OpenCode, KimiCode, Pi, Prime, Gemini,
	Hermes, OpenClaw, Amp, FactoryDroids, Forge, Cursor, ACP, CLIBase}

// All returns every harness in the contract's order.
func All() []Type { return slices.Clone(all) }

// Names returns every harness name as a string.
func Names() []string {
	out := make([]string, len(all))
	for i, t := range all {
		out[i] = string(t)
	}
	return out
}

// Valid reports whether t is a harness of the contract.
func (t Type) Valid() bool { return slices.Contains(all, t) }

// ReasoningEffort is a canonical reasoning level, ordered on the Ladder.
// None turns thinking off; Ultracode is the maximum. A backend may clamp a
// level down to one it supports, but never enables reasoning for None and
// never silently raises a level.
type ReasoningEffort string

// The canonical reasoning efforts, low to high.
const (
	EffortNone      ReasoningEffort = "none"
	EffortMinimal   ReasoningEffort = "minimal"
	EffortLow       ReasoningEffort = "low"
	EffortMedium    ReasoningEffort = "medium"
	EffortHigh      ReasoningEffort = "high"
	EffortXHigh     ReasoningEffort = "xhigh"
	EffortUltracode ReasoningEffort = "ultracode"
)

var ladder = []ReasoningEffort{EffortNone, EffortMinimal, EffortLow, EffortMedium, EffortHigh, EffortXHigh, EffortUltracode}

// Ladder returns the efforts from lowest to highest.
func Ladder() []ReasoningEffort { return slices.Clone(ladder) }

// EffortNames returns the ladder as strings.
func EffortNames() []string {
	out := make([]string, len(ladder))
	for i, e := range ladder {
		out[i] = string(e)
	}
	return out
}

// Valid reports whether e is on the ladder.
func (e ReasoningEffort) Valid() bool { return slices.Contains(ladder, e) }

// Rank is e's position on the ladder, or -1.
func (e ReasoningEffort) Rank() int { return slices.Index(ladder, e) }

// ---- provider lock ----------------------------------------------------------

var providerLock = map[Type][]string{
	ClaudeCode: {"anthropic"},
	Codex:      {"openai"},
	KimiCode:   {"moonshot"},
}

// lockOrder fixes the order PreferredHarnessForModel searches the locks.
var lockOrder = []Type{ClaudeCode, Codex, KimiCode}

// Providers returns the providers h is locked to, or nil when h is
// router-backed and runs any model.
func Providers(h Type) []string { return slices.Clone(providerLock[h]) }

// ModelProvider returns the provider prefix of a canonical model id
// ("anthropic/claude-…" → "anthropic"): the text before the first "/" when
// that slash is not the first character.
func ModelProvider(modelID string) (string, bool) {
	if i := strings.IndexByte(modelID, '/'); i > 0 {
		return modelID[:i], true
	}
	return "", false
}

// SupportsModel reports whether h can run modelID by its provider lock
// alone. Router-backed harnesses accept anything, and so does every harness
// for an id without a provider prefix.
func SupportsModel(h Type, modelID string) bool {
	lock := providerLock[h]
	if lock == nil {
		return true
	}
	p, ok := ModelProvider(modelID)
	return !ok || slices.Contains(lock, p)
}

// PreferredHarnessForModel returns the vendor-locked harness for modelID's
// provider (anthropic → claude-code, openai → codex, moonshot → kimi-code),
// or false when any router-backed harness will do.
func PreferredHarnessForModel(modelID string) (Type, bool) {
	p, ok := ModelProvider(modelID)
	if !ok {
		return "", false
	}
	for _, h := range lockOrder {
		if slices.Contains(providerLock[h], p) {
			return h, true
		}
	}
	return "", false
}

// SnapHarnessToModel keeps h when it can run modelID, and otherwise returns
// the model's preferred harness, falling back to the router-backed
// opencode.
func SnapHarnessToModel(h Type, modelID string) Type {
	if SupportsModel(h, modelID) {
		return h
	}
	if p, ok := PreferredHarnessForModel(modelID); ok {
		return p
	}
	return OpenCode
}

var preferredModelPatterns = map[Type][]*regexp.Regexp{
	ClaudeCode: {
		regexp.MustCompile(`^anthropic/claude-opus-[\d.-]+$`),
		regexp.MustCompile(`^anthropic/claude-sonnet-[\d.-]+$`),
		regexp.MustCompile(`^anthropic/`),
	},
	Codex: {
		regexp.MustCompile(`^openai/gpt-\d+(\.\d+)?$`),
		regexp.MustCompile(`^openai/gpt`),
		regexp.MustCompile(`^openai/`),
	},
	KimiCode: {regexp.MustCompile(`^moonshot/`)},
}

// SnapModelToHarness keeps modelID when h can run it. Otherwise it returns
// h's best candidate (its preferred patterns in order, the highest version
// within a pattern), then the first candidate h supports, and finally
// modelID unchanged so the caller sees the incompatibility instead of a
// silent substitution. Candidates are canonical "provider/model" ids.
func SnapModelToHarness(h Type, modelID string, candidates []string) string {
	if SupportsModel(h, modelID) {
		return modelID
	}
	for _, pattern := range preferredModelPatterns[h] {
		var best string
		for _, id := range candidates {
			if pattern.MatchString(id) && (best == "" || compareNumeric(id, best) > 0) {
				best = id
			}
		}
		if best != "" {
			return best
		}
	}
	for _, id := range candidates {
		if SupportsModel(h, id) {
			return id
		}
	}
	return modelID
}

// compareNumeric orders strings case-insensitively with runs of digits
// compared by value, so "gpt-10" sorts after "gpt-9".
func compareNumeric(a, b string) int {
	a, b = strings.ToLower(a), strings.ToLower(b)
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return cmpInt(len(na), len(nb))
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmpInt(int(a[0]), int(b[0]))
		}
		a, b = a[1:], b[1:]
	}
	return cmpInt(len(a), len(b))
}

func digitRun(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ---- reasoning ------------------------------------------------------------

var effortSets = map[Type][]ReasoningEffort{
	Codex:      {EffortNone, EffortMinimal, EffortLow, EffortMedium, EffortHigh, EffortXHigh, EffortUltracode},
	ClaudeCode: {EffortLow, EffortMedium, EffortHigh, EffortXHigh, EffortUltracode},
	Pi:         {EffortNone, EffortMinimal, EffortLow, EffortMedium, EffortHigh, EffortXHigh, EffortUltracode},
	Prime:      {EffortNone, EffortMinimal, EffortLow, EffortMedium, EffortHigh, EffortXHigh, EffortUltracode},
	OpenClaw:   {EffortNone, EffortMinimal, EffortLow, EffortMedium, EffortHigh, EffortXHigh, EffortUltracode},
	KimiCode:   {EffortNone, EffortHigh},
}

// effortCeilings caps harnesses whose set is a plain none…ceiling slice.
var effortCeilings = map[Type]ReasoningEffort{CLIBase: EffortNone, NanoClaw: EffortNone}

// ReasoningEfforts returns the efforts h can express, independent of the
// model: its measured set, or none up to its ceiling (the whole ladder for
// router- and model-driven harnesses).
func ReasoningEfforts(h Type) []ReasoningEffort {
	if set, ok := effortSets[h]; ok {
		return slices.Clone(set)
	}
	ceiling, ok := effortCeilings[h]
	if !ok {
		ceiling = EffortUltracode
	}
	return slices.Clone(ladder[:ceiling.Rank()+1])
}

// ModelReasoning is what a model catalog knows about one model's reasoning.
type ModelReasoning struct {
	// SupportsReasoning false collapses every harness to none; nil is
	// unknown.
	SupportsReasoning *bool
	// MaxEffort, when set, caps the efforts at the model's own ceiling.
	MaxEffort ReasoningEffort
}

// ReasoningEffortsFor returns the efforts for a (harness, model) pair: the
// harness set narrowed by the model's capability. A nil model means the
// harness-only set.
func ReasoningEffortsFor(h Type, model *ModelReasoning) []ReasoningEffort {
	if model != nil && model.SupportsReasoning != nil && !*model.SupportsReasoning {
		return []ReasoningEffort{EffortNone}
	}
	efforts := ReasoningEfforts(h)
	if model != nil && model.MaxEffort != "" {
		if limit := model.MaxEffort.Rank(); limit >= 0 {
			efforts = slices.DeleteFunc(efforts, func(e ReasoningEffort) bool { return e.Rank() > limit })
		}
	}
	return efforts
}

// NativeReasoningControl returns the token h's process receives for the
// canonical effort e (the value receipts record as the applied effort), or
// false when h applies no native control for it. An empty e (nothing
// requested) is always false.
func NativeReasoningControl(h Type, e ReasoningEffort) (string, bool) {
	if e == "" {
		return "", false
	}
	switch h {
	case ClaudeCode:
		switch e {
		case EffortNone, EffortMinimal:
			return "low", true
		case EffortUltracode:
			return "max", true
		}
		return string(e), true
	case Codex:
		if e == EffortUltracode {
			return "ultra", true
		}
		return string(e), true
	case Pi:
		switch e {
		case EffortNone:
			return "off", true
		case EffortUltracode:
			return "xhigh", true
		}
		return string(e), true
	case Prime:
		switch e {
		case EffortNone:
			return "off", true
		case EffortUltracode:
			return "max", true
		}
		return string(e), true
	case KimiCode:
		switch e {
		case EffortMedium:
			return "", false
		case EffortNone, EffortMinimal, EffortLow:
			return "--no-thinking", true
		}
		return "--thinking", true
	case OpenCode:
		return string(e), true
	}
	return "", false
}

// ---- per-turn selectors and prompt intents ----------------------------------

var ignoresModel = []Type{Amp, OpenClaw, NanoClaw}
var ignoresEffort = []Type{Amp, FactoryDroids, Hermes, NanoClaw, ACP}

// HonorsModel reports whether h's runner honors a per-turn model choice
// rather than picking the model itself.
func HonorsModel(h Type) bool { return !slices.Contains(ignoresModel, h) }

// HonorsEffort reports whether h's runner honors a reasoning-effort choice
// rather than dropping it.
func HonorsEffort(h Type) bool { return !slices.Contains(ignoresEffort, h) }

// HonorsSelectors reports whether h honors both the model and the effort.
func HonorsSelectors(h Type) bool { return HonorsModel(h) && HonorsEffort(h) }

// SystemPromptIntents says which system-prompt intents a harness owns:
// Replace deletes the harness's own prompt and installs the profile's
// systemPrompt; Append keeps it and adds appendSystemPrompt.
type SystemPromptIntents struct {
	Replace bool `json:"replace"`
	Append  bool `json:"append"`
}

var promptIntents = map[Type]SystemPromptIntents{
	ClaudeCode: {Replace: true, Append: true},
	Pi:         {Replace: true, Append: true},
	Prime:      {Replace: true, Append: true},
	Codex:      {Replace: true},
	Gemini:     {Replace: true},
	OpenCode:   {Append: true},
}

// PromptIntents returns the intents h honors through a workspace plan (the
// answer for an executor that lowers a profile to files, variables and
// flags and hands them to a launcher it does not own). A harness with no
// entry, and the empty harness, honor neither.
func PromptIntents(h Type) SystemPromptIntents { return promptIntents[h] }

// ---- seat-time model support ---------------------------------------------------

var openAIFamily = regexp.MustCompile(`^o\d+(-|$)`)

// ResolveModelProvider returns the provider of modelID: its explicit
// "provider/" prefix, or else the provider of a known bare-id family
// (claude- → anthropic; gpt-, chatgpt-, codex-, o<digits> → openai; kimi-,
// moonshot- → moonshot; gemini- → google; glm- → zai; deepseek- →
// deepseek; grok- → xai), matched on the trimmed, lower-cased id.
func ResolveModelProvider(modelID string) (string, bool) {
	id := canonjson.TrimJS(modelID)
	if p, ok := ModelProvider(id); ok {
		return p, true
	}
	if strings.ContainsRune(id, '/') {
		return "", false
	}
	lower := strings.ToLower(id)
	switch {
	case strings.HasPrefix(lower, "claude-"):
		return "anthropic", true
	case strings.HasPrefix(lower, "gpt-"), strings.HasPrefix(lower, "chatgpt-"),
		strings.HasPrefix(lower, "codex-"), openAIFamily.MatchString(lower):
		return "openai", true
	case strings.HasPrefix(lower, "kimi-"), strings.HasPrefix(lower, "moonshot-"):
		return "moonshot", true
	case strings.HasPrefix(lower, "gemini-"):
		return "google", true
	case strings.HasPrefix(lower, "glm-"):
		return "zai", true
	case strings.HasPrefix(lower, "deepseek-"):
		return "deepseek", true
	case strings.HasPrefix(lower, "grok-"):
		return "xai", true
	}
	return "", false
}

// ModelSupport is the answer of CheckModelSupport.
type ModelSupport struct {
	Supported bool
	// Provider is the resolved provider, empty when unknown.
	Provider string
	// CanonicalModel is "provider/id" for a bare id whose provider
	// resolved, else the trimmed id.
	CanonicalModel string
	// AllowedProviders is set when a provider lock refused the model.
	AllowedProviders []string
	// Exclusion names the measured exclusion that refused the model.
	Exclusion string
	// Message explains a refusal.
	Message string
}

// exclusion is a (harness, model) pair measured not to work, optionally
// only when a reasoning effort above none is requested.
type exclusion struct {
	harness     Type
	prefix      bool // model matches as a prefix
	model       string
	effortOnly  bool
	measuredAt  string
	description string
}

var exclusions = []exclusion{
	{harness: Pi, prefix: true, model: "anthropic/", effortOnly: true, measuredAt: "2026-10-05",
		description: "pi with an Anthropic model fails when a reasoning effort is requested"},
	{harness: Pi, model: "openai/gpt-5.6-luna", effortOnly: true, measuredAt: "2026-10-05",
		description: "pi with openai/gpt-5.6-luna fails when a reasoning effort is requested"},
	{harness: Pi, model: "google/gemini-3.8-flash", measuredAt: "2026-10-05",
		description: "pi with google/gemini-3.8-flash fails"},
}

// CheckModelSupport decides whether h can run modelID at effort (empty for
// none requested): the model's provider (explicit or resolved from its
// family) must be in h's provider lock, and the pair must not be a measured
// exclusion. A model whose provider cannot be resolved is supported.
func CheckModelSupport(h Type, modelID string, effort ReasoningEffort) ModelSupport {
	id := canonjson.TrimJS(modelID)
	provider, ok := ResolveModelProvider(id)
	canonical := id
	if ok {
		if _, explicit := ModelProvider(id); !explicit {
			canonical = provider + "/" + id
		}
	}
	res := ModelSupport{Provider: provider, CanonicalModel: canonical}
	if !ok {
		res.Supported = true
		return res
	}
	if lock := providerLock[h]; lock != nil && !slices.Contains(lock, provider) {
		res.AllowedProviders = slices.Clone(lock)
		res.Message = "harness " + string(h) + " cannot run model " + id + " from provider " + provider +
			" (it runs " + strings.Join(lock, ", ") + " models); use a router-backed harness such as opencode"
		return res
	}
	requested := effort != "" && effort != EffortNone
	for _, x := range exclusions {
		if x.harness != h || x.effortOnly && !requested {
			continue
		}
		if x.prefix && strings.HasPrefix(canonical, x.model) || !x.prefix && canonical == x.model {
			res.Exclusion = x.harness.String() + ":" + x.model
			res.Message = x.description + " (measured " + x.measuredAt + ")"
			return res
		}
	}
	res.Supported = true
	return res
}

// String returns the harness name.
func (t Type) String() string { return string(t) }
