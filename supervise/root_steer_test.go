package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// Root steer (§3.6 "Steering": "Root steer: pass runId as worker. Router
// roots read steers between turns"; behaviour 48): a steer addressed to
// the run id reaches the router manager's next model call and is
// acknowledged delivered; a brain that takes no steers answers
// unsupported; a steer the manager can no longer take is not_live.

const rootSteerText = "ROOT-STEER: also cover the error paths"

// controlChild runs the test binary as another process that writes one
// control request (controlFromChild) into dir. It reports, never fails
// the test: it runs inside a scripted model turn.
func controlChild(ctx context.Context, what, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), controlEnv+"="+what, childDir+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("control child %s: %v\n%s", what, err, out)
	}
	return nil
}

// untilPosted waits, at most waitLimit, until the root's inbox projection
// in dir holds the steer of operation op: the running supervisor queued
// it for the manager's next turn.
func untilPosted(ctx context.Context, dir, op string) error {
	deadline := time.Now().Add(waitLimit)
	for {
		recs, _, err := supervise.ReadInbox(ctx, dir, "run1")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, r := range recs {
			if r.Kind == supervise.InboxPosted && r.OperationID == op {
				return nil
			}
		}
		// An answer without a posting will never be followed by one.
		if ack, err := supervise.ReadSteerAck(ctx, dir, op); err == nil && ack != nil && ack.Effect != supervise.SteerUnknown {
			return fmt.Errorf("steer %s was answered %s (%s) without being queued for the manager", op, ack.Effect, ack.Detail)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("steer %s was not posted to the manager within %s", op, waitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// untilAnswered waits, at most waitLimit, for the supervisor's answer to
// steer op beyond its claim.
func untilAnswered(ctx context.Context, dir, op string) (supervise.SteerAck, error) {
	deadline := time.Now().Add(waitLimit)
	for {
		ack, err := supervise.ReadSteerAck(ctx, dir, op)
		if err != nil {
			return supervise.SteerAck{}, err
		}
		if ack != nil && ack.Effect != supervise.SteerUnknown {
			return *ack, nil
		}
		if time.Now().After(deadline) {
			return supervise.SteerAck{}, fmt.Errorf("steer %s not answered within %s", op, waitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// endsOnUser checks that a turn's transcript ends on the user message
// want and holds it once as a user message (a read_journal result may
// quote the steer's journal record, which is not a delivery).
func endsOnUser(msgs []contract.ChatMessage, want string) error {
	n := 0
	for _, m := range msgs {
		if m.Role == contract.ChatUser && m.Content != nil && strings.Contains(*m.Content, want) {
			n++
		}
	}
	last := msgs[len(msgs)-1]
	if last.Role != contract.ChatUser || last.Content == nil || *last.Content != want || n != 1 {
		return fmt.Errorf("the turn's transcript ends on %s %q and holds the steer %d times; want it once, as the last user message", last.Role, derefOr(last.Content), n)
	}
	return nil
}

// steerRecords returns the run dir journal's steer records of kind whose
// node is the root, decoded.
func steerRecords[T any](t *testing.T, dir, kind string) []T {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for _, r := range recs {
		if r.Kind != kind || r.Node != "run1" {
			continue
		}
		var v T
		if err := canonjson.FromValue(r.Data, &v); err != nil {
			t.Fatalf("%s record %v: %v", kind, r.Data, err)
		}
		out = append(out, v)
	}
	return out
}

// Behaviour 48, root steer: a steer whose worker is the run id, written
// into the run dir while the router manager's turn runs, is queued and
// joins the transcript of the manager's next model call as a user
// message — after a tool turn, or after a turn that answered (which then
// does not end the loop). The acknowledgement says delivered, and the
// journal and the root's inbox projection hold the request, its
// acknowledgement, and the turn that took it.
func TestRootSteerReachesRouterManagerNextTurnBehaviour48(t *testing.T) {
	tests := []struct {
		name, op string
		// send writes the steer into dir as another process would.
		send      func(ctx context.Context, dir string) error
		firstTurn []contract.ChatEvent
		wantText  string
	}{
		{
			name: "after a tool turn, from another process", op: "op-root-steer",
			send:      func(ctx context.Context, dir string) error { return controlChild(ctx, "steer-root", dir) },
			firstTurn: []contract.ChatEvent{call("c1", supervise.VerbReadJournal, map[string]any{}), managerUsage(10, 5, 0.0001)},
			wantText:  "noted",
		},
		{
			name: "during the turn that answered", op: "op-root-late",
			send: func(ctx context.Context, dir string) error {
				_, err := supervise.WriteWorkerSteer(ctx, dir, "run1", supervise.WorkerSteer{OperationID: "op-root-late", Message: rootSteerText, Source: "cli"})
				return err
			},
			firstTurn: []contract.ChatEvent{scripted.Text("first answer; "), managerUsage(10, 5, 0.0001)},
			wantText:  "first answer; noted",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			router := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
				{Events: tc.firstTurn, Expect: func([]contract.ChatMessage, []contract.Tool) error {
					// The steer arrives while this turn runs: it is
					// queued, not yet delivered.
					if err := tc.send(ctx, dir); err != nil {
						return err
					}
					if err := untilPosted(ctx, dir, tc.op); err != nil {
						return err
					}
					if ack, err := supervise.ReadSteerAck(ctx, dir, tc.op); err != nil || ack == nil || ack.Effect != supervise.SteerUnknown {
						return fmt.Errorf("before the next turn the acknowledgement is %+v (%v), want the claim (unknown)", ack, err)
					}
					return nil
				}},
				{Events: []contract.ChatEvent{scripted.Text("noted"), managerUsage(20, 5, 0.0002)},
					Expect: func(msgs []contract.ChatMessage, _ []contract.Tool) error { return endsOnUser(msgs, rootSteerText) }},
			}})
			o := baseOptions(t, &supervise.KernelExecutor{Provider: workerProvider(t), Store: memory.New(nil)}, router)
			o.RunDir = dir
			res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbReadJournal), "ship a note", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.BrainText != tc.wantText || router.Calls() != 2 {
				t.Errorf("the manager said %q in %d model calls, want %q in 2 (error %+v)", res.BrainText, router.Calls(), tc.wantText, res.Error)
			}

			ack, err := supervise.ReadSteerAck(ctx, dir, tc.op)
			if err != nil || ack == nil {
				t.Fatalf("acknowledgement %+v, %v", ack, err)
			}
			if ack.Effect != supervise.SteerDelivered || ack.Worker != "run1" || ack.Detail != "" {
				t.Errorf("acknowledgement %+v, want delivered to run1", ack)
			}
			reqs := steerRecords[supervise.SteerRequest](t, dir, supervise.KindSteerRequested)
			acks := steerRecords[supervise.SteerAck](t, dir, supervise.KindSteerAcknowledged)
			if len(reqs) != 1 || reqs[0].OperationID != tc.op || reqs[0].Message != rootSteerText {
				t.Errorf("journaled steer requests for run1: %+v, want %s once", reqs, tc.op)
			}
			if diff := cmp.Diff([]supervise.SteerAck{*ack}, acks); diff != "" {
				t.Errorf("journaled acknowledgements for run1 (-file +journal):\n%s", diff)
			}

			recs, _, err := supervise.ReadInbox(ctx, dir, "run1")
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, r := range recs {
				kinds = append(kinds, r.Kind)
			}
			if diff := cmp.Diff([]string{supervise.InboxPosted, supervise.InboxTaken}, kinds); diff != "" {
				t.Errorf("root inbox projection (-want +got):\n%s", diff)
			}
		})
	}
}

// Behaviour 48: a caller-owned brain that does not read an inbox cannot
// take a steer addressed to the root: the acknowledgement is unsupported
// and says why, and nothing is queued for it.
func TestRootSteerUnsupportedByCallerBrainBehaviour48(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var ack supervise.SteerAck
	o := baseOptions(t, &supervise.KernelExecutor{Provider: workerProvider(t), Store: memory.New(nil)}, nil)
	o.RunDir = dir
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if c.ManagerInbox() != nil {
			return supervise.BrainReport{}, errors.New("a brain that reads no inbox was given one")
		}
		if _, err := supervise.WriteWorkerSteer(ctx, dir, "run1", supervise.WorkerSteer{OperationID: "op-caller", Message: rootSteerText}); err != nil {
			return supervise.BrainReport{}, err
		}
		var err error
		ack, err = untilAnswered(ctx, dir, "op-caller")
		return supervise.BrainReport{Text: "answered"}, err
	})
	if _, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if ack.Effect != supervise.SteerUnsupported || !strings.Contains(ack.Detail, "does not take steers between its turns") {
		t.Errorf("acknowledgement %q (%s), want unsupported saying the brain takes no steers", ack.Effect, ack.Detail)
	}
	if _, _, err := supervise.ReadInbox(ctx, dir, "run1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the root has an inbox projection (%v); nothing should have been queued", err)
	}
	if n := len(steerRecords[supervise.SteerAck](t, dir, supervise.KindSteerAcknowledged)); n != 1 {
		t.Errorf("journaled %d acknowledgements for run1, want 1", n)
	}
}

