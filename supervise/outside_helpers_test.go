package supervise_test

// Helpers for the outside scenarios (outside_*_test.go): scenarios written
// from spec/runtime.md §3.6, §9 and §15 behaviours 41-45, 51, 54, 55 by
// driving the package only through its public API — a caller-owned Brain
// over the Coordinator and an ExecutorFunc whose workers the scenario
// releases one by one, so no scenario depends on timing.

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

// outsideWait bounds every wait of a scenario: a scenario that has to wait
// longer is broken, not slow.
const outsideWait = 5 * time.Second

const outsideManagerDoc = `{
  "name": "outside-manager",
  "harness": "cli-base",
  "model": { "default": "scripted/manager" },
  "tools": {
    "agent_runtime_coordination_spawn_worker": true,
    "agent_runtime_coordination_await_event": true,
    "agent_runtime_coordination_observe_agent": true,
    "agent_runtime_coordination_steer_agent": true,
    "agent_runtime_coordination_submit_result": true,
    "agent_runtime_coordination_stop": true,
    "agent_runtime_coordination_ask_parent": true,
    "agent_runtime_coordination_list_questions": true,
    "agent_runtime_coordination_answer_question": true,
    "agent_runtime_coordination_read_journal": true
  }
}`

func outsideProfile(t *testing.T, doc string) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("profile.Parse: %v", err)
	}
	return p
}

func outsideWorkerProfile(t *testing.T, name, model string) *profile.Profile {
	t.Helper()
	return outsideProfile(t, `{"name": "`+name+`", "harness": "cli-base", "model": {"default": "`+model+`"}}`)
}

// outsideWorkers is an executor whose workers each wait until the scenario
// releases them (by task) with what they are to return. A worker records
// that it started, so a scenario can wait for it without sleeping.
type outsideWorkers struct {
	mu      sync.Mutex
	calls   map[string]int
	started map[string]chan supervise.Work
	release map[string]chan outsideOutcome
	// done is closed when the scenario ends: a worker that ignores its
	// context returns then, not before.
	done chan struct{}
}

type outsideOutcome struct {
	res supervise.WorkResult
	err error
	// ask, when set, is run with the worker's Work before it returns;
	// its text is appended to the result's text.
	ask func(ctx context.Context, w supervise.Work) string
	// ignoreCtx makes the worker not return when its context ends
	// (a teardown never acknowledged).
	ignoreCtx bool
	// taken, when set, is closed once the worker took this outcome.
	taken chan struct{}
}

func newOutsideWorkers() *outsideWorkers {
	return &outsideWorkers{
		calls:   map[string]int{},
		started: map[string]chan supervise.Work{},
		release: map[string]chan outsideOutcome{},
		done:    make(chan struct{}),
	}
}

func (o *outsideWorkers) chans(task string) (chan supervise.Work, chan outsideOutcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started[task] == nil {
		o.started[task] = make(chan supervise.Work, 16)
		o.release[task] = make(chan outsideOutcome, 16)
	}
	return o.started[task], o.release[task]
}

func (o *outsideWorkers) Calls(task string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls[task]
}

func (o *outsideWorkers) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	o.mu.Lock()
	o.calls[w.Task]++
	o.mu.Unlock()
	started, release := o.chans(w.Task)
	started <- w
	select {
	case out := <-release:
		if out.taken != nil {
			close(out.taken)
		}
		if out.ask != nil {
			out.res.Text += out.ask(ctx, w)
			if ctx.Err() != nil {
				return out.res, ctx.Err() // cancelled while asking
			}
		}
		if out.ignoreCtx {
			<-o.done // this worker never acknowledges its teardown
		}
		return out.res, out.err
	case <-ctx.Done():
		return supervise.WorkResult{Spent: outsideSpent(10)}, ctx.Err()
	}
}

// waitStarted waits for the worker of task to start.
func (o *outsideWorkers) waitStarted(t *testing.T, task string) supervise.Work {
	t.Helper()
	started, _ := o.chans(task)
	select {
	case w := <-started:
		return w
	case <-time.After(outsideWait):
		t.Fatalf("worker %q did not start within %v", task, outsideWait)
		return supervise.Work{}
	}
}

// finish releases the worker of task with text and 100 tokens, 1 iteration.
func (o *outsideWorkers) finish(task, text string) {
	_, release := o.chans(task)
	release <- outsideOutcome{res: supervise.WorkResult{Text: text, Spent: outsideSpent(100)}}
}

