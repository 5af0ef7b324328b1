package search_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/schema"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
)

// TestPairedBootstrapDeterministic: the same deltas, resamples, level and
// seed give the same interval; the interval is ordered and contains the
// mean; a constant sample's interval is that constant.
func TestPairedBootstrapDeterministic(t *testing.T) {
	deltas := []float64{0.5, -0.25, 1, 0, 0.75, 0.25, 1, -0.5, 0.5, 0}
	a := search.PairedBootstrap(deltas, 2000, 0.95, 42)
	b := search.PairedBootstrap(deltas, 2000, 0.95, 42)
	if a != b {
		t.Fatalf("two intervals from one seed: %+v and %+v", a, b)
	}
	m := 0.325
	if !(a.Lower <= m && m <= a.Upper) || a.Lower >= a.Upper || a.Lower < -0.5 || a.Upper > 1 {
		t.Errorf("interval %+v around mean %v", a, m)
	}
	if c := search.PairedBootstrap(deltas, 2000, 0.95, 43); c == a {
		t.Errorf("another seed gave the identical interval %+v", c)
	}
	if w := search.PairedBootstrap(deltas, 2000, 0.5, 42); w.Upper-w.Lower >= a.Upper-a.Lower {
		t.Errorf("a 50%% interval %+v is not narrower than the 95%% %+v", w, a)
	}
	if k := search.PairedBootstrap([]float64{0.2, 0.2, 0.2}, 100, 0.9, 1); math.Abs(k.Lower-0.2) > 1e-12 || math.Abs(k.Upper-0.2) > 1e-12 {
		t.Errorf("constant sample: %+v", k)
	}
}

// fixtureOptimizer stands in for an external optimizer (GEPA-style) at
// the method seam: a pinned identity, one model call of its own recorded
// in the run store, measurements asked of Improve, and provenance.
type fixtureOptimizer struct {
	model   contract.ChatModel
	st      store.Store
	lie     bool // report less spend than the ledger holds
	version string
}

func (f fixtureOptimizer) Identity() search.MethodIdentity {
	return search.MethodIdentity{Name: "fixture-gepa", Version: f.version,
		Digest:   canonjson.DigestBytes([]byte("fixture-gepa " + f.version)),
		Settings: canonjson.ObjectValue([]canonjson.Member{{Name: "population", Value: canonjson.NumberValue(2)}})}
}

func (f fixtureOptimizer) Search(ctx context.Context, in search.MethodInput) (search.MethodOutput, error) {
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: f.model, System: "optimize", User: "propose", Store: f.st, Kind: "fixture-gepa"})
	if err != nil {
		return search.MethodOutput{}, err
	}
	ids := []string{}
	for _, c := range append(in.Train, in.Selection...) {
		ids = append(ids, c.ID)
	}
	best, bestMean := in.Current, -1.0
	for _, text := range []string{politePrompt, winningPrompt} {
		cand := in.Current.With("systemPrompt", canonjson.StringValue(text))
		ev, err := in.Evaluate(ctx, cand, ids)
		if err != nil {
			return search.MethodOutput{}, err
		}
		if ev.Mean > bestMean {
			best, bestMean = cand, ev.Mean
		}
	}
	usage := res.Usage
	if f.lie {
		usage.CostUSD = ledger.ExactAmount(usage.CostUSD.Value / 2)
	}
	return search.MethodOutput{Selected: best, Rationale: "fixture population of two", Usage: usage, RunIDs: []string{res.RunID},
		Provenance: map[string]string{"package": "fixture-gepa@" + f.version, "runId": res.RunID, "artifactDir": "/nonexistent/fixture"}}, nil
}

