package kb

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/google/go-cmp/cmp"
)

// gen builds random profiles whose prompt text mixes plain text, blank-line
// separators, complete blocks of kb and other sources, hand-written openers
// without a closer or without a line break, and stray closers.
type gen struct{ r *rand.Rand }

func (g gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

var (
	genHarnesses = append(harness.All(), "")
	genModels    = []string{"", "gpt-6.1-sol", "openai/gpt-5.5:high", "claude-fable-5", "claude-opus-5-5", "unknown-model", "pi/router/openai/gpt-6-luna"}
	genSources   = []string{"harness", "model", "learning", "team", "other"}
)

func (g gen) piece() string {
	switch g.r.IntN(10) {
	case 0, 1:
		return g.pick([]string{"Cite the file you read.", "x", "line one\nline two", "é😀", " "})
	case 2:
		return "\n\n"
	case 3:
		return "\n"
	case 4, 5:
		return render(Block{Source: g.pick(genSources), ID: g.pick([]string{"a", "b", "claude-code"}), Text: g.pick([]string{"t", "", "two\nlines"})})
	case 6:
		return "<profile-guidance source=\"" + g.pick(genSources) + "\" id=\"z\">\n" + g.pick([]string{"open", ""})
	case 7:
		return "\n</profile-guidance>"
	case 8:
		// An opener with no line break: removing a block after it can
		// join the two into a new block.
		return "<profile-guidance source=\"" + g.pick(genSources) + "\" id=\"j\">"
	default:
		return "</profile-guidance>"
	}
}

func (g gen) text() string {
	var b strings.Builder
	for range g.r.IntN(6) {
		b.WriteString(g.piece())
	}
	return b.String()
}

func (g gen) optText() *string {
	switch g.r.IntN(4) {
	case 0:
		return nil
	case 1:
		return sp("")
	default:
		return sp(g.text())
	}
}

func (g gen) profile() *profile.Profile {
	p := &profile.Profile{Harness: harness.Type(g.pick(harnessNames()))}
	if g.r.IntN(3) > 0 {
		p.Model = &profile.ModelHints{Default: sp(g.pick(genModels))}
	}
	if g.r.IntN(5) > 0 {
		p.Prompt = &profile.Prompt{AppendSystemPrompt: g.optText()}
		if g.r.IntN(3) == 0 {
			p.Prompt.SystemPrompt = sp(g.text())
		}
		switch g.r.IntN(3) {
		case 0:
		case 1:
			p.Prompt.Instructions = []string{}
		default:
			for range 1 + g.r.IntN(4) {
				p.Prompt.Instructions = append(p.Prompt.Instructions, g.text())
			}
		}
	}
	return p
}

func harnessNames() []string {
	out := []string{}
	for _, h := range genHarnesses {
		out = append(out, string(h))
	}
	return out
}

// cleanCallerText reports whether the caller's own text is already what a
// composition leaves of it, so that idempotence is the whole claim. (Caller
// text where removing one block joins its neighbours into a new block is
// not a fixed point of the reference strip algorithm; see
// TestStripJoinsNeighbours.)
func cleanCallerText(t testing.TB, p *profile.Profile) bool {
	own := mustCompose(t, p, nil, AppendSystemPrompt, ComposeOptions{ReplaceSources: Sources()})
	again := mustCompose(t, own, nil, AppendSystemPrompt, ComposeOptions{ReplaceSources: Sources()})
	return canon(t, own) == canon(t, again)
}

// KB-15, KB-16: WithProfileKB is idempotent over many generated profiles,
// digests included; recomposing for another harness or model and back
// gives the same profile up to emptied values; and recomposition always
// removes exactly the kb blocks it wrote.
func TestWithProfileKBIdempotentProperty(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(20261129, 1))}
	x := fixtureIndex(t)
	checked := 0
	for i := range 4000 {
		p := g.profile()
		sel := Selection{Harness: harness.Type(g.pick(harnessNames())), Model: g.pick(genModels)}
		for _, ix := range []*index{shipped, x} {
			once, err := ix.compose(p, sel)
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			twice, err := ix.compose(once, sel)
			if err != nil {
				t.Fatal(err)
			}
			// Always: recomposing removes exactly what composing added, so it
			// equals composing over the caller's own text.
			own := mustCompose(t, p, nil, AppendSystemPrompt, ComposeOptions{ReplaceSources: Sources()})
			viaOwn, err := ix.compose(own, sel)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(canon(t, viaOwn), canon(t, twice)); diff != "" {
				t.Fatalf("case %d: %s\nrecomposition left kb text behind (-want +got):\n%s", i, canon(t, p), diff)
			}
			if !cleanCallerText(t, p) {
				continue
			}
			checked++
			if diff := cmp.Diff(canon(t, once), canon(t, twice)); diff != "" {
				t.Fatalf("case %d: %s\nnot idempotent (-once +twice):\n%s", i, canon(t, p), diff)
			}
			if p.Harness.Valid() || p.Harness == "" {
				d1, err1 := profile.Digest(once)
				d2, err2 := profile.Digest(twice)
				if err1 != nil || err2 != nil || d1 != d2 {
					t.Fatalf("case %d: digests %s (%v), %s (%v)", i, d1, err1, d2, err2)
				}
			}
			// An override and back: no stacking, nothing lost.
			other := Selection{Harness: harness.Type(g.pick(harnessNames())), Model: g.pick(genModels)}
			via, err := ix.compose(once, other)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ix.compose(via, sel)
			if err != nil {
				t.Fatal(err)
			}
			if !sameUpToEmpty(t, once, back) {
				t.Fatalf("case %d: override and back differs:\n%s\n%s", i, canon(t, once), canon(t, back))
			}
		}
	}
	t.Logf("%d of 8000 compositions had caller text that is a fixed point", checked)
	if checked < 1000 {
		t.Fatalf("only %d generated profiles had clean caller text", checked)
	}
}

