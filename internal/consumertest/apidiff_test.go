package consumertest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/gittest"
)

// stubAPIDiff stands in for golang.org/x/exp/cmd/apidiff: -w writes an
// empty export file, a comparison prints $STUB_REPORT.
const stubAPIDiff = `x:#!/bin/sh
if [ "$2" = "-w" ]; then : >"$3"; exit 0; fi
cat "$STUB_REPORT"
`

const stabilityDoc = "# Stability\n\n<!-- stable-packages -->\n- `core` the core\n<!-- /stable-packages -->\n"

// apidiffRepo is a module repository holding a copy of scripts/apidiff,
// its stable list naming only "core", and the stub tool.
func apidiffRepo(t *testing.T) *gittest.Repo {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "apidiff"))
	if err != nil {
		t.Fatal(err)
	}
	r := gittest.New(t, "", gittest.Identity{Name: "t", Email: "t@example.com", Date: "2026-12-01T00:00:00Z"})
	r.Write(map[string]string{
		"go.mod":            "module example.com/m\n\ngo 1.26\n",
		"core/core.go":      "package core\n",
		"docs/STABILITY.md": stabilityDoc,
		"scripts/apidiff":   "x:" + string(script),
		"stub/apidiff":      stubAPIDiff,
	})
	r.Git("-C", r.Dir, "add", "-A")
	r.Git("-C", r.Dir, "commit", "-q", "-m", "one")
	return r
}

func runAPIDiff(t *testing.T, r *gittest.Repo, report string, args ...string) (string, int) {
	t.Helper()
	rep := filepath.Join(t.TempDir(), "report")
	if err := os.WriteFile(rep, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(r.Dir, "scripts", "apidiff"), args...)
	cmd.Env = append(os.Environ(), "APIDIFF="+filepath.Join(r.Dir, "stub", "apidiff"), "STUB_REPORT="+rep, "GIT_CONFIG_NOSYSTEM=1", "GOWORK=off", "GOFLAGS=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	}
	t.Fatalf("scripts/apidiff: %v\n%s", err, out.String())
	return "", 0
}

// Until a release tag exists the check says so and passes.
func TestAPIDiffWithoutTag(t *testing.T) {
	r := apidiffRepo(t)
	out, code := runAPIDiff(t, r, "")
	if code != 0 || !strings.Contains(out, "no release tag") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// SEM-02..04 as scripts/apidiff applies them to the stable list only.
func TestAPIDiffRules(t *testing.T) {
	const (
		breakCore = "Incompatible changes:\n- ./core.Old: removed\n"
		addCore   = "Compatible changes:\n- ./core.New: added\n"
		breakExp  = "Incompatible changes:\n- ./lab.Thing: removed\nCompatible changes:\n- ./lab.Other: added\n"
	)
	for _, c := range []struct {
		name, tag, report string
		args              []string
		code              int
		says              string
	}{
		{"stable break without a version fails", "v0.1.0", breakCore, nil, 1, "::error::apidiff: incompatible change to a stable package: ./core.Old: removed"},
		{"stable break in a v0 minor is the deprecation cycle", "v0.1.0", breakCore, []string{"--version", "v0.2.0"}, 0, "deprecated in an earlier release"},
		{"stable break in a v0 patch fails", "v0.1.0", breakCore, []string{"--version", "v0.1.1"}, 1, "is a patch release"},
		{"stable break after v1 fails in a minor", "v1.0.0", breakCore, []string{"--version", "v1.1.0"}, 1, "incompatible change to a stable package"},
		{"stable addition in a minor passes", "v1.0.0", addCore, []string{"--version", "v1.1.0"}, 0, "apidiff: ok"},
		{"stable addition in a patch fails", "v1.0.0", addCore, []string{"--version", "v1.0.1"}, 1, "is a patch release"},
		{"experimental changes never fail", "v1.0.0", breakExp, []string{"--version", "v1.0.1"}, 0, "0 incompatible, 0 compatible"},
		{"a bad version is usage", "v1.0.0", "", []string{"--version", "1.2"}, 2, "not a semantic version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := apidiffRepo(t)
			r.Git("-C", r.Dir, "tag", c.tag)
			out, code := runAPIDiff(t, r, c.report, c.args...)
			if code != c.code || !strings.Contains(out, c.says) {
				t.Fatalf("exit %d (want %d), want %q in:\n%s", code, c.code, c.says, out)
			}
			if c.code != 2 && !strings.Contains(out, "at "+c.tag) {
				t.Errorf("the base is not the tag %s:\n%s", c.tag, out)
			}
			if wt := r.Git("-C", r.Dir, "worktree", "list"); strings.Count(wt, "\n") != 0 {
				t.Errorf("the base worktree was left behind:\n%s", wt)
			}
		})
	}
}
