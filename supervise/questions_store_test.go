package supervise_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// questionStores are the homes of a store-journaled run: SQLite and
// PostgreSQL, each opened for one test (and closed at its end).
var questionStores = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"sqlite", func(t *testing.T) store.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
	{"postgres", func(t *testing.T) store.Store {
		st, err := postgres.Open(context.Background(), pgtest.Schema(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// journaledQuestions reads run runID's spawn journal in st whole and
// returns the ids its question-asked and question-decided records name,
// in order.
func journaledQuestions(t *testing.T, st store.Store, runID string) (asked, decided []string) {
	t.Helper()
	after := ""
	for {
		recs, next, err := supervise.ReadStoreSpawnLog(context.Background(), st, runID, after)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			switch r.Kind {
			case supervise.KindQuestionAsked:
				asked = append(asked, r.QuestionID)
			case supervise.KindQuestionDecided:
				decided = append(decided, r.QuestionID)
			}
		}
		if next == after {
			return asked, decided
		}
		after = next
	}
}

// Issue 13 with the journal in a store and no run dir (SQLite and
// PostgreSQL): the first process's worker question q1 was answered and
// q2 was journaled undecided, its asker settled, when the store took
// nothing more (the process died before its finished record). The resumed run lists q1 answered and q2 expired and
// numbers its own question q3: a question id never repeats in the
// journal across processes (RES-03 for the evidence of §3.6
// "Questions"; doc.go "What a resumed run owes a question").
func TestResumedRunKeepsQuestionIDsFromStoreJournal(t *testing.T) {
	for _, home := range questionStores {
		t.Run(home.name, func(t *testing.T) {
			st := home.open(t)
			run := func(resume bool, sp store.Store, brain supervise.BrainFunc) error {
				t.Helper()
				o := baseOptions(t, askingExecutor, nil)
				o.RunID, o.Resume, o.Brain = "qrun", resume, brain
				o.SpawnStore, o.SpawnLeaseTTL = sp, kernel.MinLeaseTTL
				_, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
				return err
			}
			// The first process: q1 answered, q2 journaled undecided and
			// its worker settled as the brain returned; then the store
			// took nothing more (not the run's finished record).
			err := run(false, &cutStore{Store: st, kind: supervise.KindSettled, after: 2}, answerQ1LeaveQ2(t))
			if !errors.Is(err, errCut) {
				t.Fatalf("the cut run: %v, want its journal's failure", err)
			}
			if asked, decided := journaledQuestions(t, st, "qrun"); !slices.Equal(asked, []string{"q1", "q2"}) || !slices.Equal(decided, []string{"q1"}) {
				t.Fatalf("the cut run's journal asked %v decided %v, want q1 and q2 asked, q1 decided", asked, decided)
			}
			var listed []supervise.Question
			var answered map[string]any
			err = run(true, st, func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				sp := tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint the roof"))
				ev := tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
				listed = c.ListQuestions().Questions
				event, _ := ev["event"].(map[string]any)
				q, _ := event["question"].(map[string]any)
				if q["id"] != "q3" {
					t.Errorf("the resumed run's await_event: %v (spawn_worker: %v), want the roof's question q3", ev, sp)
				}
				answered = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q3", "answer": "blue"})
				tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
				return supervise.BrainReport{}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([][2]string{{"q1", "answered"}, {"q2", "expired"}, {"q3", "open"}}, questionStatuses(listed)); diff != "" {
				t.Errorf("questions of the resumed run (-want +got):\n%s", diff)
			}
			if answered["delivered"] != true {
				t.Errorf("answer_question q3: %v", answered)
			}
			asked, _ := journaledQuestions(t, st, "qrun")
			seen := map[string]bool{}
			for _, id := range asked {
				if seen[id] {
					t.Errorf("question id %s repeats in the journal (%v)", id, asked)
				}
				seen[id] = true
			}
		})
	}
}

// The re-offer of TestResumedRunReoffersTheLeadsQuestionFromStoreJournal
// with no run dir at all (SQLite and PostgreSQL): the store journal is
// the run's only record, so q1 — asked by the nested lead, taken by the
// root, undecided when the store took nothing more — is read back from
// it, re-offered at the root, answered once, and its answer reaches the
// lead (doc.go "What a resumed run owes a question").
func TestResumedRunReoffersTheLeadsQuestionFromStoreJournalWithoutRunDir(t *testing.T) {
	for _, home := range questionStores {
		t.Run(home.name, func(t *testing.T) {
			st := home.open(t)
			mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbAnswerQuestion)
			first := newAskGate()
			o := nestedOptions(t, askingExecutor, askingRoot{first}, func() contract.ChatModel { return askingLead{first} })
			o.SpawnStore, o.SpawnLeaseTTL = &cutStore{Store: st, kind: supervise.KindTranscript, after: 5}, kernel.MinLeaseTTL
			if _, err := supervise.Supervise(context.Background(), mgr, "ship", o); !errors.Is(err, errCut) {
				t.Fatalf("the cut run: %v, want its journal's failure", err)
			}
			if asked, decided := journaledQuestions(t, st, "run1"); !slices.Equal(asked, []string{"q1"}) || len(decided) != 0 {
				t.Fatalf("the cut run's journal asked %v decided %v, want q1 asked and nothing decided", asked, decided)
			}
			second := newAskGate()
			res := askingRun(t, "", st)(true, second)
			checkRootAnswerReachedLead(t, second, res)
			if asked, decided := journaledQuestions(t, st, "run1"); !slices.Equal(asked, []string{"q1"}) || !slices.Equal(decided, []string{"q1"}) {
				t.Errorf("the journal asked %v decided %v; want q1 asked once and decided once", asked, decided)
			}
		})
	}
}
