package supervise

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// §3.6 "Supervisor run layout" under a store journal, with two holders:
// holder A keeps state.json and progress.ndjson of the run dir while it
// holds the spawn journal's lease; once B took the run over (A's lease
// lapsed and A's next append was fenced), A writes neither file again —
// not for a record it had already appended, not at its close — and B's
// projection of the run is what the files hold.
func TestRunStateAndProgressStopOnceTheLeaseIsLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	opts := StoreSpawnLogOptions{LeaseTTL: kernel.MinLeaseTTL, Logger: quiet}

	started := Record{Kind: KindRunStarted, RunID: "run1", StartedAtMS: 1}
	spawned := Record{Kind: KindSpawned, Node: "run1:s1", Parent: "run1", Label: "a", Profile: "writer", Task: "t"}
	settled := Record{Kind: KindSettled, Node: "run1:s1", State: StateDone}

	a, err := OpenStoreSpawnLog(ctx, st, "run1", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ya, err := openLayout(dir, "run1", nil, nil, time.Now, quiet, false)
	if err != nil {
		t.Fatal(err)
	}
	ya.setFence(a.Held)
	for _, r := range []Record{started, spawned} {
		if err := a.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
		ya.observe(&r)
	}
	waitState(t, ctx, dir, func(s RunState) bool { return s.Spawned == 1 })

	// A stalls past its lease; B takes the run over.
	lapsed, err := canonjson.ToValue(map[string]int64{SpawnLogLeaseMember: time.Now().Add(-time.Second).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateRun(ctx, "run1", func(r *store.Run) error { r.Doc = lapsed; return nil }); err != nil {
		t.Fatal(err)
	}
	b, err := OpenStoreSpawnLog(ctx, st, "run1", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Append(ctx, settled); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("the superseded holder's append: %v, want ErrFenced", err)
	}
	// A record A's layout sees after the loss, and A's close: neither
	// is written.
	ya.observe(&settled)
	if err := ya.close(); err != nil {
		t.Fatal(err)
	}
	state, err := ReadRunState(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if state.Settled != nil || state.Spawned != 1 {
		t.Errorf("state.json %+v after A lost the lease, want A's last state while it held it", state)
	}
	prog, _, err := ReadProgress(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) != 1 || prog[0].Kind != ProgressSpawn {
		t.Errorf("progress %+v, want only A's spawn line", prog)
	}

	// B, holding the lease, projects the run into the same files.
	prior, err := b.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	yb, err := openLayout(dir, "run1", prior, nil, time.Now, quiet, false)
	if err != nil {
		t.Fatal(err)
	}
	yb.setFence(b.Held)
	if err := b.Append(ctx, settled); err != nil {
		t.Fatal(err)
	}
	yb.observe(&settled)
	if err := yb.close(); err != nil {
		t.Fatal(err)
	}
	state, err = ReadRunState(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if state.Settled[StateDone] != 1 {
		t.Errorf("state.json %+v, want B's settlement", state)
	}
	if prog, _, err = ReadProgress(ctx, dir); err != nil || len(prog) != 2 || prog[1].Kind != ProgressSettle {
		t.Errorf("progress %+v (%v), want A's spawn then B's settle", prog, err)
	}
}

// waitState polls state.json until cond holds or ctx ends.
func waitState(t *testing.T, ctx context.Context, dir string, cond func(RunState) bool) {
	t.Helper()
	for {
		if s, err := ReadRunState(ctx, dir); err == nil && cond(s) {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("state.json never reached the expected state")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
