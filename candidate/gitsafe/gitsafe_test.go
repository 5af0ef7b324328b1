package gitsafe_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/candidate/gitsafe"
	"github.com/agentrt/agentrt/internal/gittest"
)

// fixture is a real repository made with the system git, isolated from
// the machine's configuration.
type fixture struct {
	*gittest.Repo
	t   *testing.T
	dir string
}

func newFixture(t *testing.T, origin string) *fixture {
	t.Helper()
	r := gittest.New(t, origin, gittest.Identity{Name: "t", Email: "t@example.com", Date: "2026-01-01T00:00:00Z"})
	return &fixture{Repo: r, t: t, dir: r.Dir}
}

func (f *fixture) git(args ...string) string {
	f.t.Helper()
	return f.Git(args...)
}

// commit writes files (path → content; a mode prefix "x:" makes it
// executable) and commits them, returning the commit and tree ids.
func (f *fixture) commit(files map[string]string) (commit, tree string) {
	f.t.Helper()
	f.Write(files)
	f.git("-C", f.dir, "add", "-A")
	f.git("-C", f.dir, "commit", "-q", "-m", "c")
	return f.git("-C", f.dir, "rev-parse", "HEAD"), f.git("-C", f.dir, "rev-parse", "HEAD^{tree}")
}

// state fingerprints what verification must never change: refs, the
// index, the work tree and the object count.
func (f *fixture) state() string {
	f.t.Helper()
	var b strings.Builder
	b.WriteString(f.git("-C", f.dir, "show-ref"))
	b.WriteString(f.git("-C", f.dir, "count-objects", "-v"))
	b.WriteString(f.git("-C", f.dir, "status", "--porcelain", "--ignored"))
	idx, _ := os.ReadFile(filepath.Join(f.dir, ".git", "index"))
	sum := sha256.Sum256(idx)
	b.Write(sum[:])
	return b.String()
}

const origin = "https://github.com/acme/widgets.git"

func open(t *testing.T, f *fixture) *gitsafe.Repo {
	t.Helper()
	r, err := gitsafe.Open(context.Background(), f.dir, "acme", "widgets", gitsafe.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var re *gitsafe.RefusedError
	if !errors.As(err, &re) || re.Code != code {
		t.Fatalf("err = %v; want a refusal with code %s", err, code)
	}
}

// TestAdmission: spec candidate §20.4's repository admission rules.
func TestAdmission(t *testing.T) {
	ctx := context.Background()
	for _, o := range []string{"https://github.com/acme/widgets", origin, "ssh://git@github.com/acme/widgets.git", "git@github.com:acme/widgets"} {
		f := newFixture(t, o)
		f.commit(map[string]string{"a.txt": "a\n"})
		if _, err := gitsafe.Open(ctx, f.dir, "acme", "widgets", gitsafe.Options{}); err != nil {
			t.Errorf("origin %s: %v", o, err)
		}
	}
	refused := map[string]func(f *fixture) string{
		"other owner": func(f *fixture) string {
			f.git("-C", f.dir, "remote", "set-url", "origin", "https://github.com/evil/widgets")
			return f.dir
		},
		"owner case differs": func(f *fixture) string {
			f.git("-C", f.dir, "remote", "set-url", "origin", "https://github.com/ACME/widgets")
			return f.dir
		},
		"not github": func(f *fixture) string {
			f.git("-C", f.dir, "remote", "set-url", "origin", "https://gitlab.com/acme/widgets")
			return f.dir
		},
		"lookalike host": func(f *fixture) string {
			f.git("-C", f.dir, "remote", "set-url", "origin", "https://github.com.evil/acme/widgets")
			return f.dir
		},
		"no origin": func(f *fixture) string { f.git("-C", f.dir, "remote", "remove", "origin"); return f.dir },
		"replace ref": func(f *fixture) string {
			c := f.git("-C", f.dir, "rev-parse", "HEAD")
			f.git("-C", f.dir, "update-ref", "refs/replace/"+c, c)
			return f.dir
		},
		"alternates": func(f *fixture) string {
			other := newFixture(t, "")
			os.WriteFile(filepath.Join(f.dir, ".git", "objects", "info", "alternates"), []byte(filepath.Join(other.dir, ".git", "objects")+"\n"), 0o644)
			return f.dir
		},
		"http-alternates": func(f *fixture) string {
			os.WriteFile(filepath.Join(f.dir, ".git", "objects", "info", "http-alternates"), []byte("https://example.com/objects\n"), 0o644)
			return f.dir
		},
		"not a directory": func(f *fixture) string { return filepath.Join(f.dir, "a.txt") },
		"missing":         func(f *fixture) string { return filepath.Join(f.dir, "nope") },
		"not a repository": func(f *fixture) string {
			d := t.TempDir()
			return d
		},
	}
	for name, mutate := range refused {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, origin)
			f.commit(map[string]string{"a.txt": "a\n"})
			_, err := gitsafe.Open(ctx, mutate(f), "acme", "widgets", gitsafe.Options{})
			wantCode(t, err, gitsafe.CodeRepositoryMismatch)
		})
	}
}

