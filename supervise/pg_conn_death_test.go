package supervise_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/internal/pgdb"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/supervise"
)

// pgKiller is a real PostgreSQL store whose connections carry one
// application_name of their own, so the test can terminate exactly its
// backends (pg_terminate_backend from a second connection), never those
// of anything else sharing the database.
type pgKiller struct {
	st      *postgres.Store
	pool    *pgxpool.Pool
	admin   *pgx.Conn
	adminMu sync.Mutex
	app     string
	// word, once set, makes the next write whose statements carry it
	// lose its acknowledgement: the server commits (the transaction's
	// COMMIT when atCommit, else the autocommit statement itself), the
	// test reads the reply away and terminates the store's backends, so
	// the client sees the connection die (FATAL 57P01, then EOF) where
	// the reply was. fired counts such writes.
	word     atomic.Pointer[string]
	atCommit atomic.Bool
	fired    atomic.Int64
	kills    atomic.Int64
	killErr  atomic.Pointer[error]
}

// openPGKiller opens a store in a fresh schema of the test database
// through a pool whose connections the test can cut.
func openPGKiller(t *testing.T) *pgKiller {
	t.Helper()
	connString := pgtest.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b [6]byte
	_, _ = rand.Read(b[:])
	k := &pgKiller{app: "agentrt_sl13_" + hex.EncodeToString(b[:])}
	cfg, err := pgdb.Config(connString, 4)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = k.app
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &ackLosingConn{Conn: c, k: k}, nil
	}
	if k.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.pool.Close)
	if k.st, err = postgres.OpenPool(ctx, k.pool, postgres.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.st.Close() })
	if k.admin, err = pgx.Connect(ctx, pgtest.URL(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.admin.Close(context.Background()) })
	return k
}

// cut arms the loss of the acknowledgement of the next write carrying
// word (see pgKiller.word).
func (k *pgKiller) cut(word string, atCommit bool) {
	k.atCommit.Store(atCommit)
	k.word.Store(&word)
}

