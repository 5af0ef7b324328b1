package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

const endScript = `{"turns":[{"repeat":true,"steps":[{"text":"a "},{"usage":{"inputTokens":9,"outputTokens":2},"mode":"cumulative"},{"text":"note"}]}]}`

// A store that refuses the attempt's end, or hangs it (a black hole),
// for a few seconds just as its turn completed, then answers again
// (storefault.FailingEndsFor, HangingEndsFor around the attempt's kernel
// store; a hang outlasts the kernel's cleanup window): the attempt tries
// its fenced end again while its lease holds and records it once the
// store answers, so the fleet run ends completed with one attempt and the
// turn was played once — not handed back and run again, paying twice
// (issue 14; runtime.md §15: a turn whose terminal was seen is never run
// again).
func TestStoreOutageAtTheEndDoesNotRunTheTurnAgain(t *testing.T) {
	f, _ := openTestFleet(t)
	pv, err := canonjson.Decode([]byte(reattachProfile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		lease time.Duration
		fault func(store.Store) (store.Store, func() int64)
	}{
		{"refused", 6 * time.Second, func(s store.Store) (store.Store, func() int64) { return storefault.FailingEndsFor(s, 2*time.Second) }},
		// Past the kernel's cleanup window (DefaultCleanupTimeout), well
		// within the lease.
		{"hung", 15 * time.Second, func(s store.Store) (store.Store, func() int64) {
			return storefault.HangingEndsFor(s, kernel.DefaultCleanupTimeout+2*time.Second)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			sub, err := f.Submit(ctx, Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
			if err != nil {
				t.Fatal(err)
			}
			prov := newEnvLedger(t, endScript)
			w, err := f.NewWorker(ctx, WorkerOptions{Providers: map[string]contract.Provider{"scripted": prov}, LeaseTTL: tc.lease})
			if err != nil {
				t.Fatal(err)
			}
			var faulted func() int64
			w.kernelStore = func(s store.Store) store.Store {
				var st store.Store
				st, faulted = tc.fault(s)
				return st
			}
			if err := w.execute(ctx, sub.RunID, ""); err != nil {
				t.Fatalf("the attempt: %v", err)
			}
			if faulted() == 0 {
				t.Fatal("the store took every end at once: the outage did not happen")
			}
			r, err := f.Get(ctx, sub.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != store.StatusCompleted || r.Outcome == nil || !r.Outcome.Delivered || len(r.Attempts) != 1 {
				t.Fatalf("run %s, outcome %+v, attempts %+v; want completed and delivered in one attempt", r.Status, r.Outcome, r.Attempts)
			}
			rec, err := kernel.ReadRun(ctx, f.store, r.Attempts[0].RunID)
			if err != nil || rec.Run.Status != store.StatusCompleted {
				t.Fatalf("the attempt's kernel run: %+v, %v; want completed", rec, err)
			}
			if n := prov.Turns(); n != 1 {
				t.Errorf("%d turns played; want 1", n)
			}
			prov.checkDestroyedOnce(t)
		})
	}
}

// An attempt whose turn completed but whose end its store refused for
// good (storefault.FailingEnds): its kernel run reads interrupted, yet its
// recorded events hold the turn's end. Whether its worker handed the run
// back (its end went unrecorded until its lease lapsed) or died before
// recording anything in the fleet run, the next claim adopts that attempt
// — the fleet run ends with its outcome — and never runs the turn again:
// the provider played it once, and the environment it created was
// destroyed once, by the attempt, before its end (issue 14). The
// environment is not kept until the end is recorded: the recorded
// terminal is what settles the turn, and an environment kept for an end
// that never lands would leak.
func TestUnrecordedEndIsAdoptedNotRunAgain(t *testing.T) {
	f, _ := openTestFleet(t)
	pv, err := canonjson.Decode([]byte(reattachProfile))
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.FromValue(pv)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// first runs the attempt whose end goes unrecorded.
		first func(t *testing.T, ctx context.Context, runID string, prov *envLedger)
	}{
		{"its worker handed the run back", func(t *testing.T, ctx context.Context, runID string, prov *envLedger) {
			a, err := f.NewWorker(ctx, WorkerOptions{Providers: map[string]contract.Provider{"scripted": prov}, LeaseTTL: kernel.MinLeaseTTL})
			if err != nil {
				t.Fatal(err)
			}
			a.kernelStore = storefault.FailingEnds
			if err := a.execute(ctx, runID, ""); !errors.Is(err, errHandBack) {
				t.Fatalf("worker A: %v; want the run handed back", err)
			}
		}},
		{"its worker died before recording it", func(t *testing.T, ctx context.Context, runID string, prov *envLedger) {
			deadHolder(t, f, runID)
			res, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: "t", Provider: &pinned{Provider: prov, turn: turnID(runID)},
				Store: storefault.FailingEnds(f.store), Check: kernel.ExpectCheck(""), RunID: attemptID(runID, 1), LeaseTTL: kernel.MinLeaseTTL})
			if re, ok := errors.AsType[*kernel.RunError](err); !ok || re.Reason != kernel.ReasonStoreFailed || res == nil {
				t.Fatalf("the dead worker's attempt: %+v, %v; want its end unrecorded", res, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			sub, err := f.Submit(ctx, Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
			if err != nil {
				t.Fatal(err)
			}
			prov := newEnvLedger(t, endScript)
			tc.first(t, ctx, sub.RunID, prov)
			b, err := f.NewWorker(ctx, WorkerOptions{Providers: map[string]contract.Provider{"scripted": prov}, LeaseTTL: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			// The attempt's lease may not have lapsed yet in the store's
			// eyes: B waits for it, as a snoozed job would.
			for {
				err = b.execute(ctx, sub.RunID, "")
				if _, busy := errors.AsType[*busyError](err); !busy || ctx.Err() != nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				t.Fatalf("worker B: %v", err)
			}
			r, err := f.Get(ctx, sub.RunID)
			if err != nil {
				t.Fatal(err)
			}
			first := attemptID(sub.RunID, 1)
			if r.Status != store.StatusCompleted || r.Outcome == nil || !r.Outcome.Delivered || r.Outcome.Text != "a note" || r.Outcome.RunID != first {
				t.Fatalf("run %s, outcome %+v, attempts %+v; want completed, delivered, %q, from attempt %s", r.Status, r.Outcome, r.Attempts, "a note", first)
			}
			if len(r.Attempts) != 1 || r.Attempts[0].Status != string(store.StatusCompleted) || !strings.Contains(r.Attempts[0].Note, "adopted by "+b.ID()) {
				t.Errorf("attempts %+v; want the one attempt, adopted by %s", r.Attempts, b.ID())
			}
			if n := prov.Turns(); n != 1 {
				t.Errorf("%d turns played; want 1", n)
			}
			if s := b.Stats(); s.Adopted != 1 || s.Started != 0 {
				t.Errorf("worker B stats %+v; want one adoption and no attempt", s)
			}
			// What the run spent is the one turn's usage, exact: its
			// events state it whole, though its kernel run reads
			// interrupted and its ledger only a floor.
			res, err := (&Executor{Fleet: f}).result(ctx, supervise.Work{RunID: "sv", Node: "n"}, r)
			if err != nil {
				t.Fatal(err)
			}
			if u := res.Usage; u == nil || u.InputTokens != ledger.ExactAmount[int64](9) || u.OutputTokens != ledger.ExactAmount[int64](2) {
				t.Errorf("reported usage %+v; want the turn's 9 in / 2 out, exact", u)
			}
			prov.checkDestroyedOnce(t)
		})
	}
}

// Issue 14 (Done-when: "ledger totals equal the sum of run usage"): a
// store that refuses ledger appends for a couple of seconds just as the
// attempt writes its closing ledger entry
// (storefault.FailingClosingLedgerFor around the attempt's kernel store)
// costs the entry nothing: the attempt tries it again while its lease
// holds, so its ledger states what its record says it used, exact (9 in
// / 2 out) — not only the last progress entry, a floor, while the record
// states the whole usage.
func TestStoreOutageAtTheClosingLedgerEntry(t *testing.T) {
	f, _ := openTestFleet(t)
	pv, err := canonjson.Decode([]byte(reattachProfile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sub, err := f.Submit(ctx, Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
	if err != nil {
		t.Fatal(err)
	}
	prov := newEnvLedger(t, endScript)
	w, err := f.NewWorker(ctx, WorkerOptions{Providers: map[string]contract.Provider{"scripted": prov}, LeaseTTL: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var refused func() int64
	w.kernelStore = func(s store.Store) store.Store {
		var st store.Store
		st, refused = storefault.FailingClosingLedgerFor(s, 2*time.Second)
		return st
	}
	if err := w.execute(ctx, sub.RunID, ""); err != nil {
		t.Fatalf("the attempt: %v", err)
	}
	if refused() == 0 {
		t.Fatal("the store took the closing entry at once: the outage did not happen")
	}
	r, err := f.Get(ctx, sub.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.StatusCompleted || len(r.Attempts) != 1 {
		t.Fatalf("run %s, attempts %+v; want completed in one attempt", r.Status, r.Attempts)
	}
	rec, err := kernel.ReadRun(ctx, f.store, r.Attempts[0].RunID)
	if err != nil || rec.Exact == nil || rec.Exact.Usage == nil {
		t.Fatalf("the attempt's record: %+v, %v", rec, err)
	}
	want := ledger.ExactAmount[int64]
	if u := rec.Exact.Usage.Usage; u.InputTokens != want(9) || u.OutputTokens != want(2) {
		t.Fatalf("the record's usage %+v; want 9 in / 2 out, exact", u)
	}
	if s := rec.Spend; s.InputTokens != want(9) || s.OutputTokens != want(2) {
		t.Errorf("the ledger states %+v spent; want what the record says, 9 in / 2 out, exact", s)
	}
	entries, err := f.store.Ledger(ctx, r.Attempts[0].RunID)
	if err != nil || len(entries) == 0 {
		t.Fatalf("ledger %+v, %v", entries, err)
	}
	if k, _ := entries[len(entries)-1].Body.Get("kind"); k.Str() != kernel.LedgerTurn {
		t.Errorf("the ledger's last entry is %s; want the closing %q entry", canonjson.Marshal(entries[len(entries)-1].Body), kernel.LedgerTurn)
	}
}
