package taskqueue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/taskqueue"
)

// list returns a Take that offers tasks in order, recording what it saw.
type list struct {
	mu     sync.Mutex
	tasks  []taskqueue.Task[int]
	calls  [][]string
	events []string
}

func (l *list) take(_ context.Context, active []string) (taskqueue.Task[int], bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, active)
	if len(l.tasks) == 0 {
		return taskqueue.Task[int]{}, false, nil
	}
	t := l.tasks[0]
	l.tasks = l.tasks[1:]
	l.events = append(l.events, "admitted "+t.ID) // a checkpoint persisted before start
	return t, true, nil
}

func (l *list) log(s string) {
	l.mu.Lock()
	l.events = append(l.events, s)
	l.mu.Unlock()
}

func gated(l *list, id string, gate <-chan struct{}, v int, err error) taskqueue.Task[int] {
	return taskqueue.Task[int]{ID: id, Run: func(ctx context.Context) (int, error) {
		l.log("started " + id)
		<-gate
		return v, err
	}}
}

// Checklist TQ-*: settlements come in completion order, failures are
// settlements, admission is persisted before a task starts.
func TestCompletionOrderAndAdmission(t *testing.T) {
	l := &list{}
	gates := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{}), "c": make(chan struct{})}
	boom := errors.New("boom")
	l.tasks = []taskqueue.Task[int]{gated(l, "a", gates["a"], 1, nil), gated(l, "b", gates["b"], 0, boom), gated(l, "c", gates["c"], 3, nil)}

	order := []string{"c", "a", "b"}
	go func() {
		for _, id := range order {
			time.Sleep(5 * time.Millisecond)
			close(gates[id])
		}
	}()
	var got []string
	for s, err := range taskqueue.Run(context.Background(), l.take, taskqueue.Options{}) {
		if err != nil {
			t.Fatal(err)
		}
		switch s.ID {
		case "b":
			if !errors.Is(s.Err, boom) {
				t.Errorf("b settled with %v", s.Err)
			}
		default:
			if s.Err != nil {
				t.Errorf("%s settled with %v", s.ID, s.Err)
			}
		}
		got = append(got, s.ID)
	}
	if !slices.Equal(got, order) {
		t.Errorf("settlements %v, want completion order %v", got, order)
	}
	for _, id := range []string{"a", "b", "c"} {
		if slices.Index(l.events, "admitted "+id) > slices.Index(l.events, "started "+id) {
			t.Errorf("%s started before its admission: %v", id, l.events)
		}
	}
	if first := l.calls[0]; len(first) != 0 {
		t.Errorf("first take saw active %v", first)
	}
}

