package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// The analyst verbs (§9): the lens menu, running a lens over a settled
// worker, and defining a lens as data.
const (
	VerbListAnalysts  = "list_analysts"
	VerbRunAnalyst    = "run_analyst"
	VerbDefineAnalyst = "define_analyst"
)

// EventFinding is the kind Await gives an analyst's settlement: its
// output is findings about another worker, never a deliverable.
const EventFinding = "finding"

// KindAnalystDefined journals a define_analyst: Data is the Lens. A
// resumed run puts the lens back on the menu.
const KindAnalystDefined = "analyst-defined"

// KindAnalysisRequested journals a run_analyst before its analyst is
// admitted (Key the analysis's key, Label the lens, Node the analysed
// worker), and KindAfterSettle that Options.AfterSettle returned for a
// settlement (Node). A process that dies between an analysis's request
// and its analyst's spawn, or between a settlement and the end of its
// hook (where a graph starts the lenses over a settle), leaves a record
// without its follower: the resumed run runs the hook again and starts
// each requested analysis that has no analyst yet, and an analysis it
// cannot start is reported in the coordination log (FindingNotRun).
//
// KindAnalysisRefused withdraws the KindAnalysisRequested record before
// it (the same Key, Label, Node and Parent): the analysis was refused
// and the manager told so; a resumed run does not start it.
const (
	KindAnalysisRequested = "analysis-requested"
	KindAnalysisRefused   = "analysis-refused"
	KindAfterSettle       = "after-settle"
)

// Bounds of a lens definition (§9 define_analyst): the reference's
// ANALYST_DEFINITION_BOUNDS. Text is measured trimmed, in UTF-16 code
// units (a character outside the Basic Multilingual Plane counts two),
// and refused past its bound; a limit past its bound is clamped to it.
const (
	MaxLensDescription  = 300
	MaxLensArea         = 64
	MaxLensQuestion     = 1000
	MaxLensInstructions = 20000
	MaxLensIterations   = 24
	MaxLensLLMCalls     = 16
	MaxLensToolCalls    = 96
	MaxLensOutput       = 20000
	MaxLensCitations    = 10
	// MaxDefinedLenses is how many lenses one manager may define.
	MaxDefinedLenses = 8
	// MaxLensDocument bounds a lens definition document DecodeLens reads.
	MaxLensDocument = 64 << 10
	// MaxLensList bounds how many lenses DecodeLenses reads, and
	// MaxLensListDocument the document's size.
	MaxLensList         = 32
	MaxLensListDocument = 1 << 20
	// MaxLensModel bounds a lens's model name.
	MaxLensModel = 128
	// analysedOutput bounds how much of the analysed worker's output an
	// analyst's task carries.
	analysedOutput = 16000
)

// ToolGroup is the tool group a lens's analyst works with (§9).
type ToolGroup string

// Tool groups.
const (
	ToolGroupAll                = ToolGroup("all")
	ToolGroupDiscovery          = ToolGroup("discovery")
	ToolGroupDiscoveryAndRead   = ToolGroup("discoveryAndRead")
	ToolGroupDiscoveryAndSearch = ToolGroup("discoveryAndSearch")
	ToolGroupTargeted           = ToolGroup("targeted")
	ToolGroupSingleTrace        = ToolGroup("singleTrace")
)

var toolGroups = []ToolGroup{ToolGroupAll, ToolGroupDiscovery, ToolGroupDiscoveryAndRead, ToolGroupDiscoveryAndSearch,
	ToolGroupTargeted, ToolGroupSingleTrace}

var lensIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,63}$`)

// Lens is an analyst lens: data only — a question asked of a settled
// worker's output, the instructions the analyst runs under, and its
// bounds. It grants nothing: the analyst runs as a worker of the run,
// reserved from and charged to the run's pool.
type Lens struct {
	ID           string    `json:"id" jsonschema:"lens id: lowercase letters, digits and dashes, 2-64 characters"`
	Description  string    `json:"description" jsonschema:"what the lens looks for (at most 300 characters)"`
	Area         string    `json:"area" jsonschema:"the area it covers (at most 64 characters)"`
	Question     string    `json:"question" jsonschema:"the question the analyst answers (at most 1000 characters)"`
	Instructions string    `json:"instructions" jsonschema:"the analyst's instructions (at most 20000 characters)"`
	ToolGroup    ToolGroup `json:"toolGroup" jsonschema:"all, discovery, discoveryAndRead, discoveryAndSearch, targeted or singleTrace"`
	// Model, when set, is the analyst's model; otherwise the analysed
	// worker's profile's model.
	Model  string      `json:"model,omitzero" jsonschema:"the analyst's model (default: the analysed worker's)"`
	Limits *LensLimits `json:"limits,omitzero"`
	// MinimumEvidenceCitations asks the analyst for at least this many
	// citations of the analysed output.
	MinimumEvidenceCitations *int `json:"minimumEvidenceCitations,omitzero" jsonschema:"citations of evidence each finding must carry: a positive integer; more than 10 is clamped to 10"`
}

// LensLimits bound one analyst run; an absent limit is the maximum, and
// one past its maximum is clamped to it (DecodeLens, define_analyst).
// Iterations is the analyst's iteration ceiling (reserved from the pool;
// with Options.AnalystModel each model call is one iteration), and
// OutputChars clips its findings. With Options.AnalystModel, LLMCalls
// bounds its model calls and ToolCalls its tool calls (see
// Options.AnalystModel); on the Executor they are told to the analyst.
type LensLimits struct {
	Iterations  *int `json:"maxIterations,omitzero" jsonschema:"a positive integer; more than 24 is clamped to 24"`
	LLMCalls    *int `json:"maxLlmCalls,omitzero" jsonschema:"a positive integer; more than 16 is clamped to 16"`
	ToolCalls   *int `json:"maxToolCalls,omitzero" jsonschema:"a positive integer; more than 96 is clamped to 96"`
	OutputChars *int `json:"maxOutputChars,omitzero" jsonschema:"a positive integer; more than 20000 is clamped to 20000"`
}

// LensError refuses a lens definition: Pointer is the RFC 6901 pointer
// of the (first) offending member ("" for the document) and Reason what
// is wrong with it. Issues (from ValidateLens) names every offending
// member, the first being Pointer and Reason.
type LensError struct {
	Pointer string
	Reason  string
	Issues  []LensIssue
}

// LensIssue is one offending member of a lens definition.
type LensIssue struct {
	Pointer string
	Reason  string
}

func (e *LensError) Error() string {
	if len(e.Issues) > 1 {
		return "supervise: invalid analyst lens: " + e.issueText()
	}
	return fmt.Sprintf("supervise: invalid analyst lens at %q: %s", e.Pointer, e.Reason)
}

// issueText is every issue as "pointer: reason", joined by "; ".
func (e *LensError) issueText() string {
	if len(e.Issues) == 0 {
		return e.Pointer + ": " + e.Reason
	}
	parts := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		parts[i] = is.Pointer + ": " + is.Reason
	}
	return strings.Join(parts, "; ")
}

// prefixed is e with prefix before each of its pointers.
func (e *LensError) prefixed(prefix string) *LensError {
	out := &LensError{Pointer: prefix + e.Pointer, Reason: e.Reason}
	for _, is := range e.Issues {
		out.Issues = append(out.Issues, LensIssue{Pointer: prefix + is.Pointer, Reason: is.Reason})
	}
	return out
}

// DecodeLens reads one lens definition strictly: at most
// MaxLensDocument bytes of JSON, no unknown or duplicate members, every
// bound of ValidateLens. Every refusal is a *LensError.
func DecodeLens(data []byte) (Lens, error) {
	if len(data) > MaxLensDocument {
		return Lens{}, &LensError{Reason: fmt.Sprintf("the definition is %d bytes; at most %d", len(data), MaxLensDocument)}
	}
	v, err := canonjson.DecodeWith(data, canonjson.DecodeOptions{MaxDepth: 4, MaxValues: 64})
	if err != nil {
		return Lens{}, lensDecodeError(err)
	}
	return lensOf(v, "")
}

// DecodeLenses reads a JSON array of lens definitions (at most
// MaxLensList of them in MaxLensListDocument bytes), each as DecodeLens
// does, refusing duplicate ids. A *LensError's pointer starts with the
// item's index (/2/question).
func DecodeLenses(data []byte) ([]Lens, error) {
	if len(data) > MaxLensListDocument {
		return nil, &LensError{Reason: fmt.Sprintf("the list is %d bytes; at most %d", len(data), MaxLensListDocument)}
	}
	v, err := canonjson.DecodeWith(data, canonjson.DecodeOptions{MaxDepth: 5, MaxValues: 64 * MaxLensList})
	if err != nil {
		return nil, lensDecodeError(err)
	}
	if v.Kind() != canonjson.Array {
		return nil, &LensError{Reason: "a lens list is a JSON array of lens definitions"}
	}
	if v.Len() > MaxLensList {
		return nil, &LensError{Reason: fmt.Sprintf("the list holds %d lenses; at most %d", v.Len(), MaxLensList)}
	}
	out := make([]Lens, 0, v.Len())
	seen := map[string]bool{}
	for i, item := range v.Items() {
		prefix := "/" + strconv.Itoa(i)
		l, err := lensOf(item, prefix)
		if err != nil {
			return nil, err
		}
		if seen[l.ID] {
			return nil, &LensError{Pointer: prefix + "/id", Reason: fmt.Sprintf("lens %q is listed twice", l.ID)}
		}
		seen[l.ID] = true
		out = append(out, l)
	}
	return out, nil
}

func lensDecodeError(err error) error {
	var de *canonjson.DecodeError
	if errors.As(err, &de) {
		return &LensError{Pointer: de.Pointer, Reason: de.Message}
	}
	return &LensError{Reason: err.Error()}
}

// lensOf decodes and validates one lens definition value; prefix is its
// pointer in the document.
func lensOf(v canonjson.Value, prefix string) (Lens, error) {
	if v.Kind() != canonjson.Object {
		return Lens{}, &LensError{Pointer: prefix, Reason: "a lens definition is a JSON object"}
	}
	var l Lens
	if err := canonjson.FromValue(v, &l); err != nil {
		var ue *canonjson.UnmarshalError
		if errors.As(err, &ue) {
			return Lens{}, &LensError{Pointer: prefix + ue.Pointer, Reason: ue.Reason}
		}
		return Lens{}, &LensError{Pointer: prefix, Reason: err.Error()}
	}
	l = BoundLens(l)
	if err := ValidateLens(l); err != nil {
		var le *LensError
		if errors.As(err, &le) {
			return Lens{}, le.prefixed(prefix)
		}
		return Lens{}, err
	}
	return l, nil
}

// BoundLens is l as define_analyst accepts it: its text members trimmed
// of surrounding white space (a blank model left as is, for
// ValidateLens to refuse), and each limit and MinimumEvidenceCitations
// past its maximum clamped to it (asking for 200 tool calls is a
// mis-estimate, not a malformed definition). A limit below 1 is left
// for ValidateLens to refuse. l's pointers are not shared.
func BoundLens(l Lens) Lens {
	l.ID, l.Description, l.Area = strings.TrimSpace(l.ID), strings.TrimSpace(l.Description), strings.TrimSpace(l.Area)
	l.Question, l.Instructions = strings.TrimSpace(l.Question), strings.TrimSpace(l.Instructions)
	if m := strings.TrimSpace(l.Model); m != "" {
		l.Model = m
	}
	clamp := func(n *int, max int) *int {
		if n == nil {
			return nil
		}
		return new(min(*n, max))
	}
	if m := l.Limits; m != nil {
		l.Limits = &LensLimits{Iterations: clamp(m.Iterations, MaxLensIterations), LLMCalls: clamp(m.LLMCalls, MaxLensLLMCalls),
			ToolCalls: clamp(m.ToolCalls, MaxLensToolCalls), OutputChars: clamp(m.OutputChars, MaxLensOutput)}
	}
	l.MinimumEvidenceCitations = clamp(l.MinimumEvidenceCitations, MaxLensCitations)
	return l
}

// utf16Len is how many UTF-16 code units s is (JavaScript's length, the
// reference's measure of a lens's text).
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// ValidateLens checks l against §9's bounds (l as BoundLens leaves it:
// a limit past its maximum is refused here, clamped there) and returns
// every violation, in member order, as one *LensError.
func ValidateLens(l Lens) error {
	var issues []LensIssue
	add := func(ptr, format string, args ...any) {
		issues = append(issues, LensIssue{Pointer: ptr, Reason: fmt.Sprintf(format, args...)})
	}
	text := func(ptr, s string, max int, required bool) {
		switch n := utf16Len(s); {
		case !utf8.ValidString(s):
			add(ptr, "is not valid UTF-8")
		case required && strings.TrimSpace(s) == "":
			add(ptr, "is required and must be a non-empty string")
		case !required && s != "" && strings.TrimSpace(s) == "":
			add(ptr, "must be a non-empty string when present")
		case n > max:
			add(ptr, "must be at most %d characters (UTF-16 code units; received %d)", max, n)
		}
	}
	bound := func(ptr string, n *int, max int) {
		if n != nil && (*n < 1 || *n > max) {
			add(ptr, "is %d; must be a positive integer, at most %d", *n, max)
		}
	}
	if !lensIDPattern.MatchString(l.ID) {
		add("/id", "%q must be 2-64 characters of lowercase letters, digits and hyphens, starting with a letter or digit (%s)", clip(l.ID, 80), lensIDPattern)
	}
	text("/description", l.Description, MaxLensDescription, true)
	text("/area", l.Area, MaxLensArea, true)
	text("/question", l.Question, MaxLensQuestion, true)
	text("/instructions", l.Instructions, MaxLensInstructions, true)
	if !slices.Contains(toolGroups, l.ToolGroup) {
		add("/toolGroup", "is %q; must be one of %v", clip(string(l.ToolGroup), 80), toolGroups)
	}
	text("/model", l.Model, MaxLensModel, false)
	if m := l.Limits; m != nil {
		bound("/limits/maxIterations", m.Iterations, MaxLensIterations)
		bound("/limits/maxLlmCalls", m.LLMCalls, MaxLensLLMCalls)
		bound("/limits/maxToolCalls", m.ToolCalls, MaxLensToolCalls)
		bound("/limits/maxOutputChars", m.OutputChars, MaxLensOutput)
	}
	bound("/minimumEvidenceCitations", l.MinimumEvidenceCitations, MaxLensCitations)
	if len(issues) == 0 {
		return nil
	}
	return &LensError{Pointer: issues[0].Pointer, Reason: issues[0].Reason, Issues: issues}
}

// BuiltinLenses returns the lenses every supervised run offers (a fresh
// copy each call).
func BuiltinLenses() []Lens {
	return []Lens{
		{
			ID:          "failure-triage",
			Description: "Why a worker failed or fell short of its task, and what a retry should change.",
			Area:        "reliability",
			Question:    "Did this worker do what its task asked? If not, what went wrong, and what should the next attempt change?",
			Instructions: "You are a failure analyst. Read the worker's task and output. State whether the task was met. " +
				"If not, name the first point where the work went wrong, quoting the output as evidence, and give one concrete " +
				"change for a retry. Do not redo the work yourself.",
			ToolGroup: ToolGroupSingleTrace,
			Limits:    &LensLimits{Iterations: new(4), LLMCalls: new(4), ToolCalls: new(12), OutputChars: new(4000)},
		},
		{
			ID:          "claims-check",
			Description: "Which claims in a worker's output its own evidence does not support.",
			Area:        "correctness",
			Question:    "Which claims in this output are not backed by evidence in the output itself?",
			Instructions: "You are a claims checker. List each factual claim the worker's output makes and whether the output " +
				"itself shows evidence for it, quoting that evidence. Report unsupported claims first. Do not add new claims.",
			ToolGroup:                ToolGroupSingleTrace,
			Limits:                   &LensLimits{Iterations: new(4), LLMCalls: new(4), ToolCalls: new(12), OutputChars: new(4000)},
			MinimumEvidenceCitations: new(1),
		},
	}
}

// lensMenu is a run's lenses: built-ins, the caller's, then those the
// managers defined, in that order. Guarded by Coordinator.mu.
type lensMenu struct {
	lenses  []Lens
	defined int
	// definers names the manager that defined each defined lens (the
	// last defined of lenses, in order): §9 bounds definitions per
	// manager, while the menu is the run's.
	definers []NodeID
	// earlier counts the defined lenses an earlier process journaled
	// (the first of the defined ones).
	earlier int
}

func newLensMenu(extra []Lens) (*lensMenu, error) {
	m := &lensMenu{lenses: BuiltinLenses()}
	for i, l := range extra {
		l = BoundLens(l)
		if err := ValidateLens(l); err != nil {
			var le *LensError
			errors.As(err, &le)
			return nil, fmt.Errorf("%w: Analysts[%d]%s: %s", ErrInvalidOptions, i, le.Pointer, le.Reason)
		}
		if _, ok := m.find(l.ID); ok {
			return nil, fmt.Errorf("%w: Analysts[%d]: lens %q is already on the menu", ErrInvalidOptions, i, l.ID)
		}
		m.lenses = append(m.lenses, l)
	}
	return m, nil
}

// definedAs reports whether an earlier process of the run journaled the
// manager's definition of lens id (not a builtin or an Options lens) as
// the document def.
func (m *lensMenu) definedAs(id string, def canonjson.Value) bool {
	first := len(m.lenses) - m.defined
	for _, l := range m.lenses[first : first+m.earlier] {
		if l.ID == id {
			v, err := canonjson.ToValue(l)
			return err == nil && canonjson.Equal(v, def)
		}
	}
	return false
}

// add puts lens l, defined by manager, on the menu.
func (m *lensMenu) add(l Lens, manager NodeID) {
	m.lenses = append(m.lenses, l)
	m.definers = append(m.definers, manager)
	m.defined++
}

// definedBy returns the ids of the lenses manager defined, in order.
func (m *lensMenu) definedBy(manager NodeID) []string {
	var out []string
	first := len(m.lenses) - m.defined
	for i, by := range m.definers {
		if by == manager {
			out = append(out, m.lenses[first+i].ID)
		}
	}
	return out
}

func (m *lensMenu) find(id string) (Lens, bool) {
	for _, l := range m.lenses {
		if l.ID == id {
			return l, true
		}
	}
	return Lens{}, false
}

// LensSummary is one lens as list_analysts shows it.
type LensSummary struct {
	ID                       string      `json:"id"`
	Description              string      `json:"description"`
	Area                     string      `json:"area"`
	Question                 string      `json:"question"`
	ToolGroup                ToolGroup   `json:"toolGroup"`
	Model                    string      `json:"model,omitzero"`
	Limits                   *LensLimits `json:"limits,omitzero"`
	MinimumEvidenceCitations *int        `json:"minimumEvidenceCitations,omitzero"`
	// Defined says the manager defined it (define_analyst).
	Defined bool `json:"defined"`
}

// AnalystList is list_analysts' reply.
type AnalystList struct {
	Analysts []LensSummary `json:"analysts"`
	// DefinitionsLeft is how many more lenses the manager may define.
	DefinitionsLeft int `json:"definitionsLeft"`
}

// ListAnalysts returns the lens menu: only these lenses run.
func (c *Coordinator) ListAnalysts() AnalystList {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := AnalystList{Analysts: []LensSummary{}, DefinitionsLeft: MaxDefinedLenses - len(c.lenses.definedBy(c.self))}
	first := len(c.lenses.lenses) - c.lenses.defined
	for i, l := range c.lenses.lenses {
		out.Analysts = append(out.Analysts, LensSummary{ID: l.ID, Description: l.Description, Area: l.Area, Question: l.Question,
			ToolGroup: l.ToolGroup, Model: l.Model, Limits: l.Limits, MinimumEvidenceCitations: l.MinimumEvidenceCitations, Defined: i >= first})
	}
	return out
}

// DefineAnalystResult is define_analyst's reply.
type DefineAnalystResult struct {
	ID              string `json:"id"`
	Defined         bool   `json:"defined"`
	DefinitionsLeft int    `json:"definitionsLeft"`
	// Limits and MinimumEvidenceCitations are the accepted ones (a
	// value past its bound clamped to it).
	Limits                   *LensLimits `json:"limits,omitzero"`
	MinimumEvidenceCitations *int        `json:"minimumEvidenceCitations,omitzero"`
	// Replayed: an earlier process of the run journaled this very
	// definition (a call a resumed manager runs again); nothing changed.
	Replayed bool `json:"replayed,omitzero"`
}

// DefineAnalyst adds a lens to the menu: data only, within §9's bounds
// (a *LensError otherwise), at most MaxDefinedLenses per manager, never
// replacing one on the menu (the same definition an earlier process of
// the run journaled is answered Replayed). The definition is journaled before it is
// on the menu, so a resumed run offers it again.
func (c *Coordinator) DefineAnalyst(ctx context.Context, l Lens) (DefineAnalystResult, error) {
	l = BoundLens(l)
	if err := ValidateLens(l); err != nil {
		return DefineAnalystResult{}, err
	}
	data, err := canonjson.ToValue(l)
	if err != nil {
		return DefineAnalystResult{}, fmt.Errorf("supervise: lens %s: %w", l.ID, err)
	}
	c.spawnMu.Lock() // orders definitions with their journal records
	defer c.spawnMu.Unlock()
	c.mu.Lock()
	onMenu, exists := c.lenses.find(l.ID)
	same := exists && c.lenses.definedAs(l.ID, data)
	defined := c.lenses.definedBy(c.self)
	left := MaxDefinedLenses - len(defined)
	c.mu.Unlock()
	accepted := DefineAnalystResult{ID: l.ID, Defined: true, Limits: l.Limits, MinimumEvidenceCitations: l.MinimumEvidenceCitations}
	switch {
	case same:
		// This very definition an earlier process journaled: a call
		// run again by a resumed manager (its result was not
		// journaled).
		accepted.DefinitionsLeft, accepted.Replayed = left, true
		return accepted, nil
	case exists:
		return DefineAnalystResult{}, &VerbRefusal{Code: "duplicate-analyst", Reason: "lens " + strconv.Quote(l.ID) + " is already on the menu (" +
			clip(onMenu.Description, 300) + "); choose another id"}
	case left <= 0:
		return DefineAnalystResult{}, &VerbRefusal{Code: "max-defined-analysts", Reason: fmt.Sprintf("a manager defines at most %d lenses (defined: %s); run the ones you have",
			MaxDefinedLenses, strings.Join(defined, ", "))}
	}
	// Journaled with its manager, whose eight it counts against.
	if err := c.log.append(ctx, Record{Kind: KindAnalystDefined, Node: c.self, Data: data}); err != nil {
		return DefineAnalystResult{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lenses.add(l, c.self)
	accepted.DefinitionsLeft = MaxDefinedLenses - len(c.lenses.definedBy(c.self))
	return accepted, nil
}

// RunAnalystArgs are run_analyst's arguments.
type RunAnalystArgs struct {
	Kind     string `json:"kind" jsonschema:"the lens id (see list_analysts)"`
	WorkerID NodeID `json:"workerId" jsonschema:"the settled worker to analyse"`
}

// RunAnalystResult is run_analyst's reply. A started analyst's findings
// arrive from await_event as a finding event; an analysis a resumed run
// already completed returns its findings here and runs nothing.
type RunAnalystResult struct {
	AnalystID NodeID  `json:"analystWorkerId"`
	Kind      string  `json:"kind"`
	WorkerID  NodeID  `json:"workerId"`
	Resumed   Resumed `json:"resumed,omitzero"`
	Findings  *string `json:"findings,omitzero"`
	Live      int     `json:"live"`
	FreeSlots *int    `json:"freeSlots"`
}

// analystKey is the idempotency key of lens kind over worker: one
// analysis per pair, journaled like any keyed spawn.
func analystKey(kind string, worker NodeID) string { return "analyst:" + kind + ":" + string(worker) }

// requestedKey names a requested analysis per asking manager (empty for
// the root): the root and a nested manager may each ask for the same
// lens over a worker of the nested manager's subtree.
func requestedKey(manager NodeID, key string) string { return string(manager) + " " + key }

// ParseAnalystKey returns the lens and the analysed worker of an
// analyst's spawn key (a journaled spawned record's Key); ok is false
// for any other key.
func ParseAnalystKey(key string) (kind string, worker NodeID, ok bool) {
	rest, ok := strings.CutPrefix(key, "analyst:")
	if !ok {
		return "", "", false
	}
	kind, w, ok := strings.Cut(rest, ":")
	return kind, NodeID(w), ok && kind != "" && w != ""
}

// RunAnalyst runs lens kind over a settled worker: the analyst is a
// worker of this run (reserved from and charged to its pool, journaled
// as a keyed spawn), whose output is findings, never a deliverable.
// Refusals: unknown-analyst (not on the menu), unknown-worker,
// worker-not-settled, not-a-worker (an analyst's own findings), and the
// spawn refusals of the scope (budget, live workers, in-doubt…): the
// analyst crosses the same fences as any spawn, AllowedModels and
// AuthorizeSpawn included, which see it as profile "analyst-<lens id>"
// with label "analyst:<lens id>".
func (c *Coordinator) RunAnalyst(ctx context.Context, a RunAnalystArgs) (RunAnalystResult, error) {
	c.mu.Lock()
	lens, onMenu := c.lenses.find(a.Kind)
	menu := make([]string, 0, len(c.lenses.lenses))
	for _, l := range c.lenses.lenses {
		menu = append(menu, l.ID)
	}
	target := c.workers[a.WorkerID]
	_, isAnalyst := c.analysts[a.WorkerID]
	c.mu.Unlock()
	if !onMenu {
		return RunAnalystResult{}, &VerbRefusal{Code: "unknown-analyst", Reason: fmt.Sprintf("%q is not on the menu (%s)", a.Kind, strings.Join(menu, ", "))}
	}
	info, ok := c.scope.Node(a.WorkerID)
	if !ok || target == nil || !c.reaches(a.WorkerID) {
		// A nested manager analyses its own subtree only, as it
		// observes and steers it.
		return RunAnalystResult{}, fmt.Errorf("%w: %s", ErrUnknownWorker, a.WorkerID)
	}
	if info.Settlement == nil {
		return RunAnalystResult{}, &VerbRefusal{Code: "worker-not-settled", Reason: fmt.Sprintf("worker %s is %s; analyse it once it settled", a.WorkerID, info.State)}
	}
	if isAnalyst {
		return RunAnalystResult{}, &VerbRefusal{Code: "not-a-worker", Reason: fmt.Sprintf("%s is an analyst; its output is findings already", a.WorkerID)}
	}
	p := c.analystProfile(lens, info.Profile)
	c.mu.Lock()
	text := target.text
	c.mu.Unlock()
	req := SpawnRequest{Label: "analyst:" + lens.ID, Profile: *p.Name, Task: analystTask(lens, info, text), Key: analystKey(lens.ID, a.WorkerID)}
	if c.parent != nil {
		// A nested manager's analyst is its own child: reserved from
		// its carved pool, its finding settled to its await_event.
		req.Parent = c.self
	}
	if p.Model != nil && p.Model.Default != nil {
		req.Model = *p.Model.Default
	}
	if lens.Limits != nil && lens.Limits.Iterations != nil {
		n := int64(*lens.Limits.Iterations)
		req.Budget.Iterations = &n
	}
	if err := c.analystEnded(); err != nil {
		return RunAnalystResult{}, err
	}
	c.spawnMu.Lock()
	asked := requestedKey(req.Parent, req.Key)
	journaled := false // this call journaled the request
	if !c.requested[asked] {
		// The intent is durable before the analyst is: a process that
		// dies before the spawn record leaves it for the resumed run.
		if err := c.log.append(ctx, Record{Kind: KindAnalysisRequested, Key: req.Key, Label: lens.ID, Node: a.WorkerID, Parent: req.Parent}); err != nil {
			c.spawnMu.Unlock()
			return RunAnalystResult{}, err
		}
		c.requested[asked], journaled = true, true
	}
	// refused withdraws the request this call journaled when the
	// analysis was refused (c.spawnMu held): the manager was told it did
	// not happen, so a resumed run must not start it on its own.
	refused := func(err error) error {
		if _, ok := refusalResult(err); !ok || !journaled || !c.requested[asked] {
			return err
		}
		if werr := c.log.append(ctx, Record{Kind: KindAnalysisRefused, Key: req.Key, Label: lens.ID, Node: a.WorkerID, Parent: req.Parent}); werr != nil {
			c.logger.Warn("supervise: journaling a refused analysis", "lens", lens.ID, "worker", a.WorkerID, "err", werr)
			return err
		}
		c.requested[asked] = false
		return err
	}
	authorized := c.scope.opts.AuthorizeSpawn != nil
	if authorized {
		// The caller's hook decides without spawnMu, as it does for
		// spawn_worker (Spawn): the other workers' settlements and verbs
		// go on meanwhile, and the scope checks its fences again when it
		// admits.
		c.spawnMu.Unlock()
		if err := c.scope.authorizeFirst(ctx, req); err != nil {
			c.spawnMu.Lock()
			defer c.spawnMu.Unlock()
			return RunAnalystResult{}, refused(c.spawnRefused(req, err))
		}
		c.spawnMu.Lock()
	}
	defer c.spawnMu.Unlock()
	// A stop made since the check above admits nothing more: Stop takes
	// spawnMu, so none lands between this and the admission.
	if err := c.analystEnded(); err != nil {
		return RunAnalystResult{}, refused(err)
	}
	reply, err := c.admit(ctx, req, canonjson.Value{}, authorized)
	if err != nil {
		return RunAnalystResult{}, refused(err)
	}
	out := RunAnalystResult{AnalystID: reply.Node, Kind: lens.ID, WorkerID: a.WorkerID, Resumed: reply.Resumed, Live: reply.Live, FreeSlots: reply.FreeSlots}
	if reply.Resumed == ResumedCompleted {
		c.mu.Lock()
		if w := c.workers[reply.Node]; w != nil {
			f := w.text
			out.Findings = &f
		}
		c.mu.Unlock()
		return out, nil
	}
	c.startAnalyst(reply.Node, p, req.Task, reply, lens, a.WorkerID)
	return out, nil
}

// analystEnded is run_analyst's refusal when this manager stopped or the
// run is ending, nil while an analyst may start.
func (c *Coordinator) analystEnded() error {
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	switch {
	case stopped:
		return c.refusal(CodeScopeSettled, "stopped", "the manager stopped")
	case c.workCtx != nil && c.workCtx.Err() != nil:
		// The brain returned (or the run was cancelled): an analyst
		// admitted now would only be cancelled, its reservation wasted.
		return c.refusal(CodeScopeSettled, "ended", "the run is ending; nothing more runs")
	}
	return nil
}

// analystProfile is the profile lens's analyst runs: the lens's
// instructions as its system prompt, on the lens's model or the
// analysed worker's, declaring no tools.
func (c *Coordinator) analystProfile(l Lens, analysed string) *profile.Profile {
	p := &profile.Profile{Name: new("analyst-" + l.ID), Description: new(l.Description), Harness: harness.CLIBase,
		Prompt:   &profile.Prompt{SystemPrompt: new(l.Instructions)},
		Metadata: map[string]canonjson.Value{"analystLens": canonjson.StringValue(l.ID), "toolGroup": canonjson.StringValue(string(l.ToolGroup))}}
	if wp := c.profiles[analysed]; wp != nil && wp.Model != nil {
		m := *wp.Model
		p.Model = &m
	}
	if l.Model != "" {
		m := profile.ModelHints{}
		if p.Model != nil {
			m = *p.Model
		}
		m.Default = new(l.Model)
		p.Model = &m
	}
	return p
}

// analystTask is the analyst's task: the lens's question over the
// analysed worker's output.
func analystTask(l Lens, info NodeInfo, output string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ANALYST LENS %s (%s): %s\n\n", l.ID, l.Area, l.Question)
	fmt.Fprintf(&b, "Worker %s (profile %s) settled %s", info.ID, info.Profile, info.State)
	if info.Settlement != nil && info.Settlement.Reason != "" {
		fmt.Fprintf(&b, " (%s)", info.Settlement.Reason)
	}
	b.WriteString(". Its output:\n")
	b.WriteString(clip(output, analysedOutput))
	if l.Limits != nil {
		if n := l.Limits.LLMCalls; n != nil {
			fmt.Fprintf(&b, "\n\nUse at most %d model calls", *n)
			if t := l.Limits.ToolCalls; t != nil {
				fmt.Fprintf(&b, " and %d tool calls", *t)
			}
			b.WriteString(".")
		}
	}
	if n := l.MinimumEvidenceCitations; n != nil && *n > 0 {
		fmt.Fprintf(&b, "\n\nCite at least %d pieces of evidence from the output, quoted.", *n)
	}
	return b.String()
}

// startAnalyst starts an admitted analyst in the background, as start
// does a worker, marking it an analyst first.
func (c *Coordinator) startAnalyst(id NodeID, p *profile.Profile, task string, reply SpawnReply, l Lens, source NodeID) {
	limit := MaxLensOutput
	if l.Limits != nil && l.Limits.OutputChars != nil {
		limit = *l.Limits.OutputChars
	}
	c.mu.Lock()
	c.analysts[id] = analystOf{lens: l.ID, source: source, limit: limit}
	c.mu.Unlock()
	var exec Executor // the run's Executor: the lens's output only
	if c.analystModel != nil {
		exec = toolAnalyst{c: c, model: c.analystModel, lens: l, source: source}
	}
	c.start(id, p, task, reply.Reserved, exec)
}

// analystOf marks a worker as lens lens's analyst over source.
type analystOf struct {
	lens   string
	source NodeID
	limit  int
}

// Finding is an analyst's settlement, as Options.AfterSettle sees it.
type Finding struct {
	Lens     string
	Source   NodeID
	Findings string
}

// replayAnalyst restores the analyst marks, defined lenses, requested
// analyses and unfinished settlement hooks of a resumed run's journal
// record r (called from replayRecords).
func (c *Coordinator) replayAnalyst(r Record) error {
	switch r.Kind {
	case KindAnalysisRequested:
		if asked := requestedKey(r.Parent, r.Key); !c.requested[asked] {
			c.requested[asked] = true
			c.intents = append(c.intents, analysisIntent{lens: r.Label, source: r.Node, manager: r.Parent})
		}
	case KindAnalysisRefused:
		if asked := requestedKey(r.Parent, r.Key); c.requested[asked] {
			c.requested[asked] = false
			c.intents = slices.DeleteFunc(c.intents, func(in analysisIntent) bool {
				return in.lens == r.Label && in.source == r.Node && in.manager == r.Parent
			})
		}
	case KindSettled:
		if r.Hook {
			c.hooksOpen = append(c.hooksOpen, r.Node)
		}
	case KindAfterSettle:
		c.hooksOpen = slices.DeleteFunc(c.hooksOpen, func(id NodeID) bool { return id == r.Node })
	case KindAnalystDefined:
		l, err := journaledLens(r.Data)
		if err != nil {
			return &ResumeError{RunDir: c.log.where, Reason: "an analyst-defined record does not decode", Err: err}
		}
		if err := ValidateLens(l); err != nil {
			return &ResumeError{RunDir: c.log.where, Reason: "a journaled lens is invalid", Err: err}
		}
		if _, ok := c.lenses.find(l.ID); !ok {
			// A journal written before definitions named their manager
			// made them all the root's.
			by := r.Node
			if by == "" {
				by = c.root.self
			}
			c.lenses.add(l, by)
			c.lenses.earlier++
		}
	case KindSpawned:
		if kind, src, ok := ParseAnalystKey(r.Key); ok {
			limit := MaxLensOutput
			if l, ok := c.lenses.find(kind); ok && l.Limits != nil && l.Limits.OutputChars != nil {
				limit = *l.Limits.OutputChars
			}
			c.analysts[r.Node] = analystOf{lens: kind, source: src, limit: limit}
		}
	}
	return nil
}

// Settled is a worker's settlement as Options.AfterSettle sees it, once
// it is journaled and queued for Await. Finding is set when the worker
// is an analyst.
type Settled struct {
	Node    NodeInfo
	Text    string
	Finding *Finding
}

// afterSettled calls Options.AfterSettle for w, turning a panic into a
// logged error. A process that lost the run's journal (ErrSpawnLogLost)
// calls it no more: the hook's effects are the run's next holder's,
// which runs every hook the journal left open.
func (c *Coordinator) afterSettled(ctx context.Context, w *worker) {
	if err := c.log.heldErr(); err != nil {
		c.logger.Warn("supervise: the run's journal was lost; its settlement hook is left to the next holder", "node", w.id, "err", err)
		return
	}
	info, _ := c.scope.Node(w.id)
	c.mu.Lock()
	s := Settled{Node: info, Text: w.text}
	if a, ok := c.analysts[w.id]; ok {
		s.Finding = &Finding{Lens: a.lens, Source: a.source, Findings: w.text}
	}
	c.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			c.logger.Error("supervise: AfterSettle panicked", "node", w.id, "panic", p)
		}
	}()
	c.afterSettle(context.WithoutCancel(ctx), c.root, s) // a run-level hook: the root's view
}

// releaseInflight ends a busy mark and wakes Await's waiters.
func (c *Coordinator) releaseInflight() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight--
	c.wakeLocked()
}

// analysisIntent is a requested analysis: lens over source.
type analysisIntent struct {
	lens   string
	source NodeID
	// manager is the nested manager that asked for it, empty for the
	// root.
	manager NodeID
}

// resumeAnalyses finishes what the journal shows the process before
// this one left half done, before the brain drives: each settlement
// hook that never returned runs again (in journal order; an analysis
// it starts that already has an analyst is answered from the journal,
// not run twice), then each requested analysis that still has no
// analyst is started. An analysis that cannot start (its lens is off
// the menu, the budget is spent, …) is reported in the coordination log
// as FindingNotRun and logged; nothing is silently dropped.
//
// A nested manager's analyses are started by resumeNestedAnalyses once
// its manager is driven again: its analyst is its child, run under its
// context.
func (c *Coordinator) resumeAnalyses(ctx context.Context) {
	c.mu.Lock()
	hooks := c.hooksOpen
	var intents, nested []analysisIntent
	for _, in := range c.intents {
		if in.manager == "" {
			intents = append(intents, in)
		} else {
			nested = append(nested, in)
		}
	}
	c.hooksOpen, c.intents = nil, nested
	c.mu.Unlock()
	if c.afterSettle != nil {
		for _, id := range hooks {
			c.mu.Lock()
			w := c.workers[id]
			c.mu.Unlock()
			if w == nil {
				continue
			}
			c.afterSettled(ctx, w)
			c.hookDone(ctx, id)
		}
	}
	c.startIntents(ctx, intents)
}

// resumeNestedAnalyses starts the analyses nested managers requested
// and the process before this one left without an analyst, once
// redriveManagers drove those managers again; one not driven again
// cannot start its analyst (FindingNotRun).
func (c *Coordinator) resumeNestedAnalyses(ctx context.Context) {
	c.mu.Lock()
	intents := c.intents
	c.intents = nil
	c.mu.Unlock()
	c.startIntents(ctx, intents)
}

func (c *Coordinator) startIntents(ctx context.Context, intents []analysisIntent) {
	for _, in := range intents {
		manager := in.manager
		if manager == "" {
			manager = c.root.self
		}
		c.mu.Lock()
		started := false
		for id, a := range c.analysts {
			if a.lens == in.lens && a.source == in.source && parentOrRoot(id, c.root.self) == manager {
				started = true
				break
			}
		}
		c.mu.Unlock()
		if started {
			continue
		}
		v := c.viewOf(in.manager)
		c.mu.Lock()
		driven := v.workCtx != nil
		c.mu.Unlock()
		var err error
		if !driven {
			err = fmt.Errorf("its manager %s is not driven again", in.manager)
		} else {
			_, err = v.RunAnalyst(ctx, RunAnalystArgs{Kind: in.lens, WorkerID: in.source})
		}
		if err != nil {
			c.logger.Warn("supervise: a requested analysis could not be started on resume", "lens", in.lens, "worker", in.source, "err", err)
			rec := CoordRecord{Kind: CoordFinding, Finding: &FindingRecord{Outcome: FindingNotRun, Lens: in.lens, Source: in.source,
				Reason: "the resumed run could not start it: " + err.Error()}}
			if err := c.log.appendCoordOrLose(ctx, rec, in.source); err != nil {
				c.logger.Error("supervise: reporting an analysis not run", "err", err)
			}
		}
	}
}

// hookDone journals that Options.AfterSettle returned for node.
func (c *Coordinator) hookDone(ctx context.Context, node NodeID) {
	if err := c.log.appendOrLose(context.WithoutCancel(ctx), Record{Kind: KindAfterSettle, Node: node}); err != nil {
		c.logger.Error("supervise: journaling a settlement hook's end", "node", node, "err", err)
	}
}

// recordFinding appends analyst w's settlement to the coordination log
// (§3.6: findings are evidence there, never delivered again).
func (c *Coordinator) recordFinding(ctx context.Context, w *worker, a analystOf, state State, outRef string) {
	reason := w.reason
	c.mu.Lock()
	if stop := c.analystStops[w.id]; stop != "" && reason == "" {
		reason = stop
	}
	c.mu.Unlock()
	rec := CoordRecord{Kind: CoordFinding, Finding: &FindingRecord{Outcome: FindingSettled, Lens: a.lens, Source: a.source,
		Analyst: w.id, State: state, Findings: w.text, OutRef: outRef, Reason: reason}}
	if err := c.log.appendCoordOrLose(ctx, rec, w.id); err != nil {
		c.logger.Error("supervise: recording a finding", "node", w.id, "err", err)
	}
}

// legacyLimitKeys are the names a lens's limits had before they took the
// reference's (maxIterations, …): a run journaled then still resumes.
var legacyLimitKeys = map[string]string{"iterations": "maxIterations", "llmCalls": "maxLlmCalls", "toolCalls": "maxToolCalls", "outputChars": "maxOutputChars"}

// journaledLens decodes an analyst-defined record's lens, its limits
// under their names or the legacy ones.
func journaledLens(data canonjson.Value) (Lens, error) {
	var l Lens
	err := canonjson.FromValue(data, &l)
	if err == nil {
		return l, nil
	}
	var m map[string]any
	if json.Unmarshal(canonjson.Marshal(data), &m) != nil {
		return Lens{}, err
	}
	lim, ok := m["limits"].(map[string]any)
	if !ok {
		return Lens{}, err
	}
	renamed := map[string]any{}
	for k, v := range lim {
		if nk, ok := legacyLimitKeys[k]; ok {
			k = nk
		}
		renamed[k] = v
	}
	m["limits"] = renamed
	raw, merr := json.Marshal(m)
	if merr != nil {
		return Lens{}, err
	}
	v, derr := canonjson.Decode(raw)
	if derr != nil {
		return Lens{}, err
	}
	var old Lens
	if canonjson.FromValue(v, &old) != nil {
		return Lens{}, err
	}
	return old, nil
}
