package search_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/profile"
)

// promptAgent records the system prompt of every profile it ran.
type promptAgent struct {
	inner search.Agent
	mu    sync.Mutex
	ran   map[string]int
}

func (a *promptAgent) Run(ctx context.Context, p *profile.Profile, sc search.Scenario) (search.Output, error) {
	a.mu.Lock()
	if a.ran == nil {
		a.ran = map[string]int{}
	}
	if p.Prompt != nil && p.Prompt.SystemPrompt != nil {
		a.ran[*p.Prompt.SystemPrompt]++
	}
	a.mu.Unlock()
	return a.inner.Run(ctx, p, sc)
}

// TestValidateCandidate (§3.9 validateCandidate): a candidate is accepted
// only when the hook returns nil; an error or a panic refuses it before it
// runs, the refusal is an explicit population entry with its reason, the
// hook is asked once per distinct candidate and never about the base.
func TestValidateCandidate(t *testing.T) {
	tests := []struct {
		name string
		// refuse answers for a candidate's system prompt.
		refuse       func(prompt string) error
		wantDecision search.Decision
		wantRefused  map[string]string // system prompt → reason fragment
	}{
		{"accepts all", func(string) error { return nil }, search.Ship, nil},
		{"refuses the winner", func(p string) error {
			if p == winningPrompt {
				return errors.New("uppercase answers are against the style guide")
			}
			return nil
		}, search.Hold, map[string]string{winningPrompt: "style guide"}},
		{"panics on the winner, refuses the other", func(p string) error {
			if p == winningPrompt {
				panic("validator bug")
			}
			return errors.New("politeness is not measured")
		}, search.Hold, map[string]string{winningPrompt: "panicked", politePrompt: "politeness"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, _ := options(t, ptr(0.001))
			agent := &promptAgent{inner: o.Agent}
			o.Agent = agent
			asked := map[string]int{}
			o.ValidateCandidate = func(_ context.Context, c *profile.Profile) error {
				p := *c.Prompt.SystemPrompt
				asked[p]++
				*c.Prompt.SystemPrompt = "tampered" // the hook's copy, not the run's
				return tt.refuse(p)
			}
			res, err := search.Improve(context.Background(), baseProfile(), o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != tt.wantDecision {
				t.Errorf("decision %s (%v), want %s", res.Decision, res.Reasons, tt.wantDecision)
			}
			if asked[basePrompt] != 0 {
				t.Error("the base profile was asked for acceptance")
			}
			for p, n := range asked {
				if n != 1 {
					t.Errorf("asked %d times about %q", n, p)
				}
			}
			if agent.ran["tampered"] != 0 {
				t.Error("the hook's change reached the run")
			}
			for _, e := range res.Population {
				p := systemPromptOfSurface(e)
				why, refused := tt.wantRefused[p]
				switch {
				case refused && (e.Status != "refused" || !strings.Contains(e.Reason, why) || !strings.Contains(e.Reason, "ValidateCandidate")):
					t.Errorf("entry %q: status %s reason %q, want refused for %q", p, e.Status, e.Reason, why)
				case !refused && e.Status != "measured":
					t.Errorf("entry %q: status %s reason %q", p, e.Status, e.Reason)
				}
				if refused && agent.ran[p] != 0 {
					t.Errorf("refused candidate %q ran %d times", p, agent.ran[p])
				}
			}
			if tt.wantRefused != nil && res.Candidate.Digest != res.Provenance.BaseDigest {
				t.Errorf("selected %s, want the base back", res.Candidate.Digest)
			}
		})
	}
}

// TestValidateCandidateRefusalIsTyped: a method evaluating a refused
// candidate gets a *ValidationError saying whether the hook panicked.
func TestValidateCandidateRefusalIsTyped(t *testing.T) {
	o, _ := options(t, ptr(0.001))
	o.ValidateCandidate = func(context.Context, *profile.Profile) error { panic("nope") }
	var got error
	o.Method = methodFunc(func(ctx context.Context, in search.MethodInput) (search.MethodOutput, error) {
		_, got = in.Evaluate(ctx, withPrompt(in, winningPrompt), []string{"t1"})
		return search.MethodOutput{Selected: in.Current}, nil
	})
	if _, err := search.Improve(context.Background(), baseProfile(), o); err != nil {
		t.Fatal(err)
	}
	var ve *search.ValidationError
	if !errors.As(got, &ve) || !ve.Panicked || ve.Digest == "" {
		t.Errorf("got %v, want a *ValidationError of a panic", got)
	}
}

func systemPromptOfSurface(e search.PopulationEntry) string {
	if s, ok := e.Surface.Get("systemPrompt"); ok {
		return s.Str()
	}
	return ""
}

// methodFunc is a method in a function, for tests that script a search.
type methodFunc func(ctx context.Context, in search.MethodInput) (search.MethodOutput, error)

func (methodFunc) Identity() search.MethodIdentity {
	return search.MethodIdentity{Name: "test/scripted", Version: "1"}
}

func (f methodFunc) Search(ctx context.Context, in search.MethodInput) (search.MethodOutput, error) {
	return f(ctx, in)
}

// withPrompt is the method's current prompt surface with another system
// prompt.
func withPrompt(in search.MethodInput, prompt string) canonjson.Value {
	return in.Current.With("systemPrompt", canonjson.StringValue(prompt))
}
