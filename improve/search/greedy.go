package search

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// GreedyVersion is the built-in method's version, part of its identity.
const GreedyVersion = "1"

// MaxPromptBytes bounds a proposed system prompt (or other text).
const MaxPromptBytes = 64 << 10

// Greedy is the built-in search method over text: the prompt surface's
// system prompt, or a surface whose value is text (memory as text, one
// named skill's content, a text-encoded profile component). Each
// round it asks Model (through the kernel's tool loop) for Variants new
// texts, shown the current one and its per-case train scores,
// measures each on the selection cases (the train cases when there are
// none) and keeps the best if it beats the current prompt; it stops after
// Rounds rounds or a round without improvement.
type Greedy struct {
	Model contract.ChatModel
	// Store, when set, records the proposer's runs (their spend is then
	// reconciled with their ledgers).
	Store store.Store
	// Rounds (default 2) and Variants per round (default 2).
	Rounds, Variants int
	// Timeout bounds one proposer call (default 2 minutes).
	Timeout time.Duration
}

// ErrGreedySurface refuses Greedy on a surface that is not text.
var ErrGreedySurface = errors.New("search: the greedy method searches text only: the prompt surface, or a surface whose value is a string (memory text, skills with a resource name, a text component)")

func (g Greedy) rounds() (int, int) {
	r, v := g.Rounds, g.Variants
	if r <= 0 {
		r = 2
	}
	if v <= 0 {
		v = 2
	}
	return r, v
}

// Identity implements Method.
func (g Greedy) Identity() MethodIdentity {
	r, v := g.rounds()
	return MethodIdentity{Name: "agentrt/greedy-prompt", Version: GreedyVersion, Settings: canonjson.ObjectValue([]canonjson.Member{
		{Name: "rounds", Value: canonjson.NumberValue(float64(r))},
		{Name: "variants", Value: canonjson.NumberValue(float64(v))},
	})}
}

const greedySystem = "You improve an AI agent's system prompt so that it scores higher on its cases. " +
	"Reply with the complete new system prompt and nothing else."

// greedyTextSystem is greedySystem for a text surface other than the
// prompt.
const greedyTextSystem = "You improve a text that configures an AI agent (its %s) so that it scores higher on its cases. " +
	"Reply with the complete new text and nothing else."

// greedyText is how Greedy reads and rewrites a surface as text.
type greedyText struct {
	system string
	label  string
	read   func(canonjson.Value) string
	write  func(canonjson.Value, string) canonjson.Value
}

// textOf returns how Greedy treats surface s whose current value is cur
// (in encoding, for a profile component), false when it is not text.
func textOf(s Surface, cur canonjson.Value, encoding string) (greedyText, bool) {
	if s == SurfacePrompt {
		return greedyText{system: greedySystem, label: "system prompt", read: systemPromptOf, write: withSystemPrompt}, true
	}
	if s == SurfaceCode || !(cur.Kind() == canonjson.String || s == SurfaceMemory && !cur.IsValid()) {
		return greedyText{}, false
	}
	label := string(s)
	if enc := encoding; enc != "" {
		label += ", encoded as " + enc
	}
	return greedyText{system: fmt.Sprintf(greedyTextSystem, label), label: label,
		read: func(v canonjson.Value) string {
			if !v.IsValid() {
				return "(none)"
			}
			return v.Str()
		},
		write: func(_ canonjson.Value, text string) canonjson.Value { return canonjson.StringValue(text) }}, true
}

