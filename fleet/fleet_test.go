package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
)

const noteProfile = `{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`

// openFleet opens a fleet on a fresh test schema, River's tables in the
// same schema (dropped with it), migrated.
func openFleet(t testing.TB) (*fleet.Fleet, string) {
	t.Helper()
	conn := pgtest.Schema(t)
	u, err := url.Parse(conn)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := fleet.Open(ctx, fleet.Options{DatabaseURL: conn, RiverSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return f, conn
}

func spec(t testing.TB, task string) fleet.Spec {
	t.Helper()
	v, err := canonjson.Decode([]byte(noteProfile))
	if err != nil {
		t.Fatal(err)
	}
	return fleet.Spec{Profile: v, Task: task, Provider: "scripted"}
}

func provider(t testing.TB, script string) contract.Provider {
	t.Helper()
	sc, err := scripted.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return scripted.New(sc, scripted.Options{})
}

const quickScript = `{"turns":[{"repeat":true,"steps":[{"text":"note written"},{"usage":{"inputTokens":3,"outputTokens":2},"mode":"delta"}]}]}`

func TestSubmitIsIdempotentByKey(t *testing.T) {
	f, _ := openFleet(t)
	ctx := t.Context()
	first, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "write a note"), IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		sub      fleet.Submission
		replayed bool
		conflict bool
	}{
		{name: "same key, same request", sub: fleet.Submission{Spec: spec(t, "write a note"), IdempotencyKey: "k1"}, replayed: true},
		{name: "same key, same request, another run id asked", sub: fleet.Submission{Spec: spec(t, "write a note"), IdempotencyKey: "k1", RunID: "run-other"}, replayed: true},
		{name: "same key, another request", sub: fleet.Submission{Spec: spec(t, "write another note"), IdempotencyKey: "k1"}, conflict: true},
		{name: "another key", sub: fleet.Submission{Spec: spec(t, "write a note"), IdempotencyKey: "k2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.Submit(ctx, tt.sub)
			if tt.conflict {
				var ce *fleet.ConflictError
				if !errors.As(err, &ce) || ce.RunID != first.RunID {
					t.Fatalf("Submit = %v, want a *ConflictError naming %s", err, first.RunID)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Replayed != tt.replayed || (got.RunID == first.RunID) != tt.replayed || (got.JobID == first.JobID) != tt.replayed {
				t.Errorf("Submit = %+v, first %+v; want replayed %v (same run and job)", got, first, tt.replayed)
			}
		})
	}
	st, err := f.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []fleet.QueueCount{{Queue: "scripted", State: "available", Count: 2}}
	if diff := cmp.Diff(want, st.Jobs); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
}

func TestSubmitRefusesInvalidSpecs(t *testing.T) {
	f, _ := openFleet(t)
	good := spec(t, "task")
	tests := []struct {
		name string
		mut  func(*fleet.Spec)
	}{
		{"no profile", func(s *fleet.Spec) { s.Profile = canonjson.Value{} }},
		{"invalid profile", func(s *fleet.Spec) {
			s.Profile = canonjson.ObjectValue([]canonjson.Member{{Name: "name", Value: canonjson.NumberValue(5)}})
		}},
		{"no task", func(s *fleet.Spec) { s.Task = "" }},
		{"provider not a queue name", func(s *fleet.Spec) { s.Provider = "Bad Name" }},
		{"negative stage", func(s *fleet.Spec) { s.Stage = -1 }},
		{"judged elsewhere with an expect of its own", func(s *fleet.Spec) { s.JudgedBy, s.Expect = "supervise run r, node r:s1", "DONE" }},
		{"judgedBy over its bound", func(s *fleet.Spec) { s.JudgedBy = strings.Repeat("j", 1025) }},
		{"judgedBy not UTF-8", func(s *fleet.Spec) { s.JudgedBy = "\xff" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good
			tt.mut(&s)
			if _, err := f.Submit(t.Context(), fleet.Submission{Spec: s}); !errors.Is(err, fleet.ErrInvalid) {
				t.Errorf("Submit = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestWorkerRefusesUnmigratedDatabase(t *testing.T) {
	conn := pgtest.Schema(t)
	f, err := fleet.Open(t.Context(), fleet.Options{DatabaseURL: conn, RiverSchema: "agentrt_never_migrated"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.NewWorker(t.Context(), fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": provider(t, quickScript)}})
	if _, ok := errors.AsType[*fleet.NotMigratedError](err); !ok {
		t.Fatalf("NewWorker = %v, want a *NotMigratedError", err)
	}
}

// startWorker runs a worker on its own fleet connection until the test
// ends (or stop is called).
func startWorker(t testing.TB, conn, schema string, o fleet.WorkerOptions) (*fleet.Worker, func()) {
	t.Helper()
	return fleet.RunTestWorker(t, conn, schema, o)
}

// waitEnded waits until every run is terminal and returns them.
func waitEnded(t testing.TB, f *fleet.Fleet, ids []string, within time.Duration) map[string]*fleet.Run {
	t.Helper()
	deadline := time.Now().Add(within)
	out := map[string]*fleet.Run{}
	for {
		for _, id := range ids {
			if out[id] != nil {
				continue
			}
			r, err := f.Get(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Terminal() && r.Status != store.StatusInterrupted {
				out[id] = r
			}
		}
		if len(out) == len(ids) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs ended within %s", len(out), len(ids), within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func schemaOf(t testing.TB, conn string) string {
	u, err := url.Parse(conn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("search_path")
}

func TestTwoWorkersShareJobsRunningEachOnce(t *testing.T) {
	f, conn := openFleet(t)
	const n = 60
	var ids []string
	for i := range n {
		sub, err := f.Submit(t.Context(), fleet.Submission{Spec: spec(t, "note "+strings.Repeat("x", i%5))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sub.RunID)
	}
	o := func() fleet.WorkerOptions {
		return fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": provider(t, quickScript)}, Concurrency: 8, LeaseTTL: 3 * time.Second, PollInterval: 50 * time.Millisecond}
	}
	start := time.Now()
	w1, stop1 := startWorker(t, conn, schemaOf(t, conn), o())
	w2, stop2 := startWorker(t, conn, schemaOf(t, conn), o())
	runs := waitEnded(t, f, ids, 2*time.Minute)
	elapsed := time.Since(start)
	stop1()
	stop2()
	t.Logf("%d runs on 2 workers in %s (%.1f runs/s); worker 1 %+v, worker 2 %+v", n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), w1.Stats(), w2.Stats())
	for _, id := range ids {
		r := runs[id]
		if r.Status != store.StatusCompleted || len(r.Attempts) != 1 || r.Outcome == nil || !r.Outcome.Delivered {
			t.Errorf("run %s: %s, attempts %+v, outcome %+v; want completed once, delivered", id, r.Status, r.Attempts, r.Outcome)
			continue
		}
		rec, err := kernel.ReadRun(t.Context(), f.Store(), r.Attempts[0].RunID)
		if err != nil || rec.Run.Status != store.StatusCompleted {
			t.Errorf("attempt %s: %v, %v", r.Attempts[0].RunID, rec, err)
		}
	}
	s1, s2 := w1.Stats(), w2.Stats()
	if got := s1.Started + s2.Started; got != n {
		t.Errorf("attempts started: %d, want %d (no run twice)", got, n)
	}
	if got := s1.Completed + s2.Completed; got != n {
		t.Errorf("runs completed: %d, want %d", got, n)
	}
	if s1.Started == 0 || s2.Started == 0 {
		t.Logf("one worker took every job (worker 1 %d, worker 2 %d)", s1.Started, s2.Started)
	}
}

const slowScript = `{"turns":[{"repeat":true,"steps":[{"text":"working "},{"delayMs":60000},{"text":"done"}]}]}`

func TestCancel(t *testing.T) {
	f, conn := openFleet(t)
	ctx := t.Context()
	pending, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "never runs")})
	if err != nil {
		t.Fatal(err)
	}
	effect, err := f.Cancel(ctx, pending.RunID, "not needed")
	if err != nil || effect != kernel.EffectCancelled {
		t.Fatalf("Cancel(pending) = %s, %v; want cancelled", effect, err)
	}
	running, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "runs a minute")})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, conn, schemaOf(t, conn), fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": provider(t, slowScript)}, LeaseTTL: 3 * time.Second, PollInterval: 50 * time.Millisecond})
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := f.Get(ctx, running.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == store.StatusRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s never started: %s", running.RunID, r.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	effect, err = f.Cancel(ctx, running.RunID, "changed my mind")
	if err != nil || effect != kernel.EffectCancelRequested {
		t.Fatalf("Cancel(running) = %s, %v; want cancel_requested", effect, err)
	}
	runs := waitEnded(t, f, []string{pending.RunID, running.RunID}, 30*time.Second)
	for id, want := range map[string]int{pending.RunID: 0, running.RunID: 1} {
		r := runs[id]
		if r.Status != store.StatusCancelled || len(r.Attempts) != want {
			t.Errorf("run %s: %s with attempts %+v; want cancelled after %d attempts", id, r.Status, r.Attempts, want)
		}
	}
	if effect, err := f.Cancel(ctx, running.RunID, "again"); err != nil || effect != kernel.EffectCancelled {
		t.Errorf("Cancel(cancelled) = %s, %v; want cancelled", effect, err)
	}
}

func TestGracefulShutdownHandsRunsBack(t *testing.T) {
	f, conn := openFleet(t)
	ctx := t.Context()
	sub, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "long")})
	if err != nil {
		t.Fatal(err)
	}
	opts := fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": provider(t, slowScript)}, LeaseTTL: 2 * time.Second, PollInterval: 50 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond}
	w1, stop1 := startWorker(t, conn, schemaOf(t, conn), opts)
	deadline := time.Now().Add(30 * time.Second)
	for w1.Stats().Started == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the worker never started the run")
		}
		time.Sleep(50 * time.Millisecond)
	}
	begin := time.Now()
	stop1()
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("graceful stop took %s", d)
	}
	r, err := f.Get(ctx, sub.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.StatusPending || len(r.Attempts) != 1 || r.Attempts[0].Status != "released" {
		t.Fatalf("after the stop: %s, attempts %+v; want pending with one released attempt", r.Status, r.Attempts)
	}
	// Another worker (a quick one) finishes it in a new generation.
	opts.Providers = map[string]contract.Provider{"scripted": provider(t, quickScript)}
	startWorker(t, conn, schemaOf(t, conn), opts)
	r = waitEnded(t, f, []string{sub.RunID}, 30*time.Second)[sub.RunID]
	if r.Status != store.StatusCompleted || len(r.Attempts) != 2 || r.Attempts[1].Generation != r.Attempts[0].Generation+1 {
		t.Errorf("after takeover: %s, attempts %+v; want completed by a second attempt in the next generation", r.Status, r.Attempts)
	}
	first, err := kernel.ReadRun(ctx, f.Store(), r.Attempts[0].RunID)
	if err != nil || first.Run.Status != store.StatusCancelled {
		t.Errorf("first attempt: %v, %v; want it recorded cancelled", first, err)
	}
}

// BenchmarkFleet measures runs per second through the fleet on one
// machine: b.N runs submitted, then executed by 1 or 4 workers (each its
// own connection pool and River client, concurrency 8) on a zero-latency
// scripted model, from the first worker's start to the last run's end.
func BenchmarkFleet(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			f, conn := openFleet(b)
			ids := make([]string, b.N)
			for i := range b.N {
				sub, err := f.Submit(b.Context(), fleet.Submission{Spec: spec(b, "note")})
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = sub.RunID
			}
			b.ResetTimer()
			for range workers {
				startWorker(b, conn, schemaOf(b, conn), fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": provider(b, quickScript)},
					Concurrency: 8, PollInterval: 20 * time.Millisecond})
			}
			waitEnded(b, f, ids, 5*time.Minute)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}

func TestWorkerMetrics(t *testing.T) {
	f, conn := openFleet(t)
	const n = 5
	var ids []string
	for range n {
		sub, err := f.Submit(t.Context(), fleet.Submission{Spec: spec(t, "note")})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sub.RunID)
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	_, stop := startWorker(t, conn, schemaOf(t, conn), fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": provider(t, quickScript)},
		PollInterval: 50 * time.Millisecond, Meter: mp.Meter("agentrt/fleet")})
	waitEnded(t, f, ids, time.Minute)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	stop()
	runs := map[string]int64{}
	var appends uint64
	depth := int64(-1)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name == fleet.MetricRuns {
					for _, p := range d.DataPoints {
						ev, _ := p.Attributes.Value("event")
						runs[ev.AsString()] += p.Value
					}
				}
			case metricdata.Histogram[float64]:
				if m.Name == fleet.MetricAppendLatency {
					for _, p := range d.DataPoints {
						appends += p.Count
					}
				}
			case metricdata.Gauge[int64]:
				if m.Name == fleet.MetricQueueDepth {
					for _, p := range d.DataPoints {
						depth = p.Value
					}
				}
			}
		}
	}
	if diff := cmp.Diff(map[string]int64{"started": n, "completed": n}, runs); diff != "" {
		t.Errorf("%s (-want +got):\n%s", fleet.MetricRuns, diff)
	}
	if appends < n {
		t.Errorf("%s recorded %d appends, want at least %d", fleet.MetricAppendLatency, appends, n)
	}
	if depth != 0 {
		t.Errorf("%s = %d, want 0 once every run ended", fleet.MetricQueueDepth, depth)
	}
}