func (o *outsideWorkers) finishWith(task string, out outsideOutcome) {
	_, release := o.chans(task)
	release <- out
}

func outsideSpent(tokens int64) ledger.Spend {
	return ledger.Spend{Tokens: i64(tokens), Iterations: i64(1), MicroUSD: i64(0)}
}

// passIfContains is a deliverable check: passed when the text contains
// "PASS"; its score is read from a "score=0.N" suffix when present.
var passIfContains = supervise.Deliverable{
	Describe: "a text containing the word PASS",
	Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
		v := kernel.Verdict{Passed: strings.Contains(out.Text, "PASS")}
		if i := strings.Index(out.Text, "score="); i >= 0 {
			var s float64
			switch out.Text[i+len("score="):] {
			case "0.3":
				s = 0.3
			case "0.5":
				s = 0.5
			case "0.9":
				s = 0.9
			case "0.95":
				s = 0.95
			}
			v.Score = &s
		}
		if !v.Passed {
			v.Reason = "no PASS"
		}
		return v, nil
	},
}

// outsideRun runs Supervise with a coded brain; the brain's error fails
// the scenario unless the run's context had ended (a scenario that cuts
// the run): a run with a delivered child ends winner whatever its brain
// returned, which would hide it.
type outsideRun struct {
	t       *testing.T
	workers *outsideWorkers
	opts    supervise.Options
}

func newOutsideRun(t *testing.T) *outsideRun {
	t.Helper()
	w := newOutsideWorkers()
	t.Cleanup(func() { close(w.done) })
	return &outsideRun{t: t, workers: w, opts: supervise.Options{
		Budget:      ledger.Budget{Tokens: i64(10_000), Iterations: i64(10), MicroUSD: i64(1_000_000)},
		PerWorker:   ledger.Budget{Tokens: i64(1_000), Iterations: i64(1), MicroUSD: i64(10_000)},
		Profiles:    map[string]*profile.Profile{"w": outsideWorkerProfile(t, "w", "scripted/w")},
		Deliverable: passIfContains,
		Executor:    w,
		RunDir:      t.TempDir(),
		RunID:       "outside",
		SettleGrace: outsideWait,
	}}
}

// drive runs the supervised run with brain, bounded by outsideWait (plus
// the settle grace), and returns its result.
func (r *outsideRun) drive(brain func(ctx context.Context, c *supervise.Coordinator) error) (supervise.SupervisedResult, error) {
	r.t.Helper()
	return r.driveCtx(context.Background(), brain)
}

// driveCtx is drive under the caller's ctx (a scenario cancels it to cut
// the run, as a killed host would).
func (r *outsideRun) driveCtx(parent context.Context, brain func(ctx context.Context, c *supervise.Coordinator) error) (supervise.SupervisedResult, error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(parent, 3*outsideWait)
	defer cancel()
	o := r.opts
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		err := brain(ctx, c)
		if err != nil && ctx.Err() == nil {
			r.t.Errorf("the scenario's brain failed: %v", err)
		}
		return supervise.BrainReport{}, err
	})
	return supervise.Supervise(ctx, outsideProfile(r.t, outsideManagerDoc), "outside scenario", o)
}

// codeOf is a refusal's code: a spawn's *Refusal or a verb's *VerbRefusal.
func codeOf(err error) string {
	var vr *supervise.VerbRefusal
	if errors.As(err, &vr) {
		return vr.Code
	}
	if c, ok := supervise.CodeOf(err); ok {
		return string(c)
	}
	return ""
}

// awaitKind awaits the next event, failing unless it is of kind.
func awaitKind(ctx context.Context, c *supervise.Coordinator, kind string) (*supervise.Event, error) {
	res, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{kind}, TimeoutMS: outsideWait.Milliseconds()})
	if err != nil {
		return nil, err
	}
	if res.Event == nil {
		return nil, errors.New("await_event returned no " + kind + " event")
	}
	return res.Event, nil
}

// awaitSettlementOf awaits settlements until id's, skipping the others
// (a resumed run offers the earlier process's settlements again).
func awaitSettlementOf(ctx context.Context, c *supervise.Coordinator, id supervise.NodeID) error {
	for {
		ev, err := awaitKind(ctx, c, supervise.EventSettled)
		if err != nil {
			return err
		}
		if ev.WorkerID == id {
			return nil
		}
	}
}

// committed is a channel's committed amount in the pool.
func committed(c *supervise.Coordinator, channel string) int64 {
	return c.Readout().Channels[channel].Committed
}
