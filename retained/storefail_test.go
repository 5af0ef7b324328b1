package retained_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store/postgres"
)

// RES-05, behaviour of runtime.md §3.8 with a store that stops answering
// between the admission records (PostgreSQL black-holed, SQLite locked
// elsewhere): the start fails in bounded time, the hook never sees an
// admission whose record is not durable, nothing is dispatched before
// the environment record is, and once the store answers again
// RecoverRetainedRun tells the truth — not_found when no intent was
// admitted, unverifiable when an environment may have been created under
// the key without its record, and never not_found for a run whose turn
// was dispatched.
func TestStartWhenStoreStopsAnsweringBetweenRecords(t *testing.T) {
	// The caller's deadline; the start may add the bounded read of its
	// environment cleanup (30 s) and slack for a loaded machine.
	const deadline = 4 * time.Second
	const bound = deadline + 30*time.Second + 20*time.Second
	stores := storefault.Stores(storefault.BlackHole, storefault.Locked)
	// cut is the admission whose hook makes the store stop answering:
	// "" before the start, or after the intent or environment record.
	for _, sk := range stores {
		for _, cut := range []retained.AdmissionKind{"", retained.AdmissionIntent, retained.AdmissionEnvironment} {
			name := "after-" + string(cut)
			if cut == "" {
				name = "before-intent"
			}
			t.Run(string(sk.Fault)+"/"+name, func(t *testing.T) {
				st, fail, restore := sk.Open(t)
				p := scripted.New(script(0), scripted.Options{})
				rec := &recorder{check: func(ctx context.Context, a retained.Admission) error {
					if a.Kind == cut {
						fail()
					}
					return nil
				}}
				if cut == "" {
					fail()
				}
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				key, turn := "key-store-"+name, "turn-1"
				start := time.Now()
				run, err := retained.StartRetainedRun(ctx, startOptions(p, st, key, turn, rec.hook))
				took := time.Since(start)
				restore()
				if err == nil {
					t.Fatalf("the start succeeded (%+v) while its store did not answer", run.ControlRef())
				}
				if took > bound {
					t.Errorf("the start returned after %v; want within %v", took, bound)
				}
				_, id, err := retained.DeriveIdentity(key, turn)
				if err != nil {
					t.Fatal(err)
				}
				rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
				defer rcancel()
				// Every admission the hook saw is durable.
				seen := rec.kinds()
				r, lerr := retained.Load(rctx, st, id)
				for _, k := range seen {
					switch {
					case lerr != nil:
						t.Errorf("the hook saw %s but no record loads: %v", k, lerr)
					case k == retained.AdmissionEnvironment && r.Environment == nil,
						k == retained.AdmissionDispatched && r.Dispatched == nil:
						t.Errorf("the hook saw %s but the record lacks it: %+v", k, r)
					}
				}
				if slices.Contains(seen, retained.AdmissionDispatched) {
					t.Errorf("the hook saw dispatched although the store stopped answering before it (%v)", seen)
				}
				switch cut {
				case "":
					if p.Creates() != 0 || p.Turns() != 0 || len(seen) != 0 {
						t.Errorf("creates %d, turns %d, admissions %v before the intent was durable", p.Creates(), p.Turns(), seen)
					}
				case retained.AdmissionIntent:
					if p.Turns() != 0 {
						t.Errorf("%d turns dispatched before the environment record was durable", p.Turns())
					}
				}
				rv, err := retained.RecoverRetainedRun(rctx, retained.RecoverOptions{Provider: p.Reconnect(), Store: st, RunID: id,
					Turn: &contract.TurnInput{TurnID: &turn, Prompt: ptr("do the long job")}})
				if err != nil {
					t.Fatalf("recover once the store answers: %v", err)
				}
				switch cut {
				case "":
					if rv.Outcome != retained.NotFound {
						t.Errorf("recovery %+v; want not_found: no environment was admitted", rv)
					}
				case retained.AdmissionIntent:
					// The provider may hold the environment it created under
					// the key (RES-05): without the create input to replay,
					// recovery cannot say nothing is left.
					if p.Creates() > 0 && rv.Outcome != retained.Unverifiable {
						t.Errorf("recovery %+v after %d creates; want unverifiable: an environment may exist under the key", rv, p.Creates())
					}
				case retained.AdmissionEnvironment:
					if rv.Outcome == retained.NotFound {
						t.Errorf("recovery %+v; a run whose environment was admitted and turn dispatched is not not_found", rv)
					}
					if rv.Outcome == retained.Recovered {
						if _, err := rv.Run.Result(rctx); err != nil {
							t.Errorf("the recovered run's result: %v", err)
						}
					}
				}
			})
		}
	}
}

// A caller that set no deadline is not held forever by a store that
// stops answering after the intent was admitted: each admission record's
// store call is bounded (30 s), and so is the read that decides whether
// to destroy the environment it made (30 s).
func TestStartWithoutDeadlineWhenStoreHangs(t *testing.T) {
	const bound = 60*time.Second + 30*time.Second
	dsn, proxy := pgtest.ProxiedSchema(t)
	st, err := postgres.Open(t.Context(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p := scripted.New(script(0), scripted.Options{})
	rec := &recorder{check: func(ctx context.Context, a retained.Admission) error {
		if a.Kind == retained.AdmissionIntent {
			proxy.BlackHole()
		}
		return nil
	}}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := retained.StartRetainedRun(context.Background(), startOptions(p, st, "key-no-deadline", "turn-1", rec.hook))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the start succeeded while its store did not answer")
		}
		if took := time.Since(start); took > bound {
			t.Errorf("the start returned after %v; want within %v", took, bound)
		}
	case <-time.After(bound + time.Minute):
		t.Fatalf("the start did not return %v after its store stopped answering", bound+time.Minute)
	}
	proxy.Restore()
	if p.Turns() != 0 {
		t.Errorf("%d turns dispatched before the environment record was durable", p.Turns())
	}
}