// Search implements Method.
func (g Greedy) Search(ctx context.Context, in MethodInput) (MethodOutput, error) {
	text, ok := textOf(in.Surface, in.Current, in.Encoding)
	if !ok {
		return MethodOutput{}, ErrGreedySurface
	}
	if g.Model == nil {
		return MethodOutput{}, errors.New("search: the greedy method needs a Model")
	}
	rounds, variants := g.rounds()
	choose := ids(in.Selection)
	if len(choose) == 0 {
		choose = ids(in.Train)
	}
	out := MethodOutput{Usage: ledger.NoUsage(), Provenance: map[string]string{"method": "agentrt/greedy-prompt@" + GreedyVersion}}
	cur := in.Current
	curEval, err := in.Evaluate(ctx, cur, choose)
	if err != nil {
		return MethodOutput{}, err
	}
	for round := range rounds {
		feedback := curEval
		if len(in.Train) > 0 {
			if feedback, err = in.Evaluate(ctx, cur, ids(in.Train)); err != nil {
				return MethodOutput{}, err
			}
		}
		bestVal, bestEval, improved := cur, curEval, false
		for v := range variants {
			proposed, err := g.propose(ctx, &out, text, cur, feedback, in)
			if err != nil {
				return MethodOutput{}, fmt.Errorf("round %d variant %d: %w", round+1, v+1, err)
			}
			cand := text.write(cur, proposed)
			ev, err := in.Evaluate(ctx, cand, choose)
			if err != nil {
				var ce *CredentialError
				var pe *CandidateError
				var se *SensitiveCandidateError
				var ve *ValidationError
				if errors.As(err, &ce) || errors.As(err, &pe) || errors.As(err, &se) || errors.As(err, &ve) {
					continue // refused and recorded in the population; try the next
				}
				return MethodOutput{}, err
			}
			if ev.Mean > bestEval.Mean {
				bestVal, bestEval, improved = cand, ev, true
			}
		}
		if !improved {
			break
		}
		cur, curEval = bestVal, bestEval
	}
	out.Selected = cur
	out.Rationale = fmt.Sprintf("greedy: best selection mean %.4f", curEval.Mean)
	return out, nil
}

// propose asks the model for one system prompt.
func (g Greedy) propose(ctx context.Context, out *MethodOutput, text greedyText, cur canonjson.Value, ev Evaluation, in MethodInput) (string, error) {
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "Current %s:\n%s\n\nScores (0 to 1) by case:\n", text.label, text.read(cur))
	bodies := map[string]CaseView{}
	for _, c := range append(append([]CaseView(nil), in.Train...), in.Selection...) {
		bodies[c.ID] = c
	}
	for _, c := range ev.Cases {
		fmt.Fprintf(&b, "- %s: %.2f", c.ID, c.Score)
		if v := bodies[c.ID]; v.Input != "" {
			fmt.Fprintf(&b, " (input %q, expected %q)", v.Input, v.Expected)
		}
		if v := bodies[c.ID]; v.Description != "" {
			fmt.Fprintf(&b, " [case: %s]", v.Description)
		}
		if c.Description != "" {
			fmt.Fprintf(&b, " [output: %s]", c.Description)
		}
		b.WriteByte('\n')
	}
	writeTrainingExamples(&b, in.Training)
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: g.Model, System: text.system, User: b.String(), Store: g.Store, Kind: "improve-propose"})
	if err != nil {
		return "", err
	}
	out.Usage = out.Usage.Plus(res.Usage)
	if res.RunID != "" {
		out.RunIDs = append(out.RunIDs, res.RunID)
	}
	if res.StopReason != kernel.StopCompleted {
		return "", fmt.Errorf("the proposer stopped %s", res.StopReason)
	}
	reply := strings.TrimSpace(res.FinalText)
	if reply == "" || len(reply) > MaxPromptBytes {
		return "", fmt.Errorf("the proposer replied with %d bytes; a %s is 1 to %d", len(reply), text.label, MaxPromptBytes)
	}
	return reply, nil
}

// greedyExamples bounds the training examples Greedy shows its proposer.
const greedyExamples = 8

// writeTrainingExamples shows the proposer the first training examples
// of each dataset, at most greedyExamples in all.
func writeTrainingExamples(b *strings.Builder, t *TrainingInput) {
	if t == nil {
		return
	}
	n := 0
	for _, d := range t.Datasets {
		for _, e := range d.Examples {
			if n == greedyExamples {
				return
			}
			if n == 0 {
				b.WriteString("\nTraining examples (input → expected):\n")
			}
			fmt.Fprintf(b, "- %q → %q\n", e.Input, e.Expected)
			n++
		}
	}
}

func ids(cs []CaseView) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func systemPromptOf(prompt canonjson.Value) string {
	if s, ok := prompt.Get("systemPrompt"); ok {
		return s.Str()
	}
	return "(none)"
}

// withSystemPrompt returns the prompt object with systemPrompt replaced.
func withSystemPrompt(prompt canonjson.Value, text string) canonjson.Value {
	if prompt.Kind() != canonjson.Object {
		prompt = canonjson.ObjectValue(nil)
	}
	return prompt.With("systemPrompt", canonjson.StringValue(text))
}
