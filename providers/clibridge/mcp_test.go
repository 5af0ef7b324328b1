package clibridge

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/google/go-cmp/cmp"
)

// pubValue is a public profile config value.
func pubValue(s string) profile.ConfigValue {
	return profile.ConfigValue{Kind: profile.ConfigPublic, Value: &s}
}

// Which MCP servers codex and opencode can mount, and why not: local
// servers (in the workspace) and streamable-HTTP ones, with public
// values and a tool-name-safe name; a disabled server is always
// admissible (it is not mounted).
func TestMCPCheck(t *testing.T) {
	secret := profile.ConfigValue{Kind: profile.ConfigSecretRef, Key: profile.Ptr("k")}
	for _, c := range []struct {
		name   string
		server string
		s      profile.MCPServer
		want   string // a substring of the reason; "" admits
	}{
		{"local", "files", profile.MCPServer{Command: profile.Ptr("srv"), Args: []profile.ConfigValue{pubValue("-v")}, Env: map[string]profile.ConfigValue{"A": pubValue("b")}}, ""},
		{"workspace-cwd", "files", profile.MCPServer{Command: profile.Ptr("srv"), Cwd: profile.Ptr(".")}, ""},
		{"disabled", "off", profile.MCPServer{Enabled: profile.Ptr(false)}, ""},
		{"underscore-digit", "a_b9", profile.MCPServer{Command: profile.Ptr("srv")}, ""},
		{"dash", "probe-2", profile.MCPServer{Command: profile.Ptr("srv")}, "ASCII letters"},
		{"double-underscore", "a__b", profile.MCPServer{Command: profile.Ptr("srv")}, "ASCII letters"},
		{"remote", "web", profile.MCPServer{URL: profile.Ptr("https://mcp.example.com/mcp"), Headers: map[string]profile.ConfigValue{"X-A": pubValue("b")}}, ""},
		{"remote-http", "web", profile.MCPServer{URL: profile.Ptr("https://mcp.example.com/mcp"), Transport: profile.Ptr("http")}, ""},
		{"sse", "web", profile.MCPServer{URL: profile.Ptr("https://mcp.example.com/sse"), Transport: profile.Ptr("sse")}, "streamable HTTP only"},
		{"secret-header", "web", profile.MCPServer{URL: profile.Ptr("https://mcp.example.com/mcp"), Headers: map[string]profile.ConfigValue{"Authorization": secret}}, "secret references"},
		{"secret-arg", "files", profile.MCPServer{Command: profile.Ptr("srv"), Args: []profile.ConfigValue{secret}}, "secret references"},
		{"secret-env", "files", profile.MCPServer{Command: profile.Ptr("srv"), Env: map[string]profile.ConfigValue{"T": secret}}, "secret references"},
		{"cwd", "files", profile.MCPServer{Command: profile.Ptr("srv"), Cwd: profile.Ptr("sub")}, "working directory"},
		{"dotted-name", "my.files", profile.MCPServer{Command: profile.Ptr("srv")}, "ASCII letters"},
		{"disabled-bad-name", "my files", profile.MCPServer{Enabled: profile.Ptr(false)}, "ASCII letters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, h := range []string{"codex", "opencode"} {
				got := mcpCheck(h, c.server, c.s)
				if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
					t.Errorf("%s: reason %q, want %q", h, got, c.want)
				}
			}
		})
	}
}

// mcpTestServers are the servers of the materialization tests: a local
// one with arguments and an environment whose values need quoting, and a
// disabled one.
var mcpTestServers = map[string]profile.MCPServer{
	"files": {Command: profile.Ptr("/opt/mcp files"), Args: []profile.ConfigValue{pubValue("--root"), pubValue(`C:\x "y"`)},
		Env: map[string]profile.ConfigValue{"B_VAR": pubValue("two"), "A.VAR": pubValue("o\"ne\n")}},
	"probe_2": {Command: profile.Ptr("probe")},
	"web":     {URL: profile.Ptr("http://127.0.0.1:9/mcp"), Headers: map[string]profile.ConfigValue{"X-Probe": pubValue("v")}},
	"off":     {Enabled: profile.Ptr(false)},
}

