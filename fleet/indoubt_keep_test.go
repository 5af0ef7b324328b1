package fleet_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
)

// blipServer extends flakyServer's cut to a live server: the caller's
// stream breaks off after the turn's first event, while the server —
// whose environments can be found by id (contract.EnvironmentGetter) —
// runs the turn on to its end, unheard. With forget set, Get finds
// nothing (the server lost its environments). It counts each destroy,
// through whichever handle.
type blipServer struct {
	*scripted.Provider
	cut    atomic.Bool
	forget atomic.Bool
	turns  atomic.Int32
	mu     sync.Mutex
	gone   map[string]int
	// abandon cancels the cut turns, as a server does one nobody reads.
	abandon []context.CancelFunc
	// followed, when set, is called once, as a re-attachment (a stream
	// that is not cut) yields its first event: the follower is following
	// the turn.
	followed atomic.Pointer[func()]
	// capabilities, when set, is called once with the context of the
	// next call of Capabilities (a kernel run's first provider call).
	capabilities atomic.Pointer[func(context.Context)]
}

// Capabilities implements contract.Provider, calling the capabilities
// hook first when one is set.
func (p *blipServer) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	if h := p.capabilities.Swap(nil); h != nil {
		(*h)(ctx)
	}
	return p.Provider.Capabilities(ctx)
}

// abandonTurns cancels every cut turn on the server's side, as agentrt
// serve does a turn nobody read for --abandon-after.
func (p *blipServer) abandonTurns() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cancel := range p.abandon {
		cancel()
	}
}

func newBlipServer(t *testing.T, script string) *blipServer {
	t.Helper()
	sc, err := scripted.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return &blipServer{Provider: scripted.New(sc, scripted.Options{}), gone: map[string]int{}}
}

func (p *blipServer) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &blipEnv{Environment: env, p: p}, nil
}

func (p *blipServer) Get(ctx context.Context, id string) (contract.Environment, error) {
	if p.forget.Load() {
		return nil, nil
	}
	env, err := p.Provider.Get(ctx, id)
	if env == nil || err != nil {
		return nil, err
	}
	return &blipEnv{Environment: env, p: p}, nil
}

func (p *blipServer) destroys(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gone[id]
}

type blipEnv struct {
	contract.Environment
	p *blipServer
}

func (e *blipEnv) Destroy(ctx context.Context) error {
	e.p.mu.Lock()
	e.p.gone[e.ID()]++
	e.p.mu.Unlock()
	return e.Environment.Destroy(ctx)
}

// Stream, when cut, runs the turn on the server's own context (a caller
// that goes away does not stop it) and plays the rest of it unheard once
// the stream is cut; otherwise (a re-attachment) it follows the turn
// while the caller listens.
func (e *blipEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	e.p.turns.Add(1)
	cut := e.p.cut.Load()
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		if cut {
			// The turn begins here, and the server runs it whoever
			// listens, until it abandons it.
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
			e.p.mu.Lock()
			e.p.abandon = append(e.p.abandon, cancel)
			e.p.mu.Unlock()
		}
		next, stop := iter.Pull2(e.Environment.Stream(ctx, in))
		for {
			ev, err, ok := next()
			if !ok {
				stop()
				return
			}
			if !yield(ev, err) || err != nil {
				stop()
				return
			}
			if h := e.p.followed.Swap(nil); h != nil && !cut {
				(*h)()
			}
			if cut {
				yield(contract.EnvironmentEvent{}, errors.New("remote: the turn stream was lost: connection reset"))
				go func() {
					defer stop()
					for _, _, ok := next(); ok; _, _, ok = next() {
					}
				}()
				return
			}
		}
	}
}

// lateScript's turn writes its first text at once and the rest after a
// while: a turn still running when its stream is cut.
const lateScript = `{"turns":[{"repeat":true,"steps":[{"text":"note "},{"delayMs":6000},{"text":"written"},{"usage":{"inputTokens":3,"outputTokens":2},"mode":"delta"}]}]}`

