package supervise_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// A layer above supervise (package graph) keeps its edge ledger in the
// run's one journal: a note is durable, paged by read_journal, refused
// for a kind supervise owns, and passed over when the run resumes.
func TestNoteJournalsEdgeRecords(t *testing.T) {
	dir := t.TempDir()
	tokens, iters := int64(100), int64(2)
	data := canonjson.ObjectValue([]canonjson.Member{{Name: "edge", Value: canonjson.StringValue("delegates:a->b")}})
	opts := func(brain supervise.Brain, resume bool) supervise.Options {
		return supervise.Options{Budget: ledger.Budget{Tokens: &tokens, Iterations: &iters}, RunDir: dir, RunID: "r", Resume: resume,
			Profiles: map[string]*profile.Profile{"w": {Name: new("w")}},
			Deliverable: supervise.Deliverable{Check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
				return kernel.Verdict{Passed: true}, nil
			}},
			Executor: supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
				return supervise.WorkResult{}, nil
			}), Brain: brain}
	}
	var rows []supervise.Record
	var refused error
	first := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if err := c.Note(ctx, supervise.KindEdge, "r:s1", data); err != nil {
			return supervise.BrainReport{}, err
		}
		refused = c.Note(ctx, supervise.KindSpawned, "r:s1", data)
		rows = c.ReadJournal(supervise.JournalArgs{Kinds: []string{supervise.KindEdge}}).Rows
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), &profile.Profile{Name: new("m")}, "t", opts(first, false)); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(refused, supervise.ErrNoteKind) {
		t.Errorf("a spawned note: err = %v, want ErrNoteKind", refused)
	}
	want := []supervise.Record{{Kind: supervise.KindEdge, Node: "r:s1", Data: data}}
	if diff := cmp.Diff(want, rows, cmp.Comparer(func(a, b canonjson.Value) bool { return canonjson.Equal(a, b) })); diff != "" {
		t.Errorf("edge rows (-want +got):\n%s", diff)
	}
	var replayed []supervise.Record
	second := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		replayed = c.ReadJournal(supervise.JournalArgs{Kinds: []string{supervise.KindEdge}}).Rows
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), &profile.Profile{Name: new("m")}, "t", opts(second, true)); err != nil {
		t.Fatalf("resume over an edge note: %v", err)
	}
	if len(replayed) != 1 || !canonjson.Equal(replayed[0].Data, data) {
		t.Errorf("resumed journal edge rows = %+v, want the one note", replayed)
	}
}
