package gitsafe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CommitTree returns the tree of commit (spec candidate §22 step 9): a
// commit id the repository lacks, or an object that is not a commit, is
// refused with code base-commit-missing.
func (r *Repo) CommitTree(ctx context.Context, commit string) (string, error) {
	return r.commitTree(ctx, commit, CodeBaseCommitMissing)
}

func (r *Repo) commitTree(ctx context.Context, commit, code string) (string, error) {
	if !IsObjectID(commit) {
		return "", refuse(code, "%q is not a full object id", commit)
	}
	typ, err := r.run(ctx, nil, nil, "cat-file", "-t", commit)
	if err != nil {
		if isExit(err) {
			return "", refuse(code, "the repository has no object %s", commit)
		}
		return "", err
	}
	if t := strings.TrimSpace(string(typ)); t != "commit" {
		return "", refuse(code, "%s is a %s, not a commit", commit, t)
	}
	tree, err := r.run(ctx, nil, nil, "rev-parse", "--verify", "--end-of-options", commit+"^{tree}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(tree)), nil
}

// CheckBase resolves baseCommit and requires its tree to be baseTree
// (base-commit-missing, base-tree-mismatch).
func (r *Repo) CheckBase(ctx context.Context, baseCommit, baseTree string) error {
	tree, err := r.CommitTree(ctx, baseCommit)
	if err != nil {
		return err
	}
	if tree != baseTree {
		return refuse(CodeBaseTreeMismatch, "commit %s has tree %s, not %s", baseCommit, tree, baseTree)
	}
	return nil
}

// ApplyPatch applies patch to baseTree in a temporary index, as git apply
// --cached --binary --whitespace=nowarn applies it (standard a/ b/
// prefixes, strip level 1, no three-way merge, no reject files), writes
// the resulting tree, requires it to be safe (CheckTree's rules) and
// returns its id. A patch git refuses is refused with code
// patch-does-not-apply and git's message. The blobs and trees it creates
// live in a temporary object directory, deleted on return: the
// repository gains no object, and its refs, index and work tree are
// untouched.
func (r *Repo) ApplyPatch(ctx context.Context, baseTree string, patch []byte) (string, error) {
	if !IsObjectID(baseTree) {
		return "", refuse(CodeBaseTreeMismatch, "%q is not a full object id", baseTree)
	}
	scratch, err := os.MkdirTemp("", "agentrt-gitsafe-")
	if err != nil {
		return "", fmt.Errorf("gitsafe: %w", err)
	}
	defer os.RemoveAll(scratch)
	objects := filepath.Join(scratch, "objects")
	if err := os.Mkdir(objects, 0o700); err != nil {
		return "", fmt.Errorf("gitsafe: %w", err)
	}
	repoObjects, err := r.run(ctx, nil, nil, "rev-parse", "--git-path", "objects")
	if err != nil {
		return "", err
	}
	borrowed := strings.TrimSpace(string(repoObjects))
	if !filepath.IsAbs(borrowed) {
		borrowed = filepath.Join(r.dir, borrowed)
	}
	env := []string{
		"GIT_INDEX_FILE=" + filepath.Join(scratch, "index"),
		"GIT_OBJECT_DIRECTORY=" + objects,
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + borrowed,
	}
	if _, err := r.run(ctx, env, nil, "read-tree", baseTree); err != nil {
		if isExit(err) {
			return "", refuse(CodeBaseTreeMismatch, "tree %s cannot be read: %v", baseTree, err)
		}
		return "", err
	}
	if _, err := r.run(ctx, env, patch, "apply", "--cached", "--binary", "--whitespace=nowarn", "-p1", "-"); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return "", refuse(CodePatchDoesNotApply, "%s", strings.TrimSpace(ee.stderr))
		}
		return "", err
	}
	out, err := r.run(ctx, env, nil, "write-tree")
	if err != nil {
		return "", err
	}
	tree := strings.TrimSpace(string(out))
	if err := r.checkTree(ctx, env, tree); err != nil {
		return "", err
	}
	return tree, nil
}

// CheckTree requires tree to be safe to materialize (spec candidate
// §20.5): non-empty, only regular-file blobs (mode 100644 or 100755; no
// symlink, no submodule), every path valid UTF-8, relative, without a
// backslash, NUL or control character, without an empty, "." or ".."
// segment, and not under .git (any case). A violation is refused with
// code unsafe-tree.
func (r *Repo) CheckTree(ctx context.Context, tree string) error {
	if !IsObjectID(tree) {
		return refuse(CodeUnsafeTree, "%q is not a full object id", tree)
	}
	return r.checkTree(ctx, nil, tree)
}

