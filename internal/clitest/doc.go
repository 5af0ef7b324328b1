// Package clitest finds the real coding-agent CLIs (claude-code, codex,
// opencode) for the tests that run them: the binary named by the
// harness's variable (AGENTRT_CLAUDE_BIN, AGENTRT_CODEX_BIN,
// AGENTRT_OPENCODE_BIN), else the executable in PATH. Without one a test
// is skipped with the npm package and version to install; with
// AGENTRT_REQUIRE_CLIS=1 (as in .ci/run) it fails instead, so CI cannot
// pass by skipping. The versions are the ones .ci/run installs. Test code
// only.
package clitest
