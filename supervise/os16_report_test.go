package supervise_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

func os16i(v int64) *int64 { return &v }

func os16Profile(t *testing.T, doc string) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// os16Opts is a run with a caller brain, a file run dir, a pool with
// tokens, iterations and dollars, and executor exec.
func os16Opts(t *testing.T, dir string, brain supervise.BrainFunc, exec supervise.ExecutorFunc) supervise.Options {
	t.Helper()
	worker := os16Profile(t, `{"name":"w","harness":"cli-base","model":{"provider":"scripted","default":"scripted/w"}}`)
	return supervise.Options{
		Budget:    ledger.Budget{Tokens: os16i(10_000), Iterations: os16i(10), MicroUSD: os16i(1_000_000)},
		PerWorker: ledger.Budget{Tokens: os16i(1_000), Iterations: os16i(1), MicroUSD: os16i(100_000)},
		Profiles:  map[string]*profile.Profile{"w": worker},
		Deliverable: supervise.Deliverable{Describe: "ok", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: strings.HasPrefix(out.Text, "ok")}, nil
		}},
		Executor: exec,
		Brain:    brain,
		RunDir:   dir,
		RunID:    "os16",
	}
}

func os16Manager(t *testing.T) *profile.Profile {
	return os16Profile(t, `{"name":"mgr","harness":"cli-base","model":{"default":"scripted/mgr"}}`)
}

// os16AwaitSettled awaits n settlements, each bounded.
func os16AwaitSettled(ctx context.Context, c *supervise.Coordinator, n int) error {
	for got := 0; got < n; {
		r, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 20_000})
		if err != nil {
			return err
		}
		if r.Event == nil {
			return errors.New("await: no event: " + r.Reason)
		}
		got++
	}
	return nil
}

// Checklist §15 behaviour 43, §3.6 spentTotal: one worker reports no
// dollars, another no tokens; the brain meters its own turns. The
// totals are the measured spend plus ceilings for the unreported
// channels; each gap node is named exactly once with exactly its
// channels; the same numbers on a resume to the journaled end and on
// a resume that drives the brain again over the journal.
func TestOS16SpendGapsReconcile(t *testing.T) {
	dir := t.TempDir()
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		switch {
		case strings.Contains(w.Task, "full"):
			return supervise.WorkResult{Text: "ok full", Spent: ledger.Spend{Tokens: os16i(100), Iterations: os16i(1), MicroUSD: os16i(1_000)}}, nil
		case strings.Contains(w.Task, "nousd"):
			return supervise.WorkResult{Text: "ok nousd", Spent: ledger.Spend{Tokens: os16i(200), Iterations: os16i(1)}}, nil
		default:
			return supervise.WorkResult{Text: "no tokens", Spent: ledger.Spend{Iterations: os16i(1), MicroUSD: os16i(3_000)}}, nil
		}
	})
	var coord *supervise.Coordinator
	brain := func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		coord = c
		for _, tk := range []string{"full", "nousd", "notokens"} {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Label: tk, Key: tk, Task: tk}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		if err := os16AwaitSettled(ctx, c, 3); err != nil {
			return supervise.BrainReport{}, err
		}
		u := ledger.NoUsage()
		u.InputTokens, u.OutputTokens, u.CostUSD = ledger.ExactAmount[int64](7), ledger.ExactAmount[int64](3), ledger.ExactAmount(0.00005)
		return supervise.BrainReport{Text: "done", Metered: &u}, nil
	}
	res, err := supervise.Supervise(context.Background(), os16Manager(t), "t", os16Opts(t, dir, brain, exec))
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, res supervise.SupervisedResult) {
		t.Helper()
		if res.Status != supervise.StatusWinner {
			t.Fatalf("%s: status %s %s", name, res.Status, res.Reason)
		}
		s := res.Spent
		if s.TokensKnown || s.USDKnown || !s.IterationsKnown {
			t.Errorf("%s: known flags tokens %v usd %v iterations %v, want false false true", name, s.TokensKnown, s.USDKnown, s.IterationsKnown)
		}
		// tokens: 100 + 200 + ceiling 1000 (notokens) + manager 10
		if s.Tokens != 1310 {
			t.Errorf("%s: tokens %d, want 1310", name, s.Tokens)
		}
		// usd: 1000 + ceiling 100000 (nousd) + 3000 + manager 50
		if s.MicroUSD != 104_050 {
			t.Errorf("%s: microUSD %d, want 104050", name, s.MicroUSD)
		}
		if s.Iterations != 3 {
			t.Errorf("%s: iterations %d, want 3", name, s.Iterations)
		}
		var got []string
		for _, g := range res.SpendGaps {
			got = append(got, string(g.ID)+"/"+g.Label+"/"+string(g.Kind)+"/"+strings.Join(g.Channels, ","))
		}
		want := []string{"os16:s2/nousd/unreported/usd", "os16:s3/notokens/unreported/tokens"}
		if !slices.Equal(got, want) {
			t.Errorf("%s: spendGaps %q, want %q", name, got, want)
		}
		b := res.Breakdown
		if b.DriverInference.Tokens+b.ChildWork.Tokens != s.Tokens || b.DriverInference.MicroUSD+b.ChildWork.MicroUSD != s.MicroUSD {
			t.Errorf("%s: breakdown %+v does not sum to %+v", name, b, s)
		}
	}
	check("first", res)
	os16Reconcile(t, "first", coord, res)
	o := os16Opts(t, dir, brain, exec)
	o.Resume, o.ReturnEnded = true, true
	again, err := supervise.Supervise(context.Background(), os16Manager(t), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	check("return-ended", again)
}

