package supervise_test

// Outside scenarios for spawning (§3.6 "Spawning", "Continuity",
// "Rejections", "Teardown"; §15 behaviours 44, 45, 51), written from the
// spec before reading the package's own tests.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// namedRuntime is an executor naming its runtime.
type namedRuntime struct {
	*outsideWorkers
	runtime string
}

func (n namedRuntime) Runtime() string { return n.runtime }

// reserved is the pool's reserved tokens and iterations.
func reserved(c *supervise.Coordinator) [2]int64 {
	ro := c.Readout()
	return [2]int64{ro.Channels[ledger.ChannelTokens].Reserved, ro.Channels[ledger.ChannelIterations].Reserved}
}

// Behaviour 44 within one process: a live key is duplicate-key; a done key
// is resumed:completed with zero new spend and nothing run; another
// request under a done key is key-conflict; a down key is resumed:retried
// naming the prior worker and its reason.
func TestOutsideKeyedSpawns(t *testing.T) {
	r := newOutsideRun(t)
	_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		first, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t1", Key: "k"})
		if err != nil {
			return err
		}
		if first.Resumed != supervise.ResumedNone || first.Assignment != "key:k" {
			t.Errorf("first keyed spawn = %+v, want a new assignment key:k", first)
		}
		r.workers.waitStarted(t, "t1")
		before := reserved(c)
		dup, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t1", Key: "k"})
		if codeOf(err) != "duplicate-key" {
			t.Errorf("spawn of a live key = %+v, %v; want duplicate-key", dup, err)
		}
		if after := reserved(c); after != before {
			t.Errorf("a refused spawn moved the pool: reserved %v -> %v", before, after)
		}
		r.workers.finish("t1", "PASS one")
		if _, err := awaitKind(ctx, c, supervise.EventSettled); err != nil {
			return err
		}
		tokens, iters := committed(c, ledger.ChannelTokens), committed(c, ledger.ChannelIterations)
		before = reserved(c)
		again, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t1", Key: "k"})
		if err != nil || again.Resumed != supervise.ResumedCompleted || again.WorkerID != first.WorkerID {
			t.Errorf("spawn of a completed key = %+v, %v; want resumed completed, worker %s", again, err, first.WorkerID)
		}
		if committed(c, ledger.ChannelTokens) != tokens || committed(c, ledger.ChannelIterations) != iters || reserved(c) != before {
			t.Errorf("a completed key's replay spent: committed tokens %d -> %d, reserved %v -> %v", tokens, committed(c, ledger.ChannelTokens), before, reserved(c))
		}
		if n := r.workers.Calls("t1"); n != 1 {
			t.Errorf("the completed key's worker ran %d times, want once", n)
		}
		conflict, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "another task", Key: "k"})
		if codeOf(err) != "key-conflict" {
			t.Errorf("another request under a done key = %+v, %v; want key-conflict", conflict, err)
		}

		down, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t2", Key: "d"})
		if err != nil {
			return err
		}
		r.workers.waitStarted(t, "t2")
		r.workers.finishWith("t2", outsideOutcome{res: supervise.WorkResult{Spent: outsideSpent(50)}, err: errors.New("worker crashed")})
		if _, err := awaitKind(ctx, c, supervise.EventSettled); err != nil {
			return err
		}
		retry, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t2", Key: "d"})
		if err != nil || retry.Resumed != supervise.ResumedRetried || retry.PriorWorker != down.WorkerID || retry.PriorReason == "" || retry.WorkerID == down.WorkerID {
			t.Errorf("spawn of a down key = %+v, %v; want resumed retried, prior %s with its reason, a new worker", retry, err, down.WorkerID)
		}
		r.workers.waitStarted(t, "t2")
		r.workers.finish("t2", "PASS two")
		_, err = awaitKind(ctx, c, supervise.EventSettled)
		return err
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
}

