package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/providers/anthropic"
)

// `agentrt run --provider anthropic --base-url URL` runs a cli-base
// profile on the Anthropic Messages API (here a local server replaying a
// transcript, which checks the request body and the x-api-key header),
// with the key from ANTHROPIC_API_KEY and the API's usage and served
// model reported.
func TestRunAnthropic(t *testing.T) {
	const key = "sk-ant-api03-test-0123456789abcdef"
	srv := transcript.Serve(t, filepath.Join("..", "..", "providers", "anthropic", "testdata", "text.txtar"), transcript.ServerOptions{
		Complete: true, Check: transcript.AnthropicHeaders(key, anthropic.APIVersion)})
	t.Setenv("ANTHROPIC_API_KEY", key)
	prof := writeFile(t, "terse.json", `{"name":"terse","harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929","maxTotalOutputTokens":1024},"prompt":{"systemPrompt":"You are terse."}}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "", "run", "--db", db, prof, "--task", "Say hello.", "--provider", "anthropic", "--base-url", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"completed, delivered", "served claude-sonnet-4-5-20250929", "Hello, world.", "input 3273", "output 6"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, key) {
		t.Error("the key was printed")
	}
}
