package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

// Clock is a controllable time source for the cases.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Open returns a fresh, empty store using clock for "now". The adapter
// closes it when the test ends (t.Cleanup).
type Open func(t *testing.T, clock func() time.Time) store.Store

// Run runs every contract case against stores from open.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open Open)
	}{
		{"CreateGet", testCreateGet},
		{"UpdateCompareAndSet", testUpdateCAS},
		{"TerminalStatusIsFinal", testTerminal},
		{"LapsedLeaseIsInterrupted", testLease},
		{"ListNewestFirst", testList},
		{"AppendAndReplay", testAppendReplay},
		{"AppendIsAllOrNothing", testAppendAtomic},
		{"ConcurrentAppendsStayContiguous", testConcurrentAppend},
		{"ConcurrentAppendsAcrossRunsFailAlone", testConcurrentAppendsFailAlone},
		{"Ledger", testLedger},
		{"DeleteEndedRun", testDeleteRun},
		{"IdempotencyClaim", testIdempotency},
		{"IdempotencyListAndDelete", testIdempotencyListDelete},
		{"RefusesNonCanonicalJSON", testNonCanonical},
		{"RefusesTextNoStoreHolds", testBadText},
		{"FencedWritesNeedALiveLease", testFenceLapsed},
		{"FencedWritesNeedTheGeneration", testFenceSuperseded},
		{"FencedWritesStopAtTheEnd", testFenceEnded},
		{"FencedUpdateRacesTheLease", testFenceRace},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

func doc(s string) canonjson.Value {
	v, err := canonjson.Decode([]byte(s))
	if err != nil {
		panic(err)
	}
	return v
}

// fence is the claim of the first lease holder of run id.
func fence(id string) store.Fence { return store.Fence{RunID: id, Generation: 1} }

func newRun(id string) store.Run {
	return store.Run{ID: id, Kind: "execute", Status: store.StatusRunning, Doc: doc(`{"task":"write a note"}`)}
}

func testCreateGet(t *testing.T, open Open) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, clock.Now)
	created, err := s.CreateRun(ctx, newRun("r1"))
	if err != nil {
		t.Fatal(err)
	}
	if created.Revision != 1 || !created.CreatedAt.Equal(clock.Now()) {
		t.Errorf("created %+v", created)
	}
	got, err := s.GetRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "r1" || got.Kind != "execute" || got.Status != store.StatusRunning || !canonjson.Equal(got.Doc, newRun("r1").Doc) {
		t.Errorf("got %+v", got)
	}
	if _, err := s.CreateRun(ctx, newRun("r1")); !errors.Is(err, store.ErrExists) {
		t.Errorf("duplicate create: %v", err)
	}
	if _, err := s.GetRun(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing run: %v", err)
	}
	if _, err := s.CreateRun(ctx, store.Run{ID: "x", Kind: "execute", Status: "weird"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bad status: %v", err)
	}
}

