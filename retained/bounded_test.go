package retained_test

import (
	"context"
	"errors"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/internal/storetest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// RES-05, RES-06 (runtime.md §3.8: the handle's status, events, result,
// cancel, reconnect and recovery): a started run's handle whose store
// stops answering — PostgreSQL black-holed or resetting its connections,
// SQLite whose write lock another connection holds — answers every
// method within the store bound (30 s) for a caller that set no deadline
// at all, and a store that failed is a *kernel.StoreError naming the run
// and the call, never an untyped error or a hang. A locked SQLite store
// still reads, so the methods that only read (re-attaching, and settling
// a run whose end is recorded already) succeed on it; the status it
// reports is the provider's truth even when its record cannot be made.
func TestHandleStoreCallsAreBounded(t *testing.T) {
	// The store bound plus slack for a machine shared by many builds.
	const bound = 30*time.Second + 30*time.Second
	for _, sk := range storefault.Stores() {
		t.Run(string(sk.Fault), func(t *testing.T) {
			t.Parallel()
			st, fail, restore := sk.Open(t)
			w := &wrapped{Provider: scripted.New(script(0), scripted.Options{})}
			ctx := testCtx(t)
			run := finished(t, ctx, w, st, "key-bounded")
			ticket := run.ControlRef()
			readsFail := sk.Fault != storefault.Locked
			fail()
			defer restore()

			type call struct {
				name string
				// op is the store call that fails, "" when the method reads
				// and the store still reads (or makes no store call).
				op string
				do func(ctx context.Context) error
			}
			// A store that still reads fails only writes: the run's end is
			// recorded already (finished settled it), so settling it again
			// only reads.
			readOp := func(op string) string {
				if readsFail {
					return op
				}
				return ""
			}
			calls := []call{
				{"status", readOp("end"), func(ctx context.Context) error {
					snap, err := run.Status(ctx)
					if !snap.Terminal() {
						t.Errorf("status: snapshot %+v; want the provider's terminal status although its record failed", snap)
					}
					return err
				}},
				{"status-wait", readOp("end"), func(ctx context.Context) error {
					_, err := run.StatusWait(ctx, time.Second)
					return err
				}},
				{"result", readOp("end"), func(ctx context.Context) error {
					res, err := run.Result(ctx)
					if res == nil {
						t.Errorf("result: none; want the run's result with the store's failure")
					}
					return err
				}},
				{"cancel", "cancel", func(ctx context.Context) error {
					_, err := run.Cancel(ctx, retained.CancelRequest{OperationID: "op-bounded"})
					return err
				}},
				{"events", "", func(ctx context.Context) error {
					for _, err := range run.Events(ctx, retained.Cursor{}) {
						if err != nil {
							return err
						}
					}
					return nil
				}},
				{"reconnect", readOp("read"), func(ctx context.Context) error {
					_, err := retained.ReconnectRetainedRun(ctx, retained.ReconnectOptions{Provider: w, Store: st, Ref: ticket})
					return err
				}},
				{"attach", readOp("read"), func(ctx context.Context) error {
					_, err := retained.Attach(ctx, w, st, ticket.Record)
					return err
				}},
				{"recover", readOp("read"), func(ctx context.Context) error {
					rv, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: w, Store: st, RunID: ticket.Record})
					if err == nil && rv.Outcome != retained.Recovered {
						t.Errorf("recover: %+v; want the dispatched run re-attached", rv)
					}
					return err
				}},
			}
			type answer struct {
				err  error
				took time.Duration
			}
			answers := make([]answer, len(calls))
			var wg sync.WaitGroup
			for i, c := range calls {
				wg.Go(func() {
					start := time.Now()
					err := c.do(context.Background())
					answers[i] = answer{err, time.Since(start)}
				})
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(bound + time.Minute):
				t.Fatalf("the handle's methods did not all return %v after the store stopped answering", bound+time.Minute)
			}
			for i, c := range calls {
				a := answers[i]
				if a.took > bound {
					t.Errorf("%s returned after %v; want within %v", c.name, a.took, bound)
				}
				se, typed := errors.AsType[*kernel.StoreError](a.err)
				switch {
				case c.op == "" && a.err != nil:
					t.Errorf("%s: %v; want success (it makes no store call the fault stops)", c.name, a.err)
				case c.op != "" && (!typed || se.Op != c.op || se.RunID != ticket.Record):
					t.Errorf("%s: err %T %v; want a *kernel.StoreError (%s) of run %s", c.name, a.err, a.err, c.op, ticket.Record)
				}
			}
			if acks := w.acks(); len(acks) != 0 {
				t.Errorf("the provider was asked to cancel (%v) although the operation was never bound", acks)
			}
		})
	}
}

