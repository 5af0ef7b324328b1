package supervise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// planner is a manager model that, like a real one, decides its next
// step from the transcript it is given — spawn alpha, await it, spawn
// beta, await it, answer — and words its spawns after its variant: a
// manager resumed without its conversation starts over and spawns alpha
// again in other words, which no journaled spawn matches. It records
// every request. At step hangAt (when set) it signals reached and hangs
// until its context ends, as a model a killed process was waiting for.
type planner struct {
	variant  string
	hangAt   int
	reached  func()
	mu       sync.Mutex
	requests [][]contract.ChatMessage
}

func (p *planner) Turn(ctx context.Context, msgs []contract.ChatMessage, _ []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	p.mu.Lock()
	p.requests = append(p.requests, slices.Clone(msgs))
	p.mu.Unlock()
	step := 0
	for _, m := range msgs {
		if m.Role == contract.ChatAssistant && len(m.ToolCalls) > 0 {
			step++
		}
	}
	return func(yield func(contract.ChatEvent, error) bool) {
		if p.hangAt > 0 && step == p.hangAt {
			p.reached()
			<-ctx.Done()
			yield(contract.ChatEvent{}, ctx.Err())
			return
		}
		var ev contract.ChatEvent
		id := fmt.Sprintf("s%d-%s", step, p.variant)
		switch step {
		case 0, 2:
			task := map[bool]string{true: "write alpha", false: "write beta"}[step == 0]
			if p.variant != "v1" {
				task += ", as we discussed"
			}
			ev = call(id, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": task})
		case 1, 3:
			ev = call(id, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		default:
			ev = scripted.Text("alpha DONE, beta half")
		}
		if yield(ev, nil) {
			yield(managerUsage(10, 5, 0.0001), nil)
		}
	}
}

func (p *planner) firstRequest(t *testing.T) []contract.ChatMessage {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.requests) == 0 {
		t.Fatal("the manager model was never asked")
	}
	return p.requests[0]
}

var valueComparer = cmp.Comparer(canonjson.Equal)

// transcriptOptions are the options of every run of the transcript
// tests: the planner as the router on a budget with room for all of it.
func transcriptOptions(exec supervise.Executor, router contract.ChatModel) (supervise.Options, *profile.Profile, error) {
	writer, err := profile.Parse([]byte(writerProfile))
	if err != nil {
		return supervise.Options{}, nil, err
	}
	manager, err := profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "model": {"default": "scripted/manager"},
		"prompt": {"systemPrompt": "You manage workers."},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`))
	if err != nil {
		return supervise.Options{}, nil, err
	}
	tokens, iterations, usd := int64(10_000), int64(10), int64(1_000_000)
	perTokens, perIterations, perUSD := int64(1_000), int64(1), int64(100_000)
	return supervise.Options{
		Budget:    ledger.Budget{Tokens: &tokens, Iterations: &iterations, MicroUSD: &usd},
		PerWorker: ledger.Budget{Tokens: &perTokens, Iterations: &perIterations, MicroUSD: &perUSD},
		Profiles:  map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck, Executor: exec, Router: router, RunID: "run1",
	}, manager, nil
}

// uninterruptedPlan runs the planner's whole plan in one process: the
// result a resumed run must match.
func uninterruptedPlan(t *testing.T) supervise.SupervisedResult {
	t.Helper()
	o, manager, err := transcriptOptions(newCounting(t, workerProvider(t)), &planner{variant: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	o.RunDir = t.TempDir()
	want, err := supervise.Supervise(context.Background(), manager, "ship", o)
	if err != nil || want.Status != supervise.StatusWinner {
		t.Fatalf("uninterrupted run: %v %+v", err, want)
	}
	return want
}

// resumeWithRewording resumes run1 (o's journal) with a planner that
// words its spawns differently and checks what every resume must give:
// no committed child executed again, the uninterrupted run's winner and
// spend. It returns the planner, whose requests the caller checks.
func resumeWithRewording(t *testing.T, o supervise.Options, manager *profile.Profile, want supervise.SupervisedResult, counting *countingExecutor, wantBeta int64) *planner {
	t.Helper()
	v2 := &planner{variant: "v2"}
	o.Router, o.Executor, o.Resume = v2, counting, true
	deadline := time.Now().Add(2 * time.Minute)
	var got supervise.SupervisedResult
	var err error
	for {
		got, err = supervise.Supervise(context.Background(), manager, "ship", o)
		if !errors.Is(err, supervise.ErrSpawnLogHeld) || time.Now().After(deadline) {
			break // held only while an earlier holder's lease lasts
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if counting.count("alpha") != 0 || counting.count("beta") != wantBeta {
		t.Errorf("the resumed run executed alpha %d and beta %d times; want 0 and %d", counting.count("alpha"), counting.count("beta"), wantBeta)
	}
	if !got.Resumed || got.Status != supervise.StatusWinner || got.Winner.OutRef != want.Winner.OutRef || got.Winner.Node != want.Winner.Node {
		t.Errorf("resumed %v %s, winner %+v; want the uninterrupted run's %+v", got.Resumed, got.Status, got.Winner, want.Winner)
	}
	if diff := cmp.Diff(want.Spent, got.Spent); diff != "" {
		t.Errorf("spend (-uninterrupted +resumed):\n%s", diff)
	}
	if diff := cmp.Diff(want.Breakdown.DriverInference, got.Breakdown.DriverInference); diff != "" {
		t.Errorf("the manager's own spend (-uninterrupted +resumed):\n%s", diff)
	}
	return v2
}

// checkContinued checks that the resumed manager's first request is
// the interrupted one's request at step: the conversation so far, not a
// fresh start.
func checkContinued(t *testing.T, v1, v2 *planner, step int) {
	t.Helper()
	if len(v1.requests) <= step {
		t.Fatalf("the interrupted manager made %d requests, want more than %d", len(v1.requests), step)
	}
	if diff := cmp.Diff(v1.requests[step], v2.firstRequest(t), valueComparer); diff != "" {
		t.Errorf("the resumed manager's first request (-interrupted run's at step %d +resumed):\n%s", step, diff)
	}
}

// checkAwaitedBeta checks that the resumed manager's await after its
// spawn of beta returned beta's settlement, not alpha's again: the
// replayed settlement its conversation already had is not queued twice.
func checkAwaitedBeta(t *testing.T, v2 *planner) {
	t.Helper()
	v2.mu.Lock()
	defer v2.mu.Unlock()
	if len(v2.requests) < 3 {
		t.Fatalf("the resumed manager made %d requests, want 3", len(v2.requests))
	}
	last := v2.requests[2][len(v2.requests[2])-1]
	if last.Role != contract.ChatTool || last.Content == nil || !strings.Contains(*last.Content, `"workerId":"run1:s2"`) {
		t.Errorf("the resumed manager's await returned %v, want beta's (run1:s2) settlement", *last.Content)
	}
}

// Issue 13, RES-03 / behaviour 46 for the manager's own conversation: a
// router manager whose process died after two turns (spawn alpha, await
// it) is resumed from its run dir's journal by a model that words its
// spawns differently. The resumed model's first request is the recorded
// conversation, so it goes on to beta instead of spawning alpha again:
// alpha is not executed again, and the run's spend — the manager's
// turns included — is the uninterrupted run's.
func TestResumedRouterManagerContinuesItsConversation(t *testing.T) {
	want := uninterruptedPlan(t)
	dir := t.TempDir()
	v1 := &planner{variant: "v1"}
	o, manager, err := transcriptOptions(newCounting(t, workerProvider(t)), v1)
	if err != nil {
		t.Fatal(err)
	}
	o.RunDir = dir
	if _, err := supervise.Supervise(context.Background(), manager, "ship", o); err != nil {
		t.Fatal(err)
	}
	// Killed once the second turn's result was journaled.
	journaltest.KeepThrough(t, dir, supervise.KindTranscript, 4)
	v2 := resumeWithRewording(t, o, manager, want, newCounting(t, workerProvider(t)), 1)
	checkContinued(t, v1, v2, 2)
	checkAwaitedBeta(t, v2)
}

// Issue 13: a manager killed after its spawn of beta was journaled (and
// beta settled) but before the spawn's result reached its transcript
// runs that spawn again exactly as the model made it — the same
// arguments, so the journaled child is replayed, not executed — and then
// goes on; the rewording model is never asked to word it.
func TestResumedRouterManagerRerunsItsUnansweredCallExactly(t *testing.T) {
	want := uninterruptedPlan(t)
	dir := t.TempDir()
	v1 := &planner{variant: "v1"}
	o, manager, err := transcriptOptions(newCounting(t, workerProvider(t)), v1)
	if err != nil {
		t.Fatal(err)
	}
	o.RunDir = dir
	if _, err := supervise.Supervise(context.Background(), manager, "ship", o); err != nil {
		t.Fatal(err)
	}
	cutAfterCall(t, dir, 5, 2)
	v2 := resumeWithRewording(t, o, manager, want, newCounting(t, workerProvider(t)), 0)
	got := v2.firstRequest(t)
	// The recorded part: system, task, and the turns up to the spawn of
	// beta, as the interrupted manager made them.
	recorded := v1.requests[3][:7]
	if diff := cmp.Diff(recorded, got[:min(len(got), 7)], valueComparer); diff != "" {
		t.Errorf("the resumed manager's first request (-recorded +resumed):\n%s", diff)
	}
	if len(got) != 8 || got[7].Role != contract.ChatTool || got[7].ToolCallID != "s2-v1" {
		t.Errorf("the request ends %+v, want the result of the re-run call s2-v1", got[len(got)-1])
	}
}

// cutAfterCall rewrites the run dir's journal as a process killed right
// after the manager's assistant message of transcript record k was
// journaled and the n-th worker settled: nothing of the manager's loop
// after record k (its later transcript and metered records) survives,
// and nothing at all after that settlement.
func cutAfterCall(t *testing.T, dir string, k, n int) {
	t.Helper()
	journaltest.KeepThrough(t, dir, supervise.KindSettled, n)
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	seen := 0
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		var r struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(line, &r) == nil && r.Kind == supervise.KindTranscript {
			seen++
		}
		if seen >= k && (r.Kind == supervise.KindTranscript && seen > k || r.Kind == supervise.KindMetered) {
			continue
		}
		kept = append(kept, line)
	}
	if seen < k {
		t.Fatalf("the journal holds %d transcript records, fewer than %d", seen, k)
	}
	if err := os.WriteFile(path, bytes.Join(kept, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// cutStore is a store journal whose process dies right after its
// after-th record of kind landed: every later append fails and lands
// nothing.
type cutStore struct {
	store.Store
	kind  string
	after int
	mu    sync.Mutex
	seen  int
}

var errCut = errors.New("the process died")

func (s *cutStore) AppendEvents(ctx context.Context, f store.Fence, evs []store.NewEvent) ([]store.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen >= s.after {
		return nil, errCut
	}
	out, err := s.Store.AppendEvents(ctx, f, evs)
	if err == nil {
		for _, e := range evs {
			if e.Type == s.kind {
				s.seen++
			}
		}
	}
	return out, err
}

// Issue 13 with the journal in a store (SQLite and PostgreSQL): a router
// manager whose store journal took nothing after its second turn's
// result is resumed from the store by a rewording model; its first
// request is the recorded conversation, alpha is not executed again,
// and the spend is the uninterrupted run's.
func TestResumedRouterManagerContinuesFromStoreJournal(t *testing.T) {
	homes := map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) store.Store {
			st, err := postgres.Open(context.Background(), pgtest.Schema(t), postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			want := uninterruptedPlan(t)
			st := homes[name](t)
			v1 := &planner{variant: "v1"}
			o, manager, err := transcriptOptions(newCounting(t, workerProvider(t)), v1)
			if err != nil {
				t.Fatal(err)
			}
			o.SpawnStore, o.SpawnLeaseTTL = &cutStore{Store: st, kind: supervise.KindTranscript, after: 4}, kernel.MinLeaseTTL
			if _, err := supervise.Supervise(context.Background(), manager, "ship", o); !errors.Is(err, errCut) {
				t.Fatalf("the cut run: %v, want its journal's failure", err)
			}
			o.SpawnStore = st
			v2 := resumeWithRewording(t, o, manager, want, newCounting(t, workerProvider(t)), 1)
			checkContinued(t, v1, v2, 2)
			checkAwaitedBeta(t, v2)
		})
	}
}

// A journaled transcript message too large for the journal's records
// is kept in a blob and read back whole by the resumed manager.
func TestLargeTranscriptMessageGoesToABlob(t *testing.T) {
	big := strings.Repeat("x", 40_000)
	router := &bigTask{planner: planner{variant: "v1"}, task: big}
	o, manager, err := transcriptOptions(newCounting(t, workerProvider(t)), router)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o.RunDir = dir
	if _, err := supervise.Supervise(context.Background(), manager, "ship", o); err != nil {
		t.Fatal(err)
	}
	rows, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	refs := 0
	for _, r := range rows {
		for _, m := range r.Messages {
			if m.Ref != "" {
				refs++
			}
			if m.Content != nil && len(*m.Content) > 20_000 {
				t.Errorf("a %d-byte message sits in the journal", len(*m.Content))
			}
		}
	}
	if refs != 1 {
		t.Errorf("%d transcript messages in blobs, want 1 (the large spawn)", refs)
	}
	journaltest.KeepThrough(t, dir, supervise.KindTranscript, 4)
	v2 := &bigTask{planner: planner{variant: "v1"}, task: big}
	o.Router, o.Resume, o.Executor = v2, true, newCounting(t, workerProvider(t))
	if _, err := supervise.Supervise(context.Background(), manager, "ship", o); err != nil {
		t.Fatal(err)
	}
	got := v2.firstRequest(t)
	if len(got) < 3 || len(got[2].ToolCalls) != 1 || !strings.Contains(string(canonjson.Marshal(got[2].ToolCalls[0].Args)), big) {
		t.Errorf("the resumed request does not carry the large spawn back")
	}
}

// bigTask is a planner whose first spawn's task carries task.
type bigTask struct {
	planner
	task string
}

func (b *bigTask) Turn(ctx context.Context, msgs []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	inner := b.planner.Turn(ctx, msgs, tools)
	return func(yield func(contract.ChatEvent, error) bool) {
		for ev, err := range inner {
			if ev.Kind == contract.ChatToolCall && ev.ToolCall.Name == supervise.ToolPrefix+supervise.VerbSpawnWorker && strings.Contains(string(canonjson.Marshal(ev.ToolCall.Args)), "alpha") {
				ev = call(ev.ToolCall.ID, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha " + b.task})
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// transcriptKillEnv makes the re-executed test binary run the planner's
// plan in the run dir childDir names until its third model turn, where
// it is killed.
const transcriptKillEnv = "AGENTRT_TRANSCRIPT_KILL_CHILD"

// transcriptKillChild is the killed process: its manager's third turn
// (after spawning alpha and awaiting it) announces itself and hangs.
func transcriptKillChild(dir string) error {
	var s scripted.Script
	if err := json.Unmarshal([]byte(workerScript), &s); err != nil {
		return err
	}
	exec := &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: memory.New(nil)}
	router := &planner{variant: "v1", hangAt: 2, reached: func() { os.WriteFile(filepath.Join(dir, "third-turn"), nil, 0o600) }}
	o, manager, err := transcriptOptions(exec, router)
	if err != nil {
		return err
	}
	o.RunDir = dir
	_, err = supervise.Supervise(context.Background(), manager, "ship", o)
	return err
}

// Issue 13 with a real process: a supervisor is killed with SIGKILL
// while its router manager waits on its third model turn. Restarted on
// the same run dir with a model that words its spawns differently, the
// manager's first request is the conversation the killed process
// journaled (its two turns, alpha's spawn worded as then), alpha is not
// executed again, and the run ends as an uninterrupted one.
func TestKilledRouterManagerContinuesItsConversation(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	want := uninterruptedPlan(t)
	dir := t.TempDir()
	killChildAt(t, filepath.Join(dir, "third-turn"), "reached its third turn", transcriptKillEnv+"=1", childDir+"="+dir)

	o, manager, err := transcriptOptions(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.RunDir = dir
	v2 := resumeWithRewording(t, o, manager, want, newCounting(t, workerProvider(t)), 1)
	got := v2.firstRequest(t)
	roles := make([]contract.ChatRole, len(got))
	for i, m := range got {
		roles[i] = m.Role
	}
	wantRoles := []contract.ChatRole{contract.ChatSystem, contract.ChatUser, contract.ChatAssistant, contract.ChatTool, contract.ChatAssistant, contract.ChatTool}
	if diff := cmp.Diff(wantRoles, roles); diff != "" {
		t.Fatalf("the resumed manager's first request (-want +got roles):\n%s", diff)
	}
	if c := got[2].ToolCalls; len(c) != 1 || c[0].ID != "s0-v1" || !strings.Contains(string(canonjson.Marshal(c[0].Args)), `"write alpha"`) {
		t.Errorf("the first recorded call %+v, want the killed manager's spawn of alpha as it worded it", c)
	}
	if *got[1].Content != "ship" {
		t.Errorf("the task message %q, want the run's task once", *got[1].Content)
	}
}

// rootOfLead is a root manager model that, from its transcript, spawns
// one lead, awaits it and answers.
type rootOfLead struct{}

func (rootOfLead) Turn(_ context.Context, msgs []contract.ChatMessage, _ []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	step := 0
	for _, m := range msgs {
		if m.Role == contract.ChatAssistant && len(m.ToolCalls) > 0 {
			step++
		}
	}
	return func(yield func(contract.ChatEvent, error) bool) {
		var ev contract.ChatEvent
		switch step {
		case 0:
			ev = call("r1", supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead the team", "label": "lead",
				"budget": map[string]any{"maxTokens": 2000, "maxIterations": 10, "maxUsd": 0.5}})
		case 1:
			ev = call("r2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		default:
			ev = scripted.Text("root: the lead delivered")
		}
		if yield(ev, nil) {
			yield(managerUsage(10, 0, 0.0001), nil)
		}
	}
}

// keepThroughNode truncates dir's journal just after the n-th
// transcript record of node: its process died there.
func keepThroughNode(t *testing.T, dir string, node supervise.NodeID, n int) {
	t.Helper()
	if !cutJournalAtTranscript(t, dir, node, true, func(supervise.Record) bool { n--; return n == 0 }) {
		t.Fatalf("the journal holds too few transcript records of %s", node)
	}
}

// Issue 13 at depth (§3.6 nested managers): a nested lead manager's
// conversation is journaled under its node. Cut after the lead's second
// turn (spawn alpha, await it) and resumed with a lead model that words
// its spawns differently, the lead driven again goes on from its own
// conversation — its first request is the interrupted lead's third —
// so alpha is not executed again, and the run's spend is the
// uninterrupted run's.
func TestResumedNestedManagerContinuesItsConversation(t *testing.T) {
	mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	o := nestedOptions(t, newCounting(t, workerProvider(t)), rootOfLead{}, func() contract.ChatModel { return &planner{variant: "v1"} })
	o.RunDir = t.TempDir()
	want, err := supervise.Supervise(context.Background(), mgr, "ship", o)
	if err != nil || want.Status != supervise.StatusWinner {
		t.Fatalf("uninterrupted run: %v %+v", err, want)
	}

	dir := t.TempDir()
	lead1 := &planner{variant: "v1"}
	o = nestedOptions(t, newCounting(t, workerProvider(t)), rootOfLead{}, func() contract.ChatModel { return lead1 })
	o.RunDir = dir
	if _, err := supervise.Supervise(context.Background(), mgr, "ship", o); err != nil {
		t.Fatal(err)
	}
	keepThroughNode(t, dir, "run1:s1", 4)

	lead2 := &planner{variant: "v2"}
	second := newCounting(t, workerProvider(t))
	o = nestedOptions(t, second, rootOfLead{}, func() contract.ChatModel { return lead2 })
	o.RunDir, o.Resume = dir, true
	got, err := supervise.Supervise(context.Background(), mgr, "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if second.count("alpha") != 0 || second.count("beta") != 1 {
		t.Errorf("the resumed run executed alpha %d and beta %d times; want 0 and 1", second.count("alpha"), second.count("beta"))
	}
	checkContinued(t, lead1, lead2, 2)
	if got.Status != supervise.StatusWinner || got.Winner.Node != want.Winner.Node || got.Winner.OutRef != want.Winner.OutRef {
		t.Errorf("resumed winner %+v, want %+v", got.Winner, want.Winner)
	}
	if diff := cmp.Diff(want.Spent, got.Spent); diff != "" {
		t.Errorf("spend (-uninterrupted +resumed):\n%s", diff)
	}
}

// refusingKind is a store journal that refuses every append holding a
// record of kind, and takes the rest.
type refusingKind struct {
	store.Store
	kind string
}

func (s refusingKind) AppendEvents(ctx context.Context, f store.Fence, evs []store.NewEvent) ([]store.Event, error) {
	for _, e := range evs {
		if e.Type == s.kind {
			return nil, errCut
		}
	}
	return s.Store.AppendEvents(ctx, f, evs)
}

// Issue 13: a router manager must not run ahead of what it could
// journal. With its transcript refused by the journal (SQLite), the
// manager's first spawn never runs — its call was not recorded — and the
// run ends driver-failed, the error naming the unrecorded transcript.
func TestRouterManagerStopsWhenItsTranscriptCannotBeJournaled(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	counting := newCounting(t, workerProvider(t))
	v1 := &planner{variant: "v1"}
	o, manager, err := transcriptOptions(counting, v1)
	if err != nil {
		t.Fatal(err)
	}
	o.SpawnStore = refusingKind{Store: st, kind: supervise.KindTranscript}
	res, err := supervise.Supervise(context.Background(), manager, "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if counting.count("alpha") != 0 || len(res.Tree) != 0 {
		t.Errorf("alpha executed %d times, %d workers; want none: the spawn's call was never recorded", counting.count("alpha"), len(res.Tree))
	}
	if res.Reason != supervise.ReasonDriverFailed || res.Error == nil || !strings.Contains(res.Error.Message, "could not record") {
		t.Errorf("result %s/%s, error %+v; want driver-failed naming the unrecorded transcript", res.Status, res.Reason, res.Error)
	}
	if len(v1.requests) != 1 {
		t.Errorf("the manager model was asked %d times, want once", len(v1.requests))
	}
}
