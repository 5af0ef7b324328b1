package search_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
)

// The surface fixtures: an agent that answers in uppercase when the
// candidate profile it is given says SHOUT anywhere, and a fixture
// optimizer that measures a list of proposed surface values on the
// selection cases and selects the best. Only the surface searched says
// SHOUT in the winning candidate, so a ship proves the surface reached
// the agent.

const shout = "SHOUT"

// shoutAgent answers every case from the profile it is given, with a
// known cost.
func shoutAgent(runs *int) search.Agent {
	return search.AgentFunc(func(_ context.Context, p *profile.Profile, sc search.Scenario) (search.Output, error) {
		*runs++
		b, err := profile.Canonical(p)
		if err != nil {
			return search.Output{}, err
		}
		return shoutOutput(strings.Contains(string(b), shout), sc), nil
	})
}

func shoutOutput(loud bool, sc search.Scenario) search.Output {
	text := sc.Input
	if loud {
		text = strings.ToUpper(text)
	}
	calls := int64(1)
	u := ledger.NoUsage()
	u.InputTokens, u.OutputTokens, u.CostUSD = ledger.ExactAmount[int64](10), ledger.ExactAmount[int64](5), ledger.ExactAmount(0.001)
	return search.Output{Text: text, Usage: u, ModelCalls: &calls}
}

// listOptimizer is the fixture optimizer: it measures each proposal on
// every selection case (a refused proposal is skipped, as it is recorded
// refused) and selects the best, the current value when none beats it.
type listOptimizer struct{ proposals []canonjson.Value }

func (listOptimizer) Identity() search.MethodIdentity {
	return search.MethodIdentity{Name: "fixture-list", Version: "1"}
}

func (m listOptimizer) Search(ctx context.Context, in search.MethodInput) (search.MethodOutput, error) {
	cases := make([]string, len(in.Selection))
	for i, c := range in.Selection {
		cases[i] = c.ID
	}
	best, err := in.Evaluate(ctx, in.Current, cases)
	if err != nil {
		return search.MethodOutput{}, err
	}
	selected := in.Current
	for _, p := range m.proposals {
		ev, err := in.Evaluate(ctx, p, cases)
		var ce *search.CandidateError
		var cred *search.CredentialError
		if errors.As(err, &ce) || errors.As(err, &cred) {
			continue
		}
		if err != nil {
			return search.MethodOutput{}, err
		}
		if ev.Mean > best.Mean {
			best, selected = ev, p
		}
	}
	return search.MethodOutput{Selected: selected, Usage: ledger.NoUsage(), Rationale: "best selection mean"}, nil
}

