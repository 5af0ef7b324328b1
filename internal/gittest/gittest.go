package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Repo is a repository in a test's temporary directory.
type Repo struct {
	t testing.TB
	// Dir is the repository's work tree.
	Dir string
	env []string
}

// Identity is the author and committer of every commit and its date.
type Identity struct {
	Name, Email, Date string
}

// New runs git init (default branch main) in a fresh directory and, when
// origin is not "", adds it as the origin remote. It fails the test when
// git is missing.
func New(t testing.TB, origin string, id Identity) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is required: %v", err)
	}
	r := &Repo{t: t, Dir: filepath.Join(t.TempDir(), "repo"), env: []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=" + id.Name, "GIT_AUTHOR_EMAIL=" + id.Email, "GIT_COMMITTER_NAME=" + id.Name, "GIT_COMMITTER_EMAIL=" + id.Email,
		"GIT_AUTHOR_DATE=" + id.Date, "GIT_COMMITTER_DATE=" + id.Date,
	}}
	r.Git("init", "-q", "-b", "main", r.Dir)
	if origin != "" {
		r.Git("-C", r.Dir, "remote", "add", "origin", origin)
	}
	return r
}

// Git runs git with args in the isolated environment and returns its
// trimmed combined output, failing the test on a non-zero exit.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	return strings.TrimSpace(string(r.run(true, args...)))
}

// Output runs git with args and returns its untrimmed standard output.
func (r *Repo) Output(args ...string) []byte {
	r.t.Helper()
	return r.run(false, args...)
}

func (r *Repo) run(combined bool, args ...string) []byte {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Env = r.env
	var out []byte
	var err error
	if combined {
		out, err = cmd.CombinedOutput()
	} else {
		out, err = cmd.Output()
	}
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// Write writes files into the work tree (path → content; a content
// prefix "x:" makes the file executable).
func (r *Repo) Write(files map[string]string) {
	r.t.Helper()
	for p, c := range files {
		mode := os.FileMode(0o644)
		if rest, ok := strings.CutPrefix(c, "x:"); ok {
			c, mode = rest, 0o755
		}
		full := filepath.Join(r.Dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), mode); err != nil {
			r.t.Fatal(err)
		}
	}
}
