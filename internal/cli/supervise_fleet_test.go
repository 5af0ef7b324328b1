package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// agentrt supervise --fleet QUEUE: the manager runs here, its workers
// as fleet runs that an agentrt worker process executes (issue 14: a
// supervised run's workers dispatched as fleet jobs). The winner is the
// fleet worker's note; the run store holds the worker's fleet run.
func TestSuperviseWorkersOnTheFleet(t *testing.T) {
	conn, schema := fleetDB(t)
	t.Setenv("AGENTRT_DATABASE_URL", "")
	if out, errOut, code := run(t, "", "fleet", "migrate", "--database", conn, "--river-schema", schema); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	script := writeFile(t, "script.json", `{"turns":[{"repeat":true,"steps":[{"text":"Release notes: done on the fleet."},{"usage":{"inputTokens":5,"outputTokens":3},"mode":"delta"}]}]}`)
	_, logs := startWorkerProcess(t, conn, schema, "w1", script)
	worker := writeFile(t, "note-writer.json", `{"name": "note-writer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/notes"}}`)
	out, errOut, code := runWithin(t, 3*time.Minute, "supervise", supManager, "--task", "Write release notes.", "--worker", worker,
		"--fleet", "scripted", "--river-schema", schema, "--database", conn, "--expect", "Release notes",
		"--run-id", "on-fleet", "--workspace", t.TempDir(), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s\nworker:\n%s", code, out, errOut, logs)
	}
	if got := member(member(decode(t, out), "winner"), "text").Str(); got != "Release notes: done on the fleet." {
		t.Errorf("winner %q: the worker did not run on the fleet: %s", got, out)
	}
	listed, errOut, code := run(t, "", "runs", "list", "--database", conn, "--json")
	if code != 0 || !strings.Contains(listed, `"fleet"`) {
		t.Errorf("runs list --kind fleet: %d %s %s; want the worker's completed fleet run", code, listed, errOut)
	}
}

// --fleet refuses what the worker process decides, and needs the
// database.
func TestSuperviseFleetRefusals(t *testing.T) {
	t.Setenv("AGENTRT_DATABASE_URL", "")
	worker := writeFile(t, "note-writer.json", `{"name": "note-writer", "harness": "cli-base", "model": {"default": "gpt-notes"}}`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no database", []string{"--fleet", "scripted", "--db", filepath.Join(t.TempDir(), "runs.db")}, "--fleet needs the fleet's PostgreSQL database"},
		{"a worker provider", []string{"--fleet", "scripted", "--worker-provider", "openai", "--database", "postgres://x@127.0.0.1:1/x"}, "--worker-provider does not apply to --fleet"},
		{"river schema alone", []string{"--river-schema", "r", "--db", filepath.Join(t.TempDir(), "runs.db")}, "--river-schema applies to --fleet only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"supervise", supManager, "--task", "t", "--worker", worker, "--workspace", t.TempDir()}, tc.args...)
			_, errOut, code := run(t, "", args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 saying %q", code, errOut, tc.want)
			}
		})
	}
}