// §3.6 spentTotal and teardownUnconfirmed, §15 behaviours 43 and 51: a
// worker that does not settle within the settle grace after the brain
// returned is never-settled on every channel, charged at its ceiling,
// and named in teardownUnconfirmed; a worker whose environment destroy
// failed is named there too, one destroyed is not; each exactly once,
// and the same on a resume to the journaled end.
func TestOS16NeverSettledAndTeardowns(t *testing.T) {
	dir := t.TempDir()
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{}, 1)
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		switch {
		case strings.Contains(w.Task, "stuck"):
			started <- struct{}{}
			<-release // ignores ctx: the run's end cannot confirm it
			return supervise.WorkResult{}, ctx.Err()
		case strings.Contains(w.Task, "leaky"):
			return supervise.WorkResult{Text: "leaky", Spent: ledger.Spend{Tokens: os16i(10), Iterations: os16i(1), MicroUSD: os16i(10)},
				TeardownUnconfirmed: "destroy timed out",
				Teardowns:           []supervise.EnvironmentTeardown{{Provider: "p", EnvironmentID: "e1", Destroyed: false, Detail: "destroy timed out"}}}, nil
		default:
			return supervise.WorkResult{Text: "ok clean", Spent: ledger.Spend{Tokens: os16i(10), Iterations: os16i(1), MicroUSD: os16i(10)},
				Teardowns: []supervise.EnvironmentTeardown{{Provider: "p", EnvironmentID: "e2", Destroyed: true}}}, nil
		}
	})
	var coord *supervise.Coordinator
	brain := func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		coord = c
		for _, tk := range []string{"leaky", "clean"} {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Label: tk, Key: tk, Task: tk}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		if err := os16AwaitSettled(ctx, c, 2); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Label: "stuck", Key: "stuck", Task: "stuck"}); err != nil {
			return supervise.BrainReport{}, err
		}
		select {
		case <-started:
		case <-time.After(20 * time.Second):
			return supervise.BrainReport{}, errors.New("stuck worker never started")
		}
		return supervise.BrainReport{Text: "done", Metered: os16Usage()}, nil
	}
	o := os16Opts(t, dir, brain, exec)
	o.SettleGrace = 200 * time.Millisecond
	res, err := supervise.Supervise(context.Background(), os16Manager(t), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, res supervise.SupervisedResult) {
		t.Helper()
		var tds []string
		for _, u := range res.TeardownUnconfirmed {
			tds = append(tds, string(u.ID)+"/"+u.Label)
		}
		if want := []string{"os16:s1/leaky", "os16:s3/stuck"}; !slices.Equal(tds, want) {
			t.Errorf("%s: teardownUnconfirmed %q, want %q", name, tds, want)
		}
		var gaps []string
		for _, g := range res.SpendGaps {
			gaps = append(gaps, string(g.ID)+"/"+string(g.Kind)+"/"+strings.Join(g.Channels, ","))
		}
		if want := []string{"os16:s3/never-settled/tokens,iterations,usd"}; !slices.Equal(gaps, want) {
			t.Errorf("%s: spendGaps %q, want %q", name, gaps, want)
		}
		s := res.Spent
		if s.TokensKnown || s.USDKnown || s.IterationsKnown {
			t.Errorf("%s: known flags %v %v %v, want all false", name, s.TokensKnown, s.USDKnown, s.IterationsKnown)
		}
		if s.Tokens != 10+10+1000+10 || s.MicroUSD != 10+10+100_000+50 || s.Iterations != 3 {
			t.Errorf("%s: spent %d tokens %d microUSD %d iterations", name, s.Tokens, s.MicroUSD, s.Iterations)
		}
	}
	check("first", res)
	os16Reconcile(t, "first", coord, res)
	o = os16Opts(t, dir, brain, exec)
	o.Resume, o.ReturnEnded = true, true
	again, err := supervise.Supervise(context.Background(), os16Manager(t), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	check("return-ended", again)
}

