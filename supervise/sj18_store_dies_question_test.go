package supervise_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// SJ18 check 4 (§3.6 "Questions", §9 answer_question "resolve only
// when delivered", behaviour 54; RES-03): the SQLite store holding a
// run's journal stops answering (its *sql.DB closed) while a worker's
// blocks-run question is open, and the manager answers it then.
func TestSJ18StoreClosedMidQuestion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var answered, settled map[string]any
	o := baseOptions(t, askingExecutor, nil)
	o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		st.Close()
		answered = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "blue"})
		settled = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 10000})
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	// The answer reached the worker in process before its record failed:
	// the run says which records it lost, and delivers no winner from a
	// settlement it could not journal.
	loss, ok := errors.AsType[*supervise.JournalLossError](err)
	if !ok || !slices.ContainsFunc(loss.Lost, func(r supervise.LostRecord) bool { return r.Kind == supervise.CoordDecision && r.Node == "run1:s1" }) {
		t.Errorf("the run whose store closed: %v (%T); want a *JournalLossError naming q1's decision", err, err)
	}
	if res.Status == supervise.StatusWinner {
		t.Errorf("the run whose store closed delivered a winner it could not journal: %+v", res.Winner)
	}
	if ev, _ := settled["event"].(map[string]any); ev["delivered"] == true {
		t.Errorf("await_event said delivered a settlement never journaled: %v (answer_question: %v)", settled, answered)
	}

	st2, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	var listed []supervise.Question
	deadline := time.Now().Add(30 * time.Second)
	for {
		o = baseOptions(t, askingExecutor, nil)
		o.SpawnStore, o.SpawnLeaseTTL, o.Resume = st2, kernel.MinLeaseTTL, true
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			listed = c.ListQuestions().Questions
			return supervise.BrainReport{}, nil
		})
		res, err = supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
		if !errors.Is(err, supervise.ErrSpawnLogHeld) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	// The decision never journaled is not replayed as delivered: q1 is
	// expired with its asker, which is in doubt and charged its ceiling
	// once (behaviours 40, 43).
	if diff := cmp.Diff([][2]string{{"q1", "expired"}}, questionStatuses(listed)); diff != "" {
		t.Errorf("questions of the resumed run (-want +got):\n%s", diff)
	}
	if res.Spent.Tokens != 1000 || res.Spent.TokensKnown || len(res.SpendGaps) != 1 || res.SpendGaps[0].ID != "run1:s1" || res.SpendGaps[0].Kind != "never-settled" {
		t.Errorf("the resumed run's spend %+v gaps %+v; want run1:s1's ceiling of 1000 tokens once, never-settled", res.Spent, res.SpendGaps)
	}
}
