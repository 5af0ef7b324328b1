package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
)

// deadHolder makes runID look like a run whose worker ("dead") claimed it
// in generation 1 and died: its claim lapsed.
func deadHolder(t *testing.T, f *Fleet, runID string) {
	t.Helper()
	_, err := f.store.UpdateRun(t.Context(), runID, func(r *store.Run) error {
		r.Status, r.Owner = store.StatusRunning, "dead"
		r.Doc = withClaim(r.Doc, time.Now().Add(-time.Second))
		var err error
		r.Doc, err = withAttempts(r.Doc, []Attempt{{Generation: 1, RunID: attemptID(runID, 1), Worker: "dead", StartedAt: time.Now().UTC().Format(time.RFC3339Nano)}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTakeover(t *testing.T) {
	f, _ := openTestFleet(t)
	ctx := t.Context()
	pv, err := canonjson.Decode([]byte(`{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.FromValue(pv)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scripted.ParseScript([]byte(`{"turns":[{"repeat":true,"steps":[{"text":"note"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	prov := scripted.New(sc, scripted.Options{})

	tests := []struct {
		name string
		// attempt does to the dead worker's attempt what it did before
		// dying.
		attempt     func(t *testing.T, runID string)
		wantStatus  store.Status
		wantAttempt []string // each attempt's kernel run status, in order
		wantTurns   int64    // turns the worker under test played
	}{
		{
			name: "the attempt finished before its worker died: adopted, not run again",
			attempt: func(t *testing.T, runID string) {
				res, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: "t", Provider: prov, Store: f.store, RunID: attemptID(runID, 1)})
				if err != nil || res.Status != store.StatusCompleted {
					t.Fatalf("dead worker's attempt: %v, %v", res, err)
				}
			},
			wantStatus:  store.StatusCompleted,
			wantAttempt: []string{"completed"},
		},
		{
			name:        "the attempt never started: closed as interrupted, run again",
			attempt:     func(*testing.T, string) {},
			wantStatus:  store.StatusCompleted,
			wantAttempt: []string{"interrupted", "completed"},
			wantTurns:   1,
		},
		{
			name: "the attempt was executing when its worker died: run again",
			attempt: func(t *testing.T, runID string) {
				if _, err := f.store.CreateRun(ctx, store.Run{ID: attemptID(runID, 1), Kind: "execute", Status: store.StatusRunning, LeaseUntil: time.Now().Add(-time.Second)}); err != nil {
					t.Fatal(err)
				}
			},
			wantStatus:  store.StatusCompleted,
			wantAttempt: []string{"interrupted", "completed"},
			wantTurns:   1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, err := f.Submit(ctx, Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
			if err != nil {
				t.Fatal(err)
			}
			deadHolder(t, f, sub.RunID)
			tt.attempt(t, sub.RunID)
			mine := scripted.New(sc, scripted.Options{})
			w, err := f.NewWorker(ctx, WorkerOptions{Providers: map[string]contract.Provider{"scripted": mine}, LeaseTTL: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := w.execute(wctx, sub.RunID, ""); err != nil {
				t.Fatal(err)
			}
			r, err := f.Get(ctx, sub.RunID)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range r.Attempts {
				ar, err := f.store.GetRun(ctx, a.RunID)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(ar.Status))
			}
			if r.Status != tt.wantStatus || len(got) != len(tt.wantAttempt) || mine.Turns() != tt.wantTurns {
				t.Fatalf("run %s, attempts %v, turns %d; want %s, %v, %d", r.Status, got, mine.Turns(), tt.wantStatus, tt.wantAttempt, tt.wantTurns)
			}
			for i := range got {
				if got[i] != tt.wantAttempt[i] {
					t.Errorf("attempt %d: %s, want %s", i+1, got[i], tt.wantAttempt[i])
				}
			}
			// The fleet run says how the dead worker's attempt ended, and
			// who took over, as its kernel run does.
			if n := len(r.Attempts); n > 1 && (r.Attempts[0].Status != got[0] || !strings.Contains(r.Attempts[0].Note, "taken over by "+w.ID())) {
				t.Errorf("the dead worker's attempt %+v; want it recorded %s, taken over by %s", r.Attempts[0], got[0], w.ID())
			}
			if n := len(r.Attempts); n > 1 && r.Attempts[n-1].Generation != 2 {
				t.Errorf("the takeover ran in generation %d, want 2", r.Attempts[n-1].Generation)
			}
			// The dead worker's fence is refused from now on.
			_, err = f.store.UpdateFenced(ctx, store.Fence{RunID: sub.RunID, Generation: 1}, func(*store.Run) error { return nil })
			if !errors.Is(err, store.ErrFenced) {
				t.Errorf("the dead worker's generation writing the run: %v, want a fence error", err)
			}
		})
	}
}

func TestClaimWaitsForALiveHolder(t *testing.T) {
	f, _ := openTestFleet(t)
	ctx := t.Context()
	pv, _ := canonjson.Decode([]byte(`{"name":"n","harness":"cli-base","model":{"provider":"scripted","default":"scripted/n"}}`))
	sub, err := f.Submit(ctx, Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Minute)
	if _, err := f.store.UpdateRun(ctx, sub.RunID, func(r *store.Run) error {
		r.Status, r.Owner, r.Doc = store.StatusRunning, "alive", withClaim(r.Doc, until)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w, err := f.NewWorker(ctx, WorkerOptions{Providers: map[string]contract.Provider{"scripted": scripted.InProcess(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.claim(ctx, sub.RunID, "")
	busy, ok := errors.AsType[*busyError](err)
	if !ok || busy.owner != "alive" || busy.until.Sub(until).Abs() > time.Millisecond {
		t.Fatalf("claim = %v, want busy until %s held by alive", err, until)
	}
}

// TestFollowCrossesATakeover: Follow yields a fleet run's events attempt
// after attempt — the dead worker's attempt's, then its successor's — and
// a follower started before the takeover stops once the run ended.
func TestFollowCrossesATakeover(t *testing.T) {
	f, _ := openTestFleet(t)
	ctx := t.Context()
	pv, _ := canonjson.Decode([]byte(`{"name":"n","harness":"cli-base","model":{"provider":"scripted","default":"scripted/n"}}`))
	sub, err := f.Submit(ctx, Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
	if err != nil {
		t.Fatal(err)
	}
	// The dead worker's attempt appended two events, then its lease lapsed.
	first := attemptID(sub.RunID, 1)
	if _, err := f.store.CreateRun(ctx, store.Run{ID: first, Kind: "execute", Status: store.StatusRunning, Owner: "dead", LeaseUntil: time.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.AppendEvents(ctx, store.Fence{RunID: first, Generation: 1}, []store.NewEvent{
		{ID: "e1", Type: "execution.started", Time: time.Now(), Body: canonjson.ObjectValue(nil)},
		{ID: "e2", Type: "message.part.updated", Time: time.Now(), Body: canonjson.ObjectValue(nil)},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.UpdateRun(ctx, first, func(r *store.Run) error {
		r.LeaseUntil = time.Now().Add(-time.Second)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	deadHolder(t, f, sub.RunID)

	type got struct {
		attempt string
		seq     int64
	}
	collect := func(ctx context.Context, follow bool) ([]got, error) {
		var out []got
		for e, err := range Follow(ctx, f.store, sub.RunID, FollowOptions{Follow: follow, PageSize: 1, PollInterval: 20 * time.Millisecond}) {
			if err != nil {
				return out, err
			}
			out = append(out, got{e.Attempt, e.Sequence})
		}
		return out, nil
	}
	followed := make(chan []got, 1)
	followCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	go func() {
		evs, err := collect(followCtx, true)
		if err != nil {
			t.Errorf("following: %v", err)
		}
		followed <- evs
	}()

	sc, err := scripted.ParseScript([]byte(`{"turns":[{"repeat":true,"steps":[{"text":"note"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.NewWorker(ctx, WorkerOptions{Providers: map[string]contract.Provider{"scripted": scripted.New(sc, scripted.Options{})}, LeaseTTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.execute(ctx, sub.RunID, ""); err != nil {
		t.Fatal(err)
	}
	var live []got
	select {
	case live = <-followed:
	case <-time.After(time.Minute):
		t.Fatal("the follower did not stop within a minute of the run's end")
	}
	after, err := collect(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	second := attemptID(sub.RunID, 2)
	n, err := f.store.Events(ctx, second, "", 0)
	if err != nil || len(n) == 0 {
		t.Fatalf("the takeover's attempt recorded %d events, %v", len(n), err)
	}
	want := []got{{first, 1}, {first, 2}}
	for _, e := range n {
		want = append(want, got{second, e.Sequence})
	}
	for name, evs := range map[string][]got{"followed live": live, "read after the end": after} {
		if diff := cmp.Diff(want, evs, cmp.AllowUnexported(got{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