// optInBrain is a caller-owned brain that reads the root's inbox: it
// takes one steer as its next turn would, then takes its last turn, and
// steers the root once more.
type optInBrain struct {
	dir            string
	took           []supervise.SteerMessage
	taken, refused supervise.SteerAck
}

func (b *optInBrain) ReadsInbox() bool { return true }

func (b *optInBrain) Drive(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
	in := c.ManagerInbox()
	if in == nil {
		return supervise.BrainReport{}, errors.New("a brain that reads an inbox has none")
	}
	if _, err := supervise.WriteWorkerSteer(ctx, b.dir, "run1", supervise.WorkerSteer{OperationID: "op-taken", Message: rootSteerText}); err != nil {
		return supervise.BrainReport{}, err
	}
	if err := untilPosted(ctx, b.dir, "op-taken"); err != nil {
		return supervise.BrainReport{}, err
	}
	b.took = in.Take(ctx)
	var err error
	if b.taken, err = untilAnswered(ctx, b.dir, "op-taken"); err != nil {
		return supervise.BrainReport{}, err
	}
	if late := in.TakeOrSeal(ctx); len(late) != 0 {
		return supervise.BrainReport{}, fmt.Errorf("the last turn took %v", late)
	}
	if _, err := supervise.WriteWorkerSteer(ctx, b.dir, "run1", supervise.WorkerSteer{OperationID: "op-refused", Message: "too late"}); err != nil {
		return supervise.BrainReport{}, err
	}
	b.refused, err = untilAnswered(ctx, b.dir, "op-refused")
	return supervise.BrainReport{Text: "done"}, err
}

