package kernel_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// turnNamer is an in-process provider whose environments can be looked
// up (scripted's contract.EnvironmentGetter) and which names every turn
// reattachTurn, as a fleet worker does, so that a run taking another's
// work over re-attaches to that turn. It records every environment it
// created and every destroy.
type turnNamer struct {
	*scripted.Provider
	mu        sync.Mutex
	created   []string
	destroyed []string
}

const reattachTurn = "turn-of-the-work"

func (p *turnNamer) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.created = append(p.created, env.ID())
	p.mu.Unlock()
	return &namedEnv{Environment: env, p: p}, nil
}

func (p *turnNamer) Get(ctx context.Context, id string) (contract.Environment, error) {
	env, err := p.Provider.Get(ctx, id)
	if env == nil || err != nil {
		return nil, err
	}
	return &namedEnv{Environment: env, p: p}, nil
}

func (p *turnNamer) record() (created, destroyed []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.created), slices.Clone(p.destroyed)
}

type namedEnv struct {
	contract.Environment
	p *turnNamer
}

func (e *namedEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	turn := *in
	id := reattachTurn
	turn.TurnID = &id
	return e.Environment.Stream(ctx, &turn)
}

func (e *namedEnv) Destroy(ctx context.Context) error {
	e.p.mu.Lock()
	e.p.destroyed = append(e.p.destroyed, e.ID())
	e.p.mu.Unlock()
	return e.Environment.Destroy(ctx)
}

// A run taking over the work of a run whose process lost its lease
// (paused past it; spec/runtime.md §5, RES-05/RES-06: the same turn id,
// the same environment) re-attaches to the environment it left
// (kernel.Reattach). The turn the old holder ran is either over, and its
// end is the new run's outcome, or it ended cancelled with its holder —
// an in-process provider's turn dies with the context of the attempt that
// lost the lease — and then nobody asked for that cancel: the work was
// not done, and its end is known (not in doubt), so the new run runs the
// turn again in a new environment instead of failing with "the provider
// reported the turn cancelled, which nobody requested". Either way every
// environment the runtime created is destroyed exactly once, by the run
// that holds the lease when it is done with it, and one whose creation
// the record does not prove is never destroyed (ENV-06).
func TestReattachAfterTheHolderLostItsLease(t *testing.T) {
	const script = `{"turns":[{"repeat":true,"steps":[{"text":"working "},{"delayMs":1500},{"text":"done"}]}]}`
	for _, tc := range []struct {
		name string
		// stallInCheck stalls the holder's store only once its turn
		// completed (in its completion check); otherwise after its first
		// event, mid-turn.
		stallInCheck bool
		// created is what the successor passes as the creation proof;
		// recorded takes it from the holder's record.
		created, recorded bool
		// destroyFirst: the holder's environment is destroyed (by
		// someone else) after the successor looked it up.
		destroyFirst bool
		// wantAgain: the successor runs the turn again in a new
		// environment.
		wantAgain bool
		// wantDestroyed is how many times the holder's environment is
		// destroyed.
		wantDestroyed int
	}{
		{name: "turn cancelled with its holder runs again", recorded: true, wantAgain: true, wantDestroyed: 1},
		{name: "turn cancelled with its holder, creation unproven", created: false, wantAgain: true, wantDestroyed: 0},
		{name: "environment destroyed after its lookup runs again", recorded: true, destroyFirst: true, wantAgain: true, wantDestroyed: 1},
		{name: "turn that completed is adopted", stallInCheck: true, recorded: true, wantDestroyed: 1},
		{name: "turn that completed, creation unproven", stallInCheck: true, created: false, wantDestroyed: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.New(nil)
			p := &turnNamer{Provider: scripted.New(mustScript(t, script), scripted.Options{})}
			st := &stallingStore{Store: mem, which: func(call string) bool { return call == "UpdateFenced" || call == "GetRun" }}
			check := nonEmpty
			if tc.stallInCheck {
				check = func(ctx context.Context, out kernel.Outcome) (kernel.Verdict, error) {
					st.stall.Store(true)
					time.Sleep(kernel.MinLeaseTTL + 500*time.Millisecond)
					return nonEmpty(ctx, out)
				}
			} else {
				st.after = 1
			}
			res, err := kernel.Execute(context.Background(), kernel.Request{
				Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: st, Check: check,
				RunID: "holder", LeaseTTL: kernel.MinLeaseTTL, CleanupTimeout: 300 * time.Millisecond,
			})
			if re, ok := errors.AsType[*kernel.RunError](err); !ok || re.Reason != kernel.ReasonLeaseLost || res.Status != store.StatusInterrupted {
				t.Fatalf("holder: result %+v, err %v; want interrupted, lease lost", res, err)
			}
			// The holder recorded its environment, and that it created
			// it, before its turn: the successor finds both.
			rec, err := kernel.ReadRun(t.Context(), mem, "holder")
			if err != nil {
				t.Fatal(err)
			}
			if rec.Run.Status != store.StatusInterrupted || rec.Exact == nil || string(rec.Exact.EnvironmentID) != res.EnvironmentID || !rec.Exact.EnvironmentCreated {
				t.Fatalf("holder record %s %+v; want interrupted, naming environment %s as created", rec.Run.Status, rec.Exact, res.EnvironmentID)
			}
			left, err := p.Get(t.Context(), res.EnvironmentID)
			if err != nil || left == nil {
				t.Fatalf("the holder's environment %s: %v, %v; want it left alive", res.EnvironmentID, left, err)
			}
			created := tc.created || tc.recorded && rec.Exact.EnvironmentCreated
			if tc.destroyFirst {
				if err := left.Destroy(t.Context()); err != nil {
					t.Fatal(err)
				}
			}

			got, err := kernel.Execute(t.Context(), kernel.Request{
				Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: mem, Check: nonEmpty,
				RunID: "successor", LeaseTTL: kernel.MinLeaseTTL,
				Reattach: &kernel.Reattach{Environment: left, Created: created},
			})
			if err != nil || got.Status != store.StatusCompleted || !got.Delivered {
				t.Fatalf("successor: result %+v, err %v; want completed and delivered", got, err)
			}
			// The settled turn is one turn: its text is not the replayed
			// cancelled turn's words followed by the new turn's.
			if got.Text != "working done" {
				t.Errorf("successor text %q; want %q", got.Text, "working done")
			}
			if again := got.EnvironmentID != res.EnvironmentID; again != tc.wantAgain {
				t.Errorf("successor ran in environment %s (holder's %s): ran again %v, want %v", got.EnvironmentID, res.EnvironmentID, again, tc.wantAgain)
			}
			envs, destroyed := p.record()
			wantEnvs := []string{res.EnvironmentID}
			wantDestroyed := slices.Repeat([]string{res.EnvironmentID}, tc.wantDestroyed)
			if tc.wantAgain {
				wantEnvs = append(wantEnvs, got.EnvironmentID)
				wantDestroyed = append(wantDestroyed, got.EnvironmentID)
			}
			slices.Sort(destroyed)
			slices.Sort(wantDestroyed)
			if diff := cmp.Diff(wantEnvs, envs); diff != "" {
				t.Errorf("environments created (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantDestroyed, destroyed, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("environments destroyed (-want +got):\n%s", diff)
			}
			srec, err := kernel.ReadRun(t.Context(), mem, "successor")
			if err != nil {
				t.Fatal(err)
			}
			if string(srec.Exact.EnvironmentID) != got.EnvironmentID || srec.Exact.EnvironmentCreated != (tc.wantAgain || created) {
				t.Errorf("successor record names environment %s created %v; want %s created %v",
					srec.Exact.EnvironmentID, srec.Exact.EnvironmentCreated, got.EnvironmentID, tc.wantAgain || created)
			}
		})
	}
}

