package cli_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// steerableWorkers' workers run until a message reaches them: its text
// is their result.
type steerableWorkers struct {
	mu    sync.Mutex
	boxes map[supervise.NodeID]chan string
}

func (w *steerableWorkers) box(id supervise.NodeID) chan string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.boxes[id] == nil {
		w.boxes[id] = make(chan string, 1)
	}
	return w.boxes[id]
}

func (w *steerableWorkers) Execute(ctx context.Context, work supervise.Work) (supervise.WorkResult, error) {
	one, tokens, usd := int64(1), int64(10), int64(0)
	spent := ledger.Spend{Tokens: &tokens, Iterations: &one, MicroUSD: &usd}
	select {
	case msg := <-w.box(work.Node):
		return supervise.WorkResult{Text: "DONE per " + msg, Spent: spent}, nil
	case <-ctx.Done():
		return supervise.WorkResult{Spent: spent}, context.Cause(ctx)
	}
}

func (w *steerableWorkers) Deliver(_ context.Context, node supervise.NodeID, msg string) bool {
	select {
	case w.box(node) <- msg:
		return true
	default:
		return false
	}
}

// §3.6 authorizeMessage through the CLI: a steer `agentrt steer` writes
// into a running supervised run's dir is passed through the run's
// Options.AuthorizeMessage; a refused one is acknowledged refused with
// the hook's reason, which agentrt steer prints (exit 1), and never
// reaches the worker; an authorized one is delivered (exit 0).
func TestSteerRefusedByAuthorizeMessageThroughAgentrtSteer(t *testing.T) {
	dir := t.TempDir()
	writer, err := profile.Parse([]byte(`{"name": "writer", "harness": "cli-base"}`))
	if err != nil {
		t.Fatal(err)
	}
	manager, err := profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	tokens, iterations, perTokens, perIterations := int64(1000), int64(10), int64(100), int64(1)
	workers := &steerableWorkers{boxes: map[supervise.NodeID]chan string{}}
	spawned := make(chan struct{})
	var seen []supervise.DownMessage
	var mu sync.Mutex
	o := supervise.Options{
		Budget:    ledger.Budget{Tokens: &tokens, Iterations: &iterations},
		PerWorker: ledger.Budget{Tokens: &perTokens, Iterations: &perIterations},
		Profiles:  map[string]*profile.Profile{"writer": writer},
		Deliverable: supervise.Deliverable{Describe: "done", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: strings.HasPrefix(out.Text, "DONE")}, nil
		}},
		Executor: workers, RunDir: dir, RunID: "rel",
		AuthorizeMessage: func(_ context.Context, m supervise.DownMessage) (string, error) {
			mu.Lock()
			seen = append(seen, m)
			mu.Unlock()
			if strings.Contains(m.Instruction, "password") {
				return "", errors.New("messages may not carry credentials")
			}
			return m.Instruction, nil
		},
		Brain: supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write", Label: "note"}); err != nil {
				return supervise.BrainReport{}, err
			}
			close(spawned)
			_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}})
			return supervise.BrainReport{}, err
		}),
	}
	type result struct {
		res supervise.SupervisedResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := supervise.Supervise(context.Background(), manager, "t", o)
		done <- result{res, err}
	}()
	select {
	case <-spawned:
	case <-time.After(30 * time.Second):
		t.Fatal("the manager never spawned")
	}

	out, errOut, code := run(t, "", "steer", dir, "note", "the password is hunter2", "--wait", "20s")
	if code != 1 || !strings.Contains(out+errOut, "refused") || !strings.Contains(out+errOut, "not authorized: messages may not carry credentials") {
		t.Errorf("refused steer: exit %d\n%s%s\nwant exit 1 saying refused, not authorized and why", code, out, errOut)
	}
	out, errOut, code = run(t, "", "steer", dir, "note", "keep it short", "--wait", "20s")
	if code != 0 || !strings.Contains(out, "delivered") {
		t.Errorf("authorized steer: exit %d\n%s%s", code, out, errOut)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run never ended")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if w := r.res.Winner; w == nil || w.Text != "DONE per keep it short" {
		t.Errorf("winner %+v, want the worker's result per the authorized steer only", w)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0].WorkerID != "rel:s1" || seen[0].Profile != "writer" || seen[0].Kind != supervise.DownSteer || seen[0].Source == supervise.SteerSourceCoordination {
		t.Errorf("the hook saw %+v, want both steers to rel:s1 (writer) from another process", seen)
	}
}
