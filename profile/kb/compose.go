package kb

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/profile"
)

// Block is one block of standing guidance composed into a profile's
// prompt. Source names the layer the text came from ("harness", "model",
// "learning" or another knowledge layer's own name) and ID names the
// subject, so a composed block can be found and replaced later. The
// profile's own prompt text is never a block.
type Block struct {
	Source string `json:"source"`
	ID     string `json:"id"`
	Text   string `json:"text"`
}

// Channel is the prompt field composed guidance lands in.
type Channel string

// The guidance channels.
const (
	// AppendSystemPrompt keeps the harness's system prompt and adds the
	// guidance to it (prompt.appendSystemPrompt).
	AppendSystemPrompt Channel = "appendSystemPrompt"
	// Instructions uses the harness's caller-instruction surface
	// (prompt.instructions), for harnesses without an additive
	// system-prompt control.
	Instructions Channel = "instructions"
)

// ComposeOptions configures [ComposeGuidance].
type ComposeOptions struct {
	// ReplaceSources lists the block sources this composition owns:
	// earlier blocks from them are removed, blocks from other sources stay
	// in place. Nil means every source is owned, so every earlier block is
	// removed (KB-20); a non-nil empty slice owns none.
	ReplaceSources []string
}

// The block marker. A block renders as
//
//	<profile-guidance source="S" id="I">\nTEXT\n</profile-guidance>
const (
	guidanceOpener = "<profile-guidance "
	guidanceCloser = "</profile-guidance>"
	lineCloser     = "\n" + guidanceCloser
)

// guidanceBlock finds composed blocks in appendSystemPrompt text: an
// opener line, the shortest body, a closer at the start of a line, and the
// "\n\n" separator that followed it, if any.
var guidanceBlock = regexp.MustCompile(`<profile-guidance source="([^"]*)" id="[^"]*">\n(?s:.*?)\n</profile-guidance>(\n\n)?`)

// guidanceLineOpener is the start of a line that is one whole block.
var guidanceLineOpener = regexp.MustCompile(`^<profile-guidance source="([^"]*)" id="[^"]*">\n`)

// ErrInvalidChannel is returned by [ComposeGuidance] for a channel other
// than AppendSystemPrompt and Instructions.
var ErrInvalidChannel = errors.New("profile/kb: channel must be appendSystemPrompt or instructions")

// ErrNilProfile is returned when the profile to compose is nil.
var ErrNilProfile = errors.New("profile/kb: profile is nil")

// RenderError refuses a block that would forge or break the block marker:
// a source or id holding a quote or a newline, or text holding the closing
// marker. (An opening marker inside the text is allowed.)
type RenderError struct {
	// Index is the block's position in the blocks passed in.
	Index int
	// Field is "source", "id" or "text".
	Field  string
	Reason string
}

// Error implements error.
func (e *RenderError) Error() string {
	return fmt.Sprintf("profile/kb: guidance block %d: %s %s", e.Index, e.Field, e.Reason)
}

func renderBlock(i int, b Block) (string, error) {
	if strings.ContainsAny(b.Source, "\"\n") {
		return "", &RenderError{Index: i, Field: "source", Reason: "must not contain quotes or newlines"}
	}
	if strings.ContainsAny(b.ID, "\"\n") {
		return "", &RenderError{Index: i, Field: "id", Reason: "must not contain quotes or newlines"}
	}
	if strings.Contains(b.Text, guidanceCloser) {
		return "", &RenderError{Index: i, Field: "text", Reason: "must not contain a closing block marker"}
	}
	return `<profile-guidance source="` + b.Source + `" id="` + b.ID + "\">\n" + b.Text + lineCloser, nil
}

// owner reports whether a source is owned by a composition.
type owner func(source string) bool

func ownerOf(opts ComposeOptions) owner {
	if opts.ReplaceSources == nil {
		return func(string) bool { return true }
	}
	set := slices.Clone(opts.ReplaceSources)
	return func(s string) bool { return slices.Contains(set, s) }
}

