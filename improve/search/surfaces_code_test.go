package search_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/candidate/gitsafe"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/internal/gittest"
	"github.com/agentrt/agentrt/profile"
)

// codeAgent runs a code candidate from its work tree: it answers loudly
// when mode.txt says SHOUT, fails when the work tree still holds what an
// earlier case left, and leaves a file behind itself.
type codeAgent struct {
	mu   sync.Mutex
	dirs map[string]bool
	runs int
}

func (a *codeAgent) Run(context.Context, *profile.Profile, search.Scenario) (search.Output, error) {
	return search.Output{}, errors.New("a code candidate must run in its work tree")
}

func (a *codeAgent) RunInWorktree(_ context.Context, _ *profile.Profile, dir string, sc search.Scenario) (search.Output, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.runs++
	a.dirs[dir] = true
	if _, err := os.Stat(filepath.Join(dir, "left-behind.txt")); err == nil {
		return search.Output{}, fmt.Errorf("the work tree %s was not reset between cases", dir)
	}
	mode, err := os.ReadFile(filepath.Join(dir, "mode.txt"))
	if err != nil {
		return search.Output{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "left-behind.txt"), []byte(sc.ID), 0o644); err != nil {
		return search.Output{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "mode.txt"), []byte("scribbled"), 0o644); err != nil {
		return search.Output{}, err
	}
	return shoutOutput(strings.Contains(string(mode), shout), sc), nil
}

func modePatch(from, to string) string {
	return "diff --git a/mode.txt b/mode.txt\n--- a/mode.txt\n+++ b/mode.txt\n@@ -1 +1 @@\n-" + from + "\n+" + to + "\n"
}