// hangingEvents makes a session's event stream yield what the provider
// sent and then never end, ignoring its context, until the test ends.
func hangingEvents(t *testing.T) func(iter.Seq2[contract.EnvironmentEvent, error]) iter.Seq2[contract.EnvironmentEvent, error] {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return func(in iter.Seq2[contract.EnvironmentEvent, error]) iter.Seq2[contract.EnvironmentEvent, error] {
		return func(yield func(contract.EnvironmentEvent, error) bool) {
			for ev, err := range in {
				if !yield(ev, err) {
					return
				}
			}
			<-release
		}
	}
}

// quietEvents makes a session's event stream end without a word when its
// context ends, before the run ended: a stream that returns is not the
// run's end.
//
// The context is read when a stream starts (ctx): a test sets the
// caller's context once its run has finished, so that a slow run on a
// loaded machine does not spend the caller's wait before the events are
// read.
func quietEvents(ctx func() context.Context) func(iter.Seq2[contract.EnvironmentEvent, error]) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(in iter.Seq2[contract.EnvironmentEvent, error]) iter.Seq2[contract.EnvironmentEvent, error] {
		return func(yield func(contract.EnvironmentEvent, error) bool) {
			done := ctx().Done()
			for ev, err := range in {
				if !yield(ev, err) {
					return
				}
			}
			<-done
		}
	}
}

// Behaviour 59 (events(after) of runtime.md §3.8) with a provider whose
// stream never ends: the events end when the caller's context does —
// within EventsGrace, never later — with an *EventsStoppedError that
// unwraps to the context's error and names the cursor of the last event
// delivered; resuming from it delivers nothing twice. A stream that ends
// quietly once the context ended is no end of the run either, and a
// reader that stops early is not held by the stream.
func TestEventsEndWhenTheCallerStops(t *testing.T) {
	const wait = 300 * time.Millisecond
	// The grace plus slack for a loaded machine.
	const bound = wait + retained.EventsGrace + 5*time.Second
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		w := &wrapped{Provider: scripted.New(script(0), scripted.Options{}), events: hangingEvents(t)}
		run := finished(t, ctx, w, open(t), "key-hanging")

		stop, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		start := time.Now()
		got, err := collect(t, stop, run, retained.Cursor{})
		if took := time.Since(start); took > bound {
			t.Errorf("the events ended %v after they began; want within %v", took, bound)
		}
		stopped, ok := errors.AsType[*retained.EventsStoppedError](err)
		if !ok || !errors.Is(err, context.DeadlineExceeded) || len(got) == 0 {
			t.Fatalf("%d events, then %T %v; want the run's events, then an *EventsStoppedError of the deadline", len(got), err, err)
		}
		if want := got[len(got)-1].After(); stopped.After != want {
			t.Errorf("stopped after %+v; want the last event delivered, %+v", stopped.After, want)
		}

		// Resuming from the cursor delivers nothing twice: every event
		// was delivered, so the stream (which never ends) stops again at
		// the same place.
		stop2, cancel2 := context.WithTimeout(ctx, wait)
		defer cancel2()
		more, err := collect(t, stop2, run, stopped.After)
		again, ok := errors.AsType[*retained.EventsStoppedError](err)
		if !ok || len(more) != 0 || again.After != stopped.After {
			t.Errorf("resumed: %d events, then %v; want none, then a stop at %+v", len(more), err, stopped.After)
		}

		// A reader that stops early is not held by the stream.
		start = time.Now()
		for range run.Events(ctx, retained.Cursor{}) {
			break
		}
		if took := time.Since(start); took > bound {
			t.Errorf("breaking out of the events took %v; want within %v", took, bound)
		}
	})
	t.Run("quiet end", func(t *testing.T) {
		ctx := testCtx(t)
		// While the run runs, its stream ends as a plain one does; the
		// caller's wait starts once it finished.
		var mu sync.Mutex
		ended, end := context.WithCancel(ctx)
		end()
		current := ended
		w := &wrapped{Provider: scripted.New(script(0), scripted.Options{}), events: quietEvents(func() context.Context {
			mu.Lock()
			defer mu.Unlock()
			return current
		})}
		run := finished(t, ctx, w, storetest.SQLite(t)(t), "key-quiet")
		stop, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		mu.Lock()
		current = stop
		mu.Unlock()
		got, err := collect(t, stop, run, retained.Cursor{})
		stopped, ok := errors.AsType[*retained.EventsStoppedError](err)
		if !ok || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%d events, then %v; want an *EventsStoppedError: a stream that ended with the caller's context is not the run's end", len(got), err)
		}
		if len(got) == 0 {
			t.Fatalf("no events before the stop %v; want the run's events first", err)
		}
		if diff := cmp.Diff(got[len(got)-1].After(), stopped.After); diff != "" {
			t.Errorf("stop cursor (-want +got):\n%s", diff)
		}
	})
}
