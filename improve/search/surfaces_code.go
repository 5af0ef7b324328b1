package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/agentrt/agentrt/candidate/gitsafe"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
)

// Limits of the code surface.
const (
	// MaxPatchBytes bounds a code candidate's patch.
	MaxPatchBytes = 8 << 20
	// MaxLiveWorktrees bounds the work trees a run keeps at once; the
	// least recently used is removed to make room (and made again if its
	// candidate is measured again).
	MaxLiveWorktrees = 4
)

// Code is the repository the code surface changes (runtime §3.9: "code
// uses isolated git worktrees"). A code candidate is a git patch (as git
// diff --binary writes one, paths a/ and b/) against Commit; the empty
// string is the baseline, Commit itself. Each candidate runs in its own
// linked work tree of Repo, detached at Commit with the patch applied and
// reset before every case; the work trees are removed when Improve
// returns. Repo's own work tree, index and refs are never touched, and a
// patch is checked in a temporary index and object directory
// (gitsafe.ApplyPatch) before any work tree is made. A candidate's patch
// is code the agent may run: like a hook, each distinct patched
// candidate runs only when Options.AuthorizeSensitiveCandidate
// authorizes it (coordinate "/code").
//
// A code candidate's Digest (in the Result, the population, the journal
// and SensitiveCandidate) is its identity, the digest of the base
// profile's digest and the candidate's git tree, not a profile digest: on
// this surface every candidate runs the same profile.
type Code struct {
	// Repo is the caller's git repository.
	Repo string
	// Commit pins the base revision: a full commit id.
	Commit string
	// WorktreeDir is where work trees are made (default the system's
	// temporary directory).
	WorktreeDir string
}

// WorktreeAgent runs a code candidate: the candidate profile in the work
// tree that holds the candidate's code. Options.Agent must implement it
// when the surface is code.
type WorktreeAgent interface {
	RunInWorktree(ctx context.Context, candidate *profile.Profile, dir string, sc Scenario) (Output, error)
}

func checkCode(o *Options) error {
	switch c := o.Code; {
	case c == nil:
		return &OptionsError{Path: "/code", Reason: "surface code needs Code{Repo, Commit}"}
	case c.Repo == "":
		return &OptionsError{Path: "/code/repo", Reason: "name the git repository"}
	case !gitsafe.IsObjectID(c.Commit):
		return &OptionsError{Path: "/code/commit", Reason: fmt.Sprintf("%q is not a full commit id; pin one (git rev-parse HEAD)", c.Commit)}
	}
	if _, ok := o.Agent.(WorktreeAgent); !ok {
		return &OptionsError{Path: "/agent", Reason: "the code surface runs candidates in work trees: the agent must implement search.WorktreeAgent"}
	}
	return nil
}

// codeRun is a code search's repository and work trees.
type codeRun struct {
	repo     *gitsafe.Repo
	commit   string
	baseTree string
	scratch  string            // the directory the work trees are made in
	patches  map[string][]byte // candidate identity → patch
	live     []*liveWorktree   // least recently used first
	made     int
}

type liveWorktree struct {
	id string
	wt *gitsafe.Worktree
}

// openCode admits the repository and pins the baseline's identity: the
// base profile with the pinned commit's tree.
func (r *run) openCode(ctx context.Context) error {
	c := r.o.Code
	repo, err := gitsafe.OpenLocal(ctx, c.Repo, gitsafe.Options{})
	if err != nil {
		return &OptionsError{Path: "/code/repo", Reason: err.Error()}
	}
	tree, err := repo.CommitTree(ctx, c.Commit)
	if err != nil {
		return &OptionsError{Path: "/code/commit", Reason: err.Error()}
	}
	scratch, err := os.MkdirTemp(c.WorktreeDir, "agentrt-improve-code-")
	if err != nil {
		return fmt.Errorf("search: work tree directory: %w", err)
	}
	r.code = &codeRun{repo: repo, commit: c.Commit, baseTree: tree, scratch: scratch, patches: map[string][]byte{}}
	r.baselineID = r.codeIdentity(tree)
	r.code.patches[r.baselineID] = nil
	return nil
}

// closeCode removes every work tree the run made and their directory.
func (r *run) closeCode() error {
	if r.code == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	for _, l := range r.code.live {
		errs = append(errs, l.wt.Remove(ctx))
	}
	r.code.live = nil
	errs = append(errs, os.RemoveAll(r.code.scratch))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("search: removing the code work trees: %w", err)
	}
	return nil
}