// repoState fingerprints everything of the caller's repository a code
// search must not change: HEAD, refs, index, work tree status, the list
// of work trees and the object count.
func repoState(t *testing.T, r *gittest.Repo) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{{"rev-parse", "HEAD"}, {"show-ref"}, {"status", "--porcelain", "--ignored"},
		{"worktree", "list", "--porcelain"}, {"count-objects", "-v"}} {
		b.WriteString(r.Git(append([]string{"-C", r.Dir}, args...)...))
	}
	idx, err := os.ReadFile(filepath.Join(r.Dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(idx)
	b.Write(sum[:])
	notes, _ := os.ReadFile(filepath.Join(r.Dir, "notes.txt"))
	b.Write(notes)
	return b.String()
}

// TestCodeSurface (runtime §3.9: "code uses isolated git worktrees"): a
// code candidate is a patch against a pinned commit of a real repository;
// each candidate runs in its own linked work tree, reset before every
// case, and every work tree is gone when Improve returns; the caller's
// HEAD, refs, index, work tree (with its uncommitted change) and objects
// are untouched; a patch that does not apply is refused and recorded.
func TestCodeSurface(t *testing.T) {
	repo, commit := codeRepo(t)
	repo.Write(map[string]string{"notes.txt": "an uncommitted edit the search must not see or touch\n"})
	before := repoState(t, repo)

	agent := &codeAgent{dirs: map[string]bool{}}
	wtDir := t.TempDir()
	o, _ := options(t, ptr(0.001))
	o.Surface, o.Agent = search.SurfaceCode, agent
	o.Code = &search.Code{Repo: repo.Dir, Commit: commit, WorktreeDir: wtDir}
	spy := &currentSpy{inner: listOptimizer{proposals: []canonjson.Value{
		canonjson.StringValue(modePatch("quiet", "polite")),
		canonjson.StringValue(modePatch("quiet", shout)),
		canonjson.StringValue(modePatch("loud", "louder")), // does not apply
	}}}
	o.Method = spy
	// The patched candidates need leave to run (their code may be run);
	// the baseline, the caller's own commit, does not.
	_, err := search.Improve(context.Background(), baseProfile(), o)
	var se *search.SensitiveCandidateError
	if !errors.As(err, &se) || se.Baseline || len(se.Coordinates) != 1 || se.Coordinates[0] != "/code" {
		t.Fatalf("without AuthorizeSensitiveCandidate: %v, want a *SensitiveCandidateError at /code", err)
	}
	asked := map[string]bool{}
	o.AuthorizeSensitiveCandidate = func(_ context.Context, c search.SensitiveCandidate) error {
		if asked[c.Digest] || c.Baseline || !strings.HasPrefix(c.Patch, "diff --git a/mode.txt") {
			t.Errorf("asked about %s (baseline %v) again or about the baseline", c.Digest, c.Baseline)
		}
		asked[c.Digest] = true
		return nil
	}
	agent.dirs = map[string]bool{}
	res, err := search.Improve(context.Background(), baseProfile(), o)
	if err != nil {
		t.Fatal(err)
	}
	if spy.current.Kind() != canonjson.String || spy.current.Str() != "" {
		t.Errorf("the method saw current %s, want the empty patch", canonjson.Marshal(spy.current))
	}
	if res.Decision != search.Ship {
		t.Fatalf("decision %s, reasons %v", res.Decision, res.Reasons)
	}
	if got := res.Population[2]; got.Digest != res.Candidate.Digest || got.Surface.Str() != modePatch("quiet", shout) {
		t.Errorf("the selected candidate is %+v, want the SHOUT patch %s", got, res.Candidate.Digest)
	}
	if res.Candidate.Digest == res.Population[0].Digest || res.Population[0].Digest == res.Population[1].Digest {
		t.Errorf("code candidates share an identity: %s, %s, %s", res.Population[0].Digest, res.Population[1].Digest, res.Candidate.Digest)
	}
	broken := res.Population[3]
	if broken.Status != "refused" || !strings.Contains(broken.Reason, gitsafe.CodePatchDoesNotApply) {
		t.Errorf("the broken patch: %+v", broken)
	}
	// The base, the two applying patches: three candidates, three work
	// trees (at most MaxLiveWorktrees at once), each gone now.
	if len(agent.dirs) != 3 || agent.runs == 0 {
		t.Errorf("the agent ran %d times in %d work trees, want 3 work trees", agent.runs, len(agent.dirs))
	}
	for dir := range agent.dirs {
		if !strings.HasPrefix(dir, wtDir) {
			t.Errorf("work tree %s is outside %s", dir, wtDir)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("work tree %s is still there (%v)", dir, err)
		}
	}
	if left, _ := os.ReadDir(wtDir); len(left) != 0 {
		t.Errorf("the work tree directory still holds %v", left)
	}
	if after := repoState(t, repo); after != before {
		t.Errorf("the caller's repository changed:\nbefore %s\nafter  %s", before, after)
	}
	if len(asked) != 2 {
		t.Errorf("AuthorizeSensitiveCandidate was asked about %d candidates, want the 2 patches that apply", len(asked))
	}
}

// codeRepo is a real repository whose one commit has mode.txt "quiet".
func codeRepo(t *testing.T) (*gittest.Repo, string) {
	t.Helper()
	repo := gittest.New(t, "", gittest.Identity{Name: "t", Email: "t@example.com", Date: "2026-01-01T00:00:00Z"})
	repo.Write(map[string]string{"mode.txt": "quiet\n", "notes.txt": "committed\n"})
	repo.Git("-C", repo.Dir, "add", "-A")
	repo.Git("-C", repo.Dir, "commit", "-q", "-m", "base")
	return repo, repo.Git("-C", repo.Dir, "rev-parse", "HEAD")
}

// shippingCodeResult is a code search that ships the SHOUT patch.
func shippingCodeResult(t *testing.T) search.Result {
	t.Helper()
	repo, commit := codeRepo(t)
	o, _ := options(t, ptr(0.001))
	o.Surface, o.Agent = search.SurfaceCode, &codeAgent{dirs: map[string]bool{}}
	o.Code = &search.Code{Repo: repo.Dir, Commit: commit}
	o.Method = listOptimizer{proposals: []canonjson.Value{canonjson.StringValue(modePatch("quiet", shout))}}
	o.AuthorizeSensitiveCandidate = func(context.Context, search.SensitiveCandidate) error { return nil }
	res, err := search.Improve(context.Background(), baseProfile(), o)
	if err != nil || res.Decision != search.Ship {
		t.Fatalf("%v %s %v", err, res.Decision, res.Reasons)
	}
	return res
}

// TestCodeSurfaceRefusesABadRepository: a path that is not a repository,
// or a pinned commit it lacks, is refused before anything runs.
func TestCodeSurfaceRefusesABadRepository(t *testing.T) {
	repo, _ := codeRepo(t)
	for _, c := range []struct {
		name, repo, commit, path string
	}{
		{"not a repository", t.TempDir(), repo.Git("-C", repo.Dir, "rev-parse", "HEAD"), "/code/repo"},
		{"a commit it lacks", repo.Dir, strings.Repeat("b", 40), "/code/commit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent := &codeAgent{dirs: map[string]bool{}}
			o, _ := options(t, ptr(0.001))
			o.Surface, o.Agent, o.Method = search.SurfaceCode, agent, listOptimizer{}
			o.Code = &search.Code{Repo: c.repo, Commit: c.commit}
			_, err := search.Improve(context.Background(), baseProfile(), o)
			var oe *search.OptionsError
			if !errors.As(err, &oe) || oe.Path != c.path {
				t.Fatalf("err %v, want an *OptionsError at %s", err, c.path)
			}
			if agent.runs != 0 {
				t.Errorf("the agent ran %d times", agent.runs)
			}
		})
	}
}