func os16Usage() *ledger.Usage {
	u := ledger.NoUsage()
	u.InputTokens, u.OutputTokens, u.CostUSD = ledger.ExactAmount[int64](7), ledger.ExactAmount[int64](3), ledger.ExactAmount(0.00005)
	return &u
}

// §3.6 teardownUnconfirmed and spentTotal across a kill: the process
// is "killed" (its run dir copied) while a third worker runs, after a
// worker whose destroy failed and a destroyed one settled. The resumed
// run names the failed-destroy worker exactly once, not the destroyed
// one, and its totals are the settled receipts plus the manager's turns.
func TestOS16TeardownAcrossKill(t *testing.T) {
	dir, killed := t.TempDir(), t.TempDir()
	release := make(chan struct{})
	var releaseOnce bool
	defer func() {
		if !releaseOnce {
			close(release)
		}
	}()
	exec := func(block bool) supervise.ExecutorFunc {
		return func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
			spent := ledger.Spend{Tokens: os16i(10), Iterations: os16i(1), MicroUSD: os16i(10)}
			switch {
			case strings.Contains(w.Task, "third"):
				if block {
					select {
					case <-release:
					case <-ctx.Done():
					}
					return supervise.WorkResult{Spent: spent}, ctx.Err()
				}
				return supervise.WorkResult{Text: "ok third", Spent: spent}, nil
			case strings.Contains(w.Task, "leaky"):
				return supervise.WorkResult{Text: "leaky", Spent: spent, TeardownUnconfirmed: "destroy failed",
					Teardowns: []supervise.EnvironmentTeardown{{Provider: "p", EnvironmentID: "e1", Detail: "destroy failed"}}}, nil
			default:
				return supervise.WorkResult{Text: "clean", Spent: spent,
					Teardowns: []supervise.EnvironmentTeardown{{Provider: "p", EnvironmentID: "e2", Destroyed: true}}}, nil
			}
		}
	}
	var coord *supervise.Coordinator
	brain := func(kill bool) supervise.BrainFunc {
		return func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			coord = c
			for _, tk := range []string{"leaky", "clean"} {
				if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Label: tk, Key: tk, Task: tk}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			if err := os16AwaitSettled(ctx, c, 2); err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Label: "third", Key: "third", Task: "third"}); err != nil {
				return supervise.BrainReport{}, err
			}
			if kill {
				journaltest.CopyRunDir(t, dir, killed)
				return supervise.BrainReport{}, errors.New("killed")
			}
			if err := os16AwaitSettled(ctx, c, 1); err != nil {
				return supervise.BrainReport{}, err
			}
			return supervise.BrainReport{Text: "done", Metered: os16Usage()}, nil
		}
	}
	o := os16Opts(t, dir, brain(true), exec(true))
	o.SettleGrace = 100 * time.Millisecond
	if _, err := supervise.Supervise(context.Background(), os16Manager(t), "t", o); err != nil {
		t.Fatal(err)
	}
	close(release)
	releaseOnce = true
	o = os16Opts(t, killed, brain(false), exec(false))
	o.Resume = true
	res, err := supervise.Supervise(context.Background(), os16Manager(t), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	var tds []string
	for _, u := range res.TeardownUnconfirmed {
		tds = append(tds, string(u.ID)+"/"+u.Label+"/"+string(u.Status))
	}
	t.Logf("status %s %s winner %+v", res.Status, res.Reason, res.Winner)
	for _, n := range res.Tree {
		t.Logf("node %s %s %s indoubt=%v", n.ID, n.Label, n.State, n.InDoubt)
	}
	if want := []string{"os16:s1/leaky/done"}; !slices.Equal(tds, want) {
		t.Errorf("teardownUnconfirmed %q, want %q", tds, want)
	}
	t.Logf("spent %+v gaps %+v", res.Spent, res.SpendGaps)
	os16Reconcile(t, "resumed", coord, res)
}

