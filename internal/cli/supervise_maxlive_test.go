package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// The default plan (no --manager-script) runs every --worker profile
// once, within --max-live (§3.6 maxLiveWorkers, behaviour 45): with two
// profiles and --max-live 1 it spawns the second once the first settled,
// rather than having it refused max-live-workers and never run.
func TestSuperviseDefaultPlanRunsEveryWorkerWithinMaxLive(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(noteWriter)
	if err != nil {
		t.Fatal(err)
	}
	second := writeFile(t, "second.json", strings.Replace(string(raw), `"name": "note-writer"`, `"name": "second-writer"`, 1))
	out, errOut, code := run(t, "", "supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter, "--worker", second,
		"--max-live", "1", "--run-dir", dir, "--run-id", "rel", "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	workers := member(decode(t, out), "workers").Items()
	var profiles []string
	for _, w := range workers {
		profiles = append(profiles, member(w, "profile").Str())
	}
	if strings.Join(profiles, ",") != "note-writer,second-writer" {
		t.Errorf("workers %v, want note-writer and second-writer:\n%s", profiles, out)
	}
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range recs {
		if r.Kind == supervise.KindSpawned || r.Kind == supervise.KindSettled {
			order = append(order, r.Kind+" "+string(r.Node))
		}
	}
	want := "spawned rel:s1,settled rel:s1,spawned rel:s2,settled rel:s2"
	if strings.Join(order, ",") != want {
		t.Errorf("journal order %v, want %s", order, want)
	}
}