// sameUpToEmpty compares two profiles with empty prompt values ("", [],
// {}) treated as absent. Moving guidance to another channel and back can
// leave such values: an override that writes a field and a return that
// strips it leaves [] or {} present (the spec keeps them once written, K03),
// and an own "" next to composed blocks is not kept once blocks are added.
func sameUpToEmpty(t testing.TB, a, b *profile.Profile) bool {
	return canon(t, dropEmpty(t, a)) == canon(t, dropEmpty(t, b))
}

func dropEmpty(t testing.TB, p *profile.Profile) *profile.Profile {
	c, err := profile.Clone(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Prompt == nil {
		return c
	}
	if c.Prompt.AppendSystemPrompt != nil && *c.Prompt.AppendSystemPrompt == "" {
		c.Prompt.AppendSystemPrompt = nil
	}
	if len(c.Prompt.Instructions) == 0 {
		c.Prompt.Instructions = nil
	}
	if c.Prompt.SystemPrompt == nil && c.Prompt.AppendSystemPrompt == nil && c.Prompt.Instructions == nil {
		c.Prompt = nil
	}
	return c
}

// FuzzComposeGuidance: composition never panics, refuses only with a
// *RenderError, and is stable under recomposition.
func FuzzComposeGuidance(f *testing.F) {
	f.Add("own", "line\x00<profile-guidance source=\"model\" id=\"m\">\nx\n</profile-guidance>", "model", "m", "text", true, uint8(0))
	f.Add("<profile-guidance source=\"model\" id=\"a\">\nouter\n<profile-guidance source=\"model\" id=\"b\">\ninner\n</profile-guidance>\nmore\n</profile-guidance>\n\nown",
		"", "team", "t", "see <profile-guidance x", false, uint8(1))
	f.Add("", "", "harness", "h", "a</profile-guidance>", true, uint8(2))
	f.Add("x\n\n<profile-guidance source=\"model\" id=\"m\">\nt\n</profile-guidance>", "\x00", "model", "m", "", true, uint8(3))
	f.Fuzz(func(t *testing.T, appendText, instructions, source, id, text string, appendChannel bool, mode uint8) {
		p := &profile.Profile{Prompt: &profile.Prompt{}}
		switch mode % 4 {
		case 0:
			p.Prompt.AppendSystemPrompt = &appendText
			p.Prompt.Instructions = strings.Split(instructions, "\x00")
		case 1:
			p.Prompt.AppendSystemPrompt = &appendText
		case 2:
			p.Prompt.Instructions = strings.Split(instructions, "\x00")
		default:
			p.Prompt = nil
		}
		ch := Instructions
		if appendChannel {
			ch = AppendSystemPrompt
		}
		var opts ComposeOptions
		if mode&4 != 0 {
			opts.ReplaceSources = []string{source, "other"}
		}
		blocks := []Block{{Source: source, ID: id, Text: text}}
		before := fuzzKey(p)
		once, err := ComposeGuidance(p, blocks, ch, opts)
		if fuzzKey(p) != before {
			t.Fatal("input changed")
		}
		if err != nil {
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		twice, err := ComposeGuidance(once, blocks, ch, opts)
		if err != nil {
			t.Fatal(err)
		}
		// The composed block is always recognised as a block of its own
		// source and removed again, unless its text holds an opener (which
		// makes its extent ambiguous, and ambiguous text is kept whole).
		if strings.Contains(text, guidanceOpener) {
			return
		}
		// Recomposing equals composing over the caller's own text.
		own, err := ComposeGuidance(p, nil, ch, opts)
		if err != nil {
			t.Fatal(err)
		}
		viaOwn, err := ComposeGuidance(own, blocks, ch, opts)
		if err != nil {
			t.Fatal(err)
		}
		if fuzzKey(twice) != fuzzKey(viaOwn) {
			t.Fatalf("recomposition keeps part of the composed block:\n%s\n%s", fuzzKey(twice), fuzzKey(viaOwn))
		}
		// Where the caller's text is a fixed point, composition is
		// idempotent.
		ownAgain, err := ComposeGuidance(own, nil, ch, opts)
		if err != nil {
			t.Fatal(err)
		}
		if fuzzKey(ownAgain) == fuzzKey(own) && fuzzKey(twice) != fuzzKey(once) {
			t.Fatalf("not stable:\n%s\n%s", fuzzKey(once), fuzzKey(twice))
		}
	})
}

// fuzzKey renders a profile's prompt with presence visible; unlike canon it
// accepts strings that are not UTF-8.
func fuzzKey(p *profile.Profile) string {
	if p == nil {
		return "<nil profile>"
	}
	if p.Prompt == nil {
		return "<no prompt>"
	}
	opt := func(s *string) string {
		if s == nil {
			return "<absent>"
		}
		return strconv.Quote(*s)
	}
	ins := "<absent>"
	if p.Prompt.Instructions != nil {
		ins = fmt.Sprintf("%q", p.Prompt.Instructions)
	}
	return "system=" + opt(p.Prompt.SystemPrompt) + " append=" + opt(p.Prompt.AppendSystemPrompt) + " instructions=" + ins
}