// TestApplyPatch: spec candidate §22 step 9 — a patch made by git diff
// --binary applies to the base tree and reproduces the candidate's tree;
// the repository is unchanged afterwards.
func TestApplyPatch(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, origin)
	base, baseTree := f.commit(map[string]string{"README.md": "hello\n", "bin/run": "x:#!/bin/sh\necho hi\n", "data.bin": "\x00\x01\x02"})
	// The candidate: edit, add, delete, chmod and a binary change.
	f.git("-C", f.dir, "checkout", "-q", "-b", "candidate")
	os.WriteFile(filepath.Join(f.dir, "README.md"), []byte("hello, world\n"), 0o644)
	os.WriteFile(filepath.Join(f.dir, "new.txt"), []byte("new\n"), 0o644)
	os.WriteFile(filepath.Join(f.dir, "data.bin"), []byte("\x00\xff\x02\x03"), 0o644)
	os.Remove(filepath.Join(f.dir, "bin", "run"))
	os.WriteFile(filepath.Join(f.dir, "tool.sh"), []byte("#!/bin/sh\n"), 0o755)
	_, candTree := f.commit(nil)
	patch := f.git("-C", f.dir, "diff", "--binary", base, "HEAD") + "\n"
	f.git("-C", f.dir, "checkout", "-q", "main")
	f.git("-C", f.dir, "branch", "-q", "-D", "candidate")
	f.git("-C", f.dir, "gc", "-q", "--prune=now")

	r := open(t, f)
	if err := r.CheckBase(ctx, base, baseTree); err != nil {
		t.Fatalf("CheckBase: %v", err)
	}
	if err := r.CheckTree(ctx, baseTree); err != nil {
		t.Fatalf("CheckTree(base): %v", err)
	}
	before := f.state()
	got, err := r.ApplyPatch(ctx, baseTree, []byte(patch))
	if err != nil {
		t.Fatalf("ApplyPatch: %v", err)
	}
	if got != candTree {
		t.Errorf("tree %s, want %s", got, candTree)
	}
	if after := f.state(); after != before {
		t.Errorf("verification changed the repository:\n%s\n---\n%s", before, after)
	}

	t.Run("does not apply", func(t *testing.T) {
		bad := strings.Replace(patch, "-hello\n", "-goodbye\n", 1)
		_, err := r.ApplyPatch(ctx, baseTree, []byte(bad))
		wantCode(t, err, gitsafe.CodePatchDoesNotApply)
		if !strings.Contains(err.Error(), "README.md") {
			t.Errorf("git's message is not kept: %v", err)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		_, err := r.ApplyPatch(ctx, baseTree, []byte("not a patch\n"))
		wantCode(t, err, gitsafe.CodePatchDoesNotApply)
	})
	t.Run("base commit missing", func(t *testing.T) {
		wantCode(t, r.CheckBase(ctx, strings.Repeat("a", 40), baseTree), gitsafe.CodeBaseCommitMissing)
		wantCode(t, r.CheckBase(ctx, "--output=/tmp/x", baseTree), gitsafe.CodeBaseCommitMissing)
		wantCode(t, r.CheckBase(ctx, baseTree, baseTree), gitsafe.CodeBaseCommitMissing) // a tree, not a commit
	})
	t.Run("base tree mismatch", func(t *testing.T) {
		wantCode(t, r.CheckBase(ctx, base, candTree), gitsafe.CodeBaseTreeMismatch)
	})
	t.Run("unsafe results", func(t *testing.T) {
		for name, p := range map[string]string{
			"symlink":   "diff --git a/link b/link\nnew file mode 120000\nindex 0000000..8bd6648\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n",
			"submodule": "diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000..2222222\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit 2222222222222222222222222222222222222222\n",
		} {
			tree, err := r.ApplyPatch(ctx, baseTree, []byte(p))
			if err == nil {
				t.Errorf("%s: applied to %s", name, tree)
				continue
			}
			var re *gitsafe.RefusedError
			if !errors.As(err, &re) || (re.Code != gitsafe.CodeUnsafeTree && re.Code != gitsafe.CodePatchDoesNotApply) {
				t.Errorf("%s: %v; want unsafe-tree or patch-does-not-apply", name, err)
			}
		}
		if after := f.state(); after != before {
			t.Error("a refused patch changed the repository")
		}
	})
}