// kill terminates every backend of the store's pool, waiting (up to
// 5 s each) for them to exit, and returns how many it terminated.
func (k *pgKiller) kill() (int, error) {
	k.adminMu.Lock()
	defer k.adminMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var n int
	err := k.admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()`, k.app).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("terminating the store's backends: %w", err)
	}
	k.kills.Add(1)
	return n, nil
}

// ackLosingConn is one connection of a pgKiller's pool.
type ackLosingConn struct {
	net.Conn
	k       *pgKiller
	sawWord bool
	lose    bool
}

func (c *ackLosingConn) Write(p []byte) (int, error) {
	if w := c.k.word.Load(); w != nil {
		has := bytes.Contains(p, []byte(*w))
		if has && !c.k.atCommit.Load() && c.k.word.CompareAndSwap(w, nil) {
			c.lose = true
		}
		if has {
			c.sawWord = true
		}
		if c.k.atCommit.Load() && bytes.Contains(p, []byte("commit\x00")) {
			if c.sawWord && c.k.word.CompareAndSwap(w, nil) {
				c.lose = true
			}
			c.sawWord = false
		}
	}
	return c.Conn.Write(p)
}

func (c *ackLosingConn) Read(p []byte) (int, error) {
	if c.lose {
		c.lose = false
		// The COMMIT's reply: the server committed. It is read away,
		// then the backend is terminated, so what the client reads
		// where the acknowledgement was is the connection's death.
		buf := make([]byte, 64<<10)
		if _, err := c.Conn.Read(buf); err != nil {
			return 0, err
		}
		c.k.fired.Add(1)
		if _, err := c.k.kill(); err != nil {
			c.k.killErr.Store(&err)
		}
	}
	return c.Conn.Read(p)
}

// pgCut is where TestPostgresJournalConnectionDiesMidWrite cuts: the
// write whose statements carry word, a transaction's COMMIT (atCommit)
// or an autocommit statement, armed before the run (then) or once
// alpha settled.
type pgCut struct {
	name, word      string
	atCommit, early bool
}

// §3.6 Durability with the spawn journal in PostgreSQL (RES-03,
// behaviour 46): the database kills the run's connections while one of
// its writes is committing — after the server committed it, before the
// client read the acknowledgement — at the spawn record of "write
// extra", at alpha's settlement record, at a lease renewal and at the
// final run record (putRecord). The write's outcome is unknown to the
// process (it landed): a spawn so cut stays in doubt with its id spent
// (were it taken for not written, the next spawn would be journaled
// under the same node id, and the journal would hold two spawns of one
// node). The pool reconnects, the run ends bounded, and a resume from
// the same store returns the same winner and outRef without executing a
// worker that settled.
func TestPostgresJournalConnectionDiesMidWrite(t *testing.T) {
	for _, c := range []pgCut{
		{name: "spawn", word: "write extra", atCommit: true, early: true},
		{name: "settlement", word: `"` + supervise.KindSettled + `"`, atCommit: true, early: true},
		{name: "renewal", word: supervise.SpawnLogLeaseMember},
		{name: "run-record", word: `"` + supervise.RunRecordMember + `":`, early: true},
	} {
		t.Run(c.name, func(t *testing.T) { pgConnDiesMidWrite(t, c) })
	}
}

func pgConnDiesMidWrite(t *testing.T, cut pgCut) {
	k := openPGKiller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	var extraErr atomic.Pointer[string]
	first := true
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, task := range []string{"write alpha", "write extra", "write beta"} {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				if task == "write extra" {
					s := err.Error()
					extraErr.Store(&s)
					continue // the verb failed: its record's outcome is unknown
				}
				return supervise.BrainReport{}, err
			}
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
				return supervise.BrainReport{}, err
			}
			if task == "write alpha" && first && !cut.early {
				// A renewal comes every third of the lease: wait for
				// the one that loses its acknowledgement.
				k.cut(cut.word, cut.atCommit)
				deadline := time.Now().Add(3 * storeKillLease)
				for k.fired.Load() == 0 && time.Now().Before(deadline) && ctx.Err() == nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
		return supervise.BrainReport{}, nil
	})
	run := func(s store.Store) (supervise.SupervisedResult, *countingExecutor, error) {
		exec := newCounting(t, workerProvider(t))
		o, err := processOptions(exec, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o.Brain, o.SpawnStore, o.SpawnLeaseTTL = brain, s, storeKillLease
		o.Store = s // the run record too (putRecord)
		res, err := supervise.Supervise(ctx, manager, "t", o)
		return res, exec, err
	}
	if cut.early {
		k.cut(cut.word, cut.atCommit)
	}
	start := time.Now()
	res, exec1, err := run(k.st)
	first = false
	took := time.Since(start)
	t.Logf("first run: %s (%v) in %s, winner %+v, extra's spawn: %v", res.Status, err, took.Round(time.Millisecond), res.Winner, derefString(extraErr.Load()))
	if e := k.killErr.Load(); e != nil {
		t.Fatal(*e)
	}
	if k.fired.Load() != 1 || k.kills.Load() != 1 {
		t.Fatalf("the write lost its acknowledgement %d times (kills %d), want once", k.fired.Load(), k.kills.Load())
	}
	if took > time.Minute {
		t.Errorf("the first run took %s", took)
	}
	recs, rerr := readWholeStoreJournal(ctx, k.st, "run1")
	if rerr != nil {
		t.Fatal(rerr)
	}
	spawned := map[supervise.NodeID][]string{}
	var extra supervise.NodeID
	for _, r := range recs {
		if r.Kind == supervise.KindSpawned {
			spawned[r.Node] = append(spawned[r.Node], r.Task)
			if r.Task == "write extra" {
				extra = r.Node
			}
		}
	}
	for id, tasks := range spawned {
		if len(tasks) > 1 {
			t.Errorf("the journal holds %d spawns of node %s: %q", len(tasks), id, tasks)
		}
	}
	if cut.name == "spawn" {
		if extra == "" {
			t.Fatalf("the spawn record whose acknowledgement was lost is not in the journal: the test did not cut where it meant to")
		}
		for _, w := range res.Tree {
			if w.ID == extra && !w.InDoubt {
				t.Errorf("the spawn whose record landed unacknowledged reads %s, not in doubt (reason %q)", w.State, w.InDoubtReason)
			}
		}
		if derefString(extraErr.Load()) == "" {
			t.Errorf("the spawn whose acknowledgement was lost did not fail its verb")
		}
	}
	if err == nil && res.Winner == nil {
		t.Errorf("the first run ended without error and without a winner: %s %s", res.Status, res.Reason)
	}
	// A resume from the same store: the truth the store holds.
	again, exec, err2 := run(k.st)
	if err2 != nil {
		t.Fatalf("resume: %v", err2)
	}
	if again.Winner == nil {
		t.Fatalf("resume: no winner (%s %s)", again.Status, again.Reason)
	}
	if err == nil && exec.count("alpha")+exec.count("beta") != 0 {
		t.Errorf("the resume of a run that ended executed alpha %d, beta %d times", exec.count("alpha"), exec.count("beta"))
	}
	if exec1.count("beta")+exec.count("beta") > 2 {
		t.Errorf("beta ran %d times in the first run, %d on resume", exec1.count("beta"), exec.count("beta"))
	}
	if exec.count("alpha") != 0 {
		t.Errorf("the resume executed alpha, which settled before the cut, %d times", exec.count("alpha"))
	}
	if err == nil && res.Winner != nil && (again.Winner.Node != res.Winner.Node || again.Winner.OutRef != res.Winner.OutRef) {
		t.Errorf("resumed winner %+v, first run's %+v", again.Winner, res.Winner)
	}
	third, exec3, err3 := run(k.st)
	if err3 != nil || third.Winner == nil || third.Winner.Node != again.Winner.Node || third.Winner.OutRef != again.Winner.OutRef {
		t.Errorf("a second resume: %v, winner %+v, want %+v", err3, third.Winner, again.Winner)
	}
	if n := exec3.count("alpha") + exec3.count("beta"); n != 0 {
		t.Errorf("a second resume of the ended run executed %d workers", n)
	}
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

// heldExecutor holds each worker until gate closes (or its context
// ends), so that the workers run while the database kills connections.
type heldExecutor struct {
	inner supervise.Executor
	gate  <-chan struct{}
}

func (e *heldExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	select {
	case <-e.gate:
	case <-ctx.Done():
	}
	return e.inner.Execute(ctx, w)
}

// §3.6 Durability with the spawn journal in PostgreSQL (RES-03,
// behaviour 46), the server's connections killed again and again (the
// effect of a restart, without restarting a shared server): five
// pg_terminate_backend of every connection of the run's store, 200 ms
// apart, while four workers are spawned, run and settle. The run ends
// bounded; the journal never holds two spawns of one node; a resume
// from the same store ends with a winner, executes no worker whose
// settlement the journal holds, and a second resume executes nothing
// and returns the same winner and outRef.
func TestPostgresJournalConnectionsKilledRepeatedly(t *testing.T) {
	k := openPGKiller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	tasks := []string{"write alpha", "write beta", "write slow gamma", "write slow delta"}
	gate := make(chan struct{})
	killed := make(chan struct{})
	var once sync.Once
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		once.Do(func() {
			go func() {
				defer close(killed)
				for i := range 5 {
					if n, err := k.kill(); err != nil {
						k.killErr.Store(&err)
					} else {
						t.Logf("kill %d: %d backends", i+1, n)
					}
					if i == 1 {
						close(gate)
					}
					select {
					case <-time.After(200 * time.Millisecond):
					case <-ctx.Done():
					}
				}
			}()
		})
		spawned := 0
		for _, task := range tasks {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				t.Logf("spawn %q: %v", task, err)
				continue
			}
			spawned++
		}
		for range spawned {
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	run := func() (supervise.SupervisedResult, *taskCounter, error) {
		counts := &taskCounter{inner: &heldExecutor{inner: newCounting(t, workerProvider(t)), gate: gate}, runs: map[string]int{}}
		o, err := processOptions(counts, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o.Brain, o.SpawnStore, o.SpawnLeaseTTL, o.Store = brain, k.st, storeKillLease, k.st
		res, err := supervise.Supervise(ctx, manager, "t", o)
		return res, counts, err
	}
	start := time.Now()
	first, _, err := run()
	took := time.Since(start)
	select {
	case <-killed:
	case <-ctx.Done():
		t.Fatal("the kills did not end")
	}
	if e := k.killErr.Load(); e != nil {
		t.Fatal(*e)
	}
	t.Logf("first run: %s (%v) in %s, winner %+v", first.Status, err, took.Round(time.Millisecond), first.Winner)
	if took > time.Minute {
		t.Errorf("the first run took %s", took)
	}
	// The test's own read: a pooled connection the kills left dead
	// fails the call it serves, once.
	var recs []supervise.Record
	var rerr error
	for range 5 {
		if recs, rerr = readWholeStoreJournal(ctx, k.st, "run1"); rerr == nil {
			break
		}
	}
	if rerr != nil {
		t.Fatal(rerr)
	}
	task, settled := map[supervise.NodeID]string{}, map[string]bool{}
	for _, r := range recs {
		switch r.Kind {
		case supervise.KindSpawned:
			if prev, dup := task[r.Node]; dup {
				t.Errorf("the journal holds two spawns of node %s: %q and %q", r.Node, prev, r.Task)
			}
			task[r.Node] = r.Task
		case supervise.KindSettled:
			// Only a worker that settled done is held to never run
			// again: one failed by a cut connection (its execution
			// record not journaled) is spawned anew when the resumed
			// brain asks for it again (see the report of SL13).
			if r.State == supervise.StateDone {
				settled[task[r.Node]] = true
			}
		}
	}
	for _, r := range recs {
		t.Logf("journal: %s %s %q state=%s reason=%q", r.Kind, r.Node, r.Task, r.State, r.Reason)
	}
	// A kill that cut the first run's release of its lease leaves the
	// lease to lapse (storeKillLease): the resume waits it out, as the
	// refusal tells a user to.
	again, counts, err2 := run()
	for errors.Is(err2, supervise.ErrSpawnLogHeld) && ctx.Err() == nil {
		t.Logf("resume refused while the lease lasts: %v", err2)
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
		again, counts, err2 = run()
	}
	for _, n := range again.Tree {
		t.Logf("resume tree %s state=%s replayed=%v indoubt=%v reason=%q", n.ID, n.State, n.Replayed, n.InDoubt, n.Reason)
	}
	if err2 != nil || again.Winner == nil {
		t.Fatalf("resume: %v, winner %+v (%s %s)", err2, again.Winner, again.Status, again.Reason)
	}
	for _, tk := range tasks {
		if n := counts.count(tk); n > 1 || (settled[tk] && n != 0) {
			t.Errorf("%q (settled in the journal: %v) ran %d times on resume", tk, settled[tk], n)
		}
	}
	if err == nil && first.Winner != nil && (again.Winner.Node != first.Winner.Node || again.Winner.OutRef != first.Winner.OutRef) {
		t.Errorf("resumed winner %+v, first run's %+v", again.Winner, first.Winner)
	}
	third, counts3, err3 := run()
	if err3 != nil || third.Winner == nil || third.Winner.Node != again.Winner.Node || third.Winner.OutRef != again.Winner.OutRef {
		t.Errorf("a second resume: %v, winner %+v, want %+v", err3, third.Winner, again.Winner)
	}
	for _, tk := range tasks {
		if n := counts3.count(tk); n != 0 && settled[tk] {
			t.Errorf("a second resume of the ended run executed %q %d times", tk, n)
		}
	}
}

// refusingRenewals is a real store that refuses every fenced update
// (the journal's lease renewals and confirmations) while refusing is
// set: the store answers appends and reads, but the lease cannot be
// renewed.
type refusingRenewals struct {
	store.Store
	refusing atomic.Bool
	refused  atomic.Int64
}

func (s *refusingRenewals) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	if s.refusing.Load() {
		s.refused.Add(1)
		return store.Run{}, fmt.Errorf("refused by the test: %w", context.DeadlineExceeded)
	}
	return s.Store.UpdateFenced(ctx, f, fn)
}

// §3.6 Durability with the spawn journal in PostgreSQL (RES-03): the
// lease renewal fails for longer than the lease (every fenced update
// refused for lease+1 s) while a worker runs. The process gives the run
// up — Supervise returns ErrSpawnLogLost without a winner — and another process's resume takes the journal
// over and ends the run with the worker's result.
func TestPostgresJournalRenewalsRefusedPastTheLease(t *testing.T) {
	k := openPGKiller(t)
	st := &refusingRenewals{Store: k.st}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var startOnce sync.Once
	var heard atomic.Int64
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha"}); err != nil {
			return supervise.BrainReport{}, err
		}
		r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}})
		if err == nil && r.Event != nil {
			heard.Add(1)
			t.Logf("the brain heard %+v", *r.Event)
		}
		return supervise.BrainReport{}, err
	})
	run := func(gate <-chan struct{}) (supervise.SupervisedResult, *taskCounter, error) {
		counts := &taskCounter{inner: &heldExecutor{inner: newCounting(t, workerProvider(t)), gate: gate}, runs: map[string]int{}}
		o, err := processOptions(supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
			startOnce.Do(func() { close(started) })
			return counts.Execute(ctx, w)
		}), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o.Brain, o.SpawnStore, o.SpawnLeaseTTL = brain, st, storeKillLease
		res, err := supervise.Supervise(ctx, manager, "t", o)
		return res, counts, err
	}
	never := make(chan struct{}) // the first process's worker runs until cut
	done := make(chan struct{})
	var first supervise.SupervisedResult
	var firstErr error
	go func() {
		defer close(done)
		first, _, firstErr = run(never)
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the worker never started")
	}
	st.refusing.Store(true)
	refusedAt := time.Now()
	select {
	case <-done:
	case <-time.After(storeKillLease + 10*time.Second):
		t.Fatal("the first process did not give the run up")
	}
	took := time.Since(refusedAt)
	t.Logf("first process: %v after %s, %d updates refused, winner %+v", firstErr, took.Round(time.Millisecond), st.refused.Load(), first.Winner)
	if !errors.Is(firstErr, supervise.ErrSpawnLogLost) {
		t.Errorf("the first process ended with %v, want ErrSpawnLogLost", firstErr)
	}
	if first.Winner != nil {
		t.Errorf("the first process delivered a winner after losing its lease: %+v", first.Winner)
	}
	// The cut worker's settlement, whose record the lost journal
	// refused, is not the first process's brain's to hear.
	if n := heard.Load(); n != 0 {
		t.Errorf("the first process's brain heard %d settlements after its journal was lost", n)
	}
	// Refused for lease+1 s in all, then the store answers again.
	if wait := storeKillLease + time.Second - time.Since(refusedAt); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	st.refusing.Store(false)
	open := make(chan struct{})
	close(open)
	var again supervise.SupervisedResult
	for {
		again, _, err = run(open)
		if !errors.Is(err, supervise.ErrSpawnLogHeld) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil || again.Winner == nil {
		t.Fatalf("the other process's resume: %v, winner %+v (%s %s)", err, again.Winner, again.Status, again.Reason)
	}
}
