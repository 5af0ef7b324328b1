package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// steerScript: the report task drafts, and a turn whose input is the
// steer revises, each turn with exact usage.
const steerScript = `{"turns": [
  {"match": "write the report", "repeat": true, "steps": [{"text": "draft"}, {"usage": {"inputTokens": 10, "outputTokens": 5, "cost": 0.00001}, "mode": "delta"}]},
  {"match": "focus on tests", "repeat": true, "steps": [{"text": "revised: DONE"}, {"usage": {"inputTokens": 20, "outputTokens": 5, "cost": 0.00002}, "mode": "delta"}]}
]}`

func steerExecutor(t testing.TB, maxSteerTurns int) *supervise.KernelExecutor {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(steerScript), &s); err != nil {
		t.Fatal(err)
	}
	return &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: memory.New(nil), MaxSteerTurns: maxSteerTurns}
}

// turnGate holds a worker's first turn open, once its stream ended and
// before the executor looks at the inbox, until the run dir's inbox
// projection shows a steer posted: so the steer deterministically
// arrives while the worker is between its first and second turn.
type turnGate struct {
	dir string
	// posted is how many steers the gate waits for (at least 1).
	posted int

	mu    sync.Mutex
	turns int
}

func (g *turnGate) RunStarted(ctx context.Context, _ supervise.RunStart) context.Context { return ctx }
func (g *turnGate) NodeStarted(ctx context.Context, n supervise.NodeInfo) (context.Context, kernel.Observer) {
	return ctx, &gateTurns{g: g, node: n.ID}
}
func (g *turnGate) NodeSettled(context.Context, supervise.NodeSettled)   {}
func (g *turnGate) RunEnded(context.Context, supervise.SupervisedResult) {}

type gateTurns struct {
	g    *turnGate
	node supervise.NodeID
}

func (o *gateTurns) RunStarted(ctx context.Context, _ kernel.RunStart) (context.Context, error) {
	return ctx, nil
}
func (o *gateTurns) TurnStarted(ctx context.Context, _ kernel.TurnStart) (context.Context, error) {
	return ctx, nil
}
func (o *gateTurns) Event(context.Context, contract.EnvironmentEvent) error { return nil }
func (o *gateTurns) RunEnded(context.Context, kernel.Result) error          { return nil }

func (o *gateTurns) TurnEnded(ctx context.Context, _ kernel.TurnEnd) error {
	o.g.mu.Lock()
	o.g.turns++
	first := o.g.turns == 1
	o.g.mu.Unlock()
	if !first {
		return nil
	}
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		recs, _, err := supervise.ReadInbox(ctx, o.g.dir, o.node)
		if err == nil && len(recs) >= max(o.g.posted, 1) {
			return nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("no steer was posted while the first turn was held")
}

// steerRun runs a supervised run in dir whose brain spawns the report
// worker (labelled "report"), calls steer, when set, with its node id,
// and awaits its settlement.
func steerRun(t *testing.T, dir string, ex *supervise.KernelExecutor, steer func(ctx context.Context, c *supervise.Coordinator, node supervise.NodeID) error) (supervise.SupervisedResult, supervise.Observation) {
	t.Helper()
	return steerRunGated(t, dir, ex, 1, steer)
}

// steerRunGated is steerRun whose worker's first turn is held until
// posted steers are in its inbox.
func steerRunGated(t *testing.T, dir string, ex *supervise.KernelExecutor, posted int, steer func(ctx context.Context, c *supervise.Coordinator, node supervise.NodeID) error) (supervise.SupervisedResult, supervise.Observation) {
	t.Helper()
	writer, err := profile.Parse([]byte(writerProfile))
	if err != nil {
		t.Fatal(err)
	}
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	var obs supervise.Observation
	o := supervise.Options{
		Budget:    ledger.Budget{Tokens: i64(10_000), Iterations: i64(10), MicroUSD: i64(1_000_000)},
		PerWorker: ledger.Budget{Tokens: i64(1_000), Iterations: i64(1), MicroUSD: i64(100_000)},
		Profiles:  map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck, Executor: ex,
		RunDir: dir, RunID: "run1", Observer: &turnGate{dir: dir, posted: posted},
		Brain: supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write the report", Label: "report"})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if steer != nil {
				if err := steer(ctx, c, sp.WorkerID); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: waitLimit.Milliseconds(), Kinds: []string{supervise.EventSettled}}); err != nil || r.Event == nil {
				return supervise.BrainReport{}, fmt.Errorf("await: %+v %v", r, err)
			}
			obs, err = c.Observe(sp.WorkerID)
			return supervise.BrainReport{Text: "settled"}, err
		}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := supervise.Supervise(ctx, manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	return res, obs
}

