package cli_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/providers/anthropic"
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

// A run whose model request is refused transiently shows the retry on
// stderr — with --json too, whose stdout stays the result alone — and
// completes with the accepted attempt's usage; --quiet shows nothing. A
// 400 is not retried: one request, no retry shown, exit 1.
func TestRunShowsRetries(t *testing.T) {
	const key = "sk-test-4f9c2a7b1e"
	const akey = "sk-ant-api03-test-0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("ANTHROPIC_API_KEY", akey)
	openaiProf := writeFile(t, "brief.json", `{"name":"brief","harness":"cli-base","model":{"default":"gpt-5.2"},"prompt":{"systemPrompt":"Be brief."}}`)
	anthropicProf := writeFile(t, "terse.json", `{"name":"terse","harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929","maxTotalOutputTokens":1024},"prompt":{"systemPrompt":"You are terse."}}`)
	openaiDir := filepath.Join("..", "..", "providers", "openai", "testdata")
	anthropicDir := filepath.Join("..", "..", "providers", "anthropic", "testdata")
	tests := []struct {
		name, transcript, profile string
		args                      []string
		anthropic                 bool
		retry                     string // the line stderr shows; "" for none
		usage                     [2]float64
		code                      int
	}{
		{name: "chat completions 503", transcript: filepath.Join(openaiDir, "unavailable.txtar"), profile: openaiProf,
			retry: "retrying the model request in 20ms (attempt 2) after HTTP 503 Service Unavailable (server_error)", usage: [2]float64{19, 2}},
		{name: "responses 429", transcript: filepath.Join(openaiDir, "responses", "ratelimit.txtar"), profile: openaiProf, args: []string{"--openai-api", "responses"},
			retry: "retrying the model request in 1s (attempt 2) after HTTP 429 Too Many Requests (rate_limit_exceeded)", usage: [2]float64{19, 2}},
		{name: "anthropic 503", transcript: filepath.Join(anthropicDir, "unavailable.txtar"), profile: anthropicProf, anthropic: true,
			retry: "retrying the model request in 20ms (attempt 2) after HTTP 503 Service Unavailable (api_error)", usage: [2]float64{25, 4}},
		{name: "chat completions 400", transcript: filepath.Join(openaiDir, "bad_request.txtar"), profile: openaiProf, code: cli.ExitFailed},
		{name: "anthropic 400", transcript: filepath.Join(anthropicDir, "bad_request.txtar"), profile: anthropicProf, anthropic: true, code: cli.ExitFailed},
	}
	for _, tc := range tests {
		for _, mode := range []string{"human", "json", "quiet"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				so := transcript.ServerOptions{Complete: true}
				provider := "openai"
				if tc.anthropic {
					so.Check = transcript.AnthropicHeaders(akey, anthropic.APIVersion)
					provider = "anthropic"
				}
				srv := transcript.Serve(t, tc.transcript, so)
				base := srv.BaseURL()
				if tc.anthropic {
					base = srv.URL
				}
				args := append([]string{"run", "--db", filepath.Join(t.TempDir(), "runs.db"), tc.profile, "--task", "Say hello.", "--provider", provider, "--base-url", base}, tc.args...)
				switch mode {
				case "json":
					args = append(args, "--json")
				case "quiet":
					args = append(args, "--quiet")
				}
				out, errOut, code := run(t, "", args...)
				if code != tc.code {
					t.Fatalf("exit %d, want %d: %s\n%s", code, tc.code, errOut, out)
				}
				shown := tc.retry != "" && mode != "quiet"
				if shown && !slices.Contains(strings.Split(errOut, "\n"), tc.retry) {
					t.Errorf("stderr lacks the line %q:\n%s", tc.retry, errOut)
				}
				if strings.Contains(errOut, "retrying") != shown {
					t.Errorf("stderr shows a retry: %v, want %v:\n%s", !shown, shown, errOut)
				}
				if strings.Contains(out+errOut, key) || strings.Contains(out+errOut, akey) {
					t.Error("the key was printed")
				}
				requests := 1
				if tc.retry != "" {
					requests = 2
				}
				if srv.Requests() != requests {
					t.Errorf("%d requests, want %d", srv.Requests(), requests)
				}
				if tc.code != 0 || mode != "json" {
					return
				}
				res := decode(t, out)
				usage := member(res, "usage")
				if in, out := member(usage, "inputTokens"), member(usage, "outputTokens"); in.Float() != tc.usage[0] || out.Float() != tc.usage[1] {
					t.Errorf("usage %s; want the accepted attempt's %v", canonjson.Marshal(usage), tc.usage)
				}
			})
		}
	}
}