// TestCodeSurfaceResumesAndBoundsWorktrees (OPT-03 on the code surface):
// more candidates than search.MaxLiveWorktrees never hold more work trees
// at once; a code run resumed from its run dir has the same identities
// (a candidate is the base profile and its tree), so it measures nothing
// again and makes no work tree.
func TestCodeSurfaceResumesAndBoundsWorktrees(t *testing.T) {
	repo, commit := codeRepo(t)
	var proposals []canonjson.Value
	for i := range search.MaxLiveWorktrees + 2 {
		proposals = append(proposals, canonjson.StringValue(modePatch("quiet", fmt.Sprintf("variant %d", i))))
	}
	proposals = append(proposals, canonjson.StringValue(modePatch("quiet", shout)))
	wtDir, runDir := t.TempDir(), filepath.Join(t.TempDir(), "run")
	most := 0
	newOptions := func(agent *codeAgent) search.Options {
		o, _ := options(t, ptr(0.001))
		o.Surface, o.Agent, o.RunDir = search.SurfaceCode, &countingWorktrees{codeAgent: agent, root: wtDir, most: &most}, runDir
		o.Code = &search.Code{Repo: repo.Dir, Commit: commit, WorktreeDir: wtDir}
		o.Method = listOptimizer{proposals: proposals}
		o.AuthorizeSensitiveCandidate = func(context.Context, search.SensitiveCandidate) error { return nil }
		return o
	}
	first := &codeAgent{dirs: map[string]bool{}}
	res, err := search.Improve(context.Background(), baseProfile(), newOptions(first))
	if err != nil || res.Decision != search.Ship {
		t.Fatalf("%v %s %v", err, res.Decision, res.Reasons)
	}
	// An evicted candidate measured again (the baseline, in the final
	// comparison) gets a fresh work tree.
	if len(first.dirs) < len(proposals)+1 || most > search.MaxLiveWorktrees || most == 0 {
		t.Errorf("%d candidates in %d work trees, at most %d at once (limit %d)", len(proposals)+1, len(first.dirs), most, search.MaxLiveWorktrees)
	}
	again := &codeAgent{dirs: map[string]bool{}}
	o := newOptions(again)
	o.Resume = search.ResumeRequired
	res2, err := search.Improve(context.Background(), baseProfile(), o)
	if err != nil {
		t.Fatal(err)
	}
	if again.runs != 0 || res2.Candidate.Digest != res.Candidate.Digest || res2.Provenance.Evaluations != 0 {
		t.Errorf("the resumed run measured %d cases (candidate %s, was %s)", again.runs, res2.Candidate.Digest, res.Candidate.Digest)
	}
	if left, _ := os.ReadDir(wtDir); len(left) != 0 {
		t.Errorf("work trees left: %v", left)
	}
}

// countingWorktrees notes the most work trees alive at once under root.
type countingWorktrees struct {
	*codeAgent
	root string
	most *int
}

func (c *countingWorktrees) RunInWorktree(ctx context.Context, p *profile.Profile, dir string, sc search.Scenario) (search.Output, error) {
	live, err := filepath.Glob(filepath.Join(c.root, "*", "wt-*"))
	if err != nil {
		return search.Output{}, err
	}
	*c.most = max(*c.most, len(live))
	return c.codeAgent.RunInWorktree(ctx, p, dir, sc)
}
