package clibridge

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// The codex plan: the argv, the configuration file (the bridge's model
// provider, approval never, the native effort, the replacing
// instructions and the appended developer instructions as TOML strings), the key in the provider's env_key, and
// a receipt whose file digest is taken with the endpoint redacted.
func TestCodexMaterialize(t *testing.T) {
	d := codexDriver{}
	root := t.TempDir()
	instructions := "Be \"exact\".\n\tC:\\path \u0007 é"
	pr := &profile.Profile{
		Model:  &profile.ModelHints{Default: profile.Ptr("gpt-x"), ReasoningEffort: harness.EffortUltracode},
		Prompt: &profile.Prompt{SystemPrompt: &instructions, AppendSystemPrompt: profile.Ptr("And \"more\".")},
	}
	if errs := d.check(pr); len(errs) > 0 {
		t.Fatal(errs)
	}
	const endpoint = "http://127.0.0.1:1/v1"
	spec := &turnSpec{turn: 1, prompt: "x", profile: pr, apiKey: fakeKey, baseURL: endpoint,
		dirs: dirs{root: root, config: filepath.Join(root, "home", ".config", "codex")}}
	pl, err := d.materialize(spec)
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"exec", "--json", "--strict-config", "--skip-git-repo-check", "--ephemeral", "--sandbox=read-only", "--model=gpt-x", "-"}
	if !slices.Equal(pl.args, wantArgs) || !slices.Equal(pl.receipt.Args, wantArgs) {
		t.Errorf("args %q receipt %q", pl.args, pl.receipt.Args)
	}
	if pl.env["OPENAI_API_KEY"] != fakeKey || pl.env["CODEX_HOME"] != spec.dirs.config {
		t.Errorf("env %v", pl.env)
	}
	want := `model_provider = "agentrt"
approval_policy = "never"
check_for_update_on_startup = false
model_reasoning_effort = "ultra"
instructions = "Be \"exact\".\n\tC:\\path \u0007 é"
developer_instructions = "And \"more\"."

[analytics]
enabled = false

[feedback]
enabled = false

[model_providers.agentrt]
name = "agentrt"
base_url = "http://127.0.0.1:1/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
`
	if len(pl.files) != 1 || string(pl.files[0].content) != want {
		t.Fatalf("config files %+v, want\n%s", pl.files, want)
	}
	rf := pl.receipt.Files
	redacted := strings.Replace(want, endpoint, "[redacted]", 1)
	if len(rf) != 1 || rf[0].Path != "home/.config/codex/config.toml" || rf[0].Purpose != "codex-config" ||
		rf[0].Digest != canonjson.DigestBytes([]byte(redacted)) {
		t.Errorf("receipt files %+v", rf)
	}
	ap := pl.receipt.Applied
	if ap.Model != "gpt-x" || ap.ReasoningEffort != harness.EffortUltracode || ap.NativeEffort != "ultra" ||
		ap.SystemPromptDigest != canonjson.DigestBytes([]byte(instructions)) ||
		ap.AppendSystemPromptDigest != canonjson.DigestBytes([]byte(`And "more".`)) || ap.PermissionMode != "sandbox=read-only,approval=never" {
		t.Errorf("applied %+v", ap)
	}

	// Without an endpoint the provider points at OpenAI's.
	spec.baseURL, spec.profile = "", nil
	if pl, err = d.materialize(spec); err != nil || !strings.Contains(string(pl.files[0].content), `base_url = "https://api.openai.com/v1"`) {
		t.Errorf("default endpoint: %v %s", err, pl.files[0].content)
	}
}