func testUpdateCAS(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t, NewClock().Now)
	if _, err := s.CreateRun(ctx, store.Run{ID: "r", Kind: "execute", Status: store.StatusRunning, Doc: doc(`{"n":0}`)}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 25
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, err := s.UpdateRun(ctx, "r", func(r *store.Run) error {
					n, _ := r.Doc.Get("n")
					r.Doc = doc(fmt.Sprintf(`{"n":%d}`, int(n.Float())+1))
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, err := s.GetRun(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := got.Doc.Get("n"); int(n.Float()) != writers*each || got.Revision != writers*each+1 {
		t.Errorf("lost updates: n=%v revision=%d", n.Float(), got.Revision)
	}
	if _, err := s.UpdateRun(ctx, "r", func(r *store.Run) error { r.Kind = "other"; return nil }); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("changed kind: %v", err)
	}
	sentinel := errors.New("refused by fn")
	if _, err := s.UpdateRun(ctx, "r", func(*store.Run) error { return sentinel }); !errors.Is(err, sentinel) {
		t.Errorf("fn error: %v", err)
	}
}

func testTerminal(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t, NewClock().Now)
	s.CreateRun(ctx, newRun("r"))
	if _, err := s.UpdateRun(ctx, "r", func(r *store.Run) error { r.Status = store.StatusFailed; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateRun(ctx, "r", func(r *store.Run) error { r.Status = store.StatusCompleted; return nil }); !errors.Is(err, store.ErrTerminal) {
		t.Errorf("failed run became completed: %v", err)
	}
	// A terminal run's document may still be annotated.
	if _, err := s.UpdateRun(ctx, "r", func(r *store.Run) error { r.Doc = doc(`{"note":"after"}`); return nil }); err != nil {
		t.Errorf("annotating a terminal run: %v", err)
	}
}

func testLease(t *testing.T, open Open) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, clock.Now)
	r := newRun("r")
	r.Owner, r.LeaseUntil = "proc-1", clock.Now().Add(10*time.Second)
	s.CreateRun(ctx, r)
	if got, _ := s.GetRun(ctx, "r"); got.Status != store.StatusRunning {
		t.Fatalf("status %s within the lease", got.Status)
	}
	clock.Advance(11 * time.Second)
	if got, _ := s.GetRun(ctx, "r"); got.Status != store.StatusInterrupted {
		t.Errorf("status %s after the lease lapsed, want interrupted", got.Status)
	}
	runs, _ := s.ListRuns(ctx, store.ListOptions{Status: store.StatusInterrupted})
	if len(runs) != 1 {
		t.Errorf("interrupted runs listed: %d", len(runs))
	}
	// The owner cannot quietly complete a run it lost: the status it
	// starts from is interrupted.
	if _, err := s.UpdateRun(ctx, "r", func(r *store.Run) error { r.Status = store.StatusCompleted; return nil }); !errors.Is(err, store.ErrTerminal) {
		t.Errorf("completing an interrupted run: %v", err)
	}
}

func testList(t *testing.T, open Open) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, clock.Now)
	for i := range 5 {
		s.CreateRun(ctx, newRun(fmt.Sprint("r", i)))
		clock.Advance(time.Second)
	}
	runs, err := s.ListRuns(ctx, store.ListOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].ID != "r4" || runs[2].ID != "r2" {
		t.Errorf("list %v", ids(runs))
	}

	// Kind narrows the list, alone and with a status, limit applied
	// after the filter.
	for i := range 3 {
		r := newRun(fmt.Sprint("d", i))
		r.Kind = "delegation"
		if i == 0 {
			r.Status = store.StatusCompleted
		}
		if _, err := s.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	for _, tc := range []struct {
		opts store.ListOptions
		want []string
	}{
		{store.ListOptions{Kind: "delegation"}, []string{"d2", "d1", "d0"}},
		{store.ListOptions{Kind: "delegation", Limit: 2}, []string{"d2", "d1"}},
		{store.ListOptions{Kind: "delegation", Status: store.StatusRunning}, []string{"d2", "d1"}},
		{store.ListOptions{Kind: "delegation", Status: store.StatusCompleted}, []string{"d0"}},
		{store.ListOptions{Kind: "execute", Limit: 1}, []string{"r4"}},
		{store.ListOptions{Kind: "nothing"}, nil},
	} {
		runs, err := s.ListRuns(ctx, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(runs); !slices.Equal(got, tc.want) {
			t.Errorf("ListRuns(%+v) = %v, want %v", tc.opts, got, tc.want)
		}
	}
}

func ids(runs []store.Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func events(n int, prefix string) []store.NewEvent {
	out := make([]store.NewEvent, n)
	for i := range out {
		out[i] = store.NewEvent{ID: fmt.Sprintf("%s%d", prefix, i), Type: "message.delta", Time: time.Unix(1_800_000_000, 0),
			Body: doc(fmt.Sprintf(`{"type":"message.delta","text":"part %d"}`, i))}
	}
	return out
}

func testAppendReplay(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t, NewClock().Now)
	s.CreateRun(ctx, newRun("r"))
	first, err := s.AppendEvents(ctx, fence("r"), events(3, "a"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.AppendEvents(ctx, fence("r"), events(2, "b"))
	if err != nil {
		t.Fatal(err)
	}
	all := append(first, second...)
	for i, e := range all {
		if e.Sequence != int64(i+1) || e.Cursor != store.CursorFor(int64(i+1)) {
			t.Fatalf("event %d: seq %d cursor %s", i, e.Sequence, e.Cursor)
		}
	}
	replay, err := s.Events(ctx, "r", "", 0)
	if err != nil || len(replay) != 5 {
		t.Fatalf("replay %d, %v", len(replay), err)
	}
	for i := range replay {
		if replay[i].ID != all[i].ID || replay[i].Type != "message.delta" || !canonjson.Equal(replay[i].Body, all[i].Body) || !replay[i].Time.Equal(all[i].Time) {
			t.Errorf("replayed event %d differs: %+v", i, replay[i])
		}
	}
	after, _ := s.Events(ctx, "r", first[2].Cursor, 0)
	if len(after) != 2 || after[0].ID != "b0" {
		t.Errorf("after cursor: %v", after)
	}
	limited, _ := s.Events(ctx, "r", first[0].Cursor, 2)
	if len(limited) != 2 || limited[0].Sequence != 2 {
		t.Errorf("limited: %v", limited)
	}
	if end, _ := s.Events(ctx, "r", second[1].Cursor, 0); len(end) != 0 {
		t.Errorf("after the last cursor: %v", end)
	}
	if _, err := s.Events(ctx, "r", "garbage", 0); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bad cursor: %v", err)
	}
	if _, err := s.AppendEvents(ctx, fence("missing"), events(1, "x")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("append to a missing run: %v", err)
	}
}

func testAppendAtomic(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t, NewClock().Now)
	s.CreateRun(ctx, newRun("r"))
	s.AppendEvents(ctx, fence("r"), events(2, "a"))
	batch := append(events(2, "c"), events(1, "a")...) // a0 already exists
	if _, err := s.AppendEvents(ctx, fence("r"), batch); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate event id: %v", err)
	}
	got, _ := s.Events(ctx, "r", "", 0)
	if len(got) != 2 {
		t.Errorf("a refused append left %d events", len(got))
	}
}

