package gitsafe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Verdict codes of spec candidate §22 that gitsafe decides.
const (
	CodeRepositoryMismatch = "repository-mismatch"
	CodeBaseCommitMissing  = "base-commit-missing"
	CodeBaseTreeMismatch   = "base-tree-mismatch"
	CodePatchDoesNotApply  = "patch-does-not-apply"
	CodeUnsafeTree         = "unsafe-tree"
	CodeResourceCommit     = "resource-commit"
	CodeResourcePath       = "resource-path"
	CodeResourceTooLarge   = "resource-too-large"
)

// ErrRefused is matched (errors.Is) by every RefusedError.
var ErrRefused = errors.New("gitsafe: refused")

// RefusedError is a verification refusal: the repository, commit, patch
// or tree is not what the candidate claims or is not safe. Code is the
// verifier's verdict code; Detail says what was found (for a patch, git's
// own message).
type RefusedError struct {
	Code   string
	Detail string
}

func (e *RefusedError) Error() string { return "gitsafe: " + e.Code + ": " + e.Detail }

// Is makes a RefusedError match ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

func refuse(code, format string, args ...any) error {
	return &RefusedError{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Repo is an admitted repository. It is safe for concurrent use: it holds
// only paths.
type Repo struct {
	git    string // the git executable
	dir    string // the resolved repository path (-C)
	gitDir string // its resolved git directory
}

// Options configure Open.
type Options struct {
	// Git is the git executable; "" looks "git" up in PATH.
	Git string
}

// objectID is a full SHA-1 or SHA-256 object id, lower-case.
var objectID = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// IsObjectID reports whether s is a full lower-case object id (40 or 64
// hex digits): the only spelling gitsafe passes to git.
func IsObjectID(s string) bool { return objectID.MatchString(s) }

// run runs one hardened git command in the repository with the extra
// environment entries and stdin, returning stdout. A non-zero exit is an
// *exitError carrying stderr.
func (r *Repo) run(ctx context.Context, extraEnv []string, stdin []byte, args ...string) ([]byte, error) {
	return runGit(ctx, r.git, r.dir, extraEnv, stdin, args...)
}

// exitError is a git command that ran and failed.
type exitError struct {
	args   []string
	stderr string
	err    error
}

func (e *exitError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.args, " "), e.err, strings.TrimSpace(e.stderr))
}

func (e *exitError) Unwrap() error { return e.err }

// hardening are the per-invocation settings of spec candidate §20.4.
var hardening = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "protocol.allow=never",
	"-c", "protocol.file.allow=never",
}

func runGit(ctx context.Context, git, dir string, extraEnv []string, stdin []byte, args ...string) ([]byte, error) {
	full := append(append([]string{"-C", dir}, hardening...), args...)
	cmd := exec.CommandContext(ctx, git, full...)
	cmd.Env = append(baseEnv(), extraEnv...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("gitsafe: git %s: %w", args[0], ctx.Err())
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, &exitError{args: args, stderr: stderr.String(), err: err}
		}
		return nil, fmt.Errorf("gitsafe: running git: %w", err)
	}
	return stdout.Bytes(), nil
}

// baseEnv is the whole environment of a hardened git: nothing inherited
// but PATH (to find git's helpers), no configuration outside the
// repository, no prompts, no replace objects, the C locale.
func baseEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"LC_ALL=C",
		"HOME=/nonexistent",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=/bin/false",
		"SSH_ASKPASS=/bin/false",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_LITERAL_PATHSPECS=1",
	}
}

// Open admits the repository at path for owner/repo (spec candidate
// §20.4): the path resolves to a directory; its origin remote is
// https://github.com/O/R(.git), ssh://git@github.com/O/R(.git) or
// git@github.com:O/R(.git) with O/R exactly owner/repo (case-sensitive);
// it has no refs/replace/* ref; neither its git directory nor its common
// directory lists alternates or http-alternates; and its common directory
// is its own real path and contains no ':'. A failed rule is a
// RefusedError with code repository-mismatch.
func Open(ctx context.Context, path, owner, repo string, opts Options) (*Repo, error) {
	r, err := admit(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	url, err := r.run(ctx, nil, nil, "config", "--local", "--get", "remote.origin.url")
	if err != nil {
		if isExit(err) {
			return nil, refuse(CodeRepositoryMismatch, "the repository has no origin remote")
		}
		return nil, err
	}
	o, n, ok := GitHubOrigin(strings.TrimSpace(string(url)))
	if !ok || o != owner || n != repo {
		return nil, refuse(CodeRepositoryMismatch, "origin %q is not github.com/%s/%s", strings.TrimSpace(string(url)), owner, repo)
	}
	return r, nil
}

// admit applies Open's rules but the origin's: a directory, its own real
// common directory, no borrowed objects, no replace refs.
func admit(ctx context.Context, path string, opts Options) (*Repo, error) {
	git := opts.Git
	if git == "" {
		var err error
		if git, err = exec.LookPath("git"); err != nil {
			return nil, fmt.Errorf("gitsafe: git is not installed: %w", err)
		}
	}
	dir, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, refuse(CodeRepositoryMismatch, "repository path %s: %v", path, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, refuse(CodeRepositoryMismatch, "repository path %s is not a directory", path)
	}
	out, err := runGit(ctx, git, dir, nil, nil, "rev-parse", "--absolute-git-dir", "--git-common-dir")
	if err != nil {
		if isExit(err) {
			return nil, refuse(CodeRepositoryMismatch, "%s is not a git repository", path)
		}
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("gitsafe: unexpected rev-parse output %q", out)
	}
	gitDir, common := lines[0], lines[1]
	if !filepath.IsAbs(common) {
		common = filepath.Join(dir, common)
	}
	common = filepath.Clean(common)
	real, err := filepath.EvalSymlinks(common)
	if err != nil || real != common || strings.Contains(common, ":") {
		return nil, refuse(CodeRepositoryMismatch, "the common git directory %s is not its own real path or contains ':'", common)
	}
	r := &Repo{git: git, dir: dir, gitDir: gitDir}
	for _, d := range []string{gitDir, common} {
		for _, f := range []string{"alternates", "http-alternates"} {
			if b, err := os.ReadFile(filepath.Join(d, "objects", "info", f)); err == nil && len(bytes.TrimSpace(b)) > 0 {
				return nil, refuse(CodeRepositoryMismatch, "the repository borrows objects (objects/info/%s)", f)
			}
		}
	}
	refs, err := r.run(ctx, nil, nil, "for-each-ref", "--format=%(refname)", "refs/replace/")
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(refs)) > 0 {
		return nil, refuse(CodeRepositoryMismatch, "the repository has replace refs")
	}
	return r, nil
}

func isExit(err error) bool {
	var ee *exitError
	return errors.As(err, &ee)
}

// githubOrigin matches the three admitted spellings of a GitHub origin.
var githubOrigin = regexp.MustCompile(`^(?:https://github\.com/|ssh://git@github\.com/|git@github\.com:)([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?$`)

// GitHubOrigin parses an origin URL in one of the admitted forms
// (https://github.com/O/R, ssh://git@github.com/O/R or git@github.com:O/R,
// each optionally ending in .git) and returns owner and repository.
func GitHubOrigin(url string) (owner, repo string, ok bool) {
	m := githubOrigin.FindStringSubmatch(url)
	if m == nil || m[1] == "." || m[1] == ".." || m[2] == "." || m[2] == ".." || m[2] == "" {
		return "", "", false
	}
	return m[1], m[2], true
}