// codex's configuration carries each mounted server as an
// [mcp_servers.NAME] table with its command, args, env and pre-approved
// tools; the receipt records the mounted and disabled servers.
func TestCodexMaterializeMCP(t *testing.T) {
	root := t.TempDir()
	pr := &profile.Profile{MCP: mcpTestServers, Tools: map[string]bool{"mcp__files__write": false, "mcp__files__delete": false, "mcp__probe_2__echo": true}}
	if errs := (codexDriver{}).check(pr); len(errs) > 0 {
		t.Fatal(errs)
	}
	spec := &turnSpec{turn: 1, profile: pr, dirs: dirs{root: root, config: filepath.Join(root, "home", ".config", "codex")}}
	pl, err := codexDriver{}.materialize(spec)
	if err != nil {
		t.Fatal(err)
	}
	_, tables, _ := strings.Cut(string(pl.files[0].content), "wire_api = \"responses\"\n")
	want := `
[mcp_servers.files]
command = "/opt/mcp files"
args = ["--root", "C:\\x \"y\""]
env = { "A.VAR" = "o\"ne\n", "B_VAR" = "two" }
startup_timeout_sec = 60
required = true
default_tools_approval_mode = "approve"
disabled_tools = ["delete", "write"]

[mcp_servers.probe_2]
command = "probe"
startup_timeout_sec = 60
required = true
default_tools_approval_mode = "approve"

[mcp_servers.web]
url = "http://127.0.0.1:9/mcp"
http_headers = { "X-Probe" = "v" }
startup_timeout_sec = 60
required = true
default_tools_approval_mode = "approve"
`
	if diff := cmp.Diff(want, tables); diff != "" {
		t.Errorf("mcp tables (-want +got):\n%s", diff)
	}
	got := [][]string{pl.receipt.Applied.MCPServers, pl.receipt.Applied.DisabledMCPServers}
	if diff := cmp.Diff([][]string{{"files", "probe_2", "web"}, {"off"}}, got); diff != "" {
		t.Errorf("receipt mounted, disabled (-want +got):\n%s", diff)
	}
	rules := [][]string{pl.receipt.Applied.AllowedTools, pl.receipt.Applied.DisallowedTools}
	if diff := cmp.Diff([][]string{{"mcp__probe_2__echo"}, {"mcp__files__delete", "mcp__files__write"}}, rules); diff != "" {
		t.Errorf("receipt tool rules (-want +got):\n%s", diff)
	}
	// Tools keys other than a mounted server's MCP tools are refused.
	for _, key := range []string{"shell", "exec_command", "mcp__off__x", "mcp__ghost__x", "mcp__files", "mcp__files__"} {
		pr := &profile.Profile{MCP: mcpTestServers, Tools: map[string]bool{key: false}}
		errs := codexDriver{}.check(pr)
		var ue *profile.UnsupportedError
		if len(errs) != 1 || !errors.As(errs[0], &ue) || ue.Path != "/tools/"+key {
			t.Errorf("tools key %q: check %v, want one refusal at /tools/%s", key, errs, key)
		}
	}
	// A server check refuses is refused by materialize too, typed.
	spec.profile = &profile.Profile{MCP: map[string]profile.MCPServer{"web": {URL: profile.Ptr("https://x.example/sse"), Transport: profile.Ptr("sse")}}}
	if _, err := (codexDriver{}).materialize(spec); !errors.Is(err, contract.ErrUnsupported) {
		t.Errorf("sse server: %v, want unsupported", err)
	}
}