// Behaviour 44 across a real resume (same run dir, a new Supervise): the
// completed key replays its committed result and runs nothing; the down
// key is retried naming its prior worker.
func TestOutsideKeyedSpawnsAcrossResume(t *testing.T) {
	r := newOutsideRun(t)
	var doneID, downID supervise.NodeID
	res1, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t1", Key: "k"})
		if err != nil {
			return err
		}
		doneID = sp.WorkerID
		r.workers.waitStarted(t, "t1")
		r.workers.finish("t1", "PASS one")
		if _, err := awaitKind(ctx, c, supervise.EventSettled); err != nil {
			return err
		}
		sp, err = c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t2", Key: "d"})
		if err != nil {
			return err
		}
		downID = sp.WorkerID
		r.workers.waitStarted(t, "t2")
		r.workers.finishWith("t2", outsideOutcome{res: supervise.WorkResult{Spent: outsideSpent(50)}, err: errors.New("worker crashed")})
		_, err = awaitKind(ctx, c, supervise.EventSettled)
		return err
	})
	if err != nil {
		t.Fatalf("first Supervise: %v", err)
	}

	r2 := newOutsideRun(t)
	r2.opts.RunDir, r2.opts.Resume = r.opts.RunDir, true
	res2, err := r2.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		again, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t1", Key: "k"})
		if err != nil || again.Resumed != supervise.ResumedCompleted || again.WorkerID != doneID {
			t.Errorf("resumed run: spawn of the completed key = %+v, %v; want resumed completed %s", again, err, doneID)
		}
		retry, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t2", Key: "d"})
		if err != nil || retry.Resumed != supervise.ResumedRetried || retry.PriorWorker != downID {
			t.Errorf("resumed run: spawn of the down key = %+v, %v; want resumed retried, prior %s", retry, err, downID)
			return nil
		}
		r2.workers.waitStarted(t, "t2")
		r2.workers.finish("t2", "PASS two")
		// The resumed run offers the first run's settlements again
		// (Replayed); the retry's is the one to wait for, or the run
		// ends with the retry cancelled (10 tokens, not 100).
		return awaitSettlementOf(ctx, c, retry.WorkerID)
	})
	if err != nil {
		t.Fatalf("resumed Supervise: %v", err)
	}
	if n := r2.workers.Calls("t1"); n != 0 {
		t.Errorf("the resumed run executed the completed key's worker %d times, want 0", n)
	}
	if !res2.Resumed || res2.Spent.Tokens != res1.Spent.Tokens+100 {
		t.Errorf("resumed spend = %d tokens (resumed %v), want the first run's %d plus the retry's 100", res2.Spent.Tokens, res2.Resumed, res1.Spent.Tokens)
	}
}

// outsideCrashEnv names the run dir of the child process
// TestOutsideCrashChild runs; the parent kills it mid-worker.
const outsideCrashEnv = "AGENTRT_OUTSIDE_CRASH_DIR"