func TestTakeSeesActiveIDsAndMaxActive(t *testing.T) {
	l := &list{}
	var running, peak atomic.Int32
	for i := range 10 {
		id := fmt.Sprint(i)
		l.tasks = append(l.tasks, taskqueue.Task[int]{ID: id, Run: func(context.Context) (int, error) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			running.Add(-1)
			return i, nil
		}})
	}
	n := 0
	for _, err := range taskqueue.Run(context.Background(), l.take, taskqueue.Options{MaxActive: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 10 || peak.Load() > 3 {
		t.Errorf("settled %d, peak %d", n, peak.Load())
	}
	for _, active := range l.calls {
		if len(active) > 3 {
			t.Errorf("take called with %d active", len(active))
		}
	}
}

// Stopping the iteration stops admission and waits for started tasks.
func TestConsumerBreakWaitsForStartedTasks(t *testing.T) {
	l := &list{}
	var finished atomic.Int32
	for i := range 5 {
		l.tasks = append(l.tasks, taskqueue.Task[int]{ID: fmt.Sprint(i), Run: func(context.Context) (int, error) {
			time.Sleep(time.Duration(i+1) * 3 * time.Millisecond)
			finished.Add(1)
			return i, nil
		}})
	}
	l.tasks = append(l.tasks[:3:3], l.tasks[3:]...)
	take := func(ctx context.Context, active []string) (taskqueue.Task[int], bool, error) {
		if len(active) >= 3 {
			return taskqueue.Task[int]{}, false, nil
		}
		return l.take(ctx, active)
	}
	for range taskqueue.Run(context.Background(), take, taskqueue.Options{}) {
		break
	}
	if got := finished.Load(); got != 3 {
		t.Errorf("Run returned with %d of 3 started tasks finished", got)
	}
	if len(l.tasks) != 2 {
		t.Errorf("admission continued after the consumer stopped: %d left", len(l.tasks))
	}
}

func TestTakeErrorYieldsInFlightThenError(t *testing.T) {
	gate := make(chan struct{})
	calls := 0
	take := func(ctx context.Context, active []string) (taskqueue.Task[int], bool, error) {
		calls++
		if calls == 1 {
			return taskqueue.Task[int]{ID: "a", Run: func(context.Context) (int, error) { <-gate; return 7, nil }}, true, nil
		}
		return taskqueue.Task[int]{}, false, errors.New("store unavailable")
	}
	close(gate)
	var settled []int
	var final error
	for s, err := range taskqueue.Run(context.Background(), take, taskqueue.Options{}) {
		if err != nil {
			final = err
			continue
		}
		settled = append(settled, s.Value)
	}
	if !slices.Equal(settled, []int{7}) || final == nil || final.Error() != "store unavailable" {
		t.Errorf("settled %v, final %v", settled, final)
	}
}

func TestDuplicateIDStopsAdmission(t *testing.T) {
	gate := make(chan struct{})
	take := func(ctx context.Context, active []string) (taskqueue.Task[int], bool, error) {
		return taskqueue.Task[int]{ID: "same", Run: func(context.Context) (int, error) { <-gate; return 1, nil }}, true, nil
	}
	go func() { time.Sleep(5 * time.Millisecond); close(gate) }()
	var final error
	n := 0
	for _, err := range taskqueue.Run(context.Background(), take, taskqueue.Options{}) {
		if err != nil {
			final = err
		} else {
			n++
		}
	}
	if !errors.Is(final, taskqueue.ErrDuplicateID) || n != 1 {
		t.Errorf("n=%d final=%v", n, final)
	}
}

func TestPanicIsARejectedSettlement(t *testing.T) {
	l := &list{tasks: []taskqueue.Task[int]{{ID: "p", Run: func(context.Context) (int, error) { panic("bad") }}}}
	for s, err := range taskqueue.Run(context.Background(), l.take, taskqueue.Options{}) {
		var pe *taskqueue.PanicError
		if err != nil || !errors.As(s.Err, &pe) || pe.Value != "bad" {
			t.Errorf("settlement %+v, %v", s, err)
		}
	}
}

func TestContextDoneStopsAdmission(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := 0
	take := func(ctx context.Context, active []string) (taskqueue.Task[int], bool, error) {
		started++
		if started == 2 {
			cancel()
		}
		return taskqueue.Task[int]{ID: fmt.Sprint(started), Run: func(ctx context.Context) (int, error) { return 0, ctx.Err() }}, true, nil
	}
	var final error
	for _, err := range taskqueue.Run(ctx, take, taskqueue.Options{MaxActive: 1}) {
		if err != nil {
			final = err
		}
	}
	if !errors.Is(final, context.Canceled) || started != 2 {
		t.Errorf("final %v after %d takes", final, started)
	}
}

func TestEmpty(t *testing.T) {
	for range taskqueue.Run(context.Background(), (&list{}).take, taskqueue.Options{}) {
		t.Fatal("yielded from an empty queue")
	}
}

// Take returning nothing while tasks run waits for a settlement and asks
// again: readiness that depends on completed work.
func TestReadinessAfterSettlement(t *testing.T) {
	done := map[string]bool{}
	var mu sync.Mutex
	take := func(ctx context.Context, active []string) (taskqueue.Task[int], bool, error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !done["a"] && !slices.Contains(active, "a"):
			return taskqueue.Task[int]{ID: "a", Run: func(context.Context) (int, error) { return 1, nil }}, true, nil
		case done["a"] && !done["b"] && !slices.Contains(active, "b"):
			return taskqueue.Task[int]{ID: "b", Run: func(context.Context) (int, error) { return 2, nil }}, true, nil
		}
		return taskqueue.Task[int]{}, false, nil
	}
	var got []string
	for s, err := range taskqueue.Run(context.Background(), take, taskqueue.Options{}) {
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		done[s.ID] = true
		mu.Unlock()
		got = append(got, s.ID)
	}
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("got %v", got)
	}
}

func ExampleRun() {
	ids := []string{"fetch", "parse", "index"}
	take := func(ctx context.Context, active []string) (taskqueue.Task[string], bool, error) {
		if len(ids) == 0 || len(active) > 0 {
			return taskqueue.Task[string]{}, false, nil // one at a time
		}
		id := ids[0]
		ids = ids[1:]
		return taskqueue.Task[string]{ID: id, Run: func(context.Context) (string, error) { return id + " done", nil }}, true, nil
	}
	for s, err := range taskqueue.Run(context.Background(), take, taskqueue.Options{}) {
		if err != nil {
			fmt.Println("queue error:", err)
			break
		}
		fmt.Println(s.Value)
	}
	// Output:
	// fetch done
	// parse done
	// index done
}
