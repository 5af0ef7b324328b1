package supervise_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// richScaleSizes are the worker counts the journal-scale benchmarks
// build journals of (each worker adds about eight records).
var richScaleSizes = []int{1_000, 10_000}

// richRun is the fixture of a run interrupted after n workers: each was
// spawned, settled (undelivered), steered after it settled, asked about
// by the manager (ask_parent: journaled, no parent) and noted by an edge
// record; a metered driver call follows each. The run ends interrupted
// (its caller's context cancelled), so a resume drives it on.
type richRun struct {
	manager *profile.Profile
	opts    supervise.Options
}

func newRichRun(b *testing.B) richRun {
	b.Helper()
	writer, err := profile.Parse([]byte(writerProfile))
	if err != nil {
		b.Fatal(err)
	}
	manager, err := profile.Parse([]byte(`{"name": "m", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
	if err != nil {
		b.Fatal(err)
	}
	gate := &gateExecutor{release: make(chan struct{})}
	close(gate.release)
	big := int64(1 << 40)
	return richRun{manager: manager, opts: supervise.Options{
		Budget:    ledger.Budget{Tokens: &big, Iterations: &big, MicroUSD: &big},
		PerWorker: ledger.Budget{Tokens: i64(1_000), Iterations: i64(1), MicroUSD: i64(100_000)},
		Profiles:  map[string]*profile.Profile{"writer": writer}, Deliverable: refuseAll, Executor: gate,
		RunID: "run1", Resume: true,
	}}
}

// refuseAll delivers nothing, so every settled worker stays in the tree
// undelivered and the run never has a winner.
var refuseAll = supervise.Deliverable{Describe: "nothing", Check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
	return kernel.Verdict{Passed: false, Reason: "never"}, nil
}}

// build runs the n workers into o's journal (RunDir or SpawnStore) and
// interrupts the run.
func (r richRun) build(b *testing.B, o supervise.Options, n int) {
	b.Helper()
	ctx, cancel := context.WithCancel(supervise.WithUnsyncedJournal(context.Background()))
	defer cancel()
	in, out := int64(3), int64(2)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for i := range n {
			s, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: fmt.Sprintf("t%d", i)})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || r.Event == nil {
				return supervise.BrainReport{}, fmt.Errorf("await: %+v %w", r, err)
			}
			if _, err := c.Steer(ctx, supervise.SteerArgs{WorkerID: s.WorkerID, Instruction: "again"}); err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := c.AskParent(ctx, supervise.AskArgs{From: c.Self(), Level: "driver", Question: "more?", Reason: "r", Urgency: "continue-without"}); err != nil {
				return supervise.BrainReport{}, err
			}
			if err := c.Note(ctx, supervise.KindEdge, s.WorkerID, canonjson.Value{}); err != nil {
				return supervise.BrainReport{}, err
			}
			if err := c.Meter(ctx, ledger.Usage{InputTokens: ledger.ExactAmount(in), OutputTokens: ledger.ExactAmount(out)}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		cancel()
		return supervise.BrainReport{}, ctx.Err()
	})
	if _, err := supervise.Supervise(ctx, r.manager, "t", o); err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
}

// resume resumes o's journal with brain and returns its result; the
// resumed run is interrupted again, so its journal stays resumable.
func (r richRun) resume(b *testing.B, o supervise.Options, brain func(context.Context, *supervise.Coordinator) error) supervise.SupervisedResult {
	b.Helper()
	ctx, cancel := context.WithCancel(supervise.WithUnsyncedJournal(context.Background()))
	defer cancel()
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		err := brain(ctx, c)
		cancel()
		return supervise.BrainReport{}, errors.Join(err, ctx.Err())
	})
	res, err := supervise.Supervise(ctx, r.manager, "t", o)
	if err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
	return res
}

func copyFile(b *testing.B, from, to string) {
	b.Helper()
	src, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		b.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkResumeRichJournal resumes a run interrupted after n workers
// (see richRun: spawned, settled, steered, asked about, edge-noted and
// metered; ~8 records a worker) whose resumed brain returns at once:
// the whole replay, from the run dir's file journal or from the SQLite
// store's journal. Its cost should grow linearly with n (ns/op, B/op
// and allocs/op are per resume); the journal is not fsynced, so the
// figures are the replay's, not the disk's.
func BenchmarkResumeRichJournal(b *testing.B) {
	for _, n := range richScaleSizes {
		b.Run(fmt.Sprintf("file/workers=%d", n), func(b *testing.B) {
			r := newRichRun(b)
			o := r.opts
			o.RunDir = b.TempDir()
			r.build(b, o, n)
			journal, err := os.ReadFile(filepath.Join(o.RunDir, supervise.SpawnJournalFile))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				o.RunDir = b.TempDir()
				if err := os.WriteFile(filepath.Join(o.RunDir, supervise.SpawnJournalFile), journal, 0o600); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res := r.resume(b, o, func(context.Context, *supervise.Coordinator) error { return nil })
				if len(res.Tree) != n {
					b.Fatalf("%d nodes, want %d", len(res.Tree), n)
				}
			}
		})
		b.Run(fmt.Sprintf("sqlite/workers=%d", n), func(b *testing.B) {
			r := newRichRun(b)
			base := filepath.Join(b.TempDir(), "runs.db")
			st, err := sqlite.Open(context.Background(), base, sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			o := r.opts
			o.SpawnStore = st
			r.build(b, o, n)
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				path := filepath.Join(b.TempDir(), "runs.db")
				copyFile(b, base, path)
				st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
				if err != nil {
					b.Fatal(err)
				}
				o.SpawnStore = st
				b.StartTimer()
				res := r.resume(b, o, func(context.Context, *supervise.Coordinator) error { return nil })
				b.StopTimer()
				if len(res.Tree) != n {
					b.Fatalf("%d nodes, want %d", len(res.Tree), n)
				}
				st.Close()
				b.StartTimer()
			}
		})
	}
}

// richJournals caches each size's built file journal across the calls
// the benchmark framework makes.
var richJournals = map[int][]byte{}

// richJournal returns the file journal of a richRun of n workers.
func richJournal(b *testing.B, r richRun, n int) []byte {
	b.Helper()
	if j, ok := richJournals[n]; ok {
		return j
	}
	o := r.opts
	o.RunDir = b.TempDir()
	r.build(b, o, n)
	j, err := os.ReadFile(filepath.Join(o.RunDir, supervise.SpawnJournalFile))
	if err != nil {
		b.Fatal(err)
	}
	richJournals[n] = j
	return j
}

// BenchmarkRichJournalReaders: what one read costs against a resumed
// run of n workers (richRun's journal), per read: read_journal's page of
// the last 10 records (deep paging), observe_agent on the last worker
// spawned, and await_event taking one of the n replayed settlements. A
// read's cost should not grow with n (or grow at most linearly for
// read_journal, which pages a journal it holds in memory). Run with a
// fixed -benchtime (e.g. 200x): each call resumes the run once.
func BenchmarkRichJournalReaders(b *testing.B) {
	for _, n := range richScaleSizes {
		for _, reader := range []string{"read-journal-tail", "observe-last", "await-settled"} {
			b.Run(fmt.Sprintf("%s/workers=%d", reader, n), func(b *testing.B) {
				r := newRichRun(b)
				journal := richJournal(b, r, n)
				o := r.opts
				o.RunDir = b.TempDir()
				if err := os.WriteFile(filepath.Join(o.RunDir, supervise.SpawnJournalFile), journal, 0o600); err != nil {
					b.Fatal(err)
				}
				if b.N > n {
					b.Skipf("await-settled has %d settlements for b.N %d", n, b.N)
				}
				last := supervise.NodeID(fmt.Sprintf("run1:s%d", n))
				r.resume(b, o, func(ctx context.Context, c *supervise.Coordinator) error {
					total := bytes.Count(journal, []byte("\n")) // the rows before the resume's own
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						switch reader {
						case "read-journal-tail":
							if p := c.ReadJournal(supervise.JournalArgs{SinceRow: total - 10, Limit: 10}); len(p.Rows) == 0 {
								return fmt.Errorf("an empty page at row %d of %d", total-10, total)
							}
						case "observe-last":
							if _, err := c.Observe(last); err != nil {
								return err
							}
						case "await-settled":
							if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || r.Event == nil {
								return fmt.Errorf("await: %+v %w", r, err)
							}
						}
					}
					b.StopTimer()
					return nil
				})
			})
		}
	}
}