// TestOutsideCrashChild is the child half of
// TestOutsideKeyedSpawnInDoubtAfterCrash: run only in a process the parent
// started (it is a no-op otherwise), it spawns key "k" whose worker writes
// a marker and then runs until the process is killed.
func TestOutsideCrashChild(t *testing.T) {
	dir := os.Getenv(outsideCrashEnv)
	if dir == "" {
		t.Log("the child half of TestOutsideKeyedSpawnInDoubtAfterCrash; runs only under it")
		return
	}
	r := newOutsideRun(t)
	r.opts.RunDir = filepath.Join(dir, "run")
	r.opts.Executor = supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		// Written whole, then renamed: the parent kills this process as
		// soon as the marker exists, and must never read it empty.
		tmp := filepath.Join(dir, "started.tmp")
		if err := os.WriteFile(tmp, []byte(w.Node), 0o600); err != nil {
			return supervise.WorkResult{}, err
		}
		if err := os.Rename(tmp, filepath.Join(dir, "started")); err != nil {
			return supervise.WorkResult{}, err
		}
		<-ctx.Done()
		return supervise.WorkResult{}, ctx.Err()
	})
	_, _ = r.driveCtx(context.Background(), func(ctx context.Context, c *supervise.Coordinator) error {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t1", Key: "k"}); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	})
}

// Behaviour 44: a key whose worker started without a terminal receipt (its
// process was killed mid-work) is refused in-doubt on resume, and that
// worker is charged at its ceiling as never-settled (behaviours 40, 43).
func TestOutsideKeyedSpawnInDoubtAfterCrash(t *testing.T) {
	if os.Getenv(outsideCrashEnv) != "" {
		t.Skip("inside the child")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*outsideWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestOutsideCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), outsideCrashEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(dir, "started")
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			t.Fatalf("the child's worker did not start: %v", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	node, err := os.ReadFile(started)
	if err != nil {
		t.Fatal(err)
	}

	r := newOutsideRun(t)
	r.opts.RunDir, r.opts.Resume = filepath.Join(dir, "run"), true
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		got, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t1", Key: "k"})
		if codeOf(err) != "in-doubt" {
			t.Errorf("resumed: spawn of a key started without a terminal receipt = %+v, %v; want in-doubt", got, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("resumed Supervise: %v", err)
	}
	if n := r.workers.Calls("t1"); n != 0 {
		t.Errorf("the in-doubt worker ran again %d times", n)
	}
	if res.Spent.TokensKnown || res.Spent.Tokens < 1_000 {
		t.Errorf("spentTotal = %+v, want the in-doubt worker charged its 1000-token ceiling, tokens unknown", res.Spent)
	}
	var gap *supervise.SpendGap
	for i := range res.SpendGaps {
		if string(res.SpendGaps[i].ID) == string(node) {
			gap = &res.SpendGaps[i]
		}
	}
	if gap == nil || gap.Kind != "never-settled" {
		t.Errorf("spendGaps = %+v, want %s never-settled", res.SpendGaps, node)
	}
}

// §3.6 "Continuity": an explicit resume with no settled worker of its
// label is resume-no-prior; with its label live, resume-while-live; with a
// key, resume-with-key. Each refusal moves nothing in the pool.
func TestOutsideContinuityRefusals(t *testing.T) {
	r := newOutsideRun(t)
	_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		before := reserved(c)
		got, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t", Label: "L", Continuity: "resume"})
		if codeOf(err) != "resume-no-prior" {
			t.Errorf("resume with no prior = %+v, %v; want resume-no-prior", got, err)
		}
		got, err = c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t", Label: "K", Key: "x", Continuity: "resume"})
		if codeOf(err) != "resume-with-key" {
			t.Errorf("resume with a key = %+v, %v; want resume-with-key", got, err)
		}
		if after := reserved(c); after != before {
			t.Errorf("continuity refusals moved the pool: %v -> %v", before, after)
		}
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "live", Label: "L"}); err != nil {
			return err
		}
		r.workers.waitStarted(t, "live")
		before = reserved(c)
		got, err = c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t", Label: "L", Continuity: "resume"})
		if codeOf(err) != "resume-while-live" {
			t.Errorf("resume while its label is live = %+v, %v; want resume-while-live", got, err)
		}
		if after := reserved(c); after != before {
			t.Errorf("continuity refusals moved the pool: %v -> %v", before, after)
		}
		r.workers.finish("live", "PASS")
		_, err = awaitKind(ctx, c, supervise.EventSettled)
		return err
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
}

// Behaviour 45: with maxLiveWorkers 2, the third spawn while two are live
// is refused max-live-workers before any reservation (and before the
// budget, which it would also exceed, and before authorizeSpawn); every
// reply carries freeSlots, await_event's too.
func TestOutsideMaxLiveWorkers(t *testing.T) {
	r := newOutsideRun(t)
	r.opts.MaxLiveWorkers = 2
	r.opts.Budget.Tokens = i64(2_500) // room for two 1000-token workers only
	authorized := 0
	r.opts.AuthorizeSpawn = func(supervise.SpawnRequest) error { authorized++; return nil }
	_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		for i, task := range []string{"a", "b"} {
			sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: task})
			if err != nil {
				return err
			}
			if sp.FreeSlots == nil || *sp.FreeSlots != 1-i || sp.Live != i+1 {
				t.Errorf("spawn %d reply = live %d, freeSlots %v; want %d, %d", i, sp.Live, sp.FreeSlots, i+1, 1-i)
			}
			r.workers.waitStarted(t, task)
		}
		before, calls := reserved(c), authorized
		third, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "c"})
		var ref *supervise.Refusal
		if !errors.As(err, &ref) || ref.Code != supervise.CodeMaxLiveWorkers {
			t.Errorf("third spawn = %+v, %v; want max-live-workers", third, err)
		} else if ref.FreeSlots == nil || *ref.FreeSlots != 0 || ref.Live != 2 {
			t.Errorf("max-live-workers refusal: live %d, freeSlots %v; want 2, 0", ref.Live, ref.FreeSlots)
		}
		if reserved(c) != before || authorized != calls {
			t.Errorf("the refused spawn reserved %v -> %v, authorizeSpawn calls %d -> %d; want neither moved", before, reserved(c), calls, authorized)
		}
		r.workers.finish("a", "PASS a")
		aw, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: outsideWait.Milliseconds()})
		if err != nil {
			return err
		}
		if aw.FreeSlots == nil || *aw.FreeSlots != 1 {
			t.Errorf("await_event after one settled: freeSlots %v, want 1", aw.FreeSlots)
		}
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "c"})
		if err != nil || sp.FreeSlots == nil || *sp.FreeSlots != 0 {
			t.Errorf("spawn into the freed slot = %+v, %v; want admitted with freeSlots 0", sp, err)
			return nil
		}
		r.workers.waitStarted(t, "c")
		r.workers.finish("b", "PASS b")
		r.workers.finish("c", "PASS c")
		for range 2 {
			if _, err := awaitKind(ctx, c, supervise.EventSettled); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
}