// codeIdentity is a code candidate's identity: the base profile's digest
// and the candidate's tree.
func (r *run) codeIdentity(tree string) string {
	d, _ := canonjson.Digest(canonjson.ObjectValue([]canonjson.Member{
		{Name: "kind", Value: canonjson.StringValue("agentrt-code-candidate")},
		{Name: "profile", Value: canonjson.StringValue(r.baseDigest)},
		{Name: "tree", Value: canonjson.StringValue(tree)},
	}))
	return d
}

// materializeCode checks a code candidate's patch against the pinned
// commit and returns the base profile and the candidate's identity.
func (r *run) materializeCode(ctx context.Context, v canonjson.Value) (*profile.Profile, string, error) {
	if v.Kind() != canonjson.String {
		return nil, "", &CandidateError{Err: fmt.Errorf("a code candidate is a git patch as a JSON string, not %s", kindName(v))}
	}
	patch := []byte(v.Str())
	if len(patch) > MaxPatchBytes {
		return nil, "", &CandidateError{Err: fmt.Errorf("the patch is %d bytes, more than %d", len(patch), MaxPatchBytes)}
	}
	tree := r.code.baseTree
	if len(patch) > 0 {
		var err error
		if tree, err = r.code.repo.ApplyPatch(ctx, r.code.baseTree, patch); err != nil {
			if errors.Is(err, gitsafe.ErrRefused) {
				return nil, "", &CandidateError{Err: err}
			}
			return nil, "", err
		}
	}
	id := r.codeIdentity(tree)
	if _, ok := r.code.patches[id]; !ok {
		r.code.patches[id] = patch
	}
	p, err := profile.Clone(r.base)
	if err != nil {
		return nil, "", err
	}
	return p, id, nil
}

// worktree returns the work tree of candidate id, reset for a case: the
// live one, or a new one (removing the least recently used beyond
// MaxLiveWorktrees).
func (r *run) worktree(ctx context.Context, id string) (string, error) {
	c := r.code
	if i := slices.IndexFunc(c.live, func(l *liveWorktree) bool { return l.id == id }); i >= 0 {
		l := c.live[i]
		c.live = append(slices.Delete(c.live, i, i+1), l)
		if err := l.wt.Reset(ctx); err != nil {
			return "", fmt.Errorf("search: resetting the work tree of %s: %w", id, err)
		}
		return l.wt.Dir, nil
	}
	patch, ok := c.patches[id]
	if !ok {
		return "", fmt.Errorf("search: no patch is known for code candidate %s", id)
	}
	for len(c.live) >= MaxLiveWorktrees {
		if err := c.live[0].wt.Remove(ctx); err != nil {
			return "", err
		}
		c.live = c.live[1:]
	}
	c.made++
	wt, err := c.repo.AddWorktree(ctx, filepath.Join(c.scratch, "wt-"+strconv.Itoa(c.made)), c.commit, patch)
	if err != nil {
		return "", fmt.Errorf("search: the work tree of %s: %w", id, err)
	}
	c.live = append(c.live, &liveWorktree{id: id, wt: wt})
	return wt.Dir, nil
}

// codeCoordinates is "/code" for a code candidate that changes the
// pinned commit: its patch is code the agent may run, so it needs
// AuthorizeSensitiveCandidate like a hook does. The baseline is the
// caller's own commit.
func (r *run) codeCoordinates(id string) []string {
	if r.code == nil || len(r.code.patches[id]) == 0 {
		return nil
	}
	return []string{"/code"}
}

// codePatch is code candidate id's patch ("" on other surfaces).
func (r *run) codePatch(id string) string {
	if r.code == nil {
		return ""
	}
	return string(r.code.patches[id])
}

// runAgent runs the agent on one case: in the candidate's work tree on
// the code surface, else on the profile alone.
func (r *run) runAgent(ctx context.Context, p *profile.Profile, id string, sc Scenario) (Output, error) {
	if r.code == nil {
		return r.o.Agent.Run(ctx, p, sc)
	}
	dir, err := r.worktree(ctx, id)
	if err != nil {
		return Output{}, err
	}
	return r.o.Agent.(WorktreeAgent).RunInWorktree(ctx, p, dir, sc)
}
