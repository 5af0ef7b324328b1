package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
)

// wait is how long a test waits for something that should happen at once.
const wait = 5 * time.Second

type call = Request[int, int]

// gate is a commit function that records each batch and, while held,
// blocks the committer inside the first commit until released.
type gate struct {
	mu      sync.Mutex
	batches [][]int
	entered chan struct{}
	release chan struct{}
	fail    func(in int) error
	err     error
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 100), release: make(chan struct{})} }

func (g *gate) commit(ctx context.Context, batch []*call) error {
	var ins []int
	for _, r := range batch {
		ins = append(ins, r.In)
		if g.fail != nil {
			if err := g.fail(r.In); err != nil {
				r.Fail(err)
				continue
			}
		}
		r.Succeed(r.In * 10)
	}
	g.mu.Lock()
	g.batches = append(g.batches, ins)
	g.mu.Unlock()
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.err
}

func (g *gate) seen() [][]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.batches)
}

func (g *gate) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(wait):
		t.Fatal("the committer never started a commit")
	}
}

type result struct {
	in, out int
	err     error
}

func start(ctx context.Context, c *Committer[int, int], in int, results chan<- result) {
	go func() {
		out, err := c.Do(ctx, in, 1)
		results <- result{in, out, err}
	}()
}

func receive(t *testing.T, results <-chan result) result {
	t.Helper()
	select {
	case r := <-results:
		return r
	case <-time.After(wait):
		t.Fatal("no answer")
		return result{}
	}
}

