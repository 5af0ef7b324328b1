package supervise_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// holdOrGo holds a worker whose task says "hold" until its context ends;
// one whose task says "go" starts, then waits for release. Each start is
// announced on started.
type holdOrGo struct {
	started chan supervise.NodeID
	release chan struct{}
}

func (e *holdOrGo) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	spent := ledger.Spend{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(10)}
	e.started <- w.Node
	wait := e.release
	if strings.Contains(w.Task, "hold") {
		wait = nil
	}
	select {
	case <-wait:
		return supervise.WorkResult{Text: w.Task + " DONE", Spent: spent}, nil
	case <-ctx.Done():
		return supervise.WorkResult{Spent: spent}, context.Cause(ctx)
	}
}

// waitStarted waits, bounded, for n workers to start.
func waitStarted(t *testing.T, started <-chan supervise.NodeID, n int) {
	t.Helper()
	for range n {
		select {
		case <-started:
		case <-time.After(60 * time.Second):
			t.Fatal("a worker never started")
		}
	}
}

// §3.6 stallAfterMs, §9 observe_agent progress.stalled: Options.StallAfter
// is the idle time past which observe_agent reads a running worker
// stalled, and the progress block says which threshold it judged by; 0
// is the runtime default (StallAfter).
func TestStallAfterOptionJudgesObserveAgent(t *testing.T) {
	for _, tc := range []struct {
		name        string
		stallAfter  time.Duration
		idle        time.Duration
		wantStalled bool
		wantMS      float64
	}{
		{"idle under the option", 5 * time.Second, 4 * time.Second, false, 5000},
		{"idle at the option", 5 * time.Second, 5 * time.Second, true, 5000},
		{"idle past the option", 5 * time.Second, time.Minute, true, 5000},
		{"default, idle past the option's value but under the default", 0, time.Minute, false, float64(supervise.StallAfter.Milliseconds())},
		{"default, idle at the default", 0, supervise.StallAfter, true, float64(supervise.StallAfter.Milliseconds())},
		{"an option above the default", 10 * time.Minute, supervise.StallAfter, false, 600_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &manualClock{now: time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)}
			exec := &holdOrGo{started: make(chan supervise.NodeID, 4), release: make(chan struct{})}
			o := baseOptions(t, exec, nil)
			o.Now, o.StallAfter = clock.Now, tc.stallAfter
			var progress map[string]any
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				sp := tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "hold"})
				waitStarted(t, exec.started, 1)
				clock.Advance(tc.idle)
				ob := tool(t, ctx, c, supervise.VerbObserveAgent, map[string]any{"workerId": sp["workerId"]})
				progress, _ = ob["progress"].(map[string]any)
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbObserveAgent), "t", o); err != nil {
				t.Fatal(err)
			}
			got := map[string]any{"stalled": progress["stalled"], "stallAfterMs": progress["stallAfterMs"], "idleMs": progress["idleMs"]}
			want := map[string]any{"stalled": tc.wantStalled, "stallAfterMs": tc.wantMS, "idleMs": float64(tc.idle.Milliseconds())}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("observe_agent progress (-want +got):\n%s\nwhole block: %v", diff, progress)
			}
		})
	}
}

// §3.6 stallAfterMs and stopRule: AllWorkersStalled reads the same
// judgement, so the option moves when "everyone is stuck" stops the
// run. A held worker idles ten seconds while another settles; under
// StallAfter 5s the settlement's reading stops the run all-stalled,
// under the default two minutes it does not.
func TestStallAfterOptionReachesAllWorkersStalled(t *testing.T) {
	for _, tc := range []struct {
		name       string
		stallAfter time.Duration
		wantStop   string
	}{
		{"option under the idle time", 5 * time.Second, "all-stalled: 1 running workers idle, the longest 10000ms"},
		{"default", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &manualClock{now: time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)}
			exec := &holdOrGo{started: make(chan supervise.NodeID, 4), release: make(chan struct{})}
			rule, err := supervise.AllWorkersStalled{MinWorkers: 1}.Rule()
			if err != nil {
				t.Fatal(err)
			}
			o := baseOptions(t, exec, nil)
			o.Now, o.StallAfter, o.StopRule, o.RunDir = clock.Now, tc.stallAfter, rule, t.TempDir()
			var awaitErr error
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "hold"})
				tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "go"})
				waitStarted(t, exec.started, 2)
				clock.Advance(10 * time.Second)
				close(exec.release)
				// The settlement's reading stops the manager when it judges
				// the held worker stalled: the await may then fail stopped
				// (or deliver the settlement it was already handed).
				awaitErr = toolErr(t, ctx, c, supervise.VerbAwaitEvent, `{"timeoutMs": 60000}`)
				return supervise.BrainReport{}, nil
			})
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if res.ProgressStop != nil {
				got = res.ProgressStop.Reason
			}
			if got != tc.wantStop {
				t.Errorf("progress stop %q, want %q", got, tc.wantStop)
			}
			if awaitErr != nil && !errors.Is(awaitErr, supervise.ErrProgressStopped) {
				t.Errorf("await_event after the settlement: %v", awaitErr)
			}
		})
	}
}

// §3.6 stallAfterMs, continuityByProfile: options Supervise cannot run
// with are refused before anything runs, each as an *OptionError naming
// its pointer.
func TestStallAfterAndContinuityByProfileRefusedWhenInvalid(t *testing.T) {
	for _, tc := range []struct {
		name        string
		tune        func(*supervise.Options)
		wantPointer string
	}{
		{"negative StallAfter", func(o *supervise.Options) { o.StallAfter = -time.Second }, "/stallAfter"},
		{"negative MaxTurns", func(o *supervise.Options) { o.MaxTurns = -1 }, "/maxTurns"},
		{"unknown continuity", func(o *supervise.Options) {
			o.ContinuityByProfile = map[string]supervise.Continuity{"writer": "resume", "a/b~c": "steer"}
		}, "/continuityByProfile/a~1b~0c"},
		{"continuity spelled in capitals", func(o *supervise.Options) {
			o.ContinuityByProfile = map[string]supervise.Continuity{"writer": "Resume"}
		}, "/continuityByProfile/writer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := &gateExecutor{release: make(chan struct{})}
			o := baseOptions(t, gate, nil)
			o.RunDir = t.TempDir()
			tc.tune(&o)
			wantOptionRefused(t, o, tc.wantPointer)
		})
	}
	// The valid spellings run.
	for _, c := range []supervise.Continuity{supervise.ContinuityFresh, "fresh", supervise.ContinuityResume} {
		o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
		o.ContinuityByProfile = map[string]supervise.Continuity{"writer": c}
		o.StallAfter = time.Millisecond
		o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
			return supervise.BrainReport{}, nil
		})
		if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
			t.Errorf("continuity %q: %v", c, err)
		}
	}
}