// inDoubtRun submits a run on srv with every turn cut, and waits for the
// fleet to end it interrupted in doubt.
func inDoubtRun(t *testing.T, srv *blipServer, task string) (*fleet.Fleet, *fleet.Run) {
	t.Helper()
	f, conn := openFleet(t)
	srv.cut.Store(true)
	sub, err := f.Submit(t.Context(), fleet.Submission{Spec: spec(t, task)})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := startWorker(t, conn, schemaOf(t, conn), fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": srv},
		LeaseTTL: 2 * time.Second, PollInterval: 50 * time.Millisecond})
	r := waitTerminal(t, f, sub.RunID, time.Minute)
	stop()
	srv.cut.Store(false)
	if r.Status != store.StatusInterrupted || r.InDoubt == nil || r.Outcome == nil || !strings.Contains(r.Outcome.Error, "agentrt fleet recover "+r.ID) {
		t.Fatalf("run %s, in doubt %+v, outcome %+v; want interrupted, its environment kept in doubt, saying how to recover it", r.Status, r.InDoubt, r.Outcome)
	}
	return f, r
}

// Issue 14: after the cut, the environment in doubt is alive on the
// provider and was not destroyed; Recover once its turn ended settles
// the run completed with the turn's text and whole usage, destroys the
// environment once, never runs the work again, and a second Recover
// changes nothing (replayed).
func TestRecoverSettlesTurnInDoubt(t *testing.T) {
	srv := newBlipServer(t, quickScript)
	f, r := inDoubtRun(t, srv, "a note in doubt")
	env := r.InDoubt.EnvironmentID
	if got, err := srv.Get(t.Context(), env); err != nil || got == nil {
		t.Fatalf("Get(%s) after the cut: %v, %v; want the environment alive", env, got, err)
	}
	if n := srv.destroys(env); n != 0 {
		t.Fatalf("the environment in doubt was destroyed %d times", n)
	}
	if rec, err := kernel.ReadRun(t.Context(), f.Store(), r.InDoubt.Attempt); err != nil || rec.Exact == nil || !rec.Exact.EnvironmentKept {
		t.Errorf("the in-doubt attempt's record %+v, %v; want environmentKept", rec, err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rc, err := f.Recover(ctx, r.ID, fleet.RecoverOptions{Provider: srv})
	if err != nil || rc.State != fleet.RecoverySettled || rc.Replayed || rc.Attempt == "" {
		t.Fatalf("Recover: %+v, %v; want settled by a recovery attempt", rc, err)
	}
	got, err := f.Get(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.StatusCompleted || got.Outcome == nil || got.Outcome.Text != "note written" || !got.Outcome.Delivered || got.Outcome.RunID != rc.Attempt {
		t.Errorf("recovered run %s, outcome %+v; want completed and delivered with the turn's text", got.Status, got.Outcome)
	}
	rec, err := kernel.ReadRun(t.Context(), f.Store(), rc.Attempt)
	if err != nil || rec.Exact == nil || rec.Exact.Usage == nil {
		t.Fatalf("recovery attempt record: %+v, %v", rec, err)
	}
	if u := rec.Exact.Usage.Usage; !u.InputTokens.Known() || u.InputTokens.Value != 3 || !u.OutputTokens.Known() || u.OutputTokens.Value != 2 {
		t.Errorf("recovered usage %+v, want the turn's whole usage 3 in / 2 out", u)
	}
	if n := srv.destroys(env); n != 1 {
		t.Errorf("environment destroyed %d times after the settle, want once", n)
	}
	if n := srv.turns.Load(); n != 2 {
		t.Errorf("%d turns streamed, want 2: the cut one and its re-attachment (never a new turn)", n)
	}

	again, err := f.Recover(ctx, r.ID, fleet.RecoverOptions{Provider: srv})
	if err != nil || !again.Replayed || again.State != fleet.RecoverySettled || again.Attempt != rc.Attempt {
		t.Errorf("second Recover: %+v, %v; want the first settlement, replayed", again, err)
	}
	after, err := f.Get(t.Context(), r.ID)
	if err != nil || len(after.Attempts) != len(got.Attempts) || srv.turns.Load() != 2 || srv.destroys(env) != 1 {
		t.Errorf("second Recover changed the run: attempts %d → %v (%v), turns %d, destroys %d", len(got.Attempts), after, err, srv.turns.Load(), srv.destroys(env))
	}
	if _, err := f.Recover(ctx, "no-such-run", fleet.RecoverOptions{Provider: srv}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Recover of a missing run: %v, want store.ErrNotFound", err)
	}
}

// Issue 14: a turn still running when Recover stops following it (its
// context ends once the re-attachment follows the turn, which runs on for
// seconds) leaves the run in doubt and its environment alive; Recover
// once it ended settles it.
func TestRecoverStillRunningStaysInDoubt(t *testing.T) {
	srv := newBlipServer(t, lateScript)
	f, r := inDoubtRun(t, srv, "a slow note in doubt")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	followed := make(chan struct{})
	stopFollowing := func() { close(followed); cancel() }
	srv.followed.Store(&stopFollowing)
	rc, err := f.Recover(ctx, r.ID, fleet.RecoverOptions{Provider: srv})
	cancel()
	select {
	case <-followed:
	default:
		t.Fatalf("Recover (%+v, %v) never followed the turn", rc, err)
	}
	if err != nil || rc.State != fleet.RecoveryRunning {
		t.Fatalf("Recover while the turn runs: %+v, %v; want still running", rc, err)
	}
	got, err := f.Get(t.Context(), r.ID)
	if err != nil || got.Status != store.StatusInterrupted || got.Recovery == nil || got.Recovery.State != fleet.RecoveryRunning {
		t.Fatalf("run after an unsettled Recover: %+v, %v; want interrupted, still in doubt", got, err)
	}
	if live, err := srv.Get(t.Context(), r.InDoubt.EnvironmentID); err != nil || live == nil || srv.destroys(r.InDoubt.EnvironmentID) != 0 {
		t.Fatalf("the environment after an unsettled Recover: %v, %v, destroyed %d times; want alive", live, err, srv.destroys(r.InDoubt.EnvironmentID))
	}
	ctx, cancel = context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rc, err = f.Recover(ctx, r.ID, fleet.RecoverOptions{Provider: srv})
	if err != nil || rc.State != fleet.RecoverySettled {
		t.Fatalf("Recover once the turn ended: %+v, %v; want settled", rc, err)
	}
	if got, err := f.Get(t.Context(), r.ID); err != nil || got.Status != store.StatusCompleted || got.Outcome.Text != "note written" {
		t.Errorf("run after the settle: %+v, %v; want completed with the whole text", got, err)
	}
}

// Issue 14: a Recover whose context ends after it claimed the run but
// before its kernel run re-attached to the environment saw nothing of
// the turn, which still runs: the run stays in doubt (RecoveryRunning),
// never settled cancelled, and its environment stays alive for a later
// Recover, which settles it completed. The work is never run again.
func TestRecoverStoppedBeforeItFollowsStaysInDoubt(t *testing.T) {
	srv := newBlipServer(t, lateScript)
	f, r := inDoubtRun(t, srv, "a slow note in doubt")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	stopped := make(chan struct{})
	// The recovery's kernel run asks the provider's capabilities first:
	// its caller goes away there, and the call returns once the kernel
	// run's own context (the following) has ended too.
	stopBefore := func(follow context.Context) {
		cancel()
		select {
		case <-follow.Done():
			close(stopped)
		case <-time.After(time.Minute):
		}
	}
	srv.capabilities.Store(&stopBefore)
	rc, err := f.Recover(ctx, r.ID, fleet.RecoverOptions{Provider: srv})
	select {
	case <-stopped:
	default:
		t.Fatalf("Recover (%+v, %v) did not stop before following the turn", rc, err)
	}
	if err != nil || rc.State != fleet.RecoveryRunning {
		t.Fatalf("Recover stopped before it followed the turn: %+v, %v; want still running", rc, err)
	}
	got, err := f.Get(t.Context(), r.ID)
	if err != nil || got.Status != store.StatusInterrupted || got.Recovery == nil || got.Recovery.State != fleet.RecoveryRunning {
		t.Fatalf("run after an unsettled Recover: %+v, %v; want interrupted, still in doubt", got, err)
	}
	if live, err := srv.Get(t.Context(), r.InDoubt.EnvironmentID); err != nil || live == nil || srv.destroys(r.InDoubt.EnvironmentID) != 0 {
		t.Fatalf("the environment after an unsettled Recover: %v, %v, destroyed %d times; want alive", live, err, srv.destroys(r.InDoubt.EnvironmentID))
	}
	again, cancelAgain := context.WithTimeout(t.Context(), time.Minute)
	defer cancelAgain()
	rc, err = f.Recover(again, r.ID, fleet.RecoverOptions{Provider: srv})
	if err != nil || rc.State != fleet.RecoverySettled {
		t.Fatalf("Recover once the turn ended: %+v, %v; want settled", rc, err)
	}
	if got, err := f.Get(t.Context(), r.ID); err != nil || got.Status != store.StatusCompleted || got.Outcome.Text != "note written" {
		t.Errorf("run after the settle: %+v, %v; want completed with the whole text", got, err)
	}
	if n := srv.turns.Load(); n != 2 {
		t.Errorf("%d turns streamed, want 2: the cut one and the settling re-attachment (never a new turn)", n)
	}
	if n := srv.destroys(r.InDoubt.EnvironmentID); n != 1 {
		t.Errorf("environment destroyed %d times after the settle, want once", n)
	}
}

// Issue 14: Recover when the provider lost the environment leaves the
// run interrupted, now known lost and saying so, destroys nothing and
// runs nothing; a second Recover replays that.
func TestRecoverLostEnvironment(t *testing.T) {
	srv := newBlipServer(t, quickScript)
	f, r := inDoubtRun(t, srv, "a note the server lost")
	srv.forget.Store(true)
	rc, err := f.Recover(t.Context(), r.ID, fleet.RecoverOptions{Provider: srv})
	if err != nil || rc.State != fleet.RecoveryLost || rc.Attempt != "" || !strings.Contains(rc.Detail, "gone") {
		t.Fatalf("Recover of a lost environment: %+v, %v; want lost, saying why", rc, err)
	}
	got, err := f.Get(t.Context(), r.ID)
	if err != nil || got.Status != store.StatusInterrupted || got.Outcome == nil || !strings.Contains(got.Outcome.Error, "lost") || len(got.Attempts) != 1 {
		t.Errorf("lost run: %+v, %v; want interrupted after one attempt, its outcome saying it is lost", got, err)
	}
	if n, turns := srv.destroys(r.InDoubt.EnvironmentID), srv.turns.Load(); n != 0 || turns != 1 {
		t.Errorf("destroys %d, turns %d; want none destroyed and the one cut turn", n, turns)
	}
	again, err := f.Recover(t.Context(), r.ID, fleet.RecoverOptions{Provider: srv})
	if err != nil || !again.Replayed || again.State != fleet.RecoveryLost {
		t.Errorf("second Recover: %+v, %v; want lost, replayed", again, err)
	}
	// Strict at the boundary: a provider that cannot look environments
	// up, and a run that is not in doubt, are refused with typed errors.
	if _, err := f.Recover(t.Context(), r.ID, fleet.RecoverOptions{Provider: &flakyServer{Provider: provider(t, quickScript)}}); !errors.Is(err, fleet.ErrInvalid) {
		t.Errorf("Recover on a provider that cannot find environments: %v, want fleet.ErrInvalid", err)
	}
	if _, err := f.Recover(t.Context(), r.ID, fleet.RecoverOptions{}); !errors.Is(err, fleet.ErrInvalid) {
		t.Errorf("Recover without a provider: %v, want fleet.ErrInvalid", err)
	}
	sub, err := f.Submit(t.Context(), fleet.Submission{Spec: spec(t, "a pending note")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Recover(t.Context(), sub.RunID, fleet.RecoverOptions{Provider: srv}); !errors.Is(err, fleet.ErrNotInDoubt) {
		t.Errorf("Recover of a pending run: %v, want fleet.ErrNotInDoubt", err)
	}
}

// A kept turn that ended cancelled though nobody asked (its server
// abandoned it unread, serve --abandon-after) is settled lost by
// Recover, not failed: its work was never done and is not run again.
func TestRecoverTurnCancelledWithoutRequestIsLost(t *testing.T) {
	srv := newBlipServer(t, lateScript)
	f, r := inDoubtRun(t, srv, "a note the server abandoned")
	// The server cancels the unread turn on its own.
	srv.abandonTurns()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rc, err := f.Recover(ctx, r.ID, fleet.RecoverOptions{Provider: srv})
	if err != nil || rc.State != fleet.RecoveryLost || !strings.Contains(rc.Detail, "nobody asked") {
		t.Fatalf("Recover of a turn cancelled without request: %+v, %v; want lost, saying nobody asked", rc, err)
	}
	got, err := f.Get(t.Context(), r.ID)
	if err != nil || got.Status != store.StatusInterrupted {
		t.Errorf("run after Recover: %+v, %v; want interrupted (lost), not failed", got, err)
	}
	if n := srv.turns.Load(); n != 2 {
		t.Errorf("%d turns streamed, want 2: the cut one and its re-attachment (never a new turn)", n)
	}
}
