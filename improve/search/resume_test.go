package search_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/improve/search"
)

// TestResumeIfCompatibleStartsFresh (OPT-03, §3.9 resume): with resume
// if-compatible a run dir whose journal holds another identity (here the
// baseline profile differs) is moved aside, kept byte for byte, and the
// run starts fresh; running the same recipe again resumes it. Provenance
// records which happened.
func TestResumeIfCompatibleStartsFresh(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "run")

	first, _ := options(t, ptr(0.001))
	first.RunDir = dir
	res, err := search.Improve(ctx, baseProfile(), first)
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Provenance; p.ResumeStatus != search.ResumeFresh || p.Resume != search.ResumeIfCompatible || p.Resumed || p.Superseded != "" {
		t.Errorf("first run provenance %+v", p)
	}
	old, err := os.ReadFile(filepath.Join(dir, search.JournalFile))
	if err != nil {
		t.Fatal(err)
	}

	// Another baseline: another identity.
	other := baseProfile()
	other.Tags = append(other.Tags, "v2")
	second, agent := options(t, ptr(0.001))
	second.RunDir = dir
	res2, err := search.Improve(ctx, other, second)
	if err != nil {
		t.Fatalf("if-compatible with another recipe's journal: %v", err)
	}
	p := res2.Provenance
	if p.ResumeStatus != search.ResumeRestarted || p.Resumed || p.Reused != 0 || agent.calls.Load() == 0 {
		t.Errorf("restarted run provenance %+v, agent ran %d", p, agent.calls.Load())
	}
	kept, err := os.ReadFile(p.Superseded)
	if err != nil || !bytes.Equal(kept, old) || filepath.Dir(p.Superseded) != dir ||
		!strings.HasPrefix(filepath.Base(p.Superseded), "improve.superseded-") {
		t.Errorf("superseded journal %q not kept as it was (%v)", p.Superseded, err)
	}
	if p.RecipeDigest == res.Provenance.RecipeDigest {
		t.Error("another baseline has the same identity")
	}

	// The same recipe again resumes the fresh journal, measuring nothing.
	third, agent3 := options(t, ptr(0.001))
	third.RunDir, third.Resume = dir, search.ResumeRequired
	res3, err := search.Improve(ctx, other, third)
	if err != nil {
		t.Fatal(err)
	}
	if p := res3.Provenance; p.ResumeStatus != search.ResumeResumed || !p.Resumed || agent3.calls.Load() != 0 || p.Resume != search.ResumeRequired {
		t.Errorf("resumed provenance %+v, agent ran %d", p, agent3.calls.Load())
	}

	// Back to the first recipe, twice: a second superseded journal, not
	// an overwritten one.
	fourth, _ := options(t, ptr(0.001))
	fourth.RunDir = dir
	res4, err := search.Improve(ctx, baseProfile(), fourth)
	if err != nil {
		t.Fatal(err)
	}
	if res4.Provenance.Superseded == "" || res4.Provenance.Superseded == p.Superseded {
		t.Errorf("second restart superseded %q (first %q)", res4.Provenance.Superseded, p.Superseded)
	}
	if _, err := os.Stat(p.Superseded); err != nil {
		t.Errorf("the first superseded journal is gone: %v", err)
	}
}

// TestResumeRequiredRefuses (OPT-03, §3.9 resume): resume required with
// no run dir, an empty run dir, or a journal of another identity (another
// executionRef, surface, method setting or baseline) is a *ResumeError,
// and nothing runs.
func TestResumeRequiredRefuses(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "run")
	seed, _ := options(t, ptr(0.001))
	seed.RunDir = dir
	if _, err := search.Improve(ctx, baseProfile(), seed); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(o *search.Options)
	}{
		{"no run dir", func(o *search.Options) { o.RunDir = "" }},
		{"empty run dir", func(o *search.Options) { o.RunDir = filepath.Join(t.TempDir(), "empty") }},
		{"another executionRef", func(o *search.Options) { o.ExecutionRef = "scripted:other" }},
		{"another method setting", func(o *search.Options) { o.Method = search.Greedy{Model: proposer(0.002), Rounds: 5} }},
		{"another seed", func(o *search.Options) { o.Seed = 8 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, agent := options(t, ptr(0.001))
			o.RunDir, o.Resume = dir, search.ResumeRequired
			tt.change(&o)
			var re *search.ResumeError
			if _, err := search.Improve(ctx, baseProfile(), o); !errors.As(err, &re) {
				t.Fatalf("got %v, want a *ResumeError", err)
			}
			if agent.calls.Load() != 0 {
				t.Errorf("the refused run measured %d cases", agent.calls.Load())
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("a required resume changed the run dir: %v %v", entries, err)
	}
}

// TestResumeKeepsScrubbedDescriptions (OPT-03, §3.9 privacy): an output
// descriptor is journaled scrubbed with its measurement, so a resumed run
// shows the method the same description without asking the hook again,
// and the journal never holds the raw secret.
func TestResumeKeepsScrubbedDescriptions(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "run")
	describe := func(calls *int) func(context.Context, search.Artifact) (string, error) {
		return func(_ context.Context, a search.Artifact) (string, error) {
			*calls++
			return "output " + a.Output.Text + " key " + fakeAnthropicKey, nil
		}
	}
	var firstCalls int
	killed, killedAgent := options(t, ptr(0.001))
	killed.RunDir, killed.DescribeArtifact = dir, describe(&firstCalls)
	killedAgent.failAfter = 3
	if _, err := search.Improve(ctx, baseProfile(), killed); !errors.Is(err, errKilled) {
		t.Fatalf("killed run: %v", err)
	}
	if firstCalls != 3 {
		t.Fatalf("described %d outputs before the kill, want 3", firstCalls)
	}

	var resumedCalls int
	resumed, resumedAgent := options(t, ptr(0.001))
	resumed.RunDir, resumed.Resume, resumed.DescribeArtifact = dir, search.ResumeRequired, describe(&resumedCalls)
	spy := &describeSpy{inner: resumed.Method}
	resumed.Method = spy
	res, err := search.Improve(ctx, baseProfile(), resumed)
	if err != nil {
		t.Fatal(err)
	}
	if res.Provenance.Reused != 3 {
		t.Fatalf("reused %d", res.Provenance.Reused)
	}
	// Every search measurement run now was described now; the reused ones
	// were not described again, and still carry their description.
	searchRuns := int(resumedAgent.calls.Load()) - 2*6 // minus the final comparison
	if resumedCalls != searchRuns {
		t.Errorf("described %d outputs, ran %d search measurements", resumedCalls, searchRuns)
	}
	for _, d := range spy.outputs {
		if !strings.HasPrefix(d, "output ") || !strings.Contains(d, "[redacted-credential]") {
			t.Errorf("the method was shown %q", d)
		}
	}
	journal, err := os.ReadFile(filepath.Join(dir, search.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(journal, []byte(fakeAnthropicKey)) || !bytes.Contains(journal, []byte("[redacted-credential]")) {
		t.Error("the journal does not hold the scrubbed description only")
	}
}
