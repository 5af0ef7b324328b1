package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/transcript"
)

// `agentrt run --provider openai --base-url URL` runs a cli-base profile
// on an OpenAI-compatible endpoint (here a local one replaying a
// transcript), with the key from OPENAI_API_KEY and the endpoint's usage
// and served model reported.
func TestRunOpenAI(t *testing.T) {
	tr, err := transcript.Load(filepath.Join("..", "..", "providers", "openai", "testdata", "text.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	srv := transcript.NewServer(t, tr, transcript.ServerOptions{})
	t.Setenv("OPENAI_API_KEY", "sk-test-4f9c2a7b1e")
	prof := writeFile(t, "brief.json", `{"name":"brief","harness":"cli-base","model":{"default":"gpt-5.2"},"prompt":{"systemPrompt":"Be brief."}}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "", "run", "--db", db, prof, "--task", "Say hello.", "--provider", "openai", "--base-url", srv.BaseURL())
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"completed, delivered", "served gpt-5.2", "Hello!", "19"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, "sk-test-4f9c2a7b1e") {
		t.Error("the key was printed")
	}
	if _, _, code := run(t, "", "run", "--db", db, prof, "--task", "t", "--base-url", srv.BaseURL()); code != cli.ExitUsage {
		t.Errorf("--base-url without --provider openai: exit %d, want %d", code, cli.ExitUsage)
	}
}

// `agentrt run --provider claude-code|codex|opencode` drives the harness CLI; a
// machine without it gets a refusal naming the npm package to install,
// not a crash and not a usage error.
func TestRunHarnessCLINotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	prof := writeFile(t, "brief.json", `{"name":"brief","harness":"claude-code"}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	for _, tc := range []struct{ provider, pkg string }{{"claude-code", "@anthropic-ai/claude-code"}, {"codex", "@openai/codex"}, {"opencode", "opencode-ai"}} {
		_, errOut, code := run(t, "", "run", "--db", db, prof, "--task", "t", "--provider", tc.provider)
		if code != cli.ExitFailed || !strings.Contains(errOut, tc.pkg) {
			t.Errorf("--provider %s without its binary: exit %d, stderr %q; want %d naming %s", tc.provider, code, errOut, cli.ExitFailed, tc.pkg)
		}
	}
}

// `agentrt run --provider openai --openai-api responses` speaks the
// Responses API to the endpoint; a value that is not a protocol, or the
// flag with another provider, is a usage error before any request.
func TestRunOpenAIResponses(t *testing.T) {
	tr, err := transcript.Load(filepath.Join("..", "..", "providers", "openai", "testdata", "responses", "text.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	srv := transcript.NewServer(t, tr, transcript.ServerOptions{})
	t.Setenv("OPENAI_API_KEY", "sk-test-4f9c2a7b1e")
	prof := writeFile(t, "brief.json", `{"name":"brief","harness":"cli-base","model":{"default":"gpt-5.2"},"prompt":{"systemPrompt":"Be brief."}}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "", "run", "--db", db, prof, "--task", "Say hello.", "--provider", "openai", "--openai-api", "responses", "--base-url", srv.BaseURL())
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"completed, delivered", "served gpt-5.2", "Hello!", "19"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, "sk-test-4f9c2a7b1e") {
		t.Error("the key was printed")
	}
	for _, args := range [][]string{
		{"--provider", "openai", "--openai-api", "completions", "--base-url", srv.BaseURL()},
		{"--openai-api", "responses"},
		{"--provider", "anthropic", "--openai-api", "responses", "--base-url", srv.BaseURL()},
	} {
		if _, _, code := run(t, "", append([]string{"run", "--db", db, prof, "--task", "t"}, args...)...); code != cli.ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, cli.ExitUsage)
		}
	}
	if srv.Requests() != 1 {
		t.Errorf("%d requests; the refused runs sent none", srv.Requests())
	}
}
