package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
)

// §9 peer mail, journaled before it takes effect: a send_mail whose
// coordination record the journal refuses (its log closed under the
// run) returns an error, delivers nothing and charges nothing — the
// receiver's inbox stays empty and the sender's quota whole — and the
// run reports the lost mail record (*JournalLossError).
func TestPeerMailLostRecordDeliversNothing(t *testing.T) {
	writer, manager := writerAndManager(t)
	n := func(v int64) *int64 { return &v }
	gate := make(chan struct{})
	holding := gatedWorker(gate)
	var sendErr error
	var to, from MailReadout
	o := Options{
		Budget:    ledger.Budget{Tokens: n(10_000), Iterations: n(10), MicroUSD: n(1_000_000)},
		PerWorker: ledger.Budget{Tokens: n(1_000), Iterations: n(1), MicroUSD: n(100_000)},
		Profiles:  map[string]*profile.Profile{"writer": writer}, Executor: holding, RunID: "run1", RunDir: t.TempDir(),
		PeerMail:    &PeerMail{},
		Deliverable: Deliverable{Check: func(context.Context, Output) (kernel.Verdict, error) { return kernel.Verdict{Passed: true}, nil }},
		Brain: BrainFunc(func(ctx context.Context, c *Coordinator, _ string) (BrainReport, error) {
			for range 2 {
				if _, err := c.Spawn(ctx, SpawnArgs{Profile: "writer", Task: "hold"}); err != nil {
					return BrainReport{}, err
				}
			}
			if err := c.log.coord.Close(); err != nil {
				return BrainReport{}, err
			}
			args, _ := canonjson.ToValue(map[string]any{"to": "run1:s2", "kind": "ask", "subject": "s", "body": "b"})
			_, sendErr = c.SendMail(ctx, "run1:s1", args)
			var err error
			if to, err = c.ReadMail("run1:s2"); err != nil {
				return BrainReport{}, err
			}
			if from, err = c.ReadMail("run1:s1"); err != nil {
				return BrainReport{}, err
			}
			close(gate)
			for range 2 {
				if _, err := c.Await(ctx, AwaitArgs{TimeoutMS: 60_000, Kinds: []string{EventSettled}}); err != nil {
					return BrainReport{}, err
				}
			}
			return BrainReport{}, nil
		}),
	}
	_, err := Supervise(context.Background(), manager, "t", o)
	if sendErr == nil {
		t.Error("send_mail with its record refused: no error")
	}
	if len(to.Inbox) != 0 || from.Sent != 0 || from.SendQuotaLeft != DefaultMailSent {
		t.Errorf("after the lost record: receiver inbox %d, sender sent %d left %d; want 0, 0, %d", len(to.Inbox), from.Sent, from.SendQuotaLeft, DefaultMailSent)
	}
	loss, ok := errors.AsType[*JournalLossError](err)
	if !ok {
		t.Fatalf("err %v, want a *JournalLossError", err)
	}
	if diff := cmp.Diff([]LostRecord{{Kind: CoordMail, Node: "run1:s1"}}, loss.Lost); diff != "" {
		t.Errorf("lost (-want +got):\n%s", diff)
	}
}

// §9 peer mail to live siblings only: a worker whose outcome is in
// doubt (its executor lost, MarkInDoubt — as a resume leaves a worker
// the cut process was running) is no live sibling: mail to it is
// refused already-settled, read_mail does not list it as a peer, and
// its own send_mail is ErrMailSenderSettled, as the steer controller
// treats it (live: not in doubt, not never-settled).
func TestPeerMailInDoubtWorkerIsNoPeer(t *testing.T) {
	writer, manager := writerAndManager(t)
	n := func(v int64) *int64 { return &v }
	gate := make(chan struct{})
	holding := gatedWorker(gate)
	var outcome any
	var sendErr, fromDoubtErr error
	var peers []MailPeer
	o := Options{
		Budget:    ledger.Budget{Tokens: n(10_000), Iterations: n(10), MicroUSD: n(1_000_000)},
		PerWorker: ledger.Budget{Tokens: n(1_000), Iterations: n(1), MicroUSD: n(100_000)},
		Profiles:  map[string]*profile.Profile{"writer": writer}, Executor: holding, RunID: "run1",
		PeerMail:    &PeerMail{},
		Deliverable: Deliverable{Check: func(context.Context, Output) (kernel.Verdict, error) { return kernel.Verdict{Passed: true}, nil }},
		Brain: BrainFunc(func(ctx context.Context, c *Coordinator, _ string) (BrainReport, error) {
			defer close(gate)
			for range 2 {
				if _, err := c.Spawn(ctx, SpawnArgs{Profile: "writer", Task: "hold"}); err != nil {
					return BrainReport{}, err
				}
			}
			if err := c.scope.MarkInDoubt("run1:s2"); err != nil {
				return BrainReport{}, err
			}
			args, _ := canonjson.ToValue(map[string]any{"to": "run1:s2", "kind": "ask", "subject": "s", "body": "b"})
			var out canonjson.Value
			if out, sendErr = c.SendMail(ctx, "run1:s1", args); sendErr == nil {
				var m map[string]any
				_ = json.Unmarshal(canonjson.Marshal(out), &m)
				outcome = m["error"]
			}
			back, _ := canonjson.ToValue(map[string]any{"to": "run1:s1", "kind": "ask", "subject": "s", "body": "b"})
			_, fromDoubtErr = c.SendMail(ctx, "run1:s2", back)
			r, err := c.ReadMail("run1:s1")
			if err != nil {
				return BrainReport{}, err
			}
			peers = r.Peers
			return BrainReport{}, nil
		}),
	}
	_, _ = Supervise(context.Background(), manager, "t", o)
	if sendErr != nil || outcome != MailAlreadySettled {
		t.Errorf("mail to an in-doubt worker: err %v, outcome %v; want refused %s", sendErr, outcome, MailAlreadySettled)
	}
	if !errors.Is(fromDoubtErr, ErrMailSenderSettled) {
		t.Errorf("an in-doubt worker's send_mail: %v, want ErrMailSenderSettled", fromDoubtErr)
	}
	if len(peers) != 0 {
		t.Errorf("read_mail peers: %+v, want none (the sibling is in doubt)", peers)
	}
}

// writerAndManager are the internal tests' scripted worker profile
// "writer" and a manager granted spawn_worker.
func writerAndManager(t *testing.T) (writer, manager *profile.Profile) {
	t.Helper()
	var err error
	writer, err = profile.Parse([]byte(`{"name": "writer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/writer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	manager, err = profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	return writer, manager
}

// gatedWorker is a worker that delivers "DONE" once gate is closed (one
// iteration, no tokens or dollars), or ends with its context, or after
// 30 s saying the gate never opened.
func gatedWorker(gate <-chan struct{}) Executor {
	n := func(v int64) *int64 { return &v }
	return ExecutorFunc(func(ctx context.Context, w Work) (WorkResult, error) {
		spent := ledger.Spend{Tokens: n(0), Iterations: n(1), MicroUSD: n(0)}
		select {
		case <-gate:
		case <-ctx.Done():
			return WorkResult{Spent: spent}, context.Cause(ctx)
		case <-time.After(30 * time.Second):
			return WorkResult{Spent: spent}, errors.New("the gate never opened")
		}
		return WorkResult{Text: "DONE", Spent: spent}, nil
	})
}
