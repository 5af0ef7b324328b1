package cli

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// topInbox runs workers that wait for steers: "finish" ends one with a
// passing result; a cancelled worker ends with its context.
type topInbox struct {
	mu     sync.Mutex
	inbox  map[supervise.NodeID]chan string
	steers map[supervise.NodeID][]string
}

func (e *topInbox) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	ch := make(chan string, 4)
	e.mu.Lock()
	e.inbox[w.Node] = ch
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.inbox, w.Node)
		e.mu.Unlock()
	}()
	tokens, iterations := int64(5), int64(1)
	spent := ledger.Spend{Tokens: &tokens, Iterations: &iterations}
	for {
		select {
		case <-ctx.Done():
			return supervise.WorkResult{Spent: spent}, context.Cause(ctx)
		case m := <-ch:
			e.mu.Lock()
			e.steers[w.Node] = append(e.steers[w.Node], m)
			e.mu.Unlock()
			if m == "finish" {
				return supervise.WorkResult{Text: "DONE", Spent: spent}, nil
			}
		}
	}
}

func (e *topInbox) Deliver(ctx context.Context, node supervise.NodeID, msg string) bool {
	e.mu.Lock()
	ch, ok := e.inbox[node]
	e.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case ch <- msg:
		return true
	case <-ctx.Done():
		return false
	}
}

func (e *topInbox) got(node supervise.NodeID) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.steers[node]...)
}

// await returns the steers node's worker has read, waiting up to 10s for
// the first.
func (e *topInbox) await(t *testing.T, node supervise.NodeID) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := e.got(node); len(got) > 0 || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// typeKeys sends each rune of text as a key press.
func typeKeys(m tea.Model, text string) tea.Model {
	for _, r := range text {
		m, _ = m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return m
}

// settle runs cmd (a request top made) and feeds its notice back.
func settle(t *testing.T, m tea.Model, cmd tea.Cmd) topModel {
	t.Helper()
	if cmd == nil {
		t.Fatal("the key started no request")
	}
	m, _ = m.Update(cmd())
	return m.(topModel)
}

// top steers and cancels a live supervise run through its run dir, as
// another process would (§15 behaviours 48–50): a steer typed into top
// reaches the worker and is acknowledged delivered; a worker cancel is
// acknowledged cancelled; a run cancel ends the run cancelled by top's
// operation.
func TestTopSteersAndCancelsALiveSuperviseRun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	worker, err := profile.Parse([]byte(`{"name": "writer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/writer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	manager, err := profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	exec := &topInbox{inbox: map[supervise.NodeID]chan string{}, steers: map[supervise.NodeID][]string{}}
	ready := make(chan struct{})
	tokens, iterations, perTokens, perIterations := int64(1000), int64(10), int64(100), int64(1)
	o := supervise.Options{
		Budget:    ledger.Budget{Tokens: &tokens, Iterations: &iterations},
		PerWorker: ledger.Budget{Tokens: &perTokens, Iterations: &perIterations},
		Profiles:  map[string]*profile.Profile{"writer": worker},
		Deliverable: supervise.Deliverable{Describe: "says DONE", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: strings.Contains(out.Text, "DONE")}, nil
		}},
		Executor: exec, RunDir: dir, RunID: "live",
		Brain: supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			for _, label := range []string{"a", "b", "c"} {
				if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: label, Label: label}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			close(ready)
			<-ctx.Done()
			return supervise.BrainReport{}, context.Cause(ctx)
		}),
	}
	type outcome struct {
		res supervise.SupervisedResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := supervise.Supervise(ctx, manager, "three workers", o)
		done <- outcome{res, err}
	}()
	select {
	case <-ready:
	case o := <-done:
		t.Fatalf("the run ended before its workers ran: %v %+v", o.err, o.res)
	case <-time.After(30 * time.Second):
		t.Fatal("the workers never started")
	}

	ops := 0
	src := &topSource{dirs: []string{dir}, ackWait: 20 * time.Second, newOperationID: func() string { ops++; return "top-op-" + string(rune('0'+ops)) }}
	var m tea.Model = newTopModel(ctx, src)
	m, _ = m.Update(topSnapshotMsg(src.load(ctx)))
	// Rows: the run (0), then its workers live:s1..s3 (1-3).
	if got := len(m.(topModel).rows()); got != 4 {
		t.Fatalf("%d rows, want the run and its three workers:\n%s", got, m.(topModel).frame())
	}

	m, _ = press(m, "down", "s")
	if !m.(topModel).steering || !strings.Contains(m.(topModel).frame(), "steer live:s1: ") {
		t.Fatalf("s did not open the steer line:\n%s", m.(topModel).frame())
	}
	m = typeKeys(m, "finishx")
	m, _ = m.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
	m, cmd := press(m, "enter")
	tm := settle(t, m, cmd)
	if want := "steer live:s1: delivered (operation top-op-1)"; tm.notice != want {
		t.Errorf("steer notice %q, want %q", tm.notice, want)
	}
	// Delivered means handed to the worker's inbox; the worker records it
	// when its loop reads it, a moment later.
	if got := exec.await(t, "live:s1"); len(got) != 1 || got[0] != "finish" {
		t.Errorf("worker live:s1 received %q, want the one steer %q", got, "finish")
	}

	m, cmd = press(tm, "down", "c")
	tm = settle(t, m, cmd)
	if want := "worker live:s2: cancelled (operation top-op-2)"; !strings.HasPrefix(tm.notice, want) {
		t.Errorf("worker cancel notice %q, want it to start %q", tm.notice, want)
	}

	m, cmd = press(tm, "up", "up", "c")
	tm = settle(t, m, cmd)
	if want := "run live: cancelled (operation top-op-3)"; !strings.HasPrefix(tm.notice, want) {
		t.Errorf("run cancel notice %q, want it to start %q", tm.notice, want)
	}
	select {
	case o := <-done:
		if o.err != nil || o.res.Reason != supervise.ReasonCancelled || o.res.Cancellation == nil || o.res.Cancellation.OperationID != "top-op-3" ||
			o.res.Cancellation.Source != topControlSource {
			t.Errorf("run ended %v %s %+v; want cancelled by top-op-3 from %s", o.err, o.res.Reason, o.res.Cancellation, topControlSource)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end after top cancelled it")
	}
	// A steer on an ended run is answered not_live (§3.6: run end
	// expires open requests), never claimed delivered.
	src.ackWait = 200 * time.Millisecond
	m, _ = press(tm, "s")
	m = typeKeys(m, "late")
	m, cmd = press(m, "enter")
	if tm = settle(t, m, cmd); !strings.Contains(tm.notice, "not_live") {
		t.Errorf("steer after the run ended: %q, want it answered not_live", tm.notice)
	}
}