// TestFixtureOptimizer (OPT-01..05 against a controlled fixture): the
// optimizer's identity is part of the recipe digest (stable across runs,
// changed by its version), its spend reconciles with the ledger of the
// run it recorded in a real SQLite and PostgreSQL store, its provenance is in the
// result, and a run whose optimizer under-reports its spend holds.
func TestFixtureOptimizer(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		testFixtureOptimizer(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(context.Background(), pgtest.Schema(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		testFixtureOptimizer(t, st)
	})
}

func testFixtureOptimizer(t *testing.T, st store.Store) {
	ctx := context.Background()
	model := func() contract.ChatModel {
		return scripted.NewChatModel(scripted.ChatScript{Cycle: true, Turns: []scripted.ChatTurn{{Events: []contract.ChatEvent{scripted.Text("ok"), scripted.UsageCost(100, 10, 0.004)}}}})
	}
	run := func(opt fixtureOptimizer, dir string) (search.Result, error) {
		o, _ := options(t, ptr(0.001))
		o.Method, o.Store, o.RunDir = opt, st, dir
		return search.Improve(ctx, baseProfile(), o)
	}
	opt := fixtureOptimizer{model: model(), st: st, version: "0.3.1"}
	res, err := run(opt, filepath.Join(t.TempDir(), "a"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != search.Ship || res.Spend.Optimizer.Value != 0.004 || !res.Spend.Optimizer.Known() {
		t.Fatalf("decision %s reasons %v optimizer spend %v", res.Decision, res.Reasons, res.Spend.Optimizer)
	}
	p := res.Provenance
	if p.Method.Name != "fixture-gepa" || p.Method.Digest == "" || p.Reported["package"] != "fixture-gepa@0.3.1" || len(p.MethodRunIDs) != 1 || p.Reported["runId"] != p.MethodRunIDs[0] {
		t.Errorf("provenance %+v", p)
	}
	again, err := run(fixtureOptimizer{model: model(), st: st, version: "0.3.1"}, filepath.Join(t.TempDir(), "b"))
	if err != nil || again.Provenance.RecipeDigest != p.RecipeDigest {
		t.Errorf("recipe %s then %s (%v)", p.RecipeDigest, again.Provenance.RecipeDigest, err)
	}
	bumped, err := run(fixtureOptimizer{model: model(), st: st, version: "0.4.0"}, filepath.Join(t.TempDir(), "c"))
	if err != nil || bumped.Provenance.RecipeDigest == p.RecipeDigest {
		t.Errorf("a new optimizer version kept recipe %s (%v)", p.RecipeDigest, err)
	}
	lying, err := run(fixtureOptimizer{model: model(), st: st, version: "0.3.1", lie: true}, filepath.Join(t.TempDir(), "d"))
	if err != nil {
		t.Fatal(err)
	}
	if lying.Decision != search.Hold || lying.Spend.Optimizer.Known() {
		t.Errorf("an unreconciled optimizer: decision %s spend %v reasons %v", lying.Decision, lying.Spend.Optimizer, lying.Reasons)
	}
}

// surfaceMethod proposes one value on any surface, measured once.
type surfaceMethod struct{ value canonjson.Value }

func (surfaceMethod) Identity() search.MethodIdentity {
	return search.MethodIdentity{Name: "surface-fixture", Version: "1"}
}

func (m surfaceMethod) Search(ctx context.Context, in search.MethodInput) (search.MethodOutput, error) {
	if _, err := in.Evaluate(ctx, m.value, []string{in.Selection[0].ID}); err != nil {
		return search.MethodOutput{}, err
	}
	return search.MethodOutput{Selected: m.value, Usage: ledger.NoUsage()}, nil
}

// TestSurfaces: each surface is materialized into a complete, validated
// profile that differs from the base only there; an invalid candidate is
// a *CandidateError.
func TestSurfaces(t *testing.T) {
	mustValue := func(x any) canonjson.Value {
		v, err := canonjson.ToValue(x)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	whole := baseProfile()
	whole.Description = profile.Ptr("a whole new profile")
	cases := []struct {
		surface search.Surface
		value   canonjson.Value
		check   func(p *profile.Profile) bool
	}{
		{search.SurfacePrompt, mustValue(profile.Prompt{SystemPrompt: profile.Ptr("x")}), func(p *profile.Profile) bool { return *p.Prompt.SystemPrompt == "x" }},
		{search.SurfaceTools, mustValue(map[string]bool{"read": true, "write": false}), func(p *profile.Profile) bool { return p.Tools["read"] && len(p.Tools) == 2 }},
		{search.SurfaceMCP, mustValue(map[string]profile.MCPServer{"docs": {Transport: profile.Ptr("http"), URL: profile.Ptr("https://mcp.example.com/docs")}}),
			func(p *profile.Profile) bool { return p.MCP["docs"].URL != nil }},
		{search.SurfaceAgentProfile, mustValue(whole), func(p *profile.Profile) bool { return *p.Description == "a whole new profile" }},
	}
	for _, c := range cases {
		t.Run(string(c.surface), func(t *testing.T) {
			var seen *profile.Profile
			o, _ := options(t, ptr(0.001))
			o.Surface, o.Method = c.surface, surfaceMethod{value: c.value}
			o.Agent = search.AgentFunc(func(_ context.Context, p *profile.Profile, sc search.Scenario) (search.Output, error) {
				seen = p
				return search.Output{Text: sc.Expected, Usage: ledger.NoUsage()}, nil
			})
			res, err := search.Improve(context.Background(), baseProfile(), o)
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(res.Candidate.Profile) || !c.check(seen) || *res.Candidate.Profile.Name != "echo" {
				t.Errorf("candidate %+v", res.Candidate.Profile)
			}
			if err := res.Candidate.Profile.Validate(); err != nil || len(res.Candidate.Diffs) == 0 {
				t.Errorf("validate %v diffs %d", err, len(res.Candidate.Diffs))
			}
		})
	}
	o, _ := options(t, ptr(0.001))
	o.Surface, o.Method = search.SurfaceTools, surfaceMethod{value: canonjson.StringValue("not a map")}
	_, err := search.Improve(context.Background(), baseProfile(), o)
	var ce *search.CandidateError
	var se *schema.Error
	if !errors.As(err, &ce) || !errors.As(err, &se) {
		t.Fatalf("an invalid candidate: %v, want a *CandidateError over a *schema.Error", err)
	}
}

// TestCommandJudge runs a real judge process: its verdict, its reported
// cost, an unreported cost (unknown), a failing process and a malformed
// verdict.
func TestCommandJudge(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) []string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		return []string{p}
	}
	ctx := context.Background()
	sc := search.Scenario{ID: "c1", Input: "hi", Expected: "HI", Partition: search.Test}
	grep := script("grep.sh", `if grep -q '"output":"HI"'; then echo '{"score":1,"costUsd":0.5}'; else echo '{"score":0,"costUsd":0.5}'; fi`)
	s, err := search.Command{Argv: grep}.Score(ctx, sc, search.Output{Text: "HI"})
	if err != nil || s.Value != 1 || s.CostUSD != ledger.ExactAmount(0.5) {
		t.Errorf("score %+v err %v", s, err)
	}
	s, err = search.Command{Argv: script("nocost.sh", `cat >/dev/null; echo '{"score":0.25}'`)}.Score(ctx, sc, search.Output{})
	if err != nil || s.Value != 0.25 || s.CostUSD.Reported {
		t.Errorf("score %+v err %v: an unreported cost must be unknown", s, err)
	}
	if _, err := (search.Command{Argv: script("fail.sh", `echo broken >&2; exit 3`)}).Score(ctx, sc, search.Output{}); err == nil {
		t.Error("a failing judge gave a verdict")
	}
	_, err = search.Command{Argv: script("bad.sh", `cat >/dev/null; echo '{"score":2,"extra":true}'`)}.Score(ctx, sc, search.Output{})
	var se *schema.Error
	if !errors.As(err, &se) || len(se.Issues) < 2 {
		t.Errorf("malformed verdict: %v", err)
	}
	slow := search.Command{Argv: script("slow.sh", `sleep 30`), Timeout: 200 * time.Millisecond}
	if _, err := slow.Score(ctx, sc, search.Output{}); err == nil {
		t.Error("a judge past its timeout gave a verdict")
	}
}

// TestParseScenarios: the file format, and refusals with JSON pointers.
func TestParseScenarios(t *testing.T) {
	good := `{"cases":[{"id":"a","input":"x","expected":"X","partition":"train"},{"id":"b","input":"y","partition":"test"}]}`
	scs, err := search.ParseScenarios([]byte(good))
	if err != nil || len(scs) != 2 || scs[0].Expected != "X" || scs[1].Partition != search.Test {
		t.Fatalf("%+v %v", scs, err)
	}
	bad := []struct{ name, doc, path string }{
		{"not json", `{`, ""},
		{"unknown member", `{"cases":[{"id":"a","input":"x","partition":"train","extra":1}]}`, "/cases/0"},
		{"duplicate member", `{"cases":[],"cases":[]}`, "/cases"},
		{"bad partition", `{"cases":[{"id":"a","input":"x","partition":"dev"}]}`, "/cases/0/partition"},
		{"duplicate id", `{"cases":[{"id":"a","input":"x","partition":"train"},{"id":"a","input":"y","partition":"test"}]}`, "/cases/1/id"},
		{"no test", `{"cases":[{"id":"a","input":"x","partition":"train"}]}`, "/cases"},
		{"empty", `{"cases":[]}`, "/cases"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := search.ParseScenarios([]byte(c.doc))
			var se *schema.Error
			if !errors.As(err, &se) || len(se.Issues) == 0 || se.Issues[0].Path != c.path {
				t.Fatalf("err %v, want a *schema.Error at %q", err, c.path)
			}
		})
	}
}

// FuzzParseScenarios: any bytes decode to valid scenarios or a
// *schema.Error, never a panic.
func FuzzParseScenarios(f *testing.F) {
	for _, s := range []string{
		`{"cases":[{"id":"a","input":"x","expected":"X","partition":"train"},{"id":"b","input":"y","partition":"test"}]}`,
		`{"cases":[{"id":"a","input":"x","partition":"selection"},{"id":"a","input":"x","partition":"test"}]}`,
		`{"cases":[{"id":"","input":1,"partition":null}]}`, `[]`, `{"cases":{}}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		scs, err := search.ParseScenarios(data)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		ids := map[string]bool{}
		for _, sc := range scs {
			if sc.ID == "" || ids[sc.ID] {
				t.Fatalf("accepted bad ids: %+v", scs)
			}
			ids[sc.ID] = true
		}
	})
}

// FuzzParseVerdict: a judge command's verdict decodes to a score in
// [0, 1] or a *schema.Error.
func FuzzParseVerdict(f *testing.F) {
	for _, s := range []string{`{"score":1}`, `{"score":0.5,"costUsd":0.01}`, `{"score":-1}`, `{"score":"1"}`, `1`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := search.ParseVerdict(data)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !(s.Value >= 0 && s.Value <= 1) || s.CostUSD.Reported && s.CostUSD.Value < 0 {
			t.Fatalf("accepted %+v", s)
		}
	})
}

// BenchmarkImproveIteration measures one Improve run of the fixture: one
// greedy round of two variants over 4 search cases and 6 paired test
// cases, each a kernel tool loop on a scripted model.
func BenchmarkImproveIteration(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		o, _ := options(b, ptr(0.001))
		o.Method = search.Greedy{Model: proposer(0.002), Rounds: 1}
		if _, err := search.Improve(ctx, baseProfile(), o); err != nil {
			b.Fatal(err)
		}
	}
}

// Spec §3.9: execution-capable coordinates (a local MCP server's
// command, a hook command) need AuthorizeSensitiveCandidate per distinct
// candidate and for the baseline. Without the hook such a candidate is
// refused before it runs and recorded refused; with it, the hook is asked
// once per digest and its refusal is the candidate's; a baseline with a
// hook command stops the run before anything of it runs.
func TestSensitiveCandidatesNeedAuthorization(t *testing.T) {
	local, err := canonjson.ToValue(map[string]profile.MCPServer{"files": {Command: profile.Ptr("/usr/bin/mcp-files"), Args: []profile.ConfigValue{}}})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	agent := search.AgentFunc(func(_ context.Context, p *profile.Profile, sc search.Scenario) (search.Output, error) {
		if len(p.MCP) > 0 {
			runs++
		}
		return search.Output{Text: sc.Expected, Usage: ledger.NoUsage()}, nil
	})
	o, _ := options(t, ptr(0.001))
	o.Surface, o.Method, o.Agent = search.SurfaceMCP, surfaceMethod{value: local}, agent
	_, err = search.Improve(context.Background(), baseProfile(), o)
	var se *search.SensitiveCandidateError
	if !errors.As(err, &se) || se.Baseline || len(se.Coordinates) != 1 || se.Coordinates[0] != "/mcp/files/command" || se.Err != nil {
		t.Fatalf("no hook: %v, want a *SensitiveCandidateError naming /mcp/files/command", err)
	}
	if runs != 0 {
		t.Fatalf("the unauthorized candidate ran %d times", runs)
	}

	var asked []search.SensitiveCandidate
	o.AuthorizeSensitiveCandidate = func(_ context.Context, c search.SensitiveCandidate) error {
		asked = append(asked, c)
		return nil
	}
	res, err := search.Improve(context.Background(), baseProfile(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0].Digest != res.Candidate.Digest || asked[0].Baseline || asked[0].Profile == nil || runs == 0 {
		t.Fatalf("asked %+v, ran %d times; want one question for the candidate %s, then runs", asked, runs, res.Candidate.Digest)
	}

	refusal := errors.New("commands are not allowed on this host")
	o.AuthorizeSensitiveCandidate = func(context.Context, search.SensitiveCandidate) error { return refusal }
	runs = 0
	_, err = search.Improve(context.Background(), baseProfile(), o)
	if !errors.As(err, &se) || !errors.Is(err, refusal) || runs != 0 {
		t.Fatalf("refusing hook: %v after %d runs, want the hook's refusal and no run", err, runs)
	}

	hooked := baseProfile()
	hooked.Hooks = map[string][]profile.HookCommand{"PreToolUse": {{Command: "/usr/local/bin/audit"}}}
	o, _ = options(t, ptr(0.001))
	o.Agent = agent
	_, err = search.Improve(context.Background(), hooked, o)
	if !errors.As(err, &se) || !se.Baseline || len(se.Coordinates) != 1 || se.Coordinates[0] != "/hooks/PreToolUse/0/command" {
		t.Fatalf("a baseline with a hook command: %v, want a *SensitiveCandidateError for the baseline", err)
	}
}
