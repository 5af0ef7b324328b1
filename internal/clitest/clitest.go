package clitest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// RequireEnv, set to 1, makes a missing CLI fail the test instead of
// skipping it.
const RequireEnv = "AGENTRT_REQUIRE_CLIS"

// The npm packages and versions of the CLIs, as .ci/run installs them.
const (
	ClaudePackage   = "@anthropic-ai/claude-code@2.1.197"
	CodexPackage    = "@openai/codex@0.171.0"
	OpenCodePackage = "opencode-ai@1.18.33"
)

// Claude returns the claude-code binary.
func Claude(t testing.TB) string {
	t.Helper()
	return Binary(t, "AGENTRT_CLAUDE_BIN", "claude", ClaudePackage)
}

// Codex returns the codex binary.
func Codex(t testing.TB) string {
	t.Helper()
	return Binary(t, "AGENTRT_CODEX_BIN", "codex", CodexPackage)
}

// OpenCode returns the opencode binary.
func OpenCode(t testing.TB) string {
	t.Helper()
	return Binary(t, "AGENTRT_OPENCODE_BIN", "opencode", OpenCodePackage)
}

// Binary finds a harness binary: the variable envVar, else exe in PATH.
// Without one the test fails when RequireEnv is 1 and is skipped
// otherwise, saying to install pkg.
func Binary(t testing.TB, envVar, exe, pkg string) string {
	t.Helper()
	if bin := os.Getenv(envVar); bin != "" {
		p, err := exec.LookPath(bin)
		if err != nil {
			t.Fatalf("%s=%s is not an executable: %v", envVar, bin, err)
		}
		return p
	}
	if bin, err := exec.LookPath(exe); err == nil {
		return bin
	}
	msg := fmt.Sprintf("the %s binary is not installed (npm install %s, then set %s or put %s in PATH)", exe, pkg, envVar, exe)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg + "; " + RequireEnv + "=1 forbids skipping")
	}
	t.Skip(msg)
	return ""
}
