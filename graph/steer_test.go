package graph_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// Every steer of a worker node is the delegates edge's mid-run leg and
// is ledgered however it ends: delivered as composed, stripped when the
// product narrowed it, unpropagated when the product refused it (the
// verb refused too) or the worker is no longer live.
func TestSteerOutcomes(t *testing.T) {
	cases := []struct {
		name      string
		authorize func(context.Context, graph.Message) (string, error)
		settle    bool // the worker settles before the steer
		want      graph.LedgerRow
		refused   string
	}{
		{name: "delivered", want: graph.LedgerRow{Outcome: graph.OutcomeDelivered, Bytes: 9}},
		{name: "stripped", authorize: func(_ context.Context, m graph.Message) (string, error) { return m.Instruction[:4], nil },
			want: graph.LedgerRow{Outcome: graph.OutcomeStripped, Bytes: 4, Reason: "authorization narrowed 9 composed bytes"}},
		{name: "refused by the product", authorize: func(context.Context, graph.Message) (string, error) { return "", errors.New("off-policy") },
			want: graph.LedgerRow{Outcome: graph.OutcomeUnpropagated, Reason: "not authorized: off-policy"}, refused: "message-not-authorized"},
		{name: "not live", settle: true, want: graph.LedgerRow{Outcome: graph.OutcomeUnpropagated, Reason: "not_live"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			workers := &inboxWorkers{}
			o := options(t, workers, nil)
			o.Supervise.Router = nil
			o.AuthorizeMessage = tc.authorize
			var refusal string
			o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
				res, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "t"})
				if err != nil {
					return supervise.BrainReport{}, err
				}
				if tc.settle {
					workers.Deliver(ctx, res.WorkerID, "done")
					if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil {
						return supervise.BrainReport{}, err
					}
				}
				_, err = d.Steer(ctx, supervise.SteerArgs{WorkerID: res.WorkerID, Instruction: "go faster"})
				var vr *supervise.VerbRefusal
				if errors.As(err, &vr) {
					refusal = vr.Code
				} else if err != nil {
					return supervise.BrainReport{}, err
				}
				workers.Deliver(ctx, res.WorkerID, "done")
				_, err = d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
				return supervise.BrainReport{}, err
			})
			res, err := graph.RunGraph(context.Background(), starGraph(t), o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Ledger) != 2 {
				t.Fatalf("ledger = %+v, want a spawn row and a steer row", res.Ledger)
			}
			want := tc.want
			want.Edge, want.Kind, want.From, want.To, want.Directive = "delegates:driver->coder", graph.Delegates, "driver", "coder", "delegate/coder/v1"
			want.Traversal, want.Continuity, want.WorkerID = 2, graph.ContinuitySteer, "g:s1"
			if diff := cmp.Diff(want, res.Ledger[1]); diff != "" {
				t.Errorf("steer row (-want +got):\n%s", diff)
			}
			if refusal != tc.refused {
				t.Errorf("steer refusal = %q, want %q", refusal, tc.refused)
			}
		})
	}
}

// Caps hold under concurrency: ten simultaneous spawns of a node whose
// edge allows three deliver exactly three and ledger seven refusals.
func TestCapUnderConcurrentSpawns(t *testing.T) {
	g := starGraph(t)
	g.Edges[0].MaxTraversals = new(3)
	workers := &inboxWorkers{}
	o := options(t, workers, nil)
	o.Supervise.Router = nil
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				if res, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "t"}); err == nil {
					workers.Deliver(ctx, res.WorkerID, "patch")
				}
			})
		}
		wg.Wait()
		for {
			r, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
			if err != nil || r.Idle {
				return supervise.BrainReport{}, err
			}
		}
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	count := map[graph.Outcome]int{}
	for _, r := range res.Ledger {
		count[r.Outcome]++
	}
	if diff := cmp.Diff(map[graph.Outcome]int{graph.OutcomeDelivered: 3, graph.OutcomeUnpropagated: 7}, count); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if len(res.Result.Tree) != 3 {
		t.Errorf("tree has %d workers, want 3", len(res.Result.Tree))
	}
}

// askingWorkers ask their manager one question and answer with the
// decision they received.
type askingWorkers struct{}

func (askingWorkers) ReportsUsage() bool { return true }

func (askingWorkers) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	one := int64(1)
	spent := supervise.WorkResult{Spent: ledgerSpend(one)}
	d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "Which token?", Reason: "to reproduce", Urgency: supervise.UrgencyBlocksStep})
	if err != nil {
		return spent, err
	}
	spent.Text = "patch with " + d.Answer
	return spent, nil
}