// ComposeGuidance composes guidance blocks into a copy of p's prompt and
// returns it; p is not changed. It is the composer under [WithProfileKB]
// and is meant for other knowledge layers too: give each layer its own
// source name and pass it in ReplaceSources (KB-18, KB-19).
//
// The blocks come first, in the order given, each rendered as
//
//	<profile-guidance source="S" id="I">
//	TEXT
//	</profile-guidance>
//
// and the profile's own text comes last. Before composing, earlier blocks
// from owned sources are removed from both channels: from
// appendSystemPrompt wherever they appear, together with the blank-line
// separator after them, and from instructions where a whole line is
// exactly one owned block. A hand-written block with an owned source counts
// as composed and is replaced too (KB-21). Where a block's extent is
// ambiguous (a match holding a second opener, followed by another closer
// before the next opener) the text is kept whole: recomposition may then
// leave a stale block in caller text, but it never truncates caller text.
//
// On the AppendSystemPrompt channel, the rendered blocks and the remaining
// own text are joined with "\n\n"; the remaining instructions are kept. On
// the Instructions channel, the remaining own appendSystemPrompt text is
// kept and the rendered blocks are put before the remaining instructions.
// Present-but-empty values ("" and []) are preserved, and no absent field
// is ever written, so composing the same blocks twice yields the same
// profile and the same digest.
//
// A block whose source or id holds a quote or newline, or whose text holds
// the closing marker, is refused with a *RenderError.
func ComposeGuidance(p *profile.Profile, blocks []Block, channel Channel, opts ComposeOptions) (*profile.Profile, error) {
	if p == nil {
		return nil, ErrNilProfile
	}
	if channel != AppendSystemPrompt && channel != Instructions {
		return nil, ErrInvalidChannel
	}
	rendered := make([]string, 0, len(blocks))
	for i, b := range blocks {
		r, err := renderBlock(i, b)
		if err != nil {
			return nil, err
		}
		rendered = append(rendered, r)
	}
	owned := ownerOf(opts)

	var prompt profile.Prompt
	if p.Prompt != nil {
		prompt = *p.Prompt
	}
	ownAppend := stripGuidance(prompt.AppendSystemPrompt, owned)
	var ownInstructions []string
	if prompt.Instructions != nil {
		ownInstructions = make([]string, 0, len(prompt.Instructions))
		for _, line := range prompt.Instructions {
			if !isOwnedGuidanceLine(line, owned) {
				ownInstructions = append(ownInstructions, line)
			}
		}
	}

	next := profile.Prompt{SystemPrompt: clonePtr(prompt.SystemPrompt)}
	switch channel {
	case AppendSystemPrompt:
		parts := rendered
		if ownAppend != nil && *ownAppend != "" {
			parts = append(parts, *ownAppend)
		}
		if len(parts) > 0 {
			next.AppendSystemPrompt = ptr(strings.Join(parts, "\n\n"))
		} else if ownAppend != nil {
			next.AppendSystemPrompt = ptr(*ownAppend)
		}
		next.Instructions = ownInstructions
	case Instructions:
		if ownAppend != nil {
			next.AppendSystemPrompt = ptr(*ownAppend)
		}
		lines := append(rendered, ownInstructions...)
		if len(lines) > 0 || prompt.Instructions != nil {
			if lines == nil {
				lines = []string{}
			}
			next.Instructions = lines
		}
	}

	out, err := profile.Clone(p)
	if err != nil {
		return nil, fmt.Errorf("profile/kb: copy profile: %w", err)
	}
	if next.SystemPrompt != nil || next.AppendSystemPrompt != nil || next.Instructions != nil || p.Prompt != nil {
		out.Prompt = &next
	} else {
		out.Prompt = nil
	}
	return out, nil
}

// stripGuidance removes the blocks of owned sources from appendSystemPrompt
// text. Nil stays nil, "" stays "", and a result that becomes empty is nil.
func stripGuidance(text *string, owned owner) *string {
	if text == nil || *text == "" {
		return clonePtr(text)
	}
	s := *text
	var b strings.Builder
	last := 0
	keptUntil := 0
	strippedLast := false
	for _, m := range guidanceBlock.FindAllStringSubmatchIndex(s, -1) {
		start, end := m[0], m[1]
		block := s[start:end]
		source := s[m[2]:m[3]]
		if start < keptUntil || !owned(source) || mayBeCutShort(s, block, start) {
			if strings.Contains(block[1:], guidanceOpener) {
				keptUntil = max(keptUntil, balancedEnd(s, start))
			}
			continue
		}
		if m[4] < 0 && end == len(s) {
			strippedLast = true
		}
		b.WriteString(s[last:start])
		last = end
	}
	b.WriteString(s[last:])
	out := b.String()
	// A removed final block leaves the separator written before it.
	if strippedLast && strings.HasSuffix(out, "\n\n") {
		out = out[:len(out)-2]
	}
	if out == "" {
		return nil
	}
	return &out
}

// mayBeCutShort reports whether a match holding a second opener may be an
// outer block cut short by an inner one: another closer follows it before
// the next opener.
func mayBeCutShort(text, block string, offset int) bool {
	if !strings.Contains(block[1:], guidanceOpener) {
		return false
	}
	rest := text[offset+len(block):]
	nextClose := strings.Index(rest, guidanceCloser)
	if nextClose < 0 {
		return false
	}
	nextOpen := strings.Index(rest, guidanceOpener)
	return nextOpen < 0 || nextClose < nextOpen
}

// balancedEnd returns the end of the block that opens at offset, counting
// nested markers, or -1 when the markers never balance. A closer counts only
// at the start of a line, and an opener's line is skipped.
func balancedEnd(text string, offset int) int {
	depth := 0
	at := offset
	for {
		open := indexFrom(text, guidanceOpener, at)
		closeAt := indexFrom(text, lineCloser, at)
		if closeAt < 0 {
			return -1
		}
		if open >= 0 && open < closeAt {
			depth++
			lineEnd := indexFrom(text, "\n", open)
			if lineEnd < 0 {
				return -1
			}
			at = lineEnd
		} else {
			depth--
			at = closeAt + len(lineCloser)
			if depth == 0 {
				return at
			}
		}
	}
}

func indexFrom(s, sub string, from int) int {
	if from > len(s) {
		return -1
	}
	i := strings.Index(s[from:], sub)
	if i < 0 {
		return -1
	}
	return from + i
}

// isOwnedGuidanceLine reports whether an instruction line is, as a whole,
// exactly one block from an owned source. A line that merely starts with an
// opener is caller text.
func isOwnedGuidanceLine(line string, owned owner) bool {
	m := guidanceLineOpener.FindStringSubmatchIndex(line)
	if m == nil {
		return false
	}
	bodyStart := m[1]
	bodyEnd := len(line) - len(lineCloser)
	if bodyEnd < bodyStart || !strings.HasSuffix(line, lineCloser) {
		return false
	}
	if strings.Contains(line[bodyStart:bodyEnd], guidanceCloser) {
		return false
	}
	return owned(line[m[2]:m[3]])
}

func ptr[T any](v T) *T { return &v }

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
