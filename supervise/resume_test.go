package supervise_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// sequentialManager spawns alpha, awaits it, spawns beta, awaits it and
// answers: its journal order is deterministic.
func sequentialManager() *scripted.ChatModel { return sequentialManagerFrom(0) }

// sequentialManagerFrom is sequentialManager from its turn k on: the
// model a resumed manager, whose conversation went on from its journal
// (KindTranscript) after k turns, is asked next.
func sequentialManagerFrom(k int) *scripted.ChatModel {
	return scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha", "label": "a"}), managerUsage(10, 0, 0)),
		turn(call("c2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 0, 0)),
		turn(call("c3", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write beta", "label": "b"}), managerUsage(10, 0, 0)),
		turn(call("c4", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 0, 0)),
		turn(scripted.Text("done"), managerUsage(10, 0, 0)),
	}[k:]})
}

var verbs2 = []string{supervise.VerbSpawnWorker, supervise.VerbAwaitEvent}

// withoutMetered drops the manager's own records — metered turns and
// its transcript — from ks.
func withoutMetered(ks []string) []string {
	return slices.DeleteFunc(slices.Clone(ks), func(k string) bool { return k == supervise.KindMetered || k == supervise.KindTranscript })
}

func kinds(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		i := bytes.Index(l, []byte(`"kind":"`))
		j := bytes.IndexByte(l[i+8:], '"')
		out = append(out, string(l[i+8:i+8+j]))
	}
	return out
}

// RES-03, behaviour 46: a coordinator that died right after alpha
// settled is resumed with the same run id and dir; alpha is replayed
// from the journal, not executed again; beta runs; the winner's outRef
// and the spend equal the uninterrupted run's.
func TestResumeAfterOneWorkerSettledBehaviour46(t *testing.T) {
	// The uninterrupted run, for reference.
	refDir := t.TempDir()
	ref := newCounting(t, workerProvider(t))
	o := baseOptions(t, ref, sequentialManager())
	o.RunDir = refDir
	want, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o)
	if err != nil || want.Status != supervise.StatusWinner {
		t.Fatalf("reference run: %v %+v", err, want)
	}
	if diff := cmp.Diff([]string{"run-started", "spawned", "execution-bound", "settled", "spawned", "execution-bound", "settled", "finished"}, withoutMetered(kinds(t, refDir))); diff != "" {
		t.Fatalf("journal kinds (-want +got):\n%s", diff)
	}
	if n := meteredUnder(t, refDir, "run1"); n != 5 {
		t.Errorf("%d records charge the manager's turns, want one per turn (5)", n)
	}

	// The same run, killed after alpha's settlement was durable.
	dir := t.TempDir()
	first := newCounting(t, workerProvider(t))
	o = baseOptions(t, first, sequentialManager())
	o.RunDir = dir
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	o.Now = func() time.Time { return start }
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o); err != nil {
		t.Fatal(err)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSettled, 1)

	second := newCounting(t, workerProvider(t))
	o = baseOptions(t, second, sequentialManager())
	o.RunDir, o.Resume = dir, true
	o.Now = func() time.Time { return start.Add(90 * time.Second) }
	got, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if second.count("alpha") != 0 || second.count("beta") != 1 {
		t.Errorf("resumed process executed alpha %d, beta %d times; want 0 and 1", second.count("alpha"), second.count("beta"))
	}
	if !got.Resumed || !got.Tree[0].Replayed || got.Tree[1].Replayed {
		t.Errorf("resumed %v, replayed alpha %v beta %v; want true, true, false", got.Resumed, got.Tree[0].Replayed, got.Tree[1].Replayed)
	}
	if got.Status != supervise.StatusWinner || got.Winner.OutRef != want.Winner.OutRef || got.Winner.Node != want.Winner.Node {
		t.Fatalf("resumed winner %+v, want %+v", got.Winner, want.Winner)
	}
	if diff := cmp.Diff(want.Breakdown.ChildWork, got.Breakdown.ChildWork); diff != "" {
		t.Errorf("child spend (-uninterrupted +resumed):\n%s", diff)
	}
	if got.MS != 90_000 {
		t.Errorf("MS = %d, want 90000 (wall clock from the original start)", got.MS)
	}
	// state.json (§3.6 run layout) counts the replayed journal too: the
	// resumed run ends in the uninterrupted run's state.
	refState, err := supervise.ReadRunState(context.Background(), refDir)
	if err != nil {
		t.Fatal(err)
	}
	resState, err := supervise.ReadRunState(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	counts := cmpopts.IgnoreFields(supervise.RunState{}, "RunID", "StartedAtMS", "UpdatedAtMS", "Revision", "Budget", "Reserved", "Spent")
	if refState.Status != string(supervise.StatusWinner) || refState.Spawned != 2 || refState.Settled[supervise.StateDone] != 2 {
		t.Errorf("reference state %+v, want a winner with two workers spawned and done", refState)
	}
	if diff := cmp.Diff(refState, resState, counts); diff != "" {
		t.Errorf("state.json (-uninterrupted +resumed):\n%s", diff)
	}
}

