package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

// A steer or cancellation whose request or answer fails on the run
// dir's files (here: the answer's path is a directory) exits 1 and, with
// --json, still prints an answer on stdout, its unknowns said: the
// cancellation's effect unknown with why in detail (never success,
// §3.6 "Cancellation", behaviour 49), the steer's acknowledgement null.
// Before, stdout was empty, so a machine reading it had nothing to parse
// (as agentrt runs cancel --json has always printed {runId, effect}).
func TestControlJSONAnswersWhenTheRunDirFails(t *testing.T) {
	dir := t.TempDir()
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	if out, errOut, code := run(t, "", superviseArgs(t, script, dir)...); code != 0 {
		t.Fatalf("supervise: exit %d\n%s%s", code, out, errOut)
	}
	// The answers' paths, taken by directories: every read of them fails.
	for _, p := range []string{filepath.Join(supervise.CancellationsDir, "c-broken.json"), supervise.RunCancellationFile} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}

	out, errOut, code := run(t, "", "cancel", dir, "note", "--operation-id", "c-broken", "--wait", "1s", "--json")
	v := decode(t, out)
	if code != 1 || member(v, "effect").Str() != "unknown" || member(v, "operationId").Str() != "c-broken" ||
		member(v, "worker").Str() != "note" || !strings.Contains(member(v, "detail").Str(), "c-broken.json") {
		t.Errorf("cancel --json of a worker whose answer cannot be read: exit %d, stdout %q, stderr %q; want 1 and effect unknown saying why", code, out, errOut)
	}
	out, errOut, code = run(t, "", "cancel", dir, "--operation-id", "r-broken", "--wait", "1s", "--json")
	v = decode(t, out)
	if code != 1 || member(v, "effect").Str() != "unknown" || member(v, "operationId").Str() != "r-broken" || member(v, "detail").Str() == "" {
		t.Errorf("cancel --json of the run whose answer cannot be read: exit %d, stdout %q, stderr %q; want 1 and effect unknown saying why", code, out, errOut)
	}
	if errOut == "" {
		t.Error("the failure is not said on stderr")
	}
	// The steer requests' directory, taken by a file: no request can be
	// written.
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(supervise.SteerRequestsDir)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, supervise.SteerRequestsDir), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run(t, "", "steer", dir, "note", "Be brief.", "--operation-id", "s-broken", "--wait", "1s", "--json")
	v = decode(t, out)
	if code != 1 || member(v, "request").Kind() != canonjson.Null || member(v, "acknowledgement").Kind() != canonjson.Null || errOut == "" {
		t.Errorf("steer --json whose request cannot be written: exit %d, stdout %q, stderr %q; want 1, request and acknowledgement null, why on stderr", code, out, errOut)
	}
}
