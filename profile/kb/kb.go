package kb

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// The block sources the knowledge base owns (KB-17).
const (
	SourceHarness  = "harness"
	SourceModel    = "model"
	SourceLearning = "learning"
)

// Sources returns the block sources the knowledge base owns, ["harness",
// "model", "learning"]: [WithProfileKB] replaces blocks from these sources
// and keeps blocks any other layer added (KB-17). Each call returns a new
// slice.
func Sources() []string { return []string{SourceHarness, SourceModel, SourceLearning} }

// Snapshot returns a deep copy of the shipped knowledge base.
func Snapshot() Data { return shippedData() }

// Harnesses returns a deep copy of the harness entries (KB-22).
func Harnesses() []Harness { return shippedHarnesses() }

// Models returns a deep copy of the model entries (KB-22).
func Models() []Model { return shippedModels() }

// Learnings returns a deep copy of the platform learnings: guidance
// admitted only after an agent-eval check reproduced it (KB-24). It is
// empty: no learning has been reproduced yet.
func Learnings() []Learning { return shippedData().Learnings }

// Discrepancies returns a deep copy of the dated naming and availability
// checks whose observation differed from what was assumed (KB-25).
func Discrepancies() []Discrepancy { return shippedDiscrepancies() }

// OperatorNotes returns the operator notes for harness h: its
// operator-audience, non-hypothesis claim texts, for whoever launches it
// (KB-23). They never enter a profile. Nil for a harness without an entry.
func OperatorNotes(h harness.Type) []string {
	for _, e := range shippedHarnesses() {
		if e.ID == h {
			return e.Operator()
		}
	}
	return nil
}

// Selection chooses the harness and model to compose guidance for. An
// empty field falls back to the profile's own harness and model.default.
type Selection struct {
	Harness harness.Type
	Model   string
}

// WithProfileKB composes the knowledge base's guidance for a harness and
// model into a copy of p (KB-13): the harness's agent guidance as a block
// "Harness guidance: <name>." followed by one "- " bullet per claim, then
// the model's as "Model guidance: <name>.", then any reproduced learnings
// scoped to that harness or model, then the profile's own text. Entries
// with no agent guidance contribute no block (KB-11); operator notes and
// hypotheses never enter the profile (KB-09, KB-10).
//
// The harness is sel.Harness or else p.Harness, matched exactly. The model
// is sel.Model or else p.Model.Default, matched case-insensitively against
// model ids and aliases after dropping a trailing ":suffix" (such as a
// thinking level) and then each leading "provider/" or route segment in
// turn; a different version never matches. p's own harness field is not
// changed.
//
// Guidance goes into prompt.appendSystemPrompt when the harness owns an
// additive system-prompt control ([harness.PromptIntents] Append) and into
// prompt.instructions otherwise (KB-14). It composes with [ComposeGuidance]
// owning exactly [Sources], so recomposing, including for an executor's
// harness or model override, replaces what an earlier call wrote and keeps
// other layers' blocks: WithProfileKB(WithProfileKB(p)) equals
// WithProfileKB(p) (KB-15, KB-16).
func WithProfileKB(p *profile.Profile, sel Selection) (*profile.Profile, error) {
	return shipped.compose(p, sel)
}

// index is the frozen data composition reads; nothing outside the package
// can reach it.
type index struct {
	harnesses []Harness
	models    []Model
	learnings []Learning
	byName    map[string]int
}

var shipped = mustIndex(shippedData())

func mustIndex(d Data) *index {
	if err := d.Validate(); err != nil {
		panic(err)
	}
	return newIndex(d)
}

func newIndex(d Data) *index {
	x := &index{harnesses: d.Harnesses, models: d.Models, learnings: d.Learnings, byName: map[string]int{}}
	for i, m := range d.Models {
		for _, name := range append([]string{m.ID}, m.Aliases...) {
			if _, dup := x.byName[jsLower(name)]; !dup {
				x.byName[jsLower(name)] = i
			}
		}
	}
	return x
}

