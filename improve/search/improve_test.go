package search_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/profile"
)

// TestImproveShips is the ship path (FD-09, RTP-12): the greedy method
// finds the uppercase prompt on train and selection cases, and Improve's
// own final-test comparison (6 paired cases, all lifted) clears the
// minimum lift with every cost known.
func TestImproveShips(t *testing.T) {
	o, agent := options(t, ptr(0.001))
	res, err := search.Improve(context.Background(), baseProfile(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != search.Ship {
		t.Fatalf("decision %s, reasons %v", res.Decision, res.Reasons)
	}
	if got := *res.Candidate.Profile.Prompt.SystemPrompt; got != winningPrompt {
		t.Errorf("candidate prompt %q, want %q", got, winningPrompt)
	}
	if res.Lift != 1 || res.LiftInterval.Lower != 1 || res.BaselineScore != 0 || res.CandidateScore != 1 || len(res.Test) != 6 {
		t.Errorf("lift %v interval %+v scores %v/%v test %d", res.Lift, res.LiftInterval, res.BaselineScore, res.CandidateScore, len(res.Test))
	}
	if d, _ := profile.Digest(res.Candidate.Profile); d != res.Candidate.Digest {
		t.Errorf("candidate digest %s is not its profile's %s", res.Candidate.Digest, d)
	}
	if len(res.Candidate.Diffs) == 0 {
		t.Error("the candidate has no diffs from the base")
	}
	// Population: base, polite and uppercase, each measured once per case.
	var prompts []string
	for _, e := range res.Population {
		if e.Status != "measured" || e.Digest == "" {
			t.Errorf("population entry %+v", e)
		}
		s, _ := e.Surface.Get("systemPrompt")
		prompts = append(prompts, s.Str())
	}
	if want := []string{basePrompt, politePrompt, winningPrompt}; !slices.Equal(prompts, want) {
		t.Errorf("population %q, want %q", prompts, want)
	}
	if !res.Spend.Total.Known() || res.Spend.Optimizer.Value <= 0 || res.Spend.Final.Value <= 0 {
		t.Errorf("spend %+v", res.Spend)
	}
	if int64(res.Provenance.Evaluations) != agent.calls.Load() || res.Provenance.Resumed || res.Provenance.Method.Name != "agentrt/greedy-prompt" {
		t.Errorf("provenance %+v, agent calls %d", res.Provenance, agent.calls.Load())
	}
}

// TestImproveNeverMutatesBase: the base profile is frozen (§3.9): after a
// shipping run it deep-equals a copy taken before.
func TestImproveNeverMutatesBase(t *testing.T) {
	base := baseProfile()
	before, err := profile.Clone(base)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := options(t, ptr(0.001))
	// An agent that tries to change the profile it is given.
	inner := o.Agent
	o.Agent = search.AgentFunc(func(ctx context.Context, p *profile.Profile, sc search.Scenario) (search.Output, error) {
		out, err := inner.Run(ctx, p, sc)
		p.Prompt.SystemPrompt = profile.Ptr("tampered")
		p.Tags = append(p.Tags, "tampered")
		return out, err
	})
	res, err := search.Improve(context.Background(), base, o)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, base); d != "" {
		t.Errorf("the base changed (-before +after):\n%s", d)
	}
	if got := *res.Candidate.Profile.Prompt.SystemPrompt; got != winningPrompt {
		t.Errorf("the candidate was changed by the agent: %q", got)
	}
}

// spyMethod records everything a method is given and asks for.
type spyMethod struct {
	inner     search.Method
	mu        sync.Mutex
	views     []search.CaseView
	evaluated []string
	testErr   error
}

func (s *spyMethod) Identity() search.MethodIdentity { return s.inner.Identity() }

func (s *spyMethod) Search(ctx context.Context, in search.MethodInput) (search.MethodOutput, error) {
	s.views = append(append(s.views, in.Train...), in.Selection...)
	// Try to peek at a test case: Improve must refuse it.
	_, s.testErr = in.Evaluate(ctx, in.Current, []string{"x1"})
	evaluate := in.Evaluate
	in.Evaluate = func(ctx context.Context, v canonjson.Value, ids []string) (search.Evaluation, error) {
		s.mu.Lock()
		s.evaluated = append(s.evaluated, ids...)
		s.mu.Unlock()
		return evaluate(ctx, v, ids)
	}
	return s.inner.Search(ctx, in)
}

// TestMethodNeverSeesTestCases (RTP-12, privacy): the method is given
// train and selection cases by id only, an evaluation of a test case is
// refused with a *PartitionError, and every case it measured is a train
// or selection case.
func TestMethodNeverSeesTestCases(t *testing.T) {
	o, _ := options(t, ptr(0.001))
	spy := &spyMethod{inner: o.Method}
	o.Method = spy
	if _, err := search.Improve(context.Background(), baseProfile(), o); err != nil {
		t.Fatal(err)
	}
	var pe *search.PartitionError
	if !errors.As(spy.testErr, &pe) || pe.CaseID != "x1" {
		t.Errorf("evaluating a test case: %v, want a *PartitionError for x1", spy.testErr)
	}
	if len(spy.views) != 4 || len(spy.evaluated) == 0 {
		t.Fatalf("views %v evaluated %v", spy.views, spy.evaluated)
	}
	for _, v := range spy.views {
		if v.Partition == search.Test || strings.HasPrefix(v.ID, "x") || v.Input != "" || v.Expected != "" {
			t.Errorf("the method was shown %+v", v)
		}
	}
	for _, id := range spy.evaluated {
		if strings.HasPrefix(id, "x") {
			t.Errorf("the method measured test case %s", id)
		}
	}
	// With ShareCaseBodies the bodies are shown, the test cases still not.
	o.ShareCaseBodies = true
	spy = &spyMethod{inner: options2(t).Method}
	o.Method = spy
	if _, err := search.Improve(context.Background(), baseProfile(), o); err != nil {
		t.Fatal(err)
	}
	for _, v := range spy.views {
		if v.Partition == search.Test || v.Input == "" {
			t.Errorf("shared view %+v", v)
		}
	}
}

func options2(t testing.TB) search.Options { o, _ := options(t, ptr(0.001)); return o }

// TestUnknownCostHolds: an agent whose model reports no cost makes every
// measured spend unknown, and the run holds even though the lift clears.
func TestUnknownCostHolds(t *testing.T) {
	o, _ := options(t, nil)
	res, err := search.Improve(context.Background(), baseProfile(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != search.Hold || res.LiftInterval.Lower <= o.MinimumLift {
		t.Fatalf("decision %s interval %+v", res.Decision, res.LiftInterval)
	}
	if res.Spend.Total.Known() || res.Spend.Candidates.Known() || res.Spend.Final.Known() {
		t.Errorf("spend %+v should be unknown", res.Spend)
	}
	if !slices.ContainsFunc(res.Reasons, func(r string) bool { return strings.Contains(r, "unknown") }) {
		t.Errorf("reasons %v do not name the unknown spend", res.Reasons)
	}
}

// TestNoLiftHolds: a proposer that only suggests useless variants leaves
// the base selected, and the run holds.
func TestNoLiftHolds(t *testing.T) {
	o, _ := options(t, ptr(0.001))
	o.Method = search.Greedy{Model: echoModel(ptr(0.0))} // proposes the user message back: no gain
	res, err := search.Improve(context.Background(), baseProfile(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != search.Hold || res.Lift != 0 {
		t.Fatalf("decision %s lift %v reasons %v", res.Decision, res.Lift, res.Reasons)
	}
}

// TestCostCeilingRejected: a reported total above the ceiling stops the
// run with a *CostCeilingError, before the search measures everything.
func TestCostCeilingRejected(t *testing.T) {
	o, agent := options(t, ptr(0.01))
	o.CostCeiling = ptr(0.025)
	res, err := search.Improve(context.Background(), baseProfile(), o)
	var ce *search.CostCeilingError
	if !errors.As(err, &ce) || ce.CeilingUSD != 0.025 || ce.ReportedUSD <= 0.025 {
		t.Fatalf("err %v, want a *CostCeilingError", err)
	}
	if res.Decision == search.Ship || agent.calls.Load() != 3 {
		t.Errorf("decision %s after %d agent runs (want 3: the third crosses $0.025)", res.Decision, agent.calls.Load())
	}
}

// TestCredentialsRejected: a candidate surface carrying a recognised
// credential is refused with a *CredentialError naming where, never what;
// so is a base whose surface carries one.
func TestCredentialsRejected(t *testing.T) {
	const key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"
	o, agent := options(t, ptr(0.001))
	o.RunDir = t.TempDir()
	o.Method = fixedMethod{surface: canonjson.ObjectValue([]canonjson.Member{{Name: "systemPrompt", Value: canonjson.StringValue("Use key " + key)}})}
	res, err := search.Improve(context.Background(), baseProfile(), o)
	var ce *search.CredentialError
	if !errors.As(err, &ce) || len(ce.Findings) == 0 || ce.Findings[0].Path != "/systemPrompt" {
		t.Fatalf("err %v, want a *CredentialError at /systemPrompt", err)
	}
	if strings.Contains(err.Error(), key) {
		t.Error("the error repeats the credential")
	}
	if len(res.Population) != 1 || res.Population[0].Status != "refused" || res.Population[0].Surface.IsValid() {
		t.Errorf("population %+v: the refused candidate must be listed without its surface", res.Population)
	}
	journaled, err := os.ReadFile(filepath.Join(o.RunDir, search.JournalFile))
	if err != nil || strings.Contains(string(journaled), "sk-ant") {
		t.Errorf("the journal holds the credential (or cannot be read: %v)", err)
	}
	if agent.calls.Load() != 0 {
		t.Errorf("the refused candidate ran %d times", agent.calls.Load())
	}
	base := baseProfile()
	base.Prompt.SystemPrompt = profile.Ptr("token " + key)
	if _, err := search.Improve(context.Background(), base, options2(t)); !errors.As(err, &ce) {
		t.Fatalf("base with a credential: %v", err)
	}
}

// fixedMethod selects one surface value without evaluating anything.
type fixedMethod struct{ surface canonjson.Value }

func (fixedMethod) Identity() search.MethodIdentity {
	return search.MethodIdentity{Name: "fixed", Version: "1"}
}

func (m fixedMethod) Search(context.Context, search.MethodInput) (search.MethodOutput, error) {
	return search.MethodOutput{Selected: m.surface, Usage: noUsage()}, nil
}

// TestResumeReusesMeasurements (OPT-03): a run killed mid-search resumes
// in the same run dir, measuring only what the journal lacks; a finished
// run resumed measures nothing, and gives the same result; a run dir of
// another recipe is refused when resume is required.
func TestResumeReusesMeasurements(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "run")

	full, fullAgent := options(t, ptr(0.001))
	want, err := search.Improve(ctx, baseProfile(), full)
	if err != nil {
		t.Fatal(err)
	}
	total := fullAgent.calls.Load()

	killed, killedAgent := options(t, ptr(0.001))
	killed.RunDir = dir
	killedAgent.failAfter = 5
	if _, err := search.Improve(ctx, baseProfile(), killed); !errors.Is(err, errKilled) {
		t.Fatalf("killed run: %v", err)
	}

	resumed, resumedAgent := options(t, ptr(0.001))
	resumed.RunDir, resumed.Resume = dir, search.ResumeRequired
	got, err := search.Improve(ctx, baseProfile(), resumed)
	if err != nil {
		t.Fatal(err)
	}
	if n := resumedAgent.calls.Load(); n != total-5 || got.Provenance.Reused != 5 || !got.Provenance.Resumed {
		t.Errorf("resumed run measured %d (want %d), reused %d", n, total-5, got.Provenance.Reused)
	}

	again, againAgent := options(t, ptr(0.001))
	again.RunDir = dir
	got2, err := search.Improve(ctx, baseProfile(), again)
	if err != nil {
		t.Fatal(err)
	}
	if n := againAgent.calls.Load(); n != 0 {
		t.Errorf("a finished run resumed measured %d cases", n)
	}
	ignore := cmp.FilterPath(func(p cmp.Path) bool {
		s := p.String()
		return strings.HasPrefix(s, "Provenance")
	}, cmp.Ignore())
	for _, g := range []search.Result{got, got2} {
		if d := cmp.Diff(want, g, ignore, cmpopts.IgnoreUnexported(search.Result{}), cmp.Comparer(func(a, b canonjson.Value) bool { return canonjson.Equal(a, b) })); d != "" {
			t.Errorf("the resumed result differs (-fresh +resumed):\n%s", d)
		}
		if g.Provenance.RecipeDigest != want.Provenance.RecipeDigest {
			t.Errorf("recipe %s, want %s", g.Provenance.RecipeDigest, want.Provenance.RecipeDigest)
		}
	}

	// Resume required refuses a run dir of another recipe (with
	// if-compatible it starts fresh: TestResumeIfCompatibleStartsFresh).
	other, _ := options(t, ptr(0.001))
	other.RunDir, other.MinimumLift, other.Resume = dir, 0.2, search.ResumeRequired
	var re *search.ResumeError
	if _, err := search.Improve(ctx, baseProfile(), other); !errors.As(err, &re) {
		t.Errorf("another recipe in the run dir: %v, want a *ResumeError", err)
	}
	required, _ := options(t, ptr(0.001))
	required.RunDir, required.Resume = filepath.Join(t.TempDir(), "fresh"), search.ResumeRequired
	if _, err := search.Improve(ctx, baseProfile(), required); !errors.As(err, &re) {
		t.Errorf("required resume of an empty dir: %v, want a *ResumeError", err)
	}
}

// TestRecipeDigestStable (OPT-02): the recipe identity is the same for
// the same inputs and changes with any part of the recipe.
func TestRecipeDigestStable(t *testing.T) {
	a, err := search.RecipeDigest(baseProfile(), options2(t))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := search.RecipeDigest(baseProfile(), options2(t))
	if a != b || !canonjson.IsDigest(a) {
		t.Fatalf("recipe digests %s and %s", a, b)
	}
	changes := map[string]func(*search.Options, *profile.Profile){
		"base":      func(_ *search.Options, p *profile.Profile) { p.Tags = []string{"other"} },
		"surface":   func(o *search.Options, _ *profile.Profile) { o.Surface = search.SurfaceAgentProfile },
		"executor":  func(o *search.Options, _ *profile.Profile) { o.ExecutionRef = "other" },
		"method":    func(o *search.Options, _ *profile.Profile) { o.Method = search.Greedy{Rounds: 5} },
		"partition": func(o *search.Options, _ *profile.Profile) { o.Scenarios[0].Partition = search.Selection },
		"case":      func(o *search.Options, _ *profile.Profile) { o.Scenarios[0].Expected = "other" },
		"judges":    func(o *search.Options, _ *profile.Profile) { o.Judges = []search.Judge{search.Contains{}} },
		"seed":      func(o *search.Options, _ *profile.Profile) { o.Seed = 8 },
	}
	for name, change := range changes {
		o, p := options2(t), baseProfile()
		change(&o, p)
		if d, err := search.RecipeDigest(p, o); err != nil || d == a {
			t.Errorf("%s: digest %s (err %v) did not change", name, d, err)
		}
	}
}

// TestOptionsRefused: every refused option names its JSON pointer.
func TestOptionsRefused(t *testing.T) {
	cases := []struct {
		name string
		edit func(*search.Options)
		path string
	}{
		{"no surface", func(o *search.Options) { o.Surface = "" }, "/surface"},
		{"unknown surface", func(o *search.Options) { o.Surface = "knowledge" }, "/surface"},
		{"no executor", func(o *search.Options) { o.ExecutionRef = "" }, "/executionRef"},
		{"no method", func(o *search.Options) { o.Method = nil }, "/method"},
		{"no agent", func(o *search.Options) { o.Agent = nil }, "/agent"},
		{"no judges", func(o *search.Options) { o.Judges = nil }, "/judges"},
		{"few resamples", func(o *search.Options) { o.Resamples = 10 }, "/resamples"},
		{"confidence 1", func(o *search.Options) { o.Confidence = 1 }, "/confidence"},
		{"negative ceiling", func(o *search.Options) { o.CostCeiling = ptr(-1.0) }, "/costCeiling"},
		{"bad resume", func(o *search.Options) { o.Resume = "always" }, "/resume"},
		{"duplicate id", func(o *search.Options) { o.Scenarios[1].ID = o.Scenarios[0].ID }, "/scenarios/1/id"},
		{"bad partition", func(o *search.Options) { o.Scenarios[2].Partition = "dev" }, "/scenarios/2/partition"},
		{"no test", func(o *search.Options) { o.Scenarios = o.Scenarios[:4] }, "/scenarios"},
		{"no search cases", func(o *search.Options) { o.Scenarios = o.Scenarios[4:] }, "/scenarios"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, agent := options(t, ptr(0.001))
			c.edit(&o)
			_, err := search.Improve(context.Background(), baseProfile(), o)
			var oe *search.OptionsError
			if !errors.As(err, &oe) || oe.Path != c.path || !errors.Is(err, search.ErrInvalidOptions) {
				t.Fatalf("err %v, want an *OptionsError at %s", err, c.path)
			}
			if agent.calls.Load() != 0 {
				t.Error("the agent ran before the options were checked")
			}
		})
	}
}