// TestHardening: the repository's own hooks and fsmonitor, the user's
// global configuration and the caller's GIT_* environment never take part.
func TestHardening(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, origin)
	base, baseTree := f.commit(map[string]string{"a.txt": "a\n"})
	marker := filepath.Join(t.TempDir(), "ran")
	script := "#!/bin/sh\ntouch " + marker + "\n"
	hooks := filepath.Join(f.dir, ".git", "hooks")
	for _, h := range []string{"post-index-change", "pre-commit", "reference-transaction", "post-checkout"} {
		os.WriteFile(filepath.Join(hooks, h), []byte(script), 0o755)
	}
	fsmon := filepath.Join(t.TempDir(), "fsmonitor")
	os.WriteFile(fsmon, []byte(script), 0o755)
	f.git("-C", f.dir, "config", "core.fsmonitor", fsmon)
	// A global configuration and environment that would redirect git.
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = "+hooks+"\n"), 0o644)
	t.Setenv("HOME", home)
	t.Setenv("GIT_DIR", "/nonexistent")
	t.Setenv("GIT_INDEX_FILE", filepath.Join(f.dir, ".git", "index"))
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.hookspath'='"+hooks+"'")

	r := open(t, f)
	if err := r.CheckBase(ctx, base, baseTree); err != nil {
		t.Fatal(err)
	}
	patch := "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n"
	if _, err := r.ApplyPatch(ctx, baseTree, []byte(patch)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a hook or fsmonitor ran during verification")
	}
}

// TestBlob: spec candidate §22 step 8 — exactly one regular blob at the
// path of the commit.
func TestBlob(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, origin)
	commit, _ := f.commit(map[string]string{"docs/guide.md": "# Guide\n", "docs/[x].md": "glob\n", "docs/a.md": "a\n"})
	r := open(t, f)
	if b, err := r.Blob(ctx, commit, "docs/guide.md", 100); err != nil || string(b) != "# Guide\n" {
		t.Errorf("Blob = %q, %v", b, err)
	}
	if b, err := r.Blob(ctx, commit, "docs/[x].md", 100); err != nil || string(b) != "glob\n" {
		t.Errorf("a path with glob characters is read literally: %q, %v", b, err)
	}
	_, err := r.Blob(ctx, commit, "docs/*.md", 100)
	wantCode(t, err, gitsafe.CodeResourcePath)
	_, err = r.Blob(ctx, commit, "docs", 100)
	wantCode(t, err, gitsafe.CodeResourcePath)
	_, err = r.Blob(ctx, commit, "docs/missing.md", 100)
	wantCode(t, err, gitsafe.CodeResourcePath)
	_, err = r.Blob(ctx, commit, "../etc/passwd", 100)
	wantCode(t, err, gitsafe.CodeResourcePath)
	_, err = r.Blob(ctx, commit, "docs/guide.md", 3)
	wantCode(t, err, gitsafe.CodeResourceTooLarge)
	_, err = r.Blob(ctx, strings.Repeat("b", 40), "docs/guide.md", 100)
	wantCode(t, err, gitsafe.CodeResourceCommit)
}