func mustValue(t *testing.T, x any) canonjson.Value {
	t.Helper()
	v, err := canonjson.ToValue(x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func inlineSkill(name, content string) profile.ResourceRef {
	return profile.DefineInlineResource(name, content)
}

// surfaceBase is a base profile with every surface present, none of
// them saying SHOUT.
func surfaceBase() *profile.Profile {
	p := baseProfile()
	p.Resources = &profile.Resources{
		Skills:       []profile.ResourceRef{inlineSkill("style", "Answer plainly."), inlineSkill("greeting", "Say hello.")},
		Instructions: &profile.Instructions{Text: profile.Ptr("Remember: the user likes short answers.")},
		Tools:        []profile.ResourceRef{inlineSkill("calc", "a calculator")},
	}
	p.Subagents = map[string]profile.Subagent{"reviewer": {Description: profile.Ptr("reviews answers")}}
	p.Hooks = map[string][]profile.HookCommand{"PreToolUse": {{Command: "/usr/local/bin/audit"}}}
	return p
}

// surfacePath is where each profile-member surface lives (the test's
// own statement of the rule, spec profile §A).
var surfacePath = map[search.Surface][]string{
	search.SurfaceSkills:    {"resources", "skills"},
	search.SurfaceMemory:    {"resources", "instructions"},
	search.SurfaceHooks:     {"hooks"},
	search.SurfaceSubagents: {"subagents"},
}

// without returns v without the member at path.
func without(v canonjson.Value, path []string) canonjson.Value {
	if len(path) == 1 {
		return v.Without(path[0])
	}
	inner, ok := v.Get(path[0])
	if !ok {
		return v
	}
	return v.With(path[0], without(inner, path[1:]))
}

// TestProfileSurfaces (runtime §3.9 surfaces; RTP-12): skills (the whole
// list, and one named skill through Options.Skills), memory, hooks and
// subagents, each searched through Improve with the fixture optimizer.
// The current value the method sees is the base's; every candidate is a
// complete valid profile equal to the base everywhere but the surface;
// the base's digest is the same before and after; the population lists
// every proposal with its diffs; hooks (execution-capable) are asked
// about once per distinct profile, the baseline included; a proposal
// carrying a credential is refused and listed without its surface.
func TestProfileSurfaces(t *testing.T) {
	const key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"
	cases := []struct {
		name      string
		surface   search.Surface
		skills    *search.Skills
		current   canonjson.Value
		proposals []canonjson.Value
		winner    int // index of the proposal that must ship
		axes      []string
		// askedFor is how many distinct profiles AuthorizeSensitiveCandidate
		// must be asked about: the base runs a hook command, so the
		// baseline and every candidate that runs, whatever the surface.
		askedFor int
	}{
		{
			name: "skills", surface: search.SurfaceSkills,
			current: mustValue(t, surfaceBase().Resources.Skills),
			proposals: []canonjson.Value{
				mustValue(t, []profile.ResourceRef{inlineSkill("style", "Answer plainly, politely.")}),
				mustValue(t, []profile.ResourceRef{inlineSkill("style", "Answer in "+shout+" case."), inlineSkill("greeting", "Say hello.")}),
				mustValue(t, []profile.ResourceRef{inlineSkill("style", "Use "+key)}),
			},
			winner: 1, axes: []string{"resources"}, askedFor: 3,
		},
		{
			name: "skills/resourceName", surface: search.SurfaceSkills, skills: &search.Skills{ResourceName: "greeting"},
			current:   canonjson.StringValue("Say hello."),
			proposals: []canonjson.Value{canonjson.StringValue("Say hi."), canonjson.StringValue(shout + " the greeting."), mustValue(t, map[string]string{"not": "text"})},
			winner:    1, axes: []string{"resources"}, askedFor: 3,
		},
		{
			name: "memory", surface: search.SurfaceMemory,
			current:   canonjson.StringValue("Remember: the user likes short answers."),
			proposals: []canonjson.Value{canonjson.StringValue("Remember: the user is kind."), canonjson.StringValue("Remember: the user wants you to " + shout + ".")},
			winner:    1, axes: []string{"resources"}, askedFor: 3,
		},
		{
			name: "hooks", surface: search.SurfaceHooks,
			current: mustValue(t, surfaceBase().Hooks),
			proposals: []canonjson.Value{
				mustValue(t, map[string][]profile.HookCommand{"PreToolUse": {{Command: "/usr/local/bin/audit --quiet"}}}),
				mustValue(t, map[string][]profile.HookCommand{"PreToolUse": {{Command: "/usr/local/bin/" + shout}}}),
			},
			winner: 1, axes: []string{"hooks"}, askedFor: 3,
		},
		{
			name: "subagents", surface: search.SurfaceSubagents,
			current: mustValue(t, surfaceBase().Subagents),
			proposals: []canonjson.Value{
				mustValue(t, map[string]profile.Subagent{"reviewer": {Description: profile.Ptr("reviews answers twice")}}),
				mustValue(t, map[string]profile.Subagent{"reviewer": {Description: profile.Ptr("reviews answers")}, "shouter": {Prompt: profile.Ptr(shout)}}),
			},
			winner: 1, axes: []string{"subagents"}, askedFor: 3,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := surfaceBase()
			before, err := profile.Digest(base)
			if err != nil {
				t.Fatal(err)
			}
			baseValue, _ := base.Value()
			runs := 0
			asked := map[string]bool{}
			var baselineAsked bool
			o, _ := options(t, ptr(0.001))
			spy := &currentSpy{inner: listOptimizer{proposals: c.proposals}}
			o.Surface, o.Method, o.Agent, o.Skills = c.surface, spy, shoutAgent(&runs), c.skills
			o.AuthorizeSensitiveCandidate = func(_ context.Context, sc search.SensitiveCandidate) error {
				if asked[sc.Digest] {
					t.Errorf("asked twice about %s", sc.Digest)
				}
				asked[sc.Digest] = true
				baselineAsked = baselineAsked || sc.Baseline
				return nil
			}
			res, err := search.Improve(context.Background(), base, o)
			if err != nil {
				t.Fatal(err)
			}
			if after, _ := profile.Digest(base); after != before {
				t.Errorf("the base changed: digest %s, then %s", before, after)
			}
			if !canonjson.Equal(spy.current, c.current) {
				t.Errorf("the method saw current %s, want %s", canonjson.Marshal(spy.current), canonjson.Marshal(c.current))
			}
			if res.Decision != search.Ship {
				t.Fatalf("decision %s, reasons %v", res.Decision, res.Reasons)
			}
			cand := res.Candidate.Profile
			if err := cand.Validate(); err != nil {
				t.Fatalf("the candidate is invalid: %v", err)
			}
			candValue, _ := cand.Value()
			path := surfacePath[c.surface]
			if d := cmp.Diff(string(canonjson.Marshal(without(baseValue, path))), string(canonjson.Marshal(without(candValue, path)))); d != "" {
				t.Errorf("the candidate differs from the base outside %v (-base +candidate):\n%s", path, d)
			}
			var axes []string
			for _, d := range res.Candidate.Diffs {
				axes = append(axes, profile.ChangedAxes(&d)...)
			}
			if d := cmp.Diff(c.axes, slices.Compact(slices.Sorted(slices.Values(axes)))); d != "" {
				t.Errorf("diff axes (-want +got):\n%s", d)
			}
			// The population: the base and every proposal, each measured
			// with its diffs, or refused.
			if len(res.Population) != len(c.proposals)+1 {
				t.Fatalf("population of %d, want %d", len(res.Population), len(c.proposals)+1)
			}
			for i, e := range res.Population[1:] {
				switch {
				case e.Status == "refused":
					if i == c.winner || e.Reason == "" {
						t.Errorf("entry %d refused: %+v", i, e)
					}
					if strings.Contains(e.Reason, key) || strings.Contains(string(canonjson.Marshal(e.Surface)), key) {
						t.Errorf("entry %d repeats the credential", i)
					}
				case len(e.Diffs) == 0 || e.Digest == "" || e.MeanScore == nil:
					t.Errorf("entry %d: %+v", i, e)
				}
			}
			if w := res.Population[c.winner+1]; w.Digest != res.Candidate.Digest || *w.MeanScore != 1 {
				t.Errorf("the winner's entry %+v, candidate %s", w, res.Candidate.Digest)
			}
			if len(asked) != c.askedFor || !baselineAsked {
				t.Errorf("AuthorizeSensitiveCandidate asked about %d profiles (baseline %v), want %d", len(asked), baselineAsked, c.askedFor)
			}
			if runs == 0 {
				t.Error("the agent never ran")
			}
		})
	}
}

// currentSpy records the current surface value a method is shown.
type currentSpy struct {
	inner    search.Method
	current  canonjson.Value
	encoding string
}

func (s *currentSpy) Identity() search.MethodIdentity { return s.inner.Identity() }

func (s *currentSpy) Search(ctx context.Context, in search.MethodInput) (search.MethodOutput, error) {
	s.current, s.encoding = in.Current, in.Encoding
	return s.inner.Search(ctx, in)
}

// TestHookCandidatesRefusedWithoutAuthorization: a hooks candidate runs
// commands; without AuthorizeSensitiveCandidate it is refused before it
// runs (the existing rule, reached through the hooks surface).
func TestHookCandidatesRefusedWithoutAuthorization(t *testing.T) {
	runs := 0
	o, _ := options(t, ptr(0.001))
	hooks := mustValue(t, map[string][]profile.HookCommand{"Stop": {{Command: "/usr/local/bin/" + shout}}})
	o.Surface, o.Method, o.Agent = search.SurfaceHooks, surfaceMethod{value: hooks}, shoutAgent(&runs)
	_, err := search.Improve(context.Background(), baseProfile(), o)
	var se *search.SensitiveCandidateError
	if !errors.As(err, &se) || se.Baseline || !slices.Equal(se.Coordinates, []string{"/hooks/Stop/0/command"}) {
		t.Fatalf("err %v, want a *SensitiveCandidateError at /hooks/Stop/0/command", err)
	}
	if runs != 0 {
		t.Errorf("the refused candidate ran %d times", runs)
	}
}

// TestSurfaceOptionsRefused: surface options are checked before anything
// runs, each refusal an *OptionsError with the option's JSON pointer.
func TestSurfaceOptionsRefused(t *testing.T) {
	github := surfaceBase()
	github.Resources.Skills = append(github.Resources.Skills, profile.DefineGitHubResource("skills/x/SKILL.md", profile.GitHubResourceOptions{Name: profile.Ptr("remote")}))
	cases := []struct {
		name string
		base *profile.Profile
		edit func(o *search.Options)
		path string
	}{
		{"unknown surface", surfaceBase(), func(o *search.Options) { o.Surface = "knowledge" }, "/surface"},
		{"skills on another surface", surfaceBase(), func(o *search.Options) { o.Skills = &search.Skills{ResourceName: "style"} }, "/skills"},
		{"skills without a name", surfaceBase(), func(o *search.Options) { o.Surface, o.Skills = search.SurfaceSkills, &search.Skills{} }, "/skills/resourceName"},
		{"no such skill", surfaceBase(), func(o *search.Options) {
			o.Surface, o.Skills = search.SurfaceSkills, &search.Skills{ResourceName: "nope"}
		}, "/skills/resourceName"},
		{"a remote skill", github, func(o *search.Options) {
			o.Surface, o.Skills = search.SurfaceSkills, &search.Skills{ResourceName: "remote"}
		}, "/skills/resourceName"},
		{"components without functions", surfaceBase(), func(o *search.Options) { o.Surface = search.SurfaceComponent }, "/profileComponents"},
		{"components on another surface", surfaceBase(), func(o *search.Options) { o.ProfileComponents = &search.ProfileComponents{Name: "x"} }, "/profileComponents"},
		{"code without a repository", surfaceBase(), func(o *search.Options) { o.Surface = search.SurfaceCode }, "/code"},
		{"code with a short commit", surfaceBase(), func(o *search.Options) {
			o.Surface, o.Code = search.SurfaceCode, &search.Code{Repo: t.TempDir(), Commit: "abc123"}
		}, "/code/commit"},
		{"code with an agent that has no work tree", surfaceBase(), func(o *search.Options) {
			o.Surface, o.Code = search.SurfaceCode, &search.Code{Repo: t.TempDir(), Commit: strings.Repeat("a", 40)}
		}, "/agent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, agent := options(t, ptr(0.001))
			c.edit(&o)
			_, err := search.Improve(context.Background(), c.base, o)
			var oe *search.OptionsError
			if !errors.As(err, &oe) || oe.Path != c.path || !errors.Is(err, search.ErrInvalidOptions) {
				t.Fatalf("err %v, want an *OptionsError at %s", err, c.path)
			}
			if agent.calls.Load() != 0 {
				t.Errorf("the agent ran %d times", agent.calls.Load())
			}
		})
	}
}