// opencode's configuration carries each mounted server under "mcp" as a
// local server: the command and its arguments as one array, its
// environment, enabled.
func TestOpencodeMaterializeMCP(t *testing.T) {
	root := t.TempDir()
	spec := &turnSpec{turn: 1, profile: &profile.Profile{MCP: mcpTestServers}, dirs: dirs{root: root, home: root + "/home", bridge: root + "/bridge"},
		baseURL: "http://h/v1", apiKey: "sk-x", fallbackModel: "m"}
	pl, err := opencodeDriver{}.materialize(spec)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCP map[string]opencodeMCP `json:"mcp"`
	}
	if err := json.Unmarshal(pl.files[0].content, &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]opencodeMCP{
		"files":   {Type: "local", Command: []string{"/opt/mcp files", "--root", `C:\x "y"`}, Environment: map[string]string{"A.VAR": "o\"ne\n", "B_VAR": "two"}, Enabled: true},
		"probe_2": {Type: "local", Command: []string{"probe"}, Enabled: true},
		"web":     {Type: "remote", URL: "http://127.0.0.1:9/mcp", Headers: map[string]string{"X-Probe": "v"}, Enabled: true},
	}
	if diff := cmp.Diff(want, cfg.MCP); diff != "" {
		t.Errorf("mcp (-want +got):\n%s", diff)
	}
	got := [][]string{pl.receipt.Applied.MCPServers, pl.receipt.Applied.DisabledMCPServers}
	if diff := cmp.Diff([][]string{{"files", "probe_2", "web"}, {"off"}}, got); diff != "" {
		t.Errorf("receipt mounted, disabled (-want +got):\n%s", diff)
	}
	// Without servers the configuration has no "mcp" key at all.
	spec.profile = nil
	if pl, err = (opencodeDriver{}).materialize(spec); err != nil || strings.Contains(string(pl.files[0].content), `"mcp"`) {
		t.Errorf("no servers: %v\n%s", err, pl.files[0].content)
	}
}

// opencode substitutes {env:NAME} and {file:PATH} in every string of its
// configuration (observed: an MCP environment value
// "{env:AGENTRT_OPENCODE_API_KEY}" handed the server the bridge's key),
// so a server or model carrying such text is refused — at check, and at
// materialize for a turn's model — and nothing is written.
func TestOpencodeRefusesSubstitutedText(t *testing.T) {
	steal := "{env:" + opencodeAPIKeyEnv + "}"
	for name, s := range map[string]profile.MCPServer{
		"command":   {Command: profile.Ptr("{file:/etc/passwd}")},
		"arg":       {Command: profile.Ptr("srv"), Args: []profile.ConfigValue{pubValue("--token=" + steal)}},
		"env-value": {Command: profile.Ptr("srv"), Env: map[string]profile.ConfigValue{"X": pubValue(steal)}},
		"env-name":  {Command: profile.Ptr("srv"), Env: map[string]profile.ConfigValue{"{ENV:HOME}": pubValue("x")}},
		"url":       {URL: profile.Ptr("http://127.0.0.1:9/{env:" + opencodeAPIKeyEnv + "}")},
		"header":    {URL: profile.Ptr("http://127.0.0.1:9/mcp"), Headers: map[string]profile.ConfigValue{"X-Key": pubValue(steal)}},
	} {
		pr := &profile.Profile{MCP: map[string]profile.MCPServer{"probe": s}}
		errs := opencodeDriver{}.check(pr)
		var ue *profile.UnsupportedError
		if len(errs) != 1 || !errors.As(errs[0], &ue) || ue.Path != "/mcp/probe" || !strings.Contains(ue.Reason, "{env:...}") {
			t.Errorf("%s: check %v, want one refusal at /mcp/probe", name, errs)
		}
		// The same refusal in codex would be wrong: codex writes the text
		// as is.
		if errs := (codexDriver{}).check(pr); len(errs) != 0 {
			t.Errorf("%s: codex refused %v", name, errs)
		}
	}
	var ue *profile.UnsupportedError
	if errs := (opencodeDriver{}).check(&profile.Profile{Model: &profile.ModelHints{Default: profile.Ptr("m{env:HOME}")}}); len(errs) != 1 ||
		!errors.As(errs[0], &ue) || ue.Path != "/model/default" {
		t.Errorf("default model with {env:}: check %v, want one refusal at /model/default", errs)
	}
	root := t.TempDir()
	spec := &turnSpec{turn: 1, model: "m{file:/etc/hostname}", baseURL: "http://h/v1", dirs: dirs{root: root, home: root + "/home", bridge: root + "/bridge"}}
	if pl, err := (opencodeDriver{}).materialize(spec); !errors.Is(err, contract.ErrUnsupported) || pl != nil {
		t.Errorf("model with {file:}: %v, want unsupported and no plan", err)
	}
}
