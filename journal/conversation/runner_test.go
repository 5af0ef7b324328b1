package conversation_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/journal/conversation"
)

// eachJournal runs fn on a fresh journal of every adapter: memory, file,
// SQLite and PostgreSQL.
func eachJournal(t *testing.T, fn func(t *testing.T, j conversation.Journal)) {
	t.Run("memory", func(t *testing.T) {
		m := conversation.NewMemory(conversation.Limits{})
		t.Cleanup(func() { m.Close() })
		fn(t, m)
	})
	t.Run("file", func(t *testing.T) {
		fn(t, openFile(t, filepath.Join(t.TempDir(), "conversations.jsonl"), conversation.Limits{}))
	})
	t.Run("sqlite", func(t *testing.T) {
		fn(t, openSQLite(t, filepath.Join(t.TempDir(), "agentrt.db"), conversation.SQLOptions{}))
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, openPostgres(t, pgtest.Schema(t), conversation.SQLOptions{}))
	})
}

// answerer produces an assistant turn that echoes the last recorded
// turn, counting its calls per turn index and failing the indexes in
// fail.
type answerer struct {
	calls map[int]int
	fail  map[int]bool
	seen  map[int]int // transcript length by index
}

func newAnswerer(fail ...int) *answerer {
	a := &answerer{calls: map[int]int{}, fail: map[int]bool{}, seen: map[int]int{}}
	for _, i := range fail {
		a.fail[i] = true
	}
	return a
}

func (a *answerer) produce(_ context.Context, in conversation.TurnInput) (conversation.TurnOutput, error) {
	a.calls[in.Index]++
	a.seen[in.Index] = len(in.Transcript)
	if a.fail[in.Index] {
		return conversation.TurnOutput{}, errors.New("the model is down")
	}
	if in.TurnID != conversation.TurnID(in.RunID, in.Index, in.Speaker) {
		return conversation.TurnOutput{}, fmt.Errorf("turn id %q", in.TurnID)
	}
	return conversation.TurnOutput{Text: "re: " + in.Transcript[len(in.Transcript)-1].Text, SessionID: "sess-1"}, nil
}

// plan is a user/assistant exchange of n user lines.
func plan(a *answerer, lines ...string) []conversation.Planned {
	var p []conversation.Planned
	for _, l := range lines {
		p = append(p, conversation.Planned{Speaker: "user", Text: l}, conversation.Planned{Speaker: "assistant", Produce: a.produce})
	}
	return p
}

func texts(turns []conversation.Turn) []string {
	var out []string
	for _, t := range turns {
		out = append(out, t.Speaker+": "+t.Text)
	}
	return out
}

// RES-04 (runtime spec §4): a Runner runs the turns the journal has not
// recorded, each recorded before the next; a failed turn stops the run
// unrecorded and unhalted, and running the same plan again continues at
// it — recorded turns are never run again. A plan that contradicts the
// record runs nothing. On every adapter.
func TestRunnerResumesAtTheFirstUnrecordedTurnRES04(t *testing.T) {
	cases := []struct {
		name string
		// first and second are the answerer's failing indexes on two
		// runs of the same plan.
		first, second []int
		lines         []string
		wantErr1      int // the failing turn of the first run, -1: none
		wantCalls     map[int]int
		wantTurns     []string
	}{
		{name: "one run records every turn", lines: []string{"hi", "bye"}, wantErr1: -1,
			wantCalls: map[int]int{1: 1, 3: 1},
			wantTurns: []string{"user: hi", "assistant: re: hi", "user: bye", "assistant: re: bye"}},
		{name: "a failed answer is run again, nothing before it", lines: []string{"hi", "bye"}, first: []int{3}, wantErr1: 3,
			wantCalls: map[int]int{1: 1, 3: 2},
			wantTurns: []string{"user: hi", "assistant: re: hi", "user: bye", "assistant: re: bye"}},
		{name: "a failure at the first answer", lines: []string{"hi", "bye"}, first: []int{1}, wantErr1: 1,
			wantCalls: map[int]int{1: 2, 3: 1},
			wantTurns: []string{"user: hi", "assistant: re: hi", "user: bye", "assistant: re: bye"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eachJournal(t, func(t *testing.T, j conversation.Journal) {
				ctx := context.Background()
				a := newAnswerer(tc.first...)
				r, err := conversation.StartRunner(ctx, j, "conv_1", conversation.RunnerOptions{})
				if err != nil {
					t.Fatal(err)
				}
				err = r.Run(ctx, plan(a, tc.lines...))
				if te, ok := errors.AsType[*conversation.TurnError](err); tc.wantErr1 >= 0 && (!ok || te.Index != tc.wantErr1) {
					t.Fatalf("first run: %v; want a TurnError at turn %d", err, tc.wantErr1)
				} else if tc.wantErr1 < 0 && err != nil {
					t.Fatal(err)
				}
				if tc.wantErr1 >= 0 && r.NextIndex() != tc.wantErr1 {
					t.Fatalf("after the failure %d turns are recorded, want %d", r.NextIndex(), tc.wantErr1)
				}
				// A new Runner (as after a restart) runs the same plan.
				a.fail = map[int]bool{}
				r2, err := conversation.StartRunner(ctx, j, "conv_1", conversation.RunnerOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := r2.Run(ctx, plan(a, tc.lines...)); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.wantCalls, a.calls); diff != "" {
					t.Errorf("answers produced per turn (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(map[int]int{1: 1, 3: 3}, a.seen); diff != "" {
					t.Errorf("transcript lengths seen (-want +got):\n%s", diff)
				}
				e, err := j.LoadRun(ctx, "conv_1")
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.wantTurns, texts(e.Turns)); diff != "" {
					t.Errorf("recorded (-want +got):\n%s", diff)
				}
				if e.Halt != nil {
					t.Errorf("halted %+v; a runner halts only when asked", e.Halt)
				}
				for i, tr := range e.Turns {
					if tr.TurnID != conversation.TurnID("conv_1", i, tr.Speaker) || tr.Attempts != 1 {
						t.Errorf("turn %d: id %q attempts %d", i, tr.TurnID, tr.Attempts)
					}
				}
			})
		})
	}
}

