package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// destroyLog is a real provider whose environments record their
// destroys, and refuse them when fail is set.
type destroyLog struct {
	contract.Provider
	fail bool

	mu        sync.Mutex
	destroyed []string
}

func (p *destroyLog) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &loggedEnv{Environment: env, p: p}, nil
}

type loggedEnv struct {
	contract.Environment
	p *destroyLog
}

func (e *loggedEnv) Destroy(ctx context.Context) error {
	if e.p.fail {
		return errors.New("the box did not answer the destroy")
	}
	e.p.mu.Lock()
	e.p.destroyed = append(e.p.destroyed, e.ID())
	e.p.mu.Unlock()
	return e.Environment.Destroy(ctx)
}

// envTeardowns are the run dir's environment-teardown records.
func envTeardowns(t *testing.T, dir string) []supervise.Record {
	t.Helper()
	return runDirRecordsOfKind(t, dir, supervise.KindEnvironmentTeardown)
}

// §3.6 "Teardown & retained environments" (release journals one
// environment-teardown{provider, environmentId, destroyed, detail?} per
// environment), with behaviour 51: a KernelExecutor worker's environment
// released at settlement is journaled as environment-teardown — the
// environment its provider really destroyed, destroyed true — and one
// whose destroy failed is journaled destroyed false with the reason,
// besides its teardown-unconfirmed record and held slot.
func TestReleasedEnvironmentsAreJournaledBehaviour51(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(map[bool]string{false: "destroyed", true: "destroy failed"}[fail], func(t *testing.T) {
			dir := t.TempDir()
			p := &destroyLog{Provider: workerProvider(t), fail: fail}
			exec := &supervise.KernelExecutor{Provider: p, Store: newStore(t)}
			o := baseOptions(t, exec, nil)
			o.RunDir = dir
			o.Brain = pipeline("write alpha", "write beta")
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			recs := envTeardowns(t, dir)
			if len(recs) != 2 {
				t.Fatalf("%d environment-teardown records, want one per worker: %+v", len(recs), recs)
			}
			for i, r := range recs {
				node := supervise.NodeID("run1:s" + string(rune('1'+i)))
				if r.Node != node || r.Provider != p.Name() || r.EnvironmentID == "" || r.Destroyed == nil || *r.Destroyed == fail {
					t.Errorf("record %d: %+v, want node %s on %s, destroyed %v", i, r, node, p.Name(), !fail)
				}
				if fail != (r.Reason != "") {
					t.Errorf("record %d: detail %q with destroyed %v", i, r.Reason, !fail)
				}
			}
			if !fail {
				got := []string{recs[0].EnvironmentID, recs[1].EnvironmentID}
				if diff := cmp.Diff(p.destroyed, got); diff != "" {
					t.Errorf("journaled environments differ from the ones destroyed (-destroyed +journaled):\n%s", diff)
				}
				if len(res.TeardownUnconfirmed) != 0 {
					t.Errorf("teardownUnconfirmed %+v after confirmed destroys", res.TeardownUnconfirmed)
				}
			} else if len(res.TeardownUnconfirmed) != 2 || countKind(t, dir, supervise.KindTeardownUnconfirmed) != 2 {
				t.Errorf("teardownUnconfirmed %+v; want both workers named and journaled", res.TeardownUnconfirmed)
			}
			// Evidence only: the run resumes over the records.
			o.Resume, o.ReturnEnded = true, true
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatalf("resuming over environment-teardown records: %v", err)
			}
		})
	}
}

// Behaviour 51 for a teardown the kernel reports (Result
// .TeardownUnconfirmed): a seated worker's chain runs on kernel runs
// that destroy their own environments; one whose destroy fails leaves
// the worker's outcome as it was, names it in teardownUnconfirmed and
// holds its slot (MaxLiveWorkers 1: the next spawn is refused
// max-live-workers).
func TestKernelReportedTeardownHoldsTheSlotBehaviour51(t *testing.T) {
	var s scripted.Script
	if err := json.Unmarshal([]byte(`{"accounts":{"team-a":{},"team-b":{}},"turns":[
 {"match":"write alpha","servedModel":"scripted/first","steps":[{"text":"alpha: DONE"},{"usage":{"inputTokens":6,"outputTokens":3,"cost":0.002},"mode":"delta"}]}]}`), &s); err != nil {
		t.Fatal(err)
	}
	p := stuckDestroy{scripted.New(&s, scripted.Options{})}
	exec := &supervise.KernelExecutor{Store: newStore(t), Accounts: kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) {
		return p, nil
	})}
	o := baseOptions(t, exec, nil)
	o.Profiles = map[string]*profile.Profile{"writer": mustProfile(t, seatedWriter)}
	o.MaxLiveWorkers = 1
	var refused map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha", "label": "a"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		refused = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha again"})
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || res.Winner.Node != "run1:s1" {
		t.Errorf("the worker's outcome changed: %s %+v", res.Status, res.Winner)
	}
	if len(res.TeardownUnconfirmed) != 1 || res.TeardownUnconfirmed[0].ID != "run1:s1" ||
		!strings.Contains(res.TeardownUnconfirmed[0].Detail, "not confirmed destroyed") {
		t.Errorf("teardownUnconfirmed %+v; want run1:s1 with the kernel's reason", res.TeardownUnconfirmed)
	}
	if refused["error"] != "max-live-workers" {
		t.Errorf("a spawn while the slot is held: %v", refused)
	}
}
