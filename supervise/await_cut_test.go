package supervise_test

import (
	"context"
	"iter"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// cutAfterTake is a run observer whose brain observer cuts the router
// manager's context the moment an await_event call returned a question:
// after Await took it from the queue and before the tool loop could
// record the result — the window a stopping process lands in.
type cutAfterTake struct {
	mu  sync.Mutex
	cut context.CancelFunc
	// cutOn is the question id the cut await returned.
	cutOn string
}

func (o *cutAfterTake) RunStarted(ctx context.Context, _ supervise.RunStart) context.Context {
	return ctx
}

func (o *cutAfterTake) NodeStarted(ctx context.Context, _ supervise.NodeInfo) (context.Context, kernel.Observer) {
	return ctx, nil
}

func (o *cutAfterTake) NodeSettled(context.Context, supervise.NodeSettled)   {}
func (o *cutAfterTake) RunEnded(context.Context, supervise.SupervisedResult) {}
func (o *cutAfterTake) BrainObserver() kernel.Observer                       { return cutBrain{o} }

// cutBrain is cutAfterTake's brain observer.
type cutBrain struct{ o *cutAfterTake }

func (cutBrain) RunStarted(ctx context.Context, _ kernel.RunStart) (context.Context, error) {
	return ctx, nil
}

func (cutBrain) TurnStarted(ctx context.Context, _ kernel.TurnStart) (context.Context, error) {
	return ctx, nil
}

func (cutBrain) Event(context.Context, contract.EnvironmentEvent) error { return nil }
func (cutBrain) TurnEnded(context.Context, kernel.TurnEnd) error        { return nil }
func (cutBrain) RunEnded(context.Context, kernel.Result) error          { return nil }

func (cutBrain) ToolStarted(ctx context.Context, _ kernel.ToolCallStart) (context.Context, error) {
	return ctx, nil
}

func (b cutBrain) ToolEnded(_ context.Context, c kernel.ToolCallEnd) error {
	o := b.o
	if c.Call.Name != supervise.ToolPrefix+supervise.VerbAwaitEvent || !c.Outcome.OK {
		return nil
	}
	id, ok := canonjson.Resolve(c.Outcome.Result, "/event/question/id")
	if !ok {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cut != nil {
		o.cutOn = id.Str()
		o.cut()
		o.cut = nil
	}
	return nil
}

// awaitQuestionOnce is a manager model that awaits a question, then
// answers.
type awaitQuestionOnce struct{}

func (awaitQuestionOnce) Turn(_ context.Context, msgs []contract.ChatMessage, _ []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	return func(yield func(contract.ChatEvent, error) bool) {
		if msgs[len(msgs)-1].Role == contract.ChatTool {
			yield(scripted.Text("done"), nil)
			return
		}
		if yield(call("a1", supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000}), nil) {
			yield(managerUsage(10, 5, 0.0001), nil)
		}
	}
}

// An await_event call of a router manager whose context ends after
// Await took a worker's question, before the tool loop could record the
// result, hands the question to nobody: it goes back to the queue, and
// the next await_event returns it — the asker gets its answer (§3.6
// "Questions", behaviour 54's blocking question decided and delivered).
// Before the fix the take stood: the next await waited out its bound
// (pending) and the question was never offered again.
func TestAwaitCutAfterItTookAQuestionLeavesItQueued(t *testing.T) {
	o := baseOptions(t, askingExecutor, nil)
	o.RunDir = t.TempDir()
	obs := &cutAfterTake{}
	o.Observer = obs
	manager := managerProfile(t, supervise.VerbAwaitEvent)
	var again, answered, settled map[string]any
	var driveErr error
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint"))
		rb, err := supervise.NewRouterBrain(manager, awaitQuestionOnce{}, 4)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		dctx, cancel := context.WithCancel(ctx)
		defer cancel()
		obs.mu.Lock()
		obs.cut = cancel
		obs.mu.Unlock()
		_, driveErr = rb.Drive(dctx, c, "paint")
		// The bound only matters before the fix: the question is queued.
		again = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 2000})
		answered = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "red"})
		settled = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	cutOn := obs.cutOn
	obs.mu.Unlock()
	if cutOn != "q1" {
		t.Fatalf("the router's await was cut on question %q, want q1 (drive: %v)", cutOn, driveErr)
	}
	if driveErr == nil {
		t.Errorf("the cut drive returned no error")
	}
	got, _ := again["event"].(map[string]any)
	q, _ := got["question"].(map[string]any)
	if got["kind"] != "question" || q["id"] != "q1" {
		t.Fatalf("the await after the cut one returned %v, want question q1", again)
	}
	if answered["delivered"] != true {
		t.Errorf("answer_question q1: %v", answered)
	}
	ev, _ := settled["event"].(map[string]any)
	if ev["kind"] != "settled" || res.Status != supervise.StatusWinner {
		t.Errorf("the asker did not settle with the answer: %v, %s", settled, res.Status)
	}
}