// inboxLines is the worker's inbox projection without its timestamps.
func inboxLines(t *testing.T, dir string, node supervise.NodeID) []supervise.InboxRecord {
	t.Helper()
	recs, skipped, err := supervise.ReadInbox(context.Background(), dir, node)
	if err != nil || skipped != 0 {
		t.Fatalf("reading the inbox of %s: %d skipped, %v", node, skipped, err)
	}
	return recs
}

var ignoreAt = cmpopts.IgnoreFields(supervise.InboxRecord{}, "AtMS")

// ignoreProgress leaves steer_agent's progress to observe_paging_test.go.
var ignoreProgress = cmpopts.IgnoreFields(supervise.SteerResult{}, "Progress")

// Behaviour 48 with a kernel worker: the manager's steer_agent is
// acknowledged delivered only once the worker's next turn took the
// steer; that turn's input is the steer, its answer is the worker's
// result, and the worker's spend is both turns'.
func TestKernelWorkerTakesManagerSteerAtNextTurnBehaviour48(t *testing.T) {
	dir := t.TempDir()
	var got supervise.SteerResult
	res, obs := steerRun(t, dir, steerExecutor(t, 0), func(ctx context.Context, c *supervise.Coordinator, node supervise.NodeID) error {
		var err error
		got, err = c.Steer(ctx, supervise.SteerArgs{WorkerID: node, Instruction: "focus on tests"})
		return err
	})
	if diff := cmp.Diff(supervise.SteerResult{Delivered: true, Outcome: string(supervise.SteerDelivered)}, got, ignoreProgress); diff != "" {
		t.Errorf("steer_agent (-want +got):\n%s", diff)
	}
	if res.Status != supervise.StatusWinner || obs.Output != "revised: DONE" || !obs.Delivered {
		t.Errorf("status %s, worker output %q delivered %v: want the steered turn's answer delivered", res.Status, obs.Output, obs.Delivered)
	}
	if obs.Spent == nil || obs.Spent.Tokens == nil || *obs.Spent.Tokens != 40 || obs.Spent.Iterations == nil || *obs.Spent.Iterations != 1 {
		t.Errorf("spent %+v, want both turns' 40 tokens as one iteration", obs.Spent)
	}
	want := []supervise.InboxRecord{
		// The in-process steer carries the operation id it is journaled
		// under, as a steer file's does.
		{Kind: supervise.InboxPosted, Seq: 1, Message: "focus on tests", OperationID: "steer_agent-1"},
		{Kind: supervise.InboxTaken, Seq: 1},
	}
	if diff := cmp.Diff(want, inboxLines(t, dir, obs.WorkerID), ignoreAt); diff != "" {
		t.Errorf("inbox projection (-want +got):\n%s", diff)
	}
}

// Steers that arrive during one turn are taken together by the next:
// its input is each message in order, and each is acknowledged
// delivered.
func TestKernelWorkerTakesSteersTogetherBehaviour48(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var got []supervise.SteerResult
	_, obs := steerRunGated(t, dir, steerExecutor(t, 0), 2, func(ctx context.Context, c *supervise.Coordinator, node supervise.NodeID) error {
		var wg sync.WaitGroup
		for _, m := range []string{"focus on tests", "and keep it short"} {
			wg.Go(func() {
				r, err := c.Steer(ctx, supervise.SteerArgs{WorkerID: node, Instruction: m})
				if err != nil {
					r.Reason = err.Error()
				}
				mu.Lock()
				got = append(got, r)
				mu.Unlock()
			})
		}
		wg.Wait()
		return nil
	})
	want := supervise.SteerResult{Delivered: true, Outcome: string(supervise.SteerDelivered)}
	if diff := cmp.Diff([]supervise.SteerResult{want, want}, got, ignoreProgress); diff != "" {
		t.Errorf("steer_agent replies (-want +got):\n%s", diff)
	}
	if obs.Output != "revised: DONE" {
		t.Errorf("worker output %q, want the steered turn's", obs.Output)
	}
	recs := inboxLines(t, dir, obs.WorkerID)
	kinds := make([]string, len(recs))
	for i, r := range recs {
		kinds[i] = r.Kind
	}
	if !cmp.Equal(kinds, []string{supervise.InboxPosted, supervise.InboxPosted, supervise.InboxTaken, supervise.InboxTaken}) {
		t.Errorf("inbox projection %+v, want both posted, then both taken by one turn", recs)
	}
}

