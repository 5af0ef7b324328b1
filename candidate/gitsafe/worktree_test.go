package gitsafe_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/candidate/gitsafe"
)

// TestWorktree: a local repository (no origin) is admitted only at its
// top; a linked work tree is detached at the pinned commit with the patch
// applied, Reset discards what a run left and re-applies the patch, and
// Remove leaves neither the directory nor git's entry; the repository's
// refs, index, work tree and objects never change.
func TestWorktree(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "")
	commit, _ := f.commit(map[string]string{"a.txt": "one\n", "sub/b.txt": "two\n"})
	f.Write(map[string]string{"a.txt": "uncommitted\n"})
	before := f.state()

	if _, err := gitsafe.OpenLocal(ctx, filepath.Join(f.dir, "sub"), gitsafe.Options{}); !errors.Is(err, gitsafe.ErrRefused) {
		t.Fatalf("a directory inside the work tree: %v, want a refusal", err)
	}
	if _, err := gitsafe.OpenLocal(ctx, t.TempDir(), gitsafe.Options{}); !errors.Is(err, gitsafe.ErrRefused) {
		t.Fatalf("not a repository: %v, want a refusal", err)
	}
	r, err := gitsafe.OpenLocal(ctx, f.dir, gitsafe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte("diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+patched\n")
	dir := filepath.Join(t.TempDir(), "wt")
	w, err := r.AddWorktree(ctx, dir, commit, patch)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return string(b)
	}
	if read("a.txt") != "patched\n" || read("sub/b.txt") != "two\n" {
		t.Fatalf("work tree a.txt %q b.txt %q", read("a.txt"), read("sub/b.txt"))
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("scribbled"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.txt"), []byte("left"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if read("a.txt") != "patched\n" || read("junk.txt") != "" {
		t.Errorf("after Reset a.txt %q junk.txt %q", read("a.txt"), read("junk.txt"))
	}
	if err := w.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the work tree is still there: %v", err)
	}
	if after := f.state(); after != before {
		t.Errorf("the repository changed:\n%s\n%s", before, after)
	}
	if list := f.git("-C", f.dir, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 || strings.Contains(list, dir) {
		t.Errorf("worktree list %q", list)
	}

	bad := []byte("diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-nothing\n+x\n")
	var re *gitsafe.RefusedError
	if _, err := r.AddWorktree(ctx, filepath.Join(t.TempDir(), "bad"), commit, bad); !errors.As(err, &re) || re.Code != gitsafe.CodePatchDoesNotApply {
		t.Errorf("a patch that does not apply: %v", err)
	}
	if _, err := r.AddWorktree(ctx, filepath.Join(t.TempDir(), "missing"), "0123456789012345678901234567890123456789", nil); !errors.As(err, &re) || re.Code != gitsafe.CodeBaseCommitMissing {
		t.Errorf("a missing commit: %v", err)
	}
	if after := f.state(); after != before {
		t.Errorf("a refused work tree changed the repository")
	}
}