// waitQueued waits until n requests are in the queue.
func waitQueued(t *testing.T, c *Committer[int, int], n int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for len(c.queue) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", len(c.queue), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Requests that arrive while a commit runs share the next one, and each
// caller gets its own result only after that commit.
func TestQueuedRequestsShareOneCommit(t *testing.T) {
	g := newGate()
	c := New(Options{Timeout: wait}, g.commit)
	defer c.Close()
	results := make(chan result, 10)
	start(context.Background(), c, 0, results)
	g.waitEntered(t)
	for i := 1; i <= 5; i++ {
		start(context.Background(), c, i, results)
	}
	waitQueued(t, c, 5)
	select {
	case r := <-results:
		t.Fatalf("request %d answered before its commit returned", r.in)
	default:
	}
	close(g.release)
	for range 6 {
		if r := receive(t, results); r.err != nil || r.out != r.in*10 {
			t.Errorf("request %d: %d, %v", r.in, r.out, r.err)
		}
	}
	got := g.seen()
	if len(got) != 2 || len(got[0]) != 1 || len(got[1]) != 5 {
		t.Errorf("batches %v, want [0] then the five queued behind it", got)
	}
}

// A batch takes at most MaxBatch requests and MaxRows rows; a request
// heavier than MaxRows still commits, alone.
func TestBatchesAreBounded(t *testing.T) {
	var mu sync.Mutex
	var batches [][]int
	block := make(chan struct{})
	entered := make(chan struct{}, 1)
	c := New(Options{MaxBatch: 3, MaxRows: 4, Timeout: wait}, func(ctx context.Context, batch []*call) error {
		var rows []int
		for _, r := range batch {
			rows = append(rows, r.In)
			r.Succeed(0)
		}
		mu.Lock()
		batches = append(batches, rows)
		first := len(batches) == 1
		mu.Unlock()
		if first {
			entered <- struct{}{}
			select {
			case <-block:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	defer c.Close()
	var wg sync.WaitGroup
	do := func(rows int) {
		wg.Go(func() {
			if _, err := c.Do(context.Background(), rows, rows); err != nil {
				t.Error(err)
			}
		})
	}
	do(1)
	select {
	case <-entered:
	case <-time.After(wait):
		t.Fatal("the committer never started a commit")
	}
	// Queued in this order: 1 1 1 1 | 3 | 9.
	for i, rows := range []int{1, 1, 1, 1, 3, 9} {
		do(rows)
		waitQueued(t, c, i+1)
	}
	close(block)
	wg.Wait()
	want := [][]int{{1}, {1, 1, 1}, {1, 3}, {9}}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(batches) != fmt.Sprint(want) {
		t.Errorf("batches %v, want %v", batches, want)
	}
}

// A caller whose context ends while its request is queued gets the
// context's error, and the request is never written.
func TestCancelledWhileQueuedIsNotWritten(t *testing.T) {
	g := newGate()
	c := New(Options{Timeout: wait}, g.commit)
	defer c.Close()
	results := make(chan result, 3)
	start(context.Background(), c, 1, results)
	g.waitEntered(t)
	ctx, cancel := context.WithCancel(context.Background())
	start(ctx, c, 2, results)
	start(context.Background(), c, 3, results)
	waitQueued(t, c, 2)
	cancel()
	if r := receive(t, results); r.in != 2 || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled caller got %d: %v", r.in, r.err)
	}
	close(g.release)
	for range 2 {
		if r := receive(t, results); r.err != nil {
			t.Errorf("request %d: %v", r.in, r.err)
		}
	}
	if got := g.seen(); fmt.Sprint(got) != "[[1] [3]]" {
		t.Errorf("batches %v: the cancelled request was written", got)
	}
}

// Once a transaction took a request, a caller whose context ends is
// answered at once, with the outcome unknown (its bound holds even when
// the database stops answering); the transaction still commits it.
func TestCancelledWhileCommittingIsUnknown(t *testing.T) {
	g := newGate()
	c := New(Options{Timeout: wait}, g.commit)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan result, 1)
	start(ctx, c, 7, results)
	g.waitEntered(t)
	cancel()
	r := receive(t, results)
	if !errors.Is(r.err, store.ErrUnknownOutcome) || !errors.Is(r.err, context.Canceled) {
		t.Errorf("got %d, %v; want the outcome unknown, at once", r.out, r.err)
	}
	close(g.release)
	if got := g.seen(); fmt.Sprint(got) != "[[7]]" {
		t.Errorf("batches %v: the taken request was still to be committed", got)
	}
}

// A failed transaction fails every request it carried, except those that
// already failed on their own, which keep their own error.
func TestFailedCommitFailsItsRequests(t *testing.T) {
	g := newGate()
	c := New(Options{Timeout: wait}, g.commit)
	defer c.Close()
	results := make(chan result, 4)
	start(context.Background(), c, 0, results)
	g.waitEntered(t)
	for i := 1; i <= 3; i++ {
		start(context.Background(), c, i, results)
	}
	waitQueued(t, c, 3)
	mine := errors.New("this request alone")
	g.fail = func(in int) error {
		if in == 2 {
			return mine
		}
		return nil
	}
	g.err = errors.New("commit failed")
	close(g.release)
	for range 4 {
		r := receive(t, results)
		want := g.err
		if r.in == 2 {
			want = mine
		}
		if !errors.Is(r.err, want) || r.out != 0 {
			t.Errorf("request %d: %d, %v; want %v", r.in, r.out, r.err, want)
		}
	}
}

// The queue is bounded: a caller finding it full waits for room, within
// its context.
func TestFullQueueMakesCallersWait(t *testing.T) {
	g := newGate()
	c := New(Options{Queue: 2, Timeout: wait}, g.commit)
	defer c.Close()
	results := make(chan result, 4)
	start(context.Background(), c, 1, results)
	g.waitEntered(t)
	start(context.Background(), c, 2, results)
	waitQueued(t, c, 1)
	start(context.Background(), c, 3, results)
	waitQueued(t, c, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Do(ctx, 4, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a caller beyond the queue's bound: %v", err)
	}
	close(g.release)
	for range 3 {
		if r := receive(t, results); r.err != nil {
			t.Errorf("request %d: %v", r.in, r.err)
		}
	}
	if got := g.seen(); fmt.Sprint(got) != "[[1] [2 3]]" {
		t.Errorf("batches %v", got)
	}
}

// Close commits what is already queued, refuses what comes later with
// store.ErrClosed (callers waiting for room included), and ends the
// committer goroutine.
func TestCloseDrainsAndStops(t *testing.T) {
	before := runtime.NumGoroutine()
	g := newGate()
	c := New(Options{Queue: 1, Timeout: wait}, g.commit)
	results := make(chan result, 4)
	start(context.Background(), c, 1, results)
	g.waitEntered(t)
	start(context.Background(), c, 2, results)
	waitQueued(t, c, 1)
	start(context.Background(), c, 3, results) // waits for room
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	if r := receive(t, results); r.in != 3 || !errors.Is(r.err, store.ErrClosed) {
		t.Fatalf("caller waiting for room at Close: %d, %v", r.in, r.err)
	}
	close(g.release)
	for range 2 {
		if r := receive(t, results); r.err != nil {
			t.Errorf("request %d queued before Close: %v", r.in, r.err)
		}
	}
	select {
	case <-closed:
	case <-time.After(wait):
		t.Fatal("Close did not return")
	}
	if _, err := c.Do(context.Background(), 4, 1); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Do after Close: %v", err)
	}
	c.Close() // twice is fine
	if got := g.seen(); fmt.Sprint(got) != "[[1] [2]]" {
		t.Errorf("batches %v", got)
	}
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

// ctxGate is a commit function that hands each commit's context to the
// test and holds the commit until released or its context ends.
type ctxGate struct {
	entered chan context.Context
	release chan struct{}
}

func (g *ctxGate) commit(ctx context.Context, batch []*call) error {
	for _, r := range batch {
		r.Succeed(r.In * 10)
	}
	g.entered <- ctx
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A transaction whose every caller gave up (a database that stopped
// answering) is cut at once rather than run out its Timeout, holding
// the committer and Close: no one waits for its outcome, which each
// caller was told is unknown.
func TestTransactionAllCallersAbandonedIsCut(t *testing.T) {
	g := &ctxGate{entered: make(chan context.Context, 1), release: make(chan struct{})}
	c := New(Options{Timeout: time.Hour}, g.commit)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan result, 1)
	start(ctx, c, 7, results)
	var txCtx context.Context
	select {
	case txCtx = <-g.entered:
	case <-time.After(wait):
		t.Fatal("the committer never started a commit")
	}
	cancel()
	if r := receive(t, results); !errors.Is(r.err, store.ErrUnknownOutcome) {
		t.Fatalf("got %d, %v; want the outcome unknown", r.out, r.err)
	}
	select {
	case <-txCtx.Done():
	case <-time.After(wait):
		t.Fatal("the transaction its only caller abandoned still runs")
	}
}

// A transaction one of whose callers still waits is not cut when another
// gives up: the one waiting gets its outcome.
func TestTransactionOneCallerWaitingIsNotCut(t *testing.T) {
	g := newGate()
	c := New(Options{Timeout: time.Hour}, g.commit)
	defer c.Close()
	// 1 holds the committer while 2 and 3 queue into one batch.
	results := make(chan result, 3)
	start(context.Background(), c, 1, results)
	g.waitEntered(t)
	ctx, cancel := context.WithCancel(context.Background())
	start(ctx, c, 2, results)
	waitQueued(t, c, 1)
	start(context.Background(), c, 3, results)
	waitQueued(t, c, 2)
	g.release <- struct{}{} // 1 commits
	if r := receive(t, results); r.in != 1 || r.err != nil {
		t.Fatalf("first: %+v", r)
	}
	g.waitEntered(t) // 2 and 3's transaction runs
	cancel()
	if r := receive(t, results); r.in != 2 || !errors.Is(r.err, store.ErrUnknownOutcome) {
		t.Fatalf("the abandoned caller: %+v, want its outcome unknown", r)
	}
	close(g.release)
	if r := receive(t, results); r.in != 3 || r.err != nil || r.out != 30 {
		t.Errorf("the waiting caller: %+v, want 30 and no error (its transaction was not cut)", r)
	}
}
