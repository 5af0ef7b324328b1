package cli_test

// Outside scenarios of agentrt supervise --check-cmd through the real
// binary, written from the spec (runtime.md §3.6 deliverable, §15
// behaviour 36: exit 0 only for a delivered winner) and the command's
// --help.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// os2Manager is a manager whose default plan spawns each worker once.
const os2Manager = `{"name": "m", "harness": "cli-base", "model": {"default": "scripted/manager"},
 "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`

// os2Supervise runs agentrt supervise on the note-writer worker with the
// given extra flags and environment, in a fresh directory, and returns
// the run dir, stdout, stderr and exit code.
func os2Supervise(t *testing.T, env []string, flags ...string) (runDir, stdout, stderr string, code int) {
	t.Helper()
	dir := t.TempDir()
	mgr := filepath.Join(dir, "manager.json")
	if err := os.WriteFile(mgr, []byte(os2Manager), 0o600); err != nil {
		t.Fatal(err)
	}
	runDir = filepath.Join(dir, "run")
	args := append([]string{"supervise", mgr, "--worker", filepath.Join("..", "..", "examples", "profiles", "note-writer.json"),
		"--task", "Write a note", "--run-dir", runDir, "--db", filepath.Join(dir, "agentrt.db")}, flags...)
	stdout, stderr, code = agentrtBinary(t, env, args...)
	return runDir, stdout, stderr, code
}

// A failing --check-cmd's stderr is shown to the user as the verdict's
// reason, but a credential it prints — the value of one of this
// process's credential-bearing environment variables (ENP-03's names,
// such as OPENAI_API_KEY), or a recognised credential shape — never
// reaches stdout, stderr or the run dir's files; the run has no winner
// and exits 1 (behaviour 36).
func TestOutside2CheckCmdStderrKeepsSecretsOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	const envKey = "plainvalue-0123456789abcdefXYZ" // not a recognisable shape: only its name says it is a credential
	const bearer = "sk-ant-api03-QWERTYUIOPASDFGHJKLZXCVBNM0123456789"
	check := `echo "checker: key=$OPENAI_API_KEY" >&2; echo "Authorization: Bearer ` + bearer + `" >&2; echo "verdict: wrong format" >&2; exit 3`
	runDir, stdout, stderr, code := os2Supervise(t, []string{"OPENAI_API_KEY=" + envKey}, "--check-cmd", check, "--json")
	if code != 1 {
		t.Errorf("exit %d, want 1 (a failing check is no winner)\n%s", code, stderr)
	}
	var res struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	if res.Kind != "no-winner" {
		t.Errorf("kind %q, want no-winner", res.Kind)
	}
	// The check's own words are shown.
	if !strings.Contains(stderr, "verdict: wrong format") || !strings.Contains(stderr, "exited 3") {
		t.Errorf("stderr does not show the check's failure:\n%s", stderr)
	}
	for _, secret := range []string{envKey, bearer, "QWERTYUIOPASDFGHJKL"} {
		if strings.Contains(stdout, secret) {
			t.Errorf("stdout shows the credential %q:\n%s", secret, stdout)
		}
		if strings.Contains(stderr, secret) {
			t.Errorf("stderr shows the credential %q:\n%s", secret, stderr)
		}
		err := filepath.WalkDir(runDir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), secret) {
				t.Errorf("%s holds the credential %q", p, secret)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Progress on stderr is one line per spawn and per settle: a failing
// --check-cmd whose stderr has several lines still gives one settle line
// that holds all of its words, and so does the worker's line of the
// human summary on stdout.
func TestOutside2CheckCmdMultilineStderrIsOneProgressLine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	_, stdout, stderr, code := os2Supervise(t, nil, "--check-cmd", `printf 'first problem\nsecond problem\r\nthird problem\n' >&2; exit 4`)
	if code != 1 {
		t.Errorf("exit %d, want 1 (a failing check is no winner)\n%s", code, stderr)
	}
	for name, text := range map[string]string{"stderr": stderr, "stdout": stdout} {
		var found bool
		for line := range strings.Lines(text) {
			if !strings.Contains(line, "first problem") {
				continue
			}
			found = true
			if !strings.Contains(line, "second problem") || !strings.Contains(line, "third problem") || strings.Contains(line, "\r") {
				t.Errorf("%s: the check's failure is split over lines:\n%s", name, text)
			}
		}
		if !found {
			t.Errorf("%s does not show the check's failure:\n%s", name, text)
		}
	}
	var settles int
	for line := range strings.Lines(stderr) {
		if strings.HasPrefix(line, "settled ") {
			settles++
		}
	}
	if settles != 1 {
		t.Errorf("%d settle lines, want 1:\n%s", settles, stderr)
	}
}
