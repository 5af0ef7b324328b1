package supervise_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// SJ18 check 1 (§3.6 "Questions", RES-03): a store-journaled run with no
// run dir whose SQLite file is moved to another machine after its
// process died — q1 deferred and delivered, q2 answered and delivered,
// q3 open — resumes there from the file alone: q1 stays deferred, q2
// answered, q3 expired with its asker; deciding q1 or q2 again as they
// were decided is the journaled decision replayed, not sent again, and
// another decision is already-decided.
func TestSJ18MovedStoreKeepsDeferredAndAnsweredQuestions(t *testing.T) {
	dbA := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(context.Background(), dbA, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := baseOptions(t, askingExecutor, nil)
	// The process dies right after q3's record landed.
	o.SpawnStore, o.SpawnLeaseTTL = &cutStore{Store: st, kind: supervise.KindQuestionAsked, after: 3}, kernel.MinLeaseTTL
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for i, d := range []map[string]any{{"questionId": "q1", "deferReason": "later"}, {"questionId": "q2", "answer": "red"}} {
			tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs([]string{"door", "wall"}[i]))
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
			if r := tool(t, ctx, c, supervise.VerbAnswerQuestion, d); r["delivered"] != true {
				t.Errorf("deciding %v: %v", d, r)
			}
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		}
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("roof"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); !errors.Is(err, errCut) {
		t.Fatalf("the dying run: %v, want its journal's failure", err)
	}
	st.Close()
	dbB := filepath.Join(t.TempDir(), "moved.db")
	b, err := os.ReadFile(dbA)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dbB, b, 0o600); err != nil {
		t.Fatal(err)
	}
	moved, err := sqlite.Open(context.Background(), dbB, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer moved.Close()
	var listed []supervise.Question
	var again []map[string]any
	o = baseOptions(t, askingExecutor, nil)
	o.SpawnStore, o.SpawnLeaseTTL, o.Resume = moved, kernel.MinLeaseTTL, true
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		listed = c.ListQuestions().Questions
		for _, d := range []map[string]any{
			{"questionId": "q1", "deferReason": "later"}, {"questionId": "q2", "answer": "red"},
			{"questionId": "q1", "answer": "now"}, {"questionId": "q2", "deferReason": "no"},
		} {
			again = append(again, tool(t, ctx, c, supervise.VerbAnswerQuestion, d))
		}
		return supervise.BrainReport{}, nil
	})
	// The dead process's lease may still run: the move is retried until
	// it lapsed (MinLeaseTTL), within a bound.
	res, err := superviseWhileHeld(context.Background(), time.Now().Add(30*time.Second), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][2]string{{"q1", "deferred"}, {"q2", "answered"}, {"q3", "expired"}}, questionStatuses(listed)); diff != "" {
		t.Errorf("questions after the move (-want +got):\n%s", diff)
	}
	for i, r := range again {
		replay := i < 2
		if replay && (r["replayed"] != true || r["delivered"] != true) || !replay && r["error"] != "already-decided" {
			t.Errorf("deciding again #%d: %v", i, r)
		}
	}
	// Two settled workers' 5 tokens each, the roof's in-doubt worker at
	// its 1000-token ceiling once (behaviour 40).
	if res.Spent.Tokens != 1010 || res.Spent.TokensKnown {
		t.Errorf("spent after the move %+v; want 1010 tokens, not all known", res.Spent)
	}
	if asked, decided := journaledQuestions(t, moved, "run1"); !slices.Equal(asked, []string{"q1", "q2", "q3"}) || !slices.Equal(decided, []string{"q1", "q2"}) {
		t.Errorf("the moved journal asked %v decided %v; want each question asked once and q1, q2 decided once", asked, decided)
	}
}