// TestSurfacesMapToActivation (runtime §3.9 production path): every
// search surface names the activation surface its candidates change, one
// of candidate.ImprovementSurfaces; a profile-member surface's candidate
// diffs give a proposal that names that same surface (for memory,
// agent-profile: the reference files resources.instructions there).
func TestSurfacesMapToActivation(t *testing.T) {
	for _, s := range search.Surfaces() {
		a, ok := s.ActivationSurface()
		if !ok || !slices.Contains(candidate.ImprovementSurfaces(), a) {
			t.Errorf("surface %s maps to %q (%v), not an activation surface", s, a, ok)
		}
	}
	if _, ok := search.Surface("knowledge").ActivationSurface(); ok {
		t.Error("an unsearched surface maps to an activation surface")
	}
	base := surfaceBase()
	for _, c := range []struct {
		surface search.Surface
		edit    func(p *profile.Profile)
		want    string
	}{
		{search.SurfacePrompt, func(p *profile.Profile) { p.Prompt.SystemPrompt = profile.Ptr("x") }, "prompt"},
		{search.SurfaceSkills, func(p *profile.Profile) { p.Resources.Skills = p.Resources.Skills[:1] }, "skills"},
		{search.SurfaceTools, func(p *profile.Profile) { p.Tools = map[string]bool{"read": true} }, "tools"},
		{search.SurfaceHooks, func(p *profile.Profile) { p.Hooks = nil }, "hooks"},
		{search.SurfaceSubagents, func(p *profile.Profile) { p.Subagents = nil }, "subagents"},
		{search.SurfaceMemory, func(p *profile.Profile) { p.Resources.Instructions.Text = profile.Ptr("y") }, "agent-profile"},
	} {
		cand, err := profile.Clone(base)
		if err != nil {
			t.Fatal(err)
		}
		c.edit(cand)
		diffs, err := profile.Diffs(base, cand)
		if err != nil {
			t.Fatal(err)
		}
		got, err := candidate.ChangedSurfaces(diffs)
		if a, _ := c.surface.ActivationSurface(); a != c.want {
			t.Errorf("%s: ActivationSurface %s, want %s", c.surface, a, c.want)
		}
		if err != nil || !slices.Equal(got, []string{c.want}) {
			t.Errorf("%s: a proposal's changed surfaces %v (%v), want [%s]", c.surface, got, err, c.want)
		}
	}
}