// os16Reconcile checks the pool behind res: it conserves, and what it
// committed and still holds reserved is what res says was spent.
func os16Reconcile(t *testing.T, name string, c *supervise.Coordinator, res supervise.SupervisedResult) {
	t.Helper()
	r := c.Readout()
	if err := r.Conserved(); err != nil {
		t.Errorf("%s: %v", name, err)
	}
	for ch, want := range map[string]int64{ledger.ChannelTokens: res.Spent.Tokens, ledger.ChannelUSD: res.Spent.MicroUSD, ledger.ChannelIterations: res.Spent.Iterations} {
		b := r.Channels[ch]
		if b.Committed+b.Reserved != want {
			t.Errorf("%s: pool %s committed %d + reserved %d, result spent %d", name, ch, b.Committed, b.Reserved, want)
		}
	}
}

// §3.6 teardownUnconfirmed, §15 behaviour 51, across a kill: the
// process dies right after the settlement of a worker whose executor
// reported its environment's destroy failed (the journal's prefix ends
// with that settlement). The resumed run still names the worker in
// teardownUnconfirmed, exactly once, and keeps its slot charged.
func TestOS16TeardownKilledAfterSettlement(t *testing.T) {
	dir, killed := t.TempDir(), t.TempDir()
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "ok leaky", Spent: ledger.Spend{Tokens: os16i(10), Iterations: os16i(1), MicroUSD: os16i(10)},
			TeardownUnconfirmed: "destroy failed",
			Teardowns:           []supervise.EnvironmentTeardown{{Provider: "p", EnvironmentID: "e1", Detail: "destroy failed"}}}, nil
	})
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Label: "leaky", Key: "leaky", Task: "leaky"}); err != nil {
			return supervise.BrainReport{}, err
		}
		if err := os16AwaitSettled(ctx, c, 1); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{Text: "done", Metered: os16Usage()}, nil
	})
	o := os16Opts(t, dir, brain, exec)
	o.MaxLiveWorkers = 1
	res, err := supervise.Supervise(context.Background(), os16Manager(t), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.TeardownUnconfirmed) != 1 {
		t.Fatalf("uninterrupted: teardownUnconfirmed %+v", res.TeardownUnconfirmed)
	}
	journaltest.CopyRunDir(t, dir, killed)
	b, err := os.ReadFile(filepath.Join(dir, "spawn-journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	cut := -1
	for i, l := range lines {
		if strings.Contains(l, `"kind":"settled"`) && strings.Contains(l, `"node":"os16:s1"`) {
			cut = i + 1
		}
	}
	if cut < 0 {
		t.Fatal("no settlement of os16:s1 in the journal")
	}
	if err := os.WriteFile(filepath.Join(killed, "spawn-journal.jsonl"), []byte(strings.Join(lines[:cut], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	o = os16Opts(t, killed, brain, exec)
	o.MaxLiveWorkers, o.Resume = 1, true
	var live int
	o.OnResume = func(_ context.Context, c *supervise.Coordinator) error {
		_, err := c.Spawn(context.Background(), supervise.SpawnArgs{Profile: "w", Label: "probe", Task: "probe"})
		var r *supervise.Refusal
		if errors.As(err, &r) {
			live = r.Live
		}
		return nil
	}
	again, err := supervise.Supervise(context.Background(), os16Manager(t), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, u := range again.TeardownUnconfirmed {
		ids = append(ids, string(u.ID)+"/"+u.Label+"/"+string(u.Status))
	}
	if want := []string{"os16:s1/leaky/done"}; !slices.Equal(ids, want) {
		t.Errorf("resumed after the settlement: teardownUnconfirmed %q, want %q", ids, want)
	}
	if live != 1 {
		t.Errorf("resumed: a spawn beside the unconfirmed worker saw %d live slots, want its slot held (1, refused max-live-workers)", live)
	}
}