// §3.6 "Every spawn reply carries live and freeSlots (null = uncapped)".
func TestOutsideFreeSlotsUncapped(t *testing.T) {
	r := newOutsideRun(t)
	_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "a"})
		if err != nil {
			return err
		}
		if sp.FreeSlots != nil || sp.Live != 1 {
			t.Errorf("uncapped spawn reply: live %d, freeSlots %v; want 1, null", sp.Live, sp.FreeSlots)
		}
		r.workers.waitStarted(t, "a")
		r.workers.finish("a", "PASS")
		aw, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: outsideWait.Milliseconds()})
		if err != nil || aw.FreeSlots != nil {
			t.Errorf("uncapped await_event: %+v, %v; want freeSlots null", aw, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
}

// §3.6 allowedModels and authorizeSpawn: a worker model outside the list
// is invalid-identity; a refusing or panicking hook is preflight-refused
// (not-authorized); a hook that never answers does not hold the spawn past
// its caller's context. None of them reserves anything.
func TestOutsideSpawnAuthority(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	for _, tc := range []struct {
		name      string
		allowed   []string
		authorize func(supervise.SpawnRequest) error
		ctxLimit  time.Duration
		code      string
	}{
		{name: "model not allowed", allowed: []string{"scripted/other"}, code: "invalid-identity"},
		{name: "hook refuses", authorize: func(supervise.SpawnRequest) error { return errors.New("no") }, code: "preflight-refused"},
		{name: "hook panics", authorize: func(supervise.SpawnRequest) error { panic("boom") }, code: "preflight-refused"},
		{name: "hook hangs", authorize: func(supervise.SpawnRequest) error { <-release; return nil }, ctxLimit: 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newOutsideRun(t)
			r.opts.AllowedModels = tc.allowed
			r.opts.AuthorizeSpawn = tc.authorize
			_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
				before := reserved(c)
				sctx := ctx
				if tc.ctxLimit > 0 {
					var cancel context.CancelFunc
					sctx, cancel = context.WithTimeout(ctx, tc.ctxLimit)
					defer cancel()
				}
				start := time.Now()
				got, err := c.Spawn(sctx, supervise.SpawnArgs{Profile: "w", Task: "a"})
				took := time.Since(start)
				if err == nil {
					t.Errorf("spawn = %+v, want refused", got)
				}
				if tc.code != "" && codeOf(err) != tc.code {
					t.Errorf("spawn refused %q (%v), want %s", codeOf(err), err, tc.code)
				}
				if tc.ctxLimit > 0 && took > outsideWait {
					t.Errorf("a hanging authorizeSpawn held the spawn %v past its caller's %v context", took, tc.ctxLimit)
				}
				if reserved(c) != before {
					t.Errorf("a refused spawn reserved: %v -> %v", before, reserved(c))
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Supervise: %v", err)
			}
		})
	}
}