func (x *index) harness(h harness.Type) (Harness, bool) {
	if h == "" {
		return Harness{}, false
	}
	for _, e := range x.harnesses {
		if e.ID == h {
			return e, true
		}
	}
	return Harness{}, false
}

// model finds a model entry by id or alias: cut a trailing ":suffix" (a
// colon at index 0 is kept), trim and lower-case as JavaScript does, then
// try the whole name and each name left after dropping through the first
// "/".
func (x *index) model(name string) (Model, bool) {
	if name == "" {
		return Model{}, false
	}
	if i := strings.LastIndexByte(name, ':'); i > 0 {
		name = name[:i]
	}
	candidate := jsLower(canonjson.TrimJS(name))
	for {
		if i, ok := x.byName[candidate]; ok {
			return x.models[i], true
		}
		slash := strings.IndexByte(candidate, '/')
		if slash < 0 {
			return Model{}, false
		}
		candidate = candidate[slash+1:]
	}
}

// learningsFor selects the learnings whose set scope fields equal the found
// harness and model ids and that set at least one. It checks nothing else
// (KB-34).
func (x *index) learningsFor(h *Harness, m *Model) []Learning {
	var out []Learning
	for _, l := range x.learnings {
		s := l.AppliesTo
		if s.Harness != "" && (h == nil || s.Harness != h.ID) {
			continue
		}
		if s.Model != "" && (m == nil || s.Model != m.ID) {
			continue
		}
		if s.Harness != "" || s.Model != "" {
			out = append(out, l)
		}
	}
	return out
}

// guidance returns the kb blocks for a harness and model, in order:
// harness, model, learnings.
func (x *index) guidance(h harness.Type, model string) []Block {
	var blocks []Block
	var hp *Harness
	var mp *Model
	if e, ok := x.harness(h); ok {
		hp = &e
		if lines := e.Prompt(); len(lines) > 0 {
			blocks = append(blocks, Block{Source: SourceHarness, ID: string(e.ID), Text: "Harness guidance: " + e.Name + ".\n" + bullets(lines)})
		}
	}
	if e, ok := x.model(model); ok {
		mp = &e
		if lines := e.Prompt(); len(lines) > 0 {
			blocks = append(blocks, Block{Source: SourceModel, ID: e.ID, Text: "Model guidance: " + e.Name + ".\n" + bullets(lines)})
		}
	}
	if ls := x.learningsFor(hp, mp); len(ls) > 0 {
		ids := make([]string, len(ls))
		texts := make([]string, len(ls))
		for i, l := range ls {
			ids[i], texts[i] = l.ID, l.Text
		}
		blocks = append(blocks, Block{Source: SourceLearning, ID: strings.Join(ids, ","), Text: bullets(texts)})
	}
	return blocks
}

func (x *index) compose(p *profile.Profile, sel Selection) (*profile.Profile, error) {
	if p == nil {
		return nil, ErrNilProfile
	}
	h := sel.Harness
	if h == "" {
		h = p.Harness
	}
	model := sel.Model
	if model == "" && p.Model != nil && p.Model.Default != nil {
		model = *p.Model.Default
	}
	channel := Instructions
	if harness.PromptIntents(h).Append {
		channel = AppendSystemPrompt
	}
	return ComposeGuidance(p, x.guidance(h, model), channel, ComposeOptions{ReplaceSources: Sources()})
}

func bullets(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("- ")
		b.WriteString(l)
	}
	return b.String()
}

// jsLower lower-cases s as JavaScript's toLowerCase does for the purpose
// of matching: Go's simple mapping except U+0130, which JavaScript maps to
// "i" + U+0307 rather than to "i". Bytes that are not UTF-8 are kept.
func jsLower(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteByte(s[i])
		case r == 0x130:
			b.WriteString("i\u0307")
		default:
			b.WriteRune(unicode.ToLower(r))
		}
		i += size
	}
	return b.String()
}
