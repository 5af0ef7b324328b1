package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// TestImproveSurfaceFlag: `agentrt improve --surface` takes the profile
// surfaces of runtime §3.9 (the help lists them); the greedy method
// rewrites memory text or one skill's content, and the built-in agent,
// which cannot mount those resources, fails the run saying so (a failure
// is a failure, never a hold); the surfaces that need the caller's code,
// an unknown surface and --skill without --surface skills are usage
// errors that say what to do.
func TestImproveSurfaceFlag(t *testing.T) {
	out, _, code := run(t, "", "improve", "--help")
	if code != cli.ExitOK || !strings.Contains(out, "prompt, skills, memory, tools, mcp, hooks, subagents or agent-profile") || !strings.Contains(out, "--skill") {
		t.Fatalf("help does not list the surfaces (exit %d):\n%s", code, out)
	}

	dir := t.TempDir()
	profilePath := filepath.Join(dir, "profile.json")
	putFile(t, profilePath, []byte(`{"name":"echo","prompt":{"systemPrompt":"Repeat the user's words."},
 "resources":{"instructions":"Remember the user.","skills":[{"kind":"inline","name":"style","content":"Be plain."}]}}`))
	_, casesPath := improveFiles(t)
	// The built-in agent cannot mount instruction or skill resources: the
	// run fails saying so, rather than measure a profile it did not run.
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--surface", "memory"}, "cannot mount instruction resources"},
		{[]string{"--surface", "skills", "--skill", "style"}, "cannot mount"},
	} {
		out, errOut, code := run(t, "", append([]string{"improve", profilePath, "--scenarios", casesPath, "--judge", "exact"}, c.args...)...)
		if code != cli.ExitFailed || !strings.Contains(errOut, c.says) || strings.Contains(out, "decision") {
			t.Errorf("%v: exit %d, want a failure saying %q\n%s\n%s", c.args, code, c.says, out, errOut)
		}
	}

	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--surface", "code"}, "Go API"},
		{[]string{"--surface", "profile-component"}, "Go API"},
		{[]string{"--surface", "knowledge"}, "use one of"},
		{[]string{"--skill", "style"}, "--surface skills"},
		{[]string{"--surface", "skills", "--skill", "missing"}, "no skill named"},
	} {
		_, errOut, code := run(t, "", append([]string{"improve", profilePath, "--scenarios", casesPath, "--judge", "exact"}, c.args...)...)
		if code != cli.ExitUsage || !strings.Contains(errOut, c.says) {
			t.Errorf("%v: exit %d, stderr %q; want a usage error saying %q", c.args, code, errOut, c.says)
		}
	}
}
