package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/providers/anthropic"
)

// `agentrt serve --provider openai|anthropic` serves a vendor endpoint
// (here a local one replaying a recorded transcript) to `agentrt run
// --provider remote` on another process: the turn completes with the
// endpoint's text, usage and served model, the key stays with the
// server (its log never carries it — startServeWithEnv checks — and the
// client never sees it).
func TestServeVendorEndpointsThroughRemote(t *testing.T) {
	const openaiKey, anthropicKey = "sk-test-4f9c2a7b1e", "sk-ant-api03-serve-0123456789abcdef" // the openai transcript checks its recorded key
	tests := []struct {
		name, provider, key string
		base                func(t *testing.T) string
		profile             string
		want                []string
	}{
		{"openai", "openai", "OPENAI_API_KEY=" + openaiKey, func(t *testing.T) string {
			tr, err := transcript.Load(filepath.Join("..", "..", "providers", "openai", "testdata", "text.txtar"))
			if err != nil {
				t.Fatal(err)
			}
			return transcript.NewServer(t, tr, transcript.ServerOptions{}).BaseURL()
		}, `{"name":"brief","harness":"cli-base","model":{"default":"gpt-5.2"},"prompt":{"systemPrompt":"Be brief."}}`,
			[]string{"completed, delivered", "served gpt-5.2", "Hello!"}},
		{"anthropic", "anthropic", "ANTHROPIC_API_KEY=" + anthropicKey, func(t *testing.T) string {
			return transcript.Serve(t, filepath.Join("..", "..", "providers", "anthropic", "testdata", "text.txtar"), transcript.ServerOptions{
				Complete: true, Check: transcript.AnthropicHeaders(anthropicKey, anthropic.APIVersion)}).URL
		}, `{"name":"terse","harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929","maxTotalOutputTokens":1024},"prompt":{"systemPrompt":"You are terse."}}`,
			[]string{"completed, delivered", "served claude-sonnet-4-5-20250929", "Hello, world.", "input 3273", "output 6"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := startServeWithEnv(t, []string{tc.key}, "--provider", tc.provider, "--base-url", tc.base(t))
			t.Setenv("AGENTRT_SERVE_TOKEN", serveToken)
			prof := writeFile(t, "profile.json", tc.profile)
			out, errOut, code := run(t, "", "run", "--db", filepath.Join(t.TempDir(), "runs.db"), prof, "--task", "Say hello.",
				"--provider", "remote", "--base-url", url)
			if code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, errOut, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if _, key, _ := strings.Cut(tc.key, "="); strings.Contains(out+errOut, key) {
				t.Error("the client printed the server's key")
			}
		})
	}
}