func testConcurrentAppend(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t, NewClock().Now)
	s.CreateRun(ctx, newRun("r"))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				if _, err := s.AppendEvents(ctx, fence("r"), events(2, fmt.Sprintf("w%d-%d-", w, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, _ := s.Events(ctx, "r", "", 0)
	if len(got) != 160 {
		t.Fatalf("%d events", len(got))
	}
	for i, e := range got {
		if e.Sequence != int64(i+1) {
			t.Fatalf("sequence gap at %d: %d", i, e.Sequence)
		}
	}
}

func testLedger(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t, NewClock().Now)
	s.CreateRun(ctx, newRun("r"))
	at := time.Unix(1_800_000_000, 0).UTC()
	if _, err := s.AppendLedger(ctx, fence("r"), []canonjson.Value{doc(`{"tokens":10}`), doc(`{"tokens":null}`)}, at); err != nil {
		t.Fatal(err)
	}
	got, err := s.Ledger(ctx, "r")
	if err != nil || len(got) != 2 || got[1].Sequence != 2 || !got[0].Time.Equal(at) {
		t.Fatalf("ledger %+v, %v", got, err)
	}
	if v, _ := got[1].Body.Get("tokens"); v.Kind() != canonjson.Null {
		t.Error("an unknown (null) ledger value came back as something else")
	}
}

// testDeleteRun: an ended run goes with its events and ledger; a live
// one is refused and kept; a lapsed lease counts as ended; a missing run
// is not found; other runs are untouched.
func testDeleteRun(t *testing.T, open Open) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, clock.Now)
	for _, id := range []string{"ended", "live", "lapsed", "other"} {
		r := newRun(id)
		if id == "lapsed" {
			r.Owner, r.LeaseUntil = "w", clock.Now().Add(time.Second)
		}
		if _, err := s.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AppendEvents(ctx, fence("ended"), []store.NewEvent{{ID: "e1", Type: "run.started", Time: clock.Now(), Body: doc(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendLedger(ctx, fence("ended"), []canonjson.Value{doc(`{"tokens":1}`)}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateRun(ctx, "ended", func(r *store.Run) error { r.Status = store.StatusCompleted; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx, "live"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("deleting a running run: %v, want ErrInvalid", err)
	}
	if _, err := s.GetRun(ctx, "live"); err != nil {
		t.Errorf("the refused deletion removed the run: %v", err)
	}
	if err := s.DeleteRun(ctx, "ended"); err != nil {
		t.Fatalf("deleting an ended run: %v", err)
	}
	if _, err := s.GetRun(ctx, "ended"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after the deletion: %v, want ErrNotFound", err)
	}
	if evs, err := s.Events(ctx, "ended", "", 10); err != nil && !errors.Is(err, store.ErrNotFound) || len(evs) != 0 {
		t.Errorf("events after the deletion: %v %v", evs, err)
	}
	if led, err := s.Ledger(ctx, "ended"); err != nil && !errors.Is(err, store.ErrNotFound) || len(led) != 0 {
		t.Errorf("ledger after the deletion: %v %v", led, err)
	}
	if err := s.DeleteRun(ctx, "ended"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting it again: %v, want ErrNotFound", err)
	}
	clock.Advance(2 * time.Second)
	if err := s.DeleteRun(ctx, "lapsed"); err != nil {
		t.Errorf("deleting a run whose lease lapsed (interrupted): %v", err)
	}
	if runs, err := s.ListRuns(ctx, store.ListOptions{}); err != nil || len(runs) != 2 {
		t.Errorf("left: %d runs (%v), want live and other", len(runs), err)
	}
	// The id is free again.
	if _, err := s.CreateRun(ctx, newRun("ended")); err != nil {
		t.Errorf("re-creating a deleted id: %v", err)
	}
}

func testIdempotency(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t, NewClock().Now)
	d1 := "sha256:" + fmt.Sprintf("%064x", 1)
	d2 := "sha256:" + fmt.Sprintf("%064x", 2)
	rec, created, err := s.ClaimIdempotency(ctx, store.Idempotency{Scope: "create", Key: "k", RequestDigest: d1, Result: doc(`{"env":"e1"}`)})
	if err != nil || !created || rec.RequestDigest != d1 {
		t.Fatalf("first claim %+v %v %v", rec, created, err)
	}
	again, created, err := s.ClaimIdempotency(ctx, store.Idempotency{Scope: "create", Key: "k", RequestDigest: d2, Result: doc(`{"env":"e2"}`)})
	if err != nil || created || again.RequestDigest != d1 {
		t.Fatalf("second claim must return the first record: %+v %v %v", again, created, err)
	}
	if env, _ := again.Result.Get("env"); env.Str() != "e1" {
		t.Errorf("result %s", canonjson.Marshal(again.Result))
	}
	if _, created, _ := s.ClaimIdempotency(ctx, store.Idempotency{Scope: "fork", Key: "k", RequestDigest: d2}); !created {
		t.Error("scopes are not independent")
	}
	if _, _, err := s.ClaimIdempotency(ctx, store.Idempotency{Scope: "x", Key: "k", RequestDigest: "nope"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bad digest: %v", err)
	}
	// Concurrent claims of one key: exactly one creates.
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, created, err := s.ClaimIdempotency(ctx, store.Idempotency{Scope: "race", Key: "k", RequestDigest: d1})
			if err != nil {
				t.Error(err)
			}
			if created {
				mu.Lock()
				winners++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if winners != 1 {
		t.Errorf("%d concurrent claims created the record", winners)
	}
}

func testNonCanonical(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t, NewClock().Now)
	bad := canonjson.ObjectValue([]canonjson.Member{{Name: "x", Value: canonjson.StringValue(canonjson.FromUTF16([]uint16{0xD800}))}})
	r := newRun("r")
	r.Doc = bad
	if _, err := s.CreateRun(ctx, r); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("run doc with a lone surrogate: %v", err)
	}
	s.CreateRun(ctx, newRun("ok"))
	if _, err := s.AppendEvents(ctx, fence("ok"), []store.NewEvent{{ID: "e", Type: "t", Body: bad}}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("event body with a lone surrogate: %v", err)
	}
}

// leased is a running run whose lease lapses at until.
func leased(id string, until time.Time) store.Run {
	r := newRun(id)
	r.Owner, r.LeaseUntil = "host/1", until
	return r
}

// wantFence fails t unless err is a *FenceError with the reason.
func wantFence(t *testing.T, what string, err error, reason string) {
	t.Helper()
	fe, ok := errors.AsType[*store.FenceError](err)
	if !ok || !errors.Is(err, store.ErrFenced) || fe.Reason != reason {
		t.Errorf("%s: got %v, want a fence error (%s)", what, err, reason)
	}
}

// After the lease lapses, the old holder's appends, ledger entries and
// status changes are all refused, and nothing of them is stored; readers
// see the run interrupted with everything recorded before the lapse.
func testFenceLapsed(t *testing.T, open Open) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, clock.Now)
	created, err := s.CreateRun(ctx, leased("r", clock.Now().Add(10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	if created.Generation != 1 {
		t.Fatalf("a new run's generation is %d, want 1", created.Generation)
	}
	f := created.Fence()
	if _, err := s.AppendEvents(ctx, f, events(2, "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendLedger(ctx, f, []canonjson.Value{doc(`{"usage":1}`)}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateFenced(ctx, f, func(r *store.Run) error { r.LeaseUntil = clock.Now().Add(10 * time.Second); return nil }); err != nil {
		t.Fatalf("renewal: %v", err)
	}
	clock.Advance(10 * time.Second) // exactly at the lease's end: still held
	if _, err := s.AppendEvents(ctx, f, events(1, "b")); err != nil {
		t.Fatalf("append at the lease's last instant: %v", err)
	}
	clock.Advance(time.Nanosecond)
	_, err = s.AppendEvents(ctx, f, events(1, "c"))
	wantFence(t, "append after the lapse", err, store.FenceLapsed)
	_, err = s.AppendLedger(ctx, f, []canonjson.Value{doc(`{"usage":2}`)}, clock.Now())
	wantFence(t, "ledger after the lapse", err, store.FenceLapsed)
	_, err = s.UpdateFenced(ctx, f, func(r *store.Run) error { r.Status = store.StatusCompleted; return nil })
	wantFence(t, "ending after the lapse", err, store.FenceLapsed)
	_, err = s.UpdateFenced(ctx, f, func(r *store.Run) error { r.LeaseUntil = clock.Now().Add(time.Hour); return nil })
	wantFence(t, "renewing after the lapse", err, store.FenceLapsed)

	got, err := s.GetRun(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.StatusInterrupted {
		t.Errorf("status %s, want interrupted", got.Status)
	}
	evs, _ := s.Events(ctx, "r", "", 0)
	led, _ := s.Ledger(ctx, "r")
	if len(evs) != 3 || len(led) != 1 {
		t.Errorf("%d events and %d ledger entries, want the 3 and 1 written before the lapse", len(evs), len(led))
	}
	// Anyone may record the interruption; the old holder still cannot write.
	if _, err := s.UpdateRun(ctx, "r", func(r *store.Run) error { r.Status = store.StatusInterrupted; return nil }); err != nil {
		t.Fatalf("marking interrupted: %v", err)
	}
	_, err = s.AppendEvents(ctx, f, events(1, "d"))
	wantFence(t, "append after the run was marked interrupted", err, store.FenceLapsed)
}

// A run taken over by a newer generation refuses the older holder.
func testFenceSuperseded(t *testing.T, open Open) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, clock.Now)
	created, err := s.CreateRun(ctx, leased("r2", clock.Now().Add(time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	old := created.Fence()
	taken, err := s.UpdateRun(ctx, "r2", func(r *store.Run) error { r.Generation++; r.Owner = "host/2"; return nil })
	if err != nil || taken.Generation != 2 {
		t.Fatalf("take over: %v, generation %d", err, taken.Generation)
	}
	_, err = s.AppendEvents(ctx, old, events(1, "a"))
	wantFence(t, "old holder's append", err, store.FenceSuperseded)
	_, err = s.AppendLedger(ctx, old, []canonjson.Value{doc(`{}`)}, clock.Now())
	wantFence(t, "old holder's ledger entry", err, store.FenceSuperseded)
	_, err = s.UpdateFenced(ctx, old, func(r *store.Run) error { r.Status = store.StatusCompleted; return nil })
	wantFence(t, "old holder's ending", err, store.FenceSuperseded)
	if _, err := s.AppendEvents(ctx, taken.Fence(), events(1, "b")); err != nil {
		t.Errorf("new holder's append: %v", err)
	}
	if _, err := s.UpdateRun(ctx, "r2", func(r *store.Run) error { r.Generation = 1; return nil }); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a generation went back: %v", err)
	}
}

// Once the holder ended the run, nothing more is appended to it.
func testFenceEnded(t *testing.T, open Open) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, clock.Now)
	created, err := s.CreateRun(ctx, leased("r", clock.Now().Add(time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	f := created.Fence()
	ended, err := s.UpdateFenced(ctx, f, func(r *store.Run) error {
		r.Status, r.LeaseUntil = store.StatusCompleted, time.Time{}
		return nil
	})
	if err != nil || ended.Status != store.StatusCompleted {
		t.Fatalf("end: %v %s", err, ended.Status)
	}
	_, err = s.AppendEvents(ctx, f, events(1, "a"))
	wantFence(t, "append after the end", err, store.FenceEnded)
	_, err = s.AppendLedger(ctx, f, []canonjson.Value{doc(`{}`)}, clock.Now())
	wantFence(t, "ledger after the end", err, store.FenceEnded)
	_, err = s.AppendEvents(ctx, fence("missing"), events(1, "a"))
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("append to a missing run: %v", err)
	}
}

// Renewals racing a reader that marks the run interrupted once it lapses:
// whichever comes first wins, and a renewal never resurrects a run a
// reader saw interrupted.
func testFenceRace(t *testing.T, open Open) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, clock.Now)
	created, err := s.CreateRun(ctx, leased("r", clock.Now().Add(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	f := created.Fence()
	var wg sync.WaitGroup
	var renewed, marked int
	var mu sync.Mutex
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				_, err := s.UpdateFenced(ctx, f, func(r *store.Run) error { r.LeaseUntil = clock.Now().Add(time.Second); return nil })
				if err == nil {
					mu.Lock()
					renewed++
					mu.Unlock()
				}
				return
			}
			_, err := s.UpdateRun(ctx, "r", func(r *store.Run) error {
				if r.Status != store.StatusInterrupted {
					return errors.New("live")
				}
				return nil
			})
			if err == nil {
				mu.Lock()
				marked++
				mu.Unlock()
			}
		}()
		if i == 7 {
			clock.Advance(2 * time.Second)
		}
	}
	wg.Wait()
	got, err := s.GetRun(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if marked > 0 && got.Status != store.StatusInterrupted {
		t.Errorf("a reader recorded the run interrupted, yet it is %s after %d renewals", got.Status, renewed)
	}
}

// Appends from many runs at once, some of which must fail — the holder
// was superseded, the run ended or does not exist, an event id is already
// in the run (or is being appended by a neighbour at the same moment) —
// fail alone: every other append succeeds, and each run's events are
// exactly the successful appends, numbered 1…N without gaps.
func testConcurrentAppendsFailAlone(t *testing.T, open Open) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, clock.Now)
	const live, writers, rounds = 12, 3, 8
	type target struct {
		f    store.Fence
		want error // what every append to it gets; nil for a live run
	}
	var targets []target
	for i := range live {
		r, err := s.CreateRun(ctx, leased(fmt.Sprint("live-", i), clock.Now().Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, target{f: r.Fence()})
	}
	for i := range 2 {
		r, err := s.CreateRun(ctx, leased(fmt.Sprint("superseded-", i), clock.Now().Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateRun(ctx, r.ID, func(r *store.Run) error { r.Generation++; return nil }); err != nil {
			t.Fatal(err)
		}
		targets = append(targets, target{f: r.Fence(), want: store.ErrFenced})
	}
	ended, err := s.CreateRun(ctx, leased("ended", clock.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateFenced(ctx, ended.Fence(), func(r *store.Run) error { r.Status = store.StatusCompleted; return nil }); err != nil {
		t.Fatal(err)
	}
	targets = append(targets, target{f: ended.Fence(), want: store.ErrFenced}, target{f: fence("missing"), want: store.ErrNotFound})

	var mu sync.Mutex
	acked := map[string][]store.Event{} // run → events of successful appends
	shared := map[string]int{}          // "run/round" → appends of the shared id that succeeded
	begin := make(chan struct{})
	var wg sync.WaitGroup
	for _, tg := range targets {
		for w := range writers {
			wg.Go(func() {
				<-begin
				for i := range rounds {
					// 1 to 3 fresh events; every third round repeats this
					// writer's first event id, which must fail; every round
					// the writers of a run race to append one shared id,
					// which exactly one of them may.
					batch := events(1+(w+i)%3, fmt.Sprintf("w%d-r%d-", w, i))
					dup := tg.want == nil && i > 0 && i%3 == 0 && w != 0
					if dup {
						batch = append(batch, store.NewEvent{ID: "w" + fmt.Sprint(w) + "-r0-0", Type: "message.delta", Time: time.Unix(1_800_000_000, 0), Body: doc(`{"dup":true}`)})
					}
					got, err := s.AppendEvents(ctx, tg.f, batch)
					switch {
					case tg.want != nil:
						if !errors.Is(err, tg.want) {
							t.Errorf("%s: append got %v, want %v", tg.f.RunID, err, tg.want)
						}
					case dup:
						if !errors.Is(err, store.ErrExists) {
							t.Errorf("%s: append repeating an event id got %v, want ErrExists", tg.f.RunID, err)
						}
					case err != nil:
						t.Errorf("%s: append: %v", tg.f.RunID, err)
					case len(got) != len(batch):
						t.Errorf("%s: %d events appended, want %d", tg.f.RunID, len(got), len(batch))
					default:
						mu.Lock()
						acked[tg.f.RunID] = append(acked[tg.f.RunID], got...)
						mu.Unlock()
					}
					if tg.want == nil {
						one := []store.NewEvent{{ID: fmt.Sprint("shared-", i), Type: "message.delta", Time: time.Unix(1_800_000_000, 0), Body: doc(fmt.Sprintf(`{"w":%d}`, w))}}
						got, err := s.AppendEvents(ctx, tg.f, one)
						switch {
						case err == nil:
							mu.Lock()
							acked[tg.f.RunID] = append(acked[tg.f.RunID], got...)
							shared[fmt.Sprint(tg.f.RunID, "/", i)]++
							mu.Unlock()
						case !errors.Is(err, store.ErrExists):
							t.Errorf("%s: appending a shared id: %v", tg.f.RunID, err)
						}
					}
				}
			})
		}
	}
	close(begin)
	wg.Wait()
	for _, tg := range targets {
		if tg.want == store.ErrNotFound {
			continue
		}
		stored, err := s.Events(ctx, tg.f.RunID, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if tg.want != nil {
			if len(stored) != 0 {
				t.Errorf("%s: %d events stored from refused appends", tg.f.RunID, len(stored))
			}
			continue
		}
		mine := acked[tg.f.RunID]
		if len(stored) != len(mine) {
			t.Errorf("%s: %d events stored, %d acknowledged", tg.f.RunID, len(stored), len(mine))
			continue
		}
		bySeq := map[int64]store.Event{}
		for _, e := range mine {
			bySeq[e.Sequence] = e
		}
		for i, e := range stored {
			a, ok := bySeq[e.Sequence]
			if e.Sequence != int64(i+1) || !ok || a.ID != e.ID || !canonjson.Equal(a.Body, e.Body) {
				t.Errorf("%s: stored event %d (seq %d, %s) is not the acknowledged one (%+v)", tg.f.RunID, i, e.Sequence, e.ID, a)
				break
			}
		}
		for i := range rounds {
			if n := shared[fmt.Sprint(tg.f.RunID, "/", i)]; n != 1 {
				t.Errorf("%s: shared id of round %d appended %d times", tg.f.RunID, i, n)
			}
		}
	}
}

// testBadText: a name that is not valid UTF-8, or holds a NUL byte, is
// refused as ErrInvalid by every adapter alike (PostgreSQL's text cannot
// hold it), and nothing is written.
func testBadText(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t, NewClock().Now)
	digest := "sha256:" + strings.Repeat("0", 64)
	for _, bad := range []string{"run\xff", "run\x00x"} {
		r := newRun(bad)
		if _, err := s.CreateRun(ctx, r); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateRun with id %q: %v, want ErrInvalid", bad, err)
		}
		r = newRun("r-" + fmt.Sprint(len(bad)))
		r.Kind = bad
		if _, err := s.CreateRun(ctx, r); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateRun with kind %q: %v, want ErrInvalid", bad, err)
		}
		r.Kind, r.Owner = "execute", bad
		if _, err := s.CreateRun(ctx, r); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateRun with owner %q: %v, want ErrInvalid", bad, err)
		}
		rec := store.Idempotency{Scope: "s", Key: bad, RequestDigest: digest, CreatedAt: NewClock().Now()}
		if _, _, err := s.ClaimIdempotency(ctx, rec); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ClaimIdempotency with key %q: %v, want ErrInvalid", bad, err)
		}
		rec.Scope, rec.Key = bad, "k"
		if _, _, err := s.ClaimIdempotency(ctx, rec); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ClaimIdempotency with scope %q: %v, want ErrInvalid", bad, err)
		}
		if _, err := s.DeleteIdempotency(ctx, []store.IdempotencyKey{{Scope: "s", Key: bad}}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("DeleteIdempotency of key %q: %v, want ErrInvalid", bad, err)
		}
	}
	// A run that exists refuses a bad owner and bad event names.
	r := newRun("good")
	r.Generation, r.Owner, r.LeaseUntil = 1, "w", NewClock().Now().Add(time.Hour)
	if _, err := s.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateRun(ctx, "good", func(r *store.Run) error { r.Owner = "w\xff"; return nil }); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("UpdateRun to owner %q: %v, want ErrInvalid", "w\xff", err)
	}
	for _, ev := range []store.NewEvent{{ID: "e\xff", Type: "t", Body: doc(`{}`)}, {ID: "e", Type: "t\x00", Body: doc(`{}`)}} {
		if _, err := s.AppendEvents(ctx, fence("good"), []store.NewEvent{ev}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("AppendEvents of %q/%q: %v, want ErrInvalid", ev.ID, ev.Type, err)
		}
	}
	if runs, err := s.ListRuns(ctx, store.ListOptions{}); err != nil || len(runs) != 1 {
		t.Errorf("runs after the refusals: %d (%v); want only the good one", len(runs), err)
	}
}
