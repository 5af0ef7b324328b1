package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// storeRecords is the whole spawn journal of run runID in st (nil when
// it cannot be read yet).
func storeRecords(st store.Store, runID string) []supervise.Record {
	var recs []supervise.Record
	for after := ""; ; {
		page, next, err := supervise.ReadStoreSpawnLog(context.Background(), st, runID, after)
		if err != nil {
			return nil
		}
		recs = append(recs, page...)
		if next == after {
			return recs
		}
		after = next
	}
}

// awaitStoreJournal polls run runID's spawn journal in st until done
// holds of its records, failing the test (with what(), e.g. a child's
// stderr) after two minutes.
func awaitStoreJournal(t *testing.T, st store.Store, runID string, done func([]supervise.Record) bool, what func() string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !done(storeRecords(st, runID)); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("run %s's journal in the store never got there; %s", runID, what())
		}
	}
}

// settledIn reports whether recs hold a worker's settlement.
func settledIn(recs []supervise.Record) bool {
	for _, r := range recs {
		if r.Kind == supervise.KindSettled {
			return true
		}
	}
	return false
}

// resumeOnceLeaseLapsed runs agentrt with args (a --resume of a run
// whose journal is in the store) again while it is refused for the
// earlier holder's lease, for up to a minute, and returns the first
// other answer.
func resumeOnceLeaseLapsed(t *testing.T, args ...string) (out, errOut string, code int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		out, errOut, code = run(t, "", args...)
		if code == 0 || !strings.Contains(errOut, "holds the run's spawn journal") || time.Now().After(deadline) {
			return out, errOut, code
		}
	}
}

// journalGeneration is the lease generation of run runID's spawn
// journal in st: 1 as created, raised by each takeover.
func journalGeneration(t *testing.T, st store.Store, runID string) int64 {
	t.Helper()
	r, err := st.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatalf("reading run %s's spawn journal: %v", runID, err)
	}
	return r.Generation
}

// leaseHeld reports whether run runID's spawn journal in st is held: its
// lease (supervise.SpawnLogLeaseMember) runs past now.
func leaseHeld(st store.Store, runID string) bool {
	r, err := st.GetRun(context.Background(), runID)
	if err != nil {
		return false
	}
	v, ok := r.Doc.Get(supervise.SpawnLogLeaseMember)
	return ok && v.Kind() == canonjson.Number && time.UnixMilli(int64(v.Float())).After(time.Now())
}