// uncappedUSD is baseOptions without a dollar ceiling, so that a
// ceiling charge of unknown dollars does not taint the pool (behaviour
// 39 covers that).
func uncappedUSD(o supervise.Options) supervise.Options {
	o.Budget.MicroUSD, o.PerWorker.MicroUSD = nil, nil
	return o
}

// Behaviour 40, 43: a worker journaled as spawned with no settlement
// (the coordinator died while it ran) is charged at its full ceiling on
// resume, named never-settled in the spend gaps, and not replayed: the
// manager's repeated spawn runs fresh work.
func TestResumeChargesUnsettledAtCeilingBehaviour40(t *testing.T) {
	dir := t.TempDir()
	o := uncappedUSD(baseOptions(t, newCounting(t, workerProvider(t)), sequentialManager()))
	o.RunDir = dir
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o); err != nil {
		t.Fatal(err)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSpawned, 2) // beta spawned, never settled

	// The manager's conversation goes on from its journal: its spawn of
	// beta, made but unanswered, runs again (beta in doubt runs anew);
	// the model is asked next for its fourth turn.
	second := newCounting(t, workerProvider(t))
	o = uncappedUSD(baseOptions(t, second, sequentialManagerFrom(3)))
	o.RunDir, o.Resume = dir, true
	got, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if second.count("beta") != 1 || second.count("alpha") != 0 {
		t.Errorf("executions alpha %d beta %d", second.count("alpha"), second.count("beta"))
	}
	// alpha 120 + beta(s2) at its 1000 ceiling + beta(s3) 60.
	if got.Breakdown.ChildWork.Tokens != 1180 || got.Breakdown.ChildWork.TokensKnown {
		t.Errorf("child work %+v, want 1180 tokens, not known", got.Breakdown.ChildWork)
	}
	wantGap := []supervise.SpendGap{{ID: "run1:s2", Label: "b", Kind: supervise.GapNeverSettled, Channels: []string{"tokens", "iterations", "usd"}}}
	// The usd channel of s2 is unknown (no ceiling to charge).
	if diff := cmp.Diff(wantGap, got.SpendGaps); diff != "" {
		t.Errorf("gaps (-want +got):\n%s", diff)
	}
	if got.Spent.TokensKnown || got.Spent.USDKnown {
		t.Errorf("spent claims known with a never-settled node: %+v", got.Spent)
	}
}

// Behaviour 47: a second run on the same dir without Resume is refused
// and the journal is untouched.
func TestRerunWithoutResumeRefusedBehaviour47(t *testing.T) {
	dir := t.TempDir()
	o := baseOptions(t, newCounting(t, workerProvider(t)), sequentialManager())
	o.RunDir = dir
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	o = baseOptions(t, newCounting(t, workerProvider(t)), sequentialManager())
	o.RunDir = dir
	_, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o)
	var exists *supervise.RunExistsError
	if !errors.As(err, &exists) || exists.RunID != "run1" {
		t.Fatalf("err = %v, want *RunExistsError for run1", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	if !bytes.Equal(before, after) {
		t.Error("the refused run changed the journal")
	}
}

// A result accepted by submit_result is journaled: a resumed run keeps it
// as the winner, and a later passing submission is still refused.
func TestSubmittedResultSurvivesResume(t *testing.T) {
	dir := t.TempDir()
	submit := func(result string, got *map[string]any) supervise.Brain {
		return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			*got = tool(t, ctx, c, supervise.VerbSubmitResult, map[string]any{"result": result})
			return supervise.BrainReport{}, nil
		})
	}
	var first, second map[string]any
	o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	o.RunDir, o.Brain = dir, submit("first DONE", &first)
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSubmitResult), "t", o); err != nil {
		t.Fatal(err)
	}
	o = baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	o.RunDir, o.Resume, o.Brain = dir, true, submit("second DONE", &second)
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSubmitResult), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if first["accepted"] != true || second["error"] != "earlier-passing-result" {
		t.Errorf("first %v, second %v", first, second)
	}
	if res.Winner == nil || res.Winner.Text != "first DONE" || res.Winner.OutRef != first["outRef"] {
		t.Errorf("winner %+v", res.Winner)
	}
}