// Refusals: a plan that contradicts the record runs nothing (ErrConflict);
// a halted run takes no runner; a cancelled ctx stops before the next
// turn, unrecorded.
func TestRunnerRefusals(t *testing.T) {
	eachJournal(t, func(t *testing.T, j conversation.Journal) {
		ctx := context.Background()
		a := newAnswerer()
		r, err := conversation.StartRunner(ctx, j, "conv_2", conversation.RunnerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Run(ctx, plan(a, "hi")); err != nil {
			t.Fatal(err)
		}
		for name, p := range map[string][]conversation.Planned{
			"another speaker":    {{Speaker: "critic", Text: "hi"}},
			"another given text": {{Speaker: "user", Text: "hello"}},
		} {
			err := r.Run(ctx, append(p, conversation.Planned{Speaker: "assistant", Produce: a.produce}, conversation.Planned{Speaker: "user", Text: "x"}))
			if pe, ok := errors.AsType[*conversation.PlanError](err); !ok || pe.Index != 0 || !errors.Is(err, conversation.ErrConflict) {
				t.Errorf("%s: %v; want a PlanError at turn 0", name, err)
			}
		}
		if r.NextIndex() != 2 || a.calls[1] != 1 {
			t.Errorf("a refused plan ran: %d turns, %d answers", r.NextIndex(), a.calls[1])
		}
		cctx, cancel := context.WithCancelCause(ctx)
		cancel(errors.New("user pressed Ctrl-C"))
		err = r.Run(cctx, plan(a, "hi", "more"))
		if te, ok := errors.AsType[*conversation.TurnError](err); !ok || te.Index != 2 || !strings.Contains(err.Error(), "Ctrl-C") {
			t.Errorf("cancelled: %v; want a TurnError at turn 2 naming the cause", err)
		}
		if err := r.Halt(ctx, conversation.Halt{Kind: conversation.HaltMaxTurns, Turns: 2}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(ctx, conversation.Planned{Speaker: "user", Text: "late"}); !errors.Is(err, conversation.ErrHalted) {
			t.Errorf("a turn after the halt: %v", err)
		}
		if _, err := conversation.StartRunner(ctx, j, "conv_2", conversation.RunnerOptions{}); !errors.Is(err, conversation.ErrHalted) {
			t.Errorf("a runner of a halted run: %v", err)
		}
		e, _ := j.LoadRun(ctx, "conv_2")
		if e.NextIndex() != 2 || e.Halt == nil || e.Halt.Kind != conversation.HaltMaxTurns {
			t.Errorf("recorded %+v", e)
		}
	})
}

// BenchmarkRunnerNext: a Runner recording a run's given turns in order,
// against BenchmarkAppendTurn's direct appends: what the runner adds per
// turn (measuring the clock, building the turn, keeping the transcript).
func BenchmarkRunnerNext(b *testing.B) {
	for _, a := range benchAdapters {
		b.Run(a.name, func(b *testing.B) {
			j := a.open(b)
			defer j.Close()
			ctx := context.Background()
			r, err := conversation.StartRunner(ctx, j, "bench_runner", conversation.RunnerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			p := conversation.Planned{Speaker: "user", Text: "a committed answer of a typical chat turn, a couple of hundred bytes once the record's other members are counted"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Next(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
