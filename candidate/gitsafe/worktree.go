package gitsafe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OpenLocal admits a repository its caller owns (the code an improvement
// search changes) by Open's rules except the origin's: the path is the
// top of a work tree (or a bare repository), not a directory inside one,
// its common directory is its own real path, it borrows no objects and
// has no replace refs. A failed rule is a RefusedError with code
// repository-mismatch.
func OpenLocal(ctx context.Context, path string, opts Options) (*Repo, error) {
	r, err := admit(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	out, err := r.run(ctx, nil, nil, "rev-parse", "--is-bare-repository", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if lines[0] == "true" {
		return r, nil
	}
	if len(lines) != 2 || filepath.Clean(lines[1]) != r.dir {
		return nil, refuse(CodeRepositoryMismatch, "%s is not the top of a git work tree", path)
	}
	return r, nil
}

// Worktree is a linked work tree of a Repo, detached at a pinned commit,
// with a candidate's patch applied on top. Its own HEAD and index live in
// the repository's administrative area; the repository's work tree, index
// and refs are never touched.
type Worktree struct {
	repo   *Repo
	commit string
	patch  []byte
	// Dir is the work tree's directory.
	Dir string
}

// AddWorktree adds a linked work tree at dir (which must not exist yet),
// detached at commit, with patch (as ApplyPatch reads one; empty for
// none) applied to its files. A commit that is not a full object id or
// that the repository lacks is refused with code base-commit-missing, a
// patch git refuses with patch-does-not-apply; on any error nothing is
// left behind.
func (r *Repo) AddWorktree(ctx context.Context, dir, commit string, patch []byte) (*Worktree, error) {
	if !IsObjectID(commit) {
		return nil, refuse(CodeBaseCommitMissing, "%q is not a full object id", commit)
	}
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("gitsafe: the work tree directory %q is not absolute", dir)
	}
	if _, err := r.run(ctx, nil, nil, "cat-file", "-e", commit+"^{commit}"); err != nil {
		if isExit(err) {
			return nil, refuse(CodeBaseCommitMissing, "commit %s is not in the repository", commit)
		}
		return nil, err
	}
	if _, err := r.run(ctx, nil, nil, "worktree", "add", "--quiet", "--detach", dir, commit); err != nil {
		return nil, err
	}
	w := &Worktree{repo: r, commit: commit, patch: patch, Dir: dir}
	if err := w.apply(ctx); err != nil {
		return nil, errors.Join(err, w.Remove(context.WithoutCancel(ctx)))
	}
	return w, nil
}

// apply applies the work tree's patch to its files.
func (w *Worktree) apply(ctx context.Context) error {
	if len(w.patch) == 0 {
		return nil
	}
	_, err := runGit(ctx, w.repo.git, w.Dir, nil, w.patch, "apply", "--binary", "--whitespace=nowarn", "-p1", "-")
	var ee *exitError
	if errors.As(err, &ee) {
		return refuse(CodePatchDoesNotApply, "%s", strings.TrimSpace(ee.stderr))
	}
	return err
}

// Reset puts the work tree back as AddWorktree made it: the pinned
// commit's files, nothing untracked or ignored, the patch applied. What a
// run left in it is gone.
func (w *Worktree) Reset(ctx context.Context) error {
	if _, err := runGit(ctx, w.repo.git, w.Dir, nil, nil, "reset", "--quiet", "--hard", w.commit); err != nil {
		return err
	}
	if _, err := runGit(ctx, w.repo.git, w.Dir, nil, nil, "clean", "-q", "-ffdx"); err != nil {
		return err
	}
	return w.apply(ctx)
}

// Remove deletes the work tree and its administrative entry in the
// repository, whatever a run left in it.
func (w *Worktree) Remove(ctx context.Context) error {
	_, err := w.repo.run(ctx, nil, nil, "worktree", "remove", "--force", "--force", w.Dir)
	if err != nil {
		// A directory git no longer knows (or never finished adding) is
		// deleted by hand, and the entry pruned.
		rmErr := os.RemoveAll(w.Dir)
		_, pruneErr := w.repo.run(ctx, nil, nil, "worktree", "prune")
		if rmErr != nil || pruneErr != nil {
			return errors.Join(err, rmErr, pruneErr)
		}
	}
	return nil
}
