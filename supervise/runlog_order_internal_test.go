package supervise

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// gatedLog is the run dir's real file spawn log whose queued appends
// wait for a gate before their fsync is awaited: a stand-in for a slow
// disk, so a test can hold one record "in flight" and see what the run
// does meanwhile.
type gatedLog struct {
	SpawnLog
	gates chan chan struct{} // one gate per Enqueue, handed to the test
}

func (g *gatedLog) Enqueue(r *Record) (func(context.Context) error, error) {
	wait, err := g.SpawnLog.(spawnLogQueuer).Enqueue(r)
	if err != nil {
		return nil, err
	}
	gate := make(chan struct{})
	g.gates <- gate
	return func(ctx context.Context) error {
		<-gate
		return wait(ctx)
	}, nil
}

// A record is queued in the journal's order at enqueue, and made
// visible (read_journal's rows) only once durable and after every record
// queued before it, whichever commit finishes first: the ordering that
// lets Coordinator.spawnMu be released before the fsync, so concurrent
// spawns and settlements share it (issue 13 "fsync batched"; §3.6
// "scope.next() delivers settlements strictly in recorded seq order").
func TestRunLogCommitsInJournalOrder(t *testing.T) {
	dir := t.TempDir()
	file, err := OpenFileSpawnLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedLog{SpawnLog: file, gates: make(chan chan struct{}, 2)}
	ctx := context.Background()
	l, _, err := openRunLog(ctx, dir, g)
	if err != nil {
		t.Fatal(err)
	}
	a := l.enqueue(ctx, Record{Kind: KindSpawned, Node: "r:s1"})
	b := l.enqueue(ctx, Record{Kind: KindSpawned, Node: "r:s2"})
	gateA, gateB := <-g.gates, <-g.gates
	bDone := make(chan error, 1)
	go func() { bDone <- b.commit(ctx) }()
	close(gateB) // b is durable (a with it: one file, written in order) ...
	select {
	case err := <-bDone:
		t.Fatalf("b committed (%v) before a, queued first, was made visible", err)
	case <-time.After(50 * time.Millisecond):
	}
	if rows, _, _, _ := l.page(0, nil, 10, 0); len(rows) != 0 {
		t.Fatalf("rows visible before a committed: %+v", rows)
	}
	close(gateA)
	if err := a.commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-bDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b never committed after a")
	}
	rows, _, _, _ := l.page(0, nil, 10, 0)
	var got []NodeID
	for _, r := range rows {
		got = append(got, r.Node)
	}
	if diff := cmp.Diff([]NodeID{"r:s1", "r:s2"}, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	// The file holds them in the same order.
	again, err := OpenFileSpawnLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	recs, err := again.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, r := range recs {
		got = append(got, r.Node)
	}
	if diff := cmp.Diff([]NodeID{"r:s1", "r:s2"}, got); diff != "" {
		t.Errorf("journal file (-want +got):\n%s", diff)
	}
}

// A record the journal refused is never made visible, and does not hold
// back the records queued after it.
func TestRunLogFailedCommitIsNotVisible(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l, _, err := openRunLog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := l.enqueue(ctx, Record{Kind: KindSpawned, Node: "r:s1"})
	if err := l.spawn.Close(); err != nil { // every append fails from now on
		t.Fatal(err)
	}
	b := l.enqueue(ctx, Record{Kind: KindSpawned, Node: "r:s2"})
	if b.err == nil {
		t.Fatal("enqueue on a closed journal succeeded")
	}
	if err := b.commit(ctx); err == nil {
		t.Error("commit of a refused record succeeded")
	}
	if err := a.commit(ctx); err == nil {
		t.Error("commit of a record its closed journal failed succeeded")
	}
	c := l.enqueue(ctx, Record{Kind: KindSpawned, Node: "r:s3"})
	done := make(chan error, 1)
	go func() { done <- c.commit(ctx) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("commit on a closed journal succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a commit after a failed one never returned")
	}
	if rows, _, _, _ := l.page(0, nil, 10, 0); len(rows) != 0 {
		t.Errorf("failed records visible: %+v", rows)
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
}