// Behaviour 48: a worker allowed no steer turns seals its inbox after
// its first turn, so the steer waiting there is acknowledged not_live
// and the projection says it was dropped, never delivered.
func TestKernelWorkerWithoutSteerTurnsDropsSteerBehaviour48(t *testing.T) {
	dir := t.TempDir()
	var got supervise.SteerResult
	_, obs := steerRun(t, dir, steerExecutor(t, -1), func(ctx context.Context, c *supervise.Coordinator, node supervise.NodeID) error {
		var err error
		got, err = c.Steer(ctx, supervise.SteerArgs{WorkerID: node, Instruction: "focus on tests"})
		return err
	})
	if got.Delivered || got.Outcome != string(supervise.SteerNotLive) {
		t.Errorf("steer_agent %+v, want not_live", got)
	}
	if obs.Output != "draft" {
		t.Errorf("worker output %q, want its only turn's", obs.Output)
	}
	recs := inboxLines(t, dir, obs.WorkerID)
	if len(recs) != 2 || recs[0].Kind != supervise.InboxPosted || recs[1].Kind != supervise.InboxDropped || recs[1].Seq != 1 {
		t.Errorf("inbox projection %+v, want the steer posted then dropped", recs)
	}
}

// Behaviour 48 across processes with a kernel worker: another process
// writes a steer request into the run dir; the running supervisor posts
// it to the worker's inbox, and acknowledges it delivered once the
// worker's next turn took it (the claim stays unknown until then).
func TestKernelWorkerTakesSteerFromAnotherProcessBehaviour48(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := t.TempDir()
	var ack supervise.SteerAck
	res, obs := steerRun(t, dir, steerExecutor(t, 0), func(ctx context.Context, c *supervise.Coordinator, node supervise.NodeID) error {
		return steerFromChild(dir)
	})
	ack = awaitSteer(t, dir, "op-report-steer")
	if ack.Effect != supervise.SteerDelivered || ack.Worker != "report" {
		t.Errorf("ack %+v, want delivered to the report worker", ack)
	}
	if res.Status != supervise.StatusWinner || obs.Output != "revised: DONE" {
		t.Errorf("status %s, output %q: want the steered turn's answer", res.Status, obs.Output)
	}
	want := []supervise.InboxRecord{
		{Kind: supervise.InboxPosted, Seq: 1, Message: "focus on tests", OperationID: "op-report-steer"},
		{Kind: supervise.InboxTaken, Seq: 1},
	}
	if diff := cmp.Diff(want, inboxLines(t, dir, obs.WorkerID), ignoreAt); diff != "" {
		t.Errorf("inbox projection (-want +got):\n%s", diff)
	}
	rows, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range rows {
		if strings.HasPrefix(r.Kind, "steer-") {
			kinds = append(kinds, r.Kind)
		}
	}
	if !cmp.Equal(kinds, []string{supervise.KindSteerRequested, supervise.KindSteerAcknowledged}) {
		t.Errorf("journaled steer records %q, want requested then acknowledged", kinds)
	}
}

