package supervise_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// FuzzResumeSessionRef: whatever session reference a journaled
// settlement holds, a process resuming the run and spawning a
// continuity-resume worker refuses it with a typed reason or continues
// that exact session — never a panic, and never a fresh environment in
// the session's place (§3.6 Continuity).
func FuzzResumeSessionRef(f *testing.F) {
	f.Add(`{"run":{"runId":"r","provider":"scripted","environmentId":"env-1","sessionId":"s","executionId":"x","requestDigest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"},"environmentCreated":true}`)
	f.Add(`{"run":{"runId":"","provider":"scripted"}}`)
	f.Add(`{"run":{"runId":"r","provider":"other","environmentId":"e","sessionId":"s","executionId":"x","requestDigest":"sha256:00"}}`)
	f.Add(`null`)
	f.Add(`{"run":7}`)
	f.Add(`{"run":{"environmentId":"` + string(make([]byte, 600)) + `"}}`)
	f.Fuzz(func(t *testing.T, ref string) {
		dir := t.TempDir()
		journal := `{"kind":"run-started","runId":"run1","startedAtMs":1}` + "\n" +
			`{"kind":"spawned","node":"run1:s1","profile":"writer","task":"draft","reserved":{"tokens":1000,"iterations":1}}` + "\n" +
			`{"kind":"settled","node":"run1:s1","state":"done","spent":{"tokens":5,"iterations":1},"session":"s","sessionRef":` + ref + "}\n"
		if err := os.WriteFile(filepath.Join(dir, supervise.SpawnJournalFile), []byte(journal), 0o600); err != nil {
			t.Fatal(err)
		}
		prov := echoProvider(t)
		o := unpricedOptions(t, &supervise.KernelExecutor{Provider: prov, Store: memory.New(nil)})
		o.RunDir, o.Resume = dir, true
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			got := tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "revise", "continuity": "resume"})
			if got["workerId"] != nil {
				tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
			}
			return supervise.BrainReport{}, nil
		})
		if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
			return // a journal it cannot resume is a typed error
		}
		if prov.Creates() != 0 || prov.Turns() != 0 {
			t.Fatalf("a resume of session ref %s ran fresh: %d creates, %d turns", ref, prov.Creates(), prov.Turns())
		}
	})
}