// TestSafeEntry: spec candidate §20.5's path and mode rules.
func TestSafeEntry(t *testing.T) {
	id := strings.Repeat("1", 40)
	for _, tc := range []struct {
		e    gitsafe.TreeEntry
		safe bool
	}{
		{gitsafe.TreeEntry{"100644", "blob", id, "a/b.txt"}, true},
		{gitsafe.TreeEntry{"100755", "blob", id, "run.sh"}, true},
		{gitsafe.TreeEntry{"120000", "blob", id, "link"}, false},
		{gitsafe.TreeEntry{"160000", "commit", id, "sub"}, false},
		{gitsafe.TreeEntry{"100644", "blob", id, ".git/config"}, false},
		{gitsafe.TreeEntry{"100644", "blob", id, ".GIT/config"}, false},
		{gitsafe.TreeEntry{"100644", "blob", id, "a/.git/config"}, true},
		{gitsafe.TreeEntry{"100644", "blob", id, "a\\b"}, false},
		{gitsafe.TreeEntry{"100644", "blob", id, "a\x01b"}, false},
		{gitsafe.TreeEntry{"100644", "blob", id, "a\x7fb"}, false},
		{gitsafe.TreeEntry{"100644", "blob", id, "a/../b"}, false},
		{gitsafe.TreeEntry{"100644", "blob", id, "./b"}, false},
		{gitsafe.TreeEntry{"100644", "blob", id, "/etc/passwd"}, false},
		{gitsafe.TreeEntry{"100644", "blob", id, "\xff"}, false},
		{gitsafe.TreeEntry{"100644", "blob", id, "naïve.txt"}, true},
	} {
		if err := gitsafe.SafeEntry(tc.e); (err == nil) != tc.safe {
			t.Errorf("SafeEntry(%q %s) = %v; want safe %v", tc.e.Path, tc.e.Mode, err, tc.safe)
		}
	}
}

func TestGitHubOrigin(t *testing.T) {
	for _, tc := range []struct {
		url, owner, repo string
	}{
		{"https://github.com/acme/widgets", "acme", "widgets"},
		{"https://github.com/acme/widgets.git", "acme", "widgets"},
		{"ssh://git@github.com/acme/w.x.git", "acme", "w.x"},
		{"git@github.com:acme/widgets.git", "acme", "widgets"},
		{"http://github.com/acme/widgets", "", ""},
		{"https://github.com/acme/widgets/", "", ""},
		{"https://user@github.com/acme/widgets", "", ""},
		{"https://github.com/acme/widgets.git.git", "acme", "widgets.git"},
		{"https://github.com/../widgets", "", ""},
		{"https://github.com/acme", "", ""},
		{"git@github.com:acme/widgets\n", "", ""},
	} {
		o, r, ok := gitsafe.GitHubOrigin(tc.url)
		if o != tc.owner || r != tc.repo || ok != (tc.owner != "") {
			t.Errorf("GitHubOrigin(%q) = %q, %q, %v", tc.url, o, r, ok)
		}
	}
}

// FuzzParseTree: the ls-tree decoder never panics, and what it accepts
// re-encodes to the same bytes.
func FuzzParseTree(f *testing.F) {
	f.Add([]byte("100644 blob " + strings.Repeat("a", 40) + "\tREADME.md\x00"))
	f.Add([]byte("160000 commit " + strings.Repeat("b", 64) + "\tsub\x00040000 tree " + strings.Repeat("c", 40) + "\td\x00"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := gitsafe.ParseTree(data)
		if err != nil {
			return
		}
		var b bytes.Buffer
		for _, e := range entries {
			b.WriteString(e.Mode + " " + e.Type + " " + e.ID + "\t" + e.Path + "\x00")
		}
		if !bytes.Equal(b.Bytes(), data) {
			t.Fatalf("accepted %q but it re-encodes as %q", data, b.Bytes())
		}
	})
}

// TestParseTreeSeparators: fields are separated by exactly one space, as
// git prints them; any other whitespace is a malformed entry.
func TestParseTreeSeparators(t *testing.T) {
	id := strings.Repeat("a", 40)
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"git's form", "100644 blob " + id + "\tREADME.md\x00", true},
		{"space in path", "100644 blob " + id + "\ta b\x00", true},
		{"form feed", "100644\fblob " + id + "\tREADME.md\x00", false},
		{"vertical tab", "100644 blob\v" + id + "\tREADME.md\x00", false},
		{"two spaces", "100644  blob " + id + "\tREADME.md\x00", false},
		{"leading space", " 100644 blob " + id + "\tREADME.md\x00", false},
		{"trailing space", "100644 blob " + id + " \tREADME.md\x00", false},
		{"no-break space", "100644\u00a0blob " + id + "\tREADME.md\x00", false},
		{"next line", "100644\u0085blob " + id + "\tREADME.md\x00", false},
		{"empty type", "100644  " + id + "\tREADME.md\x00", false},
		{"type not a word", "100644 BLOB " + id + "\tREADME.md\x00", false},
	} {
		_, err := gitsafe.ParseTree([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("%s: ParseTree(%q) err = %v, want ok %v", tc.name, tc.in, err, tc.ok)
		}
	}
}