// A steer whose wait ends before the worker's next turn takes it is
// withdrawn, not left to arrive later: steer_agent answers refused, the
// projection records it dropped, and the worker never sees it.
func TestSteerWithdrawnWhenItsWaitEndsBehaviour48(t *testing.T) {
	dir := t.TempDir()
	var s scripted.Script
	if err := json.Unmarshal([]byte(`{"turns": [{"match": "write the report", "steps": [{"delayMs": 600000}, {"text": "never"}]}]}`), &s); err != nil {
		t.Fatal(err)
	}
	ex := &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: memory.New(nil)}
	writer, manager := mustProfile(t, writerProfile), managerProfile(t, supervise.VerbSpawnWorker)
	var got supervise.SteerResult
	var node supervise.NodeID
	o := supervise.Options{
		Budget:    ledger.Budget{Tokens: i64(10_000), Iterations: i64(10)},
		PerWorker: ledger.Budget{Tokens: i64(1_000), Iterations: i64(1)},
		Profiles:  map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck, Executor: ex, RunDir: dir, RunID: "run1",
		Brain: supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write the report"})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			node = sp.WorkerID
			sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			got, err = c.Steer(sctx, supervise.SteerArgs{WorkerID: node, Instruction: "focus on tests"})
			return supervise.BrainReport{}, err // returning cancels the worker
		}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := supervise.Supervise(ctx, manager, "t", o); err != nil {
		t.Fatal(err)
	}
	if got.Delivered || got.Outcome != string(supervise.SteerRefused) || !strings.Contains(got.Reason, "withdrawn") {
		t.Errorf("steer_agent %+v, want refused and withdrawn", got)
	}
	recs := inboxLines(t, dir, node)
	if len(recs) != 2 || recs[0].Kind != supervise.InboxPosted || recs[1].Kind != supervise.InboxDropped {
		t.Errorf("inbox projection %+v, want the steer posted then dropped", recs)
	}
}

// An inbox holds at most MaxInboxPending steers its worker has not
// taken; one more is refused at once rather than queued without bound.
func TestInboxIsBounded(t *testing.T) {
	dir := t.TempDir()
	var s scripted.Script
	if err := json.Unmarshal([]byte(`{"turns": [{"match": "write the report", "steps": [{"delayMs": 600000}, {"text": "never"}]}]}`), &s); err != nil {
		t.Fatal(err)
	}
	ex := &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: memory.New(nil)}
	var over supervise.SteerResult
	o := supervise.Options{
		Budget:    ledger.Budget{Tokens: i64(10_000), Iterations: i64(10)},
		PerWorker: ledger.Budget{Tokens: i64(1_000), Iterations: i64(1)},
		Profiles:  map[string]*profile.Profile{"writer": mustProfile(t, writerProfile)}, Deliverable: doneCheck, Executor: ex, RunDir: dir, RunID: "run1",
		Brain: supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write the report"})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			var wg sync.WaitGroup
			for i := range supervise.MaxInboxPending {
				wg.Go(func() {
					_, _ = c.Steer(ctx, supervise.SteerArgs{WorkerID: sp.WorkerID, Instruction: fmt.Sprint("steer ", i)})
				})
			}
			deadline := time.Now().Add(waitLimit)
			for time.Now().Before(deadline) {
				if recs, _, _ := supervise.ReadInbox(ctx, dir, sp.WorkerID); len(recs) == supervise.MaxInboxPending {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			over, err = c.Steer(ctx, supervise.SteerArgs{WorkerID: sp.WorkerID, Instruction: "one more"})
			// Returning cancels the worker, which ends the waiting steers.
			go wg.Wait()
			return supervise.BrainReport{}, err
		}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if over.Delivered || over.Outcome != string(supervise.SteerRefused) || !strings.Contains(over.Reason, "holds 64") {
		t.Errorf("the steer past the bound: %+v, want refused because the inbox is full", over)
	}
}

func TestWorkerStem(t *testing.T) {
	for _, tc := range []struct {
		in   supervise.NodeID
		want string
	}{
		{"run1:s2", "run1_s2"},
		{"", "worker"},
		{"a/../b", "a_.._b"},
		{"ok.name-1_x", "ok.name-1_x"},
		{"é", "_"},
	} {
		if got := supervise.WorkerStem(tc.in); got != tc.want {
			t.Errorf("WorkerStem(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// steerFromChild re-executes the test binary to write the report
// worker's steer request into dir from another process.
func steerFromChild(dir string) error {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), controlEnv+"=steer-report", childDir+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("control child: %w\n%s", err, out)
	}
	return nil
}