func (r *Repo) checkTree(ctx context.Context, env []string, tree string) error {
	out, err := r.run(ctx, env, nil, "ls-tree", "-r", "-z", "--full-tree", tree)
	if err != nil {
		if isExit(err) {
			return refuse(CodeUnsafeTree, "tree %s cannot be listed: %v", tree, err)
		}
		return err
	}
	entries, err := ParseTree(out)
	if err != nil {
		return fmt.Errorf("gitsafe: %w", err)
	}
	if len(entries) == 0 {
		return refuse(CodeUnsafeTree, "tree %s is empty", tree)
	}
	for _, e := range entries {
		if err := SafeEntry(e); err != nil {
			return err
		}
	}
	return nil
}

// TreeEntry is one entry of a recursive tree listing.
type TreeEntry struct {
	Mode string // octal, as git prints it: 100644, 100755, 120000, 160000, …
	Type string // blob, tree or commit
	ID   string
	Path string
}

// ParseTree decodes the output of git ls-tree -z (with or without -r):
// "<mode> SP <type> SP <id> TAB <path> NUL" per entry.
func ParseTree(out []byte) ([]TreeEntry, error) {
	var entries []TreeEntry
	for len(out) > 0 {
		end := bytes.IndexByte(out, 0)
		if end < 0 {
			return nil, errors.New("ls-tree output does not end in NUL")
		}
		rec := out[:end]
		out = out[end+1:]
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		// Exactly one space between fields, as git writes them: splitting
		// on any whitespace would accept a form feed or a run of spaces
		// that git never prints, and lose it on re-encoding.
		fields := strings.Split(string(meta), " ")
		if !ok || len(fields) != 3 {
			return nil, fmt.Errorf("malformed ls-tree entry %q", rec)
		}
		if _, err := strconv.ParseUint(fields[0], 8, 32); err != nil || !isObjectType(fields[1]) || !IsObjectID(fields[2]) {
			return nil, fmt.Errorf("malformed ls-tree entry %q", rec)
		}
		entries = append(entries, TreeEntry{Mode: fields[0], Type: fields[1], ID: fields[2], Path: string(path)})
	}
	return entries, nil
}

// isObjectType reports whether s can be a git object type: one or more
// lower-case ASCII letters (blob, tree, commit).
func isObjectType(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz") == ""
}

// SafeEntry applies spec candidate §20.5 to one entry of a recursive
// listing.
func SafeEntry(e TreeEntry) error {
	if e.Type != "blob" || (e.Mode != "100644" && e.Mode != "100755") {
		return refuse(CodeUnsafeTree, "%q is a %s with mode %s; only regular files (100644, 100755) are allowed", e.Path, e.Type, e.Mode)
	}
	if reason := unsafePath(e.Path); reason != "" {
		return refuse(CodeUnsafeTree, "path %q %s", e.Path, reason)
	}
	return nil
}

// unsafePath says why p is not a safe relative path, or "".
func unsafePath(p string) string {
	switch {
	case !utf8.ValidString(p):
		return "is not valid UTF-8"
	case strings.HasPrefix(p, "/"):
		return "is absolute"
	case strings.ContainsRune(p, '\\'):
		return "contains a backslash"
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f {
			return "contains a control character"
		}
	}
	for i, seg := range strings.Split(p, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return "has an empty, . or .. segment"
		case i == 0 && strings.EqualFold(seg, ".git"):
			return "is under .git"
		}
	}
	return ""
}

// Blob returns the bytes of the one regular file at path in commit (spec
// candidate §22 step 8): a commit the repository lacks is refused with
// resource-commit; a path that is not exactly one regular blob with
// resource-path; a blob larger than maxBytes with resource-too-large,
// before it is read.
func (r *Repo) Blob(ctx context.Context, commit, path string, maxBytes int64) ([]byte, error) {
	if _, err := r.commitTree(ctx, commit, CodeResourceCommit); err != nil {
		return nil, err
	}
	if reason := unsafePath(path); reason != "" {
		return nil, refuse(CodeResourcePath, "path %q %s", path, reason)
	}
	out, err := r.run(ctx, nil, nil, "ls-tree", "-z", "--full-tree", commit, "--", path)
	if err != nil {
		return nil, err
	}
	entries, err := ParseTree(out)
	if err != nil {
		return nil, fmt.Errorf("gitsafe: %w", err)
	}
	if len(entries) != 1 || entries[0].Path != path || entries[0].Type != "blob" || (entries[0].Mode != "100644" && entries[0].Mode != "100755") {
		return nil, refuse(CodeResourcePath, "%s has no single regular file at %q", commit, path)
	}
	size, err := r.run(ctx, nil, nil, "cat-file", "-s", entries[0].ID)
	if err != nil {
		return nil, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(size)), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("gitsafe: blob size %q: %w", size, err)
	}
	if n > maxBytes {
		return nil, refuse(CodeResourceTooLarge, "%q holds %d bytes, more than %d", path, n, maxBytes)
	}
	return r.run(ctx, nil, nil, "cat-file", "blob", entries[0].ID)
}