// A re-attachment without an environment is refused before anything is
// recorded or dispatched, with an *OptionsError naming the option
// (ErrInvalidOptions), never a panic.
func TestReattachWithoutAnEnvironmentIsRefused(t *testing.T) {
	p := scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"done"}]}]}`), scripted.Options{})
	mem := memory.New(nil)
	res, err := kernel.Execute(t.Context(), kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: mem,
		RunID: "refused", Reattach: &kernel.Reattach{Created: true}})
	oe, ok := errors.AsType[*kernel.OptionsError](err)
	if res != nil || !ok || oe.Field != "Reattach" || !errors.Is(err, kernel.ErrInvalidOptions) {
		t.Fatalf("result %+v, err %v; want an *OptionsError for Reattach", res, err)
	}
	if _, err := mem.GetRun(t.Context(), "refused"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused run was recorded: %v", err)
	}
	if p.Turns() != 0 || p.Creates() != 0 {
		t.Errorf("the refused run dispatched: %d turns, %d creates", p.Turns(), p.Creates())
	}
}

// brokenStream is an environment whose turn stream breaks off: the
// provider's transport failed, and how the turn ended is unknown.
type brokenStream struct{ contract.Environment }

func (e brokenStream) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		yield(contract.EnvironmentEvent{}, errors.New("connection reset by peer"))
	}
}

// The boundary of the re-attach rule: a re-attached turn whose stream
// breaks off is work in doubt (its end is unknown: it may still be going
// on), never a reason to run it again — the run fails with
// ReasonTransport (which a fleet ends interrupted) and no second
// environment is created, no second turn played (spec/runtime.md §3.6:
// work started without a terminal receipt is in doubt, never replaced).
func TestReattachedTurnInDoubtIsNotRunAgain(t *testing.T) {
	p := &turnNamer{Provider: scripted.New(mustScript(t, `{"turns":[{"repeat":true,"steps":[{"text":"done"}]}]}`), scripted.Options{})}
	env, err := p.Create(t.Context(), &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := kernel.Execute(t.Context(), kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: memory.New(nil), Check: nonEmpty,
		Reattach: &kernel.Reattach{Environment: brokenStream{env}, Created: true}})
	if re, ok := errors.AsType[*kernel.RunError](err); !ok || re.Reason != kernel.ReasonTransport || res.Status != store.StatusFailed || res.EnvironmentID != env.ID() {
		t.Fatalf("result %+v, err %v; want failed with reason transport in environment %s", res, err, env.ID())
	}
	if created, _ := p.record(); len(created) != 1 || p.Turns() != 0 {
		t.Errorf("environments %v, %d turns played; want only the re-attached one and none run again", created, p.Turns())
	}
}