// A run cancelled (its caller's context) while a spawn waits on a hanging
// authorizeSpawn ends promptly: the hook's bound is no floor under the
// run's own end (§3.6 "Cancellation": the abort reaches the manager; P:
// every wait has a deadline, the caller's among them).
func TestOutsideCancelDuringHangingAuthorize(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	inHook := make(chan struct{}, 1)
	r := newOutsideRun(t)
	r.opts.AuthorizeSpawn = func(supervise.SpawnRequest) error {
		inHook <- struct{}{}
		<-release
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-inHook:
			cancel()
		case <-time.After(outsideWait):
		}
	}()
	start := time.Now()
	res, err := r.driveCtx(ctx, func(ctx context.Context, c *supervise.Coordinator) error {
		_, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "a"})
		return err
	})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonAborted {
		t.Errorf("result = %s %s, want no-winner aborted", res.Status, res.Reason)
	}
	if took > outsideWait {
		t.Errorf("the cancelled run returned after %v: it waited out the authorization hook", took)
	}
}

// §3.6 maxDepth: a nested manager's spawn deeper than maxDepth is refused
// depth-exceeded.
func TestOutsideMaxDepth(t *testing.T) {
	for _, tc := range []struct {
		maxDepth int
		code     string
	}{{1, "depth-exceeded"}, {2, ""}} {
		t.Run(string(rune('0'+tc.maxDepth)), func(t *testing.T) {
			r := newOutsideRun(t)
			r.opts.MaxDepth = tc.maxDepth
			r.opts.Profiles["m"] = outsideProfile(t, `{"name": "m", "harness": "cli-base", "model": {"default": "scripted/m"},
  "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`)
			var nestedErr error
			var nestedDone = make(chan struct{})
			r.opts.ManagerBrain = func(*profile.Profile) supervise.Brain {
				return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
					defer close(nestedDone)
					_, nestedErr = c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "deep", Parent: c.Self()})
					if nestedErr == nil {
						r.workers.waitStarted(t, "deep")
						r.workers.finish("deep", "PASS deep")
						if _, err := awaitKind(ctx, c, supervise.EventSettled); err != nil {
							return supervise.BrainReport{}, err
						}
					}
					return supervise.BrainReport{Text: "PASS nested"}, nil
				})
			}
			_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
				if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "m", Task: "manage"}); err != nil {
					return err
				}
				select {
				case <-nestedDone:
				case <-ctx.Done():
					return ctx.Err()
				}
				_, err := awaitKind(ctx, c, supervise.EventSettled)
				return err
			})
			if err != nil {
				t.Fatalf("Supervise: %v", err)
			}
			if codeOf(nestedErr) != tc.code {
				t.Errorf("maxDepth %d: nested spawn err = %v, want code %q", tc.maxDepth, nestedErr, tc.code)
			}
		})
	}
}

