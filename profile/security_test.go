package profile_test

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/profile"
)

func TestPredicateFunctionVectors(t *testing.T) {
	fns := map[string]func(string) bool{
		"isRuntimeProcessControlEnvironmentName": profile.IsRuntimeProcessControlEnvironmentName,
		"isCredentialBearingProfileConfigName":   profile.IsCredentialBearingProfileConfigName,
	}
	for name, fn := range fns {
		cases, err := vectors.LoadFunction(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			want, _ := c.Expect.Get("result")
			if got := fn(c.Args[0].Str()); got != want.Bool() {
				t.Errorf("%s(%s) = %v", name, canonjson.Marshal(c.Args[0]), got)
			}
		}
	}
}

// spec/profile.md §G.4; checklist ENP-01, ENP-03.
func TestValidateSecurity(t *testing.T) {
	p := mustParse(t, `{"mcp":{"local":{"command":"node"},"stdio":{"transport":"stdio","command":"x"},
		"api":{"url":"https://api.example.com/mcp"},"evil":{"url":"https://evil-example.com/"},
		"off":{"enabled":false}},
		"hooks":{"pre":[{"command":"echo"}]},"connections":[{"connectionId":"c","capabilities":["x"]}]}`)
	res := profile.ValidateSecurity(p, profile.SecurityPolicy{})
	codes := map[string]int{}
	for _, is := range res.Issues {
		codes[is.Code]++
	}
	if res.OK || codes[profile.BlockedLocalMCP] != 2 || codes[profile.BlockedHooks] != 1 || codes[profile.BlockedRemoteMCPHost] != 0 {
		t.Errorf("default policy: %+v", res)
	}
	res = profile.ValidateSecurity(p, profile.SecurityPolicy{AllowLocalMCP: true, AllowHooks: true, AllowedMCPHosts: []string{"*.example.com"}, DenyConnections: true})
	codes = map[string]int{}
	for _, is := range res.Issues {
		codes[is.Code]++
		if is.Code == profile.BlockedRemoteMCPHost && is.Path != "/mcp/evil" {
			t.Errorf("issue path %q", is.Path)
		}
	}
	if res.OK || codes[profile.BlockedRemoteMCPHost] != 1 || codes[profile.BlockedConnections] != 1 || len(res.Issues) != 2 {
		t.Errorf("allowlist policy: %+v", res)
	}
	if res := profile.ValidateSecurity(mustParse(t, `{"mcp":{"api":{"url":"https://api.example.com"}}}`), profile.SecurityPolicy{AllowedMCPHosts: []string{}}); res.OK {
		t.Error("an empty allowlist admitted a remote server")
	}
}

func TestMatchHostGlob(t *testing.T) {
	tests := []struct {
		host, pattern string
		want          bool
	}{
		{"api.example.com", "*.example.com", true},
		{"API.Example.COM", "*.example.com", true},
		{"evil-example.com", "*.example.com", false},
		{"a.b.example.com", "*.example.com", false},
		{"example.com", "*.example.com", false},
		{"aaa", "aa*aa", false},
		{"aabaa", "aa*aa", true},
		{"mcp-1.example.com", "mcp-*.example.com", true},
		{"x.y", "*.*", true},
		{"[::1]", "[::1]", true},
		{"[::1]", "*", false},
		{"abc", "a*b*c", true},
		{"acb", "a*b*c", false},
	}
	for _, tc := range tests {
		if got := profile.MatchHostGlob(tc.host, tc.pattern); got != tc.want {
			t.Errorf("MatchHostGlob(%q, %q) = %v", tc.host, tc.pattern, got)
		}
	}
}

func TestLooksLikeCredential(t *testing.T) {
	for s, want := range map[string]bool{
		"Bearer abc": true, "Bearer\u00a0abc": true, "Bearer\u3000abc": true, "xBearer abc": false, "Bearer ": false,
		"Bearer\u0085abc": false, "sk-abcdefghijkl": true, "sk-abc": false, "task-abcdefghijklmnop": false,
		"ghp_abcdefghijkl": true, "github_pat_abcdefghijkl": true, "AKIAABCDEFGHIJKL": true,
		"-----BEGIN PRIVATE KEY-----": true, "https://u@h/": true, "https://h/?token=1": true, "https://h/?tokens=1": false,
		"https://h/?x=1#token=2": false, "mailto:a@b": false, "redis://:pw@h": true, "plain text": false,
	} {
		if got := profile.LooksLikeCredential(s); got != want {
			t.Errorf("LooksLikeCredential(%q) = %v, want %v", s, got, want)
		}
	}
}