// An answer to a worker's question passes the product's authority too:
// the worker receives the narrowed answer.
func TestAnswerIsAuthorized(t *testing.T) {
	o := options(t, askingWorkers{}, nil)
	o.Supervise.Router = nil
	var seen []graph.Message
	o.AuthorizeMessage = func(_ context.Context, m graph.Message) (string, error) {
		seen = append(seen, m)
		return "[redacted]", nil
	}
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "t"}); err != nil {
			return supervise.BrainReport{}, err
		}
		ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000, Kinds: []string{supervise.EventQuestion}})
		if err != nil || ev.Event == nil {
			return supervise.BrainReport{}, errors.Join(err, errors.New("no question"))
		}
		if _, err := d.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Event.Question.ID, Answer: "sk-123"}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err = d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
		return supervise.BrainReport{}, err
	})
	res, err := graph.RunGraph(context.Background(), starGraph(t), o)
	if err != nil {
		t.Fatal(err)
	}
	if w := res.Result.Winner; w == nil || w.Text != "patch with [redacted]" {
		t.Errorf("winner = %+v, want the narrowed answer", w)
	}
	if diff := cmp.Diff([]graph.Message{{WorkerID: "g:s1", Node: "coder", Instruction: "sk-123"}}, seen); diff != "" {
		t.Errorf("AuthorizeMessage saw (-want +got):\n%s", diff)
	}
}

// §3.6 escalateQuestion, forwarded: the graph root's escalation of a
// worker's question to parent reaches Supervise.EscalateQuestion
// (queued-for-parent, the question undecided), and the root's later
// answer still reaches the worker.
func TestEscalateQuestionIsForwarded(t *testing.T) {
	o := options(t, askingWorkers{}, nil)
	o.Supervise.Router = nil
	var seen []supervise.Question
	o.Supervise.EscalateQuestion = func(_ context.Context, q supervise.Question) (supervise.EscalationOutcome, error) {
		seen = append(seen, q)
		return supervise.EscalationOutcome{Delivered: true, To: "the graph's operator"}, nil
	}
	var escalated supervise.AnswerResult
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "t"}); err != nil {
			return supervise.BrainReport{}, err
		}
		ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000, Kinds: []string{supervise.EventQuestion}})
		if err != nil || ev.Event == nil {
			return supervise.BrainReport{}, errors.Join(err, errors.New("no question"))
		}
		id := ev.Event.Question.ID
		if escalated, err = d.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: id, EscalateTo: "parent"}); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := d.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: id, Answer: "sk-9"}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err = d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
		return supervise.BrainReport{}, err
	})
	res, err := graph.RunGraph(context.Background(), starGraph(t), o)
	if err != nil {
		t.Fatal(err)
	}
	if escalated.Status != supervise.StatusQueuedForParent || len(seen) != 1 || seen[0].From != "g:s1" {
		t.Errorf("escalation %+v, hook saw %+v; want queued-for-parent once for g:s1's question", escalated, seen)
	}
	if w := res.Result.Winner; w == nil || w.Text != "patch with sk-9" {
		t.Errorf("winner = %+v, want the later answer used", w)
	}
}

// §3.6 authorizeMessage, owned by supervise: a steer another process
// writes into a graph run's dir (what agentrt steer does) passes the
// graph's AuthorizeMessage too — with no edge, since it travels none —
// and a refused one is acknowledged refused and never reaches the
// worker. Before supervise owned the hook, such a steer bypassed it.
func TestCrossProcessSteerIsAuthorized(t *testing.T) {
	workers := &inboxWorkers{}
	o := options(t, workers, nil)
	o.Supervise.Router = nil
	dir := t.TempDir()
	o.Supervise.RunDir = dir
	var mu sync.Mutex
	var seen []graph.Message
	o.AuthorizeMessage = func(_ context.Context, m graph.Message) (string, error) {
		mu.Lock()
		seen = append(seen, m)
		mu.Unlock()
		return "", errors.New("no steers from outside")
	}
	var ack *supervise.SteerAck
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		res, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "t"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := supervise.WriteWorkerSteer(ctx, dir, string(res.WorkerID), supervise.WorkerSteer{OperationID: "op-outside", Message: "drop the tests", Source: "agentrt steer"}); err != nil {
			return supervise.BrainReport{}, err
		}
		deadline := time.Now().Add(30 * time.Second)
		for ack == nil || ack.Effect == supervise.SteerUnknown {
			if time.Now().After(deadline) {
				return supervise.BrainReport{}, errors.New("the steer was never acknowledged")
			}
			time.Sleep(20 * time.Millisecond)
			if ack, err = supervise.ReadSteerAck(ctx, dir, "op-outside"); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		workers.Deliver(ctx, res.WorkerID, "done")
		_, err = d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
		return supervise.BrainReport{}, err
	})
	res, err := graph.RunGraph(context.Background(), starGraph(t), o)
	if err != nil {
		t.Fatal(err)
	}
	if ack == nil || ack.Effect != supervise.SteerRefused || ack.Detail != "not authorized: no steers from outside" {
		t.Errorf("acknowledgement %+v, want refused, not authorized", ack)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]graph.Message{{WorkerID: "g:s1", Node: "coder", Instruction: "drop the tests"}}, seen); diff != "" {
		t.Errorf("AuthorizeMessage saw (-want +got):\n%s", diff)
	}
	if w := res.Result.Winner; w == nil || w.Text != "patch per: done" {
		t.Errorf("winner %+v, want the worker's patch per the manager's message only (the refused steer never reached it)", w)
	}
	if len(res.Ledger) != 1 {
		t.Errorf("ledger %+v, want only the spawn row (a steer from outside travels no edge)", res.Ledger)
	}
}