// Behaviour 48: a caller-owned brain opts in by reading
// Coordinator.ManagerInbox; a steer its turn takes is delivered, and one
// that arrives after its last turn is not_live at once.
func TestRootSteerOptInBrainBehaviour48(t *testing.T) {
	ctx := context.Background()
	b := &optInBrain{dir: t.TempDir()}
	o := baseOptions(t, &supervise.KernelExecutor{Provider: workerProvider(t), Store: memory.New(nil)}, nil)
	o.RunDir, o.Brain = b.dir, b
	if _, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if len(b.took) != 1 || b.took[0].Message != rootSteerText || b.took[0].OperationID != "op-taken" {
		t.Errorf("the brain took %+v, want the one steer", b.took)
	}
	if b.taken.Effect != supervise.SteerDelivered {
		t.Errorf("taken steer: %q (%s), want delivered", b.taken.Effect, b.taken.Detail)
	}
	if b.refused.Effect != supervise.SteerNotLive || b.refused.Detail != "the manager took its last turn" {
		t.Errorf("steer after the last turn: %q (%s), want not_live: the manager took its last turn", b.refused.Effect, b.refused.Detail)
	}
}

// Behaviour 48: a steer addressed to the root that arrives once the
// router manager has returned — here written by a worker winding down
// after the manager's answer — is never delivered: run end acknowledges
// it not_live.
func TestRootSteerAfterManagerReturnedIsNotLiveBehaviour48(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wrote := make(chan error, 1)
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		<-ctx.Done() // the manager returned: its live workers are cancelled
		_, err := supervise.WriteWorkerSteer(context.WithoutCancel(ctx), dir, "run1", supervise.WorkerSteer{OperationID: "op-after", Message: rootSteerText})
		wrote <- err
		return supervise.WorkResult{Spent: workSpend()}, context.Cause(ctx)
	})
	router := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha", "label": "a"}), managerUsage(10, 5, 0.0001)),
		turn(scripted.Text("returning"), managerUsage(10, 5, 0.0001)),
	}})
	o := baseOptions(t, exec, router)
	o.RunDir = dir
	if _, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal("the worker never wrote its steer")
	}
	ack, err := supervise.ReadSteerAck(ctx, dir, "op-after")
	if err != nil || ack == nil {
		t.Fatalf("acknowledgement %+v, %v", ack, err)
	}
	if ack.Effect != supervise.SteerNotLive {
		t.Errorf("steer after the manager returned: %q (%s), want not_live", ack.Effect, ack.Detail)
	}
	if router.Calls() != 2 {
		t.Errorf("the manager made %d model calls, want 2", router.Calls())
	}
}

// inboxBrainFunc is a BrainFunc that reads the manager inbox, as the
// router brain does.
type inboxBrainFunc supervise.BrainFunc

func (f inboxBrainFunc) Drive(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
	return f(ctx, c, task)
}

func (inboxBrainFunc) ReadsInbox() bool { return true }

// §3.6 "Steering", behaviour 48: a manager's own steer_agent to itself
// (the run id) is refused self-steer at once. Before,
// the steer waited in the manager's inbox for the manager's next turn,
// which this very call held, so the loop stalled for MaxSteerWait.
func TestManagerSteeringItselfIsRefusedBehaviour48(t *testing.T) {
	o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	o.RunDir = t.TempDir()
	var got []map[string]any
	o.Brain = inboxBrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		got = append(got, tool(t, bounded, c, supervise.VerbSteerAgent, map[string]any{"workerId": "run1", "instruction": "hurry"}))
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d steers answered; want 1", len(got))
	}
	for i, r := range got {
		if r["error"] != "self-steer" || r["reason"] == "" {
			t.Errorf("steer %d to itself: %v; want the refusal self-steer", i, r)
		}
	}
}

func derefOr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