// Behaviour 51: a worker whose teardown was never acknowledged is named in
// teardownUnconfirmed {id, label, runtime, status}, journaled, and keeps
// its capacity slot charged (maxLiveWorkers 1: the next spawn is refused).
func TestOutsideTeardownUnconfirmedKeepsSlot(t *testing.T) {
	r := newOutsideRun(t)
	r.opts.MaxLiveWorkers = 1
	// An executor names its runtime (RuntimeNamer); one that names none
	// runs on an unknown runtime, reported empty.
	r.opts.Executor = namedRuntime{r.workers, "sandbox"}
	var id supervise.NodeID
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "a", Label: "box"})
		if err != nil {
			return err
		}
		id = sp.WorkerID
		r.workers.waitStarted(t, "a")
		r.workers.finishWith("a", outsideOutcome{res: supervise.WorkResult{Text: "PASS", Spent: outsideSpent(100), TeardownUnconfirmed: "destroy timed out"}})
		ev, err := awaitKind(ctx, c, supervise.EventSettled)
		if err != nil {
			return err
		}
		if ev.Delivered == nil || !*ev.Delivered {
			t.Errorf("settlement = %+v, want delivered (the outcome stands)", ev)
		}
		next, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "b"})
		if codeOf(err) != "max-live-workers" {
			t.Errorf("spawn after an unconfirmed teardown = %+v, %v; want max-live-workers (its slot stays charged)", next, err)
		}
		page := c.ReadJournal(supervise.JournalArgs{Kinds: []string{supervise.KindTeardownUnconfirmed}})
		if len(page.Rows) != 1 {
			t.Errorf("teardown-unconfirmed records = %d, want 1", len(page.Rows))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if len(res.TeardownUnconfirmed) != 1 {
		t.Fatalf("teardownUnconfirmed = %+v, want the worker", res.TeardownUnconfirmed)
	}
	u := res.TeardownUnconfirmed[0]
	if u.ID != id || u.Label != "box" || u.Status != supervise.StateDone || u.Runtime != "sandbox" {
		t.Errorf("teardownUnconfirmed[0] = %+v, want {%s box sandbox done}", u, id)
	}
	if res.Status != supervise.StatusWinner {
		t.Errorf("result %s %s, want the worker's winner", res.Status, res.Reason)
	}
}

// Behaviour 51 for a worker that never returns once cancelled: the run
// ends within its settle grace, names it in teardownUnconfirmed with a live
// status, and charges it at its ceiling (never-settled, behaviour 43).
func TestOutsideTeardownNeverAcknowledged(t *testing.T) {
	r := newOutsideRun(t)
	r.opts.SettleGrace = 100 * time.Millisecond
	var id supervise.NodeID
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "a", Label: "stuck"})
		if err != nil {
			return err
		}
		id = sp.WorkerID
		r.workers.waitStarted(t, "a")
		// The worker takes its outcome before the stop cancels it: a
		// worker still choosing between its outcome and its cancelled
		// context may take the cancellation and settle.
		taken := make(chan struct{})
		r.workers.finishWith("a", outsideOutcome{ignoreCtx: true, taken: taken})
		select {
		case <-taken:
		case <-time.After(outsideWait):
			return errors.New("the worker did not take its outcome")
		}
		_, err = c.Stop(supervise.StopArgs{Reason: "enough"})
		return err
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if len(res.TeardownUnconfirmed) != 1 || res.TeardownUnconfirmed[0].ID != id || res.TeardownUnconfirmed[0].Label != "stuck" {
		t.Fatalf("teardownUnconfirmed = %+v, want %s stuck", res.TeardownUnconfirmed, id)
	}
	if s := res.TeardownUnconfirmed[0].Status; s != supervise.StateRunning {
		t.Errorf("status = %s, want running (never acknowledged)", s)
	}
	if res.Spent.TokensKnown || res.Spent.Tokens != 1_000 {
		t.Errorf("spentTotal = %+v, want the ceiling 1000 tokens, unknown", res.Spent)
	}
	if len(res.SpendGaps) != 1 || res.SpendGaps[0].Kind != "never-settled" {
		t.Errorf("spendGaps = %+v, want one never-settled", res.SpendGaps)
	}
}
