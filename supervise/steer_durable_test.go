package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// Issue 13, §3.6 steer semantics (seed 003 acknowledgement effects): a
// root steer is acknowledged delivered only once the router manager's
// journaled transcript holds it. A process killed between the turn's
// take and the transcript's append left an acknowledgement that is not
// delivered, and the resumed manager's turn sees the steer exactly once.

const (
	// steerWindowEnv makes the re-executed test binary run a router
	// manager that takes a root steer and is stopped at the journal
	// append of the transcript message that holds it: "before" blocks
	// the append, "after" blocks once it is durable.
	steerWindowEnv = "AGENTRT_STEER_WINDOW_CHILD"
	// steerWindowMark is the file the child writes once it is stopped.
	steerWindowMark = "steer-window"
	steerWindowOp   = "op-root-window"
)

// holdingSpawnLog stops its process at the append of the transcript
// record holding rootSteerText: it marks the run dir and blocks, before
// the append or after it, until the test kills the process (at most
// waitLimit, then the append fails).
type holdingSpawnLog struct {
	supervise.SpawnLog
	dir   string
	after bool
	// node and text, when set, name the manager and the steer whose
	// transcript record stops the process instead of the root's
	// rootSteerText.
	node supervise.NodeID
	text string
	// fail, instead, makes the append fail at once.
	fail bool
}

// errSteerAppend is the failure of holdingSpawnLog's fail mode.
var errSteerAppend = errors.New("the journal refused the steer's transcript message")

func (h holdingSpawnLog) Append(ctx context.Context, recs ...supervise.Record) error {
	node, text := h.node, h.text
	if text == "" {
		node, text = "run1", rootSteerText
	}
	holds := false
	for _, r := range recs {
		for _, m := range r.Messages {
			holds = holds || r.Kind == supervise.KindTranscript && r.Node == node && m.Role == contract.ChatUser && m.Content != nil && strings.Contains(*m.Content, text)
		}
	}
	if !holds {
		return h.SpawnLog.Append(ctx, recs...)
	}
	if h.fail {
		return errSteerAppend
	}
	if h.after {
		if err := h.SpawnLog.Append(ctx, recs...); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(h.dir, steerWindowMark), nil, 0o600); err != nil {
		return err
	}
	time.Sleep(waitLimit) // the test kills the process here
	return errors.New("the steer window child was not killed")
}

