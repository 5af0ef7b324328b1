package supervise_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// FuzzResumeEndedJournal: whatever finished record a run dir's journal
// holds, a resume with ReturnEnded returns a result with a status
// (winner with its winner, or no-winner with a reason) or a typed
// error, and never panics.
func FuzzResumeEndedJournal(f *testing.F) {
	start := `{"kind":"run-started","runId":"run1","startedAtMs":1,"task":"t"}` + "\n"
	const total = `{"tokens":5,"iterations":1,"microUsd":0,"tokensKnown":true,"iterationsKnown":true,"usdKnown":true}`
	const totals = `"spent":` + total + `,"driverInference":` + total + `,"childWork":` + total + `,"ms":3`
	for _, result := range []string{
		`{"status":"winner","winner":{"node":"run1:s1","outRef":"sha256-00"},` + totals + `}`,
		`{"status":"no-winner","reason":"cancelled","cancellation":{"source":"context","reason":"stop"},` + totals + `}`,
		`{"status":"no-winner","reason":"cancelled","cancellation":{"source":"operator","operationId":"op"},` + totals + `}`,
		`{"status":"no-winner","reason":"all-children-down","lostCount":2,"lost":[{"kind":"settled","node":"run1:s1"}],` + totals + `}`,
		`{"status":"no-winner","reason":"driver-failed","error":{"name":"E","message":"m"},` + totals + `}`,
		`{"status":"winner",` + totals + `}`,
		`{"status":"","reason":"",` + totals + `}`,
		`{"status":"no-winner",` + totals + `}`,
		`{"status":"no-winner","reason":"all-children-down","lostCount":-3,` + totals + `}`,
		`{"status":"maybe","reason":"x",` + totals + `}`,
	} {
		f.Add([]byte(start + `{"kind":"finished","result":` + result + "}\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, supervise.SpawnJournalFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
		gate := &gateExecutor{release: make(chan struct{})}
		close(gate.release)
		o := baseOptions(t, gate, nil)
		o.RunDir, o.Resume, o.RunID, o.ReturnEnded = dir, true, "", true
		o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
			return supervise.BrainReport{}, nil
		})
		res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
		if err != nil {
			return
		}
		switch {
		case res.Status == supervise.StatusWinner && res.Winner == nil:
			t.Fatal("a winner without its winner")
		case res.Status == supervise.StatusNoWinner && res.Reason == "":
			t.Fatal("a no-winner without a reason")
		case res.Status != supervise.StatusWinner && res.Status != supervise.StatusNoWinner:
			t.Fatalf("status %q", res.Status)
		}
	})
}