// steerWindowOptions are the options of both processes of the steer
// window test; store, when set, keeps the spawn journal.
func steerWindowOptions(dir, store string, router contract.ChatModel) (supervise.Options, *profile.Profile, func(), error) {
	manager, err := profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "tools": {"agent_runtime_coordination_read_journal": true}}`))
	if err != nil {
		return supervise.Options{}, nil, nil, err
	}
	writer, err := profile.Parse([]byte(writerProfile))
	if err != nil {
		return supervise.Options{}, nil, nil, err
	}
	tokens, iterations, usd := int64(10_000), int64(10), int64(1_000_000)
	perTokens, perIterations, perUSD := int64(1_000), int64(1), int64(100_000)
	o := supervise.Options{
		Budget:    ledger.Budget{Tokens: &tokens, Iterations: &iterations, MicroUSD: &usd},
		PerWorker: ledger.Budget{Tokens: &perTokens, Iterations: &perIterations, MicroUSD: &perUSD},
		Profiles:  map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck,
		Executor: &supervise.KernelExecutor{Provider: scripted.New(&scripted.Script{}, scripted.Options{}), Store: memory.New(nil)},
		Router:   router, RunID: "run1", RunDir: dir, Resume: true,
	}
	closeStore := func() {}
	if store != "" {
		st, err := sqlite.Open(context.Background(), store, sqlite.Options{})
		if err != nil {
			return supervise.Options{}, nil, nil, err
		}
		o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL
		closeStore = func() { st.Close() }
	}
	return o, manager, closeStore, nil
}

// steerWindowChild is the killed process: its manager's first turn
// calls read_journal while a root steer is written into the run dir and
// queued; the loop's next checkpoint, of the user message holding it,
// is where the process stops.
func steerWindowChild(dir, store string, after bool) error {
	ctx := context.Background()
	router := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{call("c1", supervise.VerbReadJournal, map[string]any{}), managerUsage(10, 5, 0.0001)},
			Expect: func([]contract.ChatMessage, []contract.Tool) error {
				if _, err := supervise.WriteWorkerSteer(ctx, dir, "run1", supervise.WorkerSteer{OperationID: steerWindowOp, Message: rootSteerText, Source: "cli"}); err != nil {
					return err
				}
				return untilPosted(ctx, dir, steerWindowOp)
			}},
		{Events: []contract.ChatEvent{scripted.Text("the killed process answered"), managerUsage(10, 5, 0.0001)}},
	}})
	o, manager, closeStore, err := steerWindowOptions(dir, store, router)
	if err != nil {
		return err
	}
	defer closeStore()
	ctx = supervise.WithSpawnLogWrapper(ctx, func(sl supervise.SpawnLog) supervise.SpawnLog {
		return holdingSpawnLog{SpawnLog: sl, dir: dir, after: after}
	})
	_, err = supervise.Supervise(ctx, manager, "ship a note", o)
	return err
}

// Issue 13, RTP-07, §3.6 (a steer is delivered once it is durable in the
// receiver's journaled transcript; settlement is not delivery), behaviour
// 48 across a SIGKILL: a real supervisor process whose router manager
// took a root steer is killed at the journal append of the transcript
// message holding it — before the append, or right after it. Its sender's
// acknowledgement is not delivered then. Resumed from the same run dir
// (file journal) or SQLite journal, the manager's next turn sees the steer
// exactly once, as the last user message (re-offered when the killed
// append never landed, not again when it did), and the acknowledgement,
// file and journal, ends delivered, once.
func TestRootSteerDeliveredOnlyOnceJournaledAcrossKill(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	eachSteerWindow(t, steerWindowEnv, func(t *testing.T, ctx context.Context, dir, store string, deadline time.Time) {
		checkKilledSteerAck(t, ctx, dir, steerWindowOp, "its")

		router := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
			{Events: []contract.ChatEvent{scripted.Text("noted"), managerUsage(20, 5, 0.0002)},
				Expect: func(msgs []contract.ChatMessage, _ []contract.Tool) error { return endsOnUser(msgs, rootSteerText) }},
		}})
		o, manager, closeStore, err := steerWindowOptions(dir, store, router)
		if err != nil {
			t.Fatal(err)
		}
		defer closeStore()
		res, err := superviseWhileHeld(ctx, deadline, manager, "ship a note", o)
		if err != nil {
			t.Fatal(err)
		}
		if res.BrainText != "noted" || router.Calls() != 1 {
			t.Errorf("the resumed manager said %q in %d model calls, want %q in 1 (error %+v)", res.BrainText, router.Calls(), "noted", res.Error)
		}

		checkSteerAckDeliveredOnce(t, ctx, dir, store, "run1", steerWindowOp, "the steer")
	})
}

// killAtSteerWindow runs the test binary as a child with env set (the
// window child TestMain runs) on run dir dir and store (the SQLite
// journal's file, or ""), waits until it marks dir with steerWindowMark —
// stopped at the transcript append of a steer — and SIGKILLs it there.
func killAtSteerWindow(t *testing.T, env, dir, store string) {
	t.Helper()
	killChildAt(t, filepath.Join(dir, steerWindowMark), "reached the steer's append", env, childDir+"="+dir, childStore+"="+store)
}

// eachSteerWindow runs check as a subtest for each journal (the run
// dir's file, SQLite) and window (before, after the append): the window
// child env names, on a fresh run dir and store, killed at its steer
// window first (see killAtSteerWindow); deadline bounds the resume's
// wait for the killed process's lease, from before the kill.
func eachSteerWindow(t *testing.T, env string, check func(t *testing.T, ctx context.Context, dir, store string, deadline time.Time)) {
	t.Helper()
	for _, journal := range []string{"file", "sqlite"} {
		for _, window := range []string{"before", "after"} {
			t.Run(journal+"/"+window+" the append", func(t *testing.T) {
				ctx := context.Background()
				dir, store := t.TempDir(), ""
				if journal == "sqlite" {
					store = filepath.Join(t.TempDir(), "runs.db")
				}
				deadline := time.Now().Add(waitLimit)
				killAtSteerWindow(t, env+"="+window, dir, store)
				check(t, ctx, dir, store, deadline)
			})
		}
	}
}

// journaledAcks reads the steer acknowledgements journaled under node
// from the run's journal: the run dir's file, or the SQLite store's.
func journaledAcks(t *testing.T, ctx context.Context, dir, store string, node supervise.NodeID) []supervise.SteerAck {
	t.Helper()
	if store == "" {
		recs, _, err := supervise.ReadRunDir(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		return acksOf(t, recs, node)
	}
	st, err := sqlite.Open(ctx, store, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var acks []supervise.SteerAck
	after := ""
	for {
		recs, next, err := supervise.ReadStoreSpawnLog(ctx, st, "run1", after)
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, acksOf(t, recs, node)...)
		if len(recs) == 0 || next == "" || next == after {
			return acks
		}
		after = next
	}
}

// acksOf decodes the steer acknowledgements among recs journaled under
// node.
func acksOf(t *testing.T, recs []supervise.Record, node supervise.NodeID) []supervise.SteerAck {
	t.Helper()
	var acks []supervise.SteerAck
	for _, r := range recs {
		if r.Kind != supervise.KindSteerAcknowledged || r.Node != node {
			continue
		}
		var a supervise.SteerAck
		if err := canonjson.FromValue(r.Data, &a); err != nil {
			t.Fatalf("acknowledgement %v: %v", r.Data, err)
		}
		acks = append(acks, a)
	}
	return acks
}

// steerWindowFromEnv runs the steer window child when the environment
// asks for it; TestMain calls it.
func steerWindowFromEnv() (bool, error) {
	return windowChildFromEnv(steerWindowEnv, steerWindowChild, "steer window child")
}

// windowChildFromEnv runs child (named what, for its failure) when the
// environment variable env names a window ("before" or "after" the
// append), on the run dir and store the environment names: the child is
// to be killed at the append, so its return is an error.
func windowChildFromEnv(env string, child func(dir, store string, after bool) error, what string) (bool, error) {
	window := os.Getenv(env)
	if window == "" {
		return false, nil
	}
	err := child(os.Getenv(childDir), os.Getenv(childStore), window == "after")
	return true, fmt.Errorf("the %s was not killed at the append: %v", what, err)
}

// checkKilledSteerAck checks the acknowledgement of steer op a process
// killed at its steer window left in dir: claimed (fatal otherwise), not
// delivered — whose names the transcript whose append did not return.
func checkKilledSteerAck(t *testing.T, ctx context.Context, dir, op, whose string) {
	t.Helper()
	ack, err := supervise.ReadSteerAck(ctx, dir, op)
	if err != nil || ack == nil {
		t.Fatalf("the killed process's acknowledgement %+v, %v; want its claim", ack, err)
	}
	if ack.Effect == supervise.SteerDelivered {
		t.Errorf("the killed process acknowledged the steer delivered before %s transcript append returned: %+v", whose, ack)
	}
}

// checkSteerAckDeliveredOnce checks steer op (what, for failures) after
// the resume: its acknowledgement file says delivered to node, and the
// journal (dir's, or the SQLite store's) acknowledges it once, delivered.
func checkSteerAckDeliveredOnce(t *testing.T, ctx context.Context, dir, store string, node supervise.NodeID, op, what string) {
	t.Helper()
	ack, err := supervise.ReadSteerAck(ctx, dir, op)
	if err != nil || ack == nil || ack.Effect != supervise.SteerDelivered || ack.Worker != string(node) {
		t.Errorf("the acknowledgement after resume %+v (%v), want delivered to %s", ack, err, node)
	}
	var acks []supervise.SteerAck
	for _, a := range journaledAcks(t, ctx, dir, store, node) {
		if a.OperationID == op {
			acks = append(acks, a)
		}
	}
	if len(acks) != 1 || acks[0].Effect != supervise.SteerDelivered {
		t.Errorf("journaled acknowledgements of %s %+v, want one, delivered", what, acks)
	}
}

// Issue 13, §3.6: a root steer whose transcript message the journal
// refused was never delivered. The manager's loop stops on the failed
// checkpoint (kernel.ReasonCheckpointFailed), gives the steer back, and the
// run's end answers it not_live — never delivered — in the run dir and
// the journal.
func TestRootSteerNotDeliveredWhenItsTranscriptAppendFails(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	router := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{call("c1", supervise.VerbReadJournal, map[string]any{}), managerUsage(10, 5, 0.0001)},
			Expect: func([]contract.ChatMessage, []contract.Tool) error {
				if _, err := supervise.WriteWorkerSteer(ctx, dir, "run1", supervise.WorkerSteer{OperationID: steerWindowOp, Message: rootSteerText, Source: "cli"}); err != nil {
					return err
				}
				return untilPosted(ctx, dir, steerWindowOp)
			}},
	}})
	o, manager, closeStore, err := steerWindowOptions(dir, "", router)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	wrapped := supervise.WithSpawnLogWrapper(ctx, func(sl supervise.SpawnLog) supervise.SpawnLog {
		return holdingSpawnLog{SpawnLog: sl, dir: dir, fail: true}
	})
	res, err := supervise.Supervise(wrapped, manager, "ship a note", o)
	if err != nil || res.Error == nil || !strings.Contains(res.Error.Message, kernel.ReasonCheckpointFailed) || !strings.Contains(res.Error.Message, errSteerAppend.Error()) {
		t.Fatalf("the run ended %v (result error %+v), want the manager stopped by its failed checkpoint", err, res.Error)
	}
	if router.Calls() != 1 {
		t.Errorf("the manager made %d model calls, want 1: no turn runs ahead of its transcript", router.Calls())
	}
	ack, err := supervise.ReadSteerAck(ctx, dir, steerWindowOp)
	if err != nil || ack == nil || ack.Effect != supervise.SteerNotLive {
		t.Errorf("acknowledgement %+v (%v), want not_live", ack, err)
	}
	for _, a := range steerRecords[supervise.SteerAck](t, dir, supervise.KindSteerAcknowledged) {
		if a.Effect == supervise.SteerDelivered {
			t.Errorf("the journal acknowledges the steer delivered: %+v", a)
		}
	}
}
