package conversationtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/journal/conversation"
)

// Subject is a fresh, empty journal under test.
type Subject struct {
	// Journal is the journal. The adapter closes it when the test ends.
	Journal conversation.Journal
	// Reopen closes the journal and opens its storage again, as a
	// restarted process would, returning the new journal (which the
	// adapter also closes when the test ends). For a journal whose
	// storage does not outlive it (in memory), it returns the same one.
	Reopen func(t *testing.T) conversation.Journal
}

// Open returns a fresh, empty journal with the given limits.
type Open func(t *testing.T, lim conversation.Limits) Subject

// Run runs every contract case against journals from open.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open Open)
	}{
		{"LoadMissingIsNil", testLoadMissing},
		{"BeginIsIdempotentForTheSameStart", testBegin},
		{"AppendAndLoadRoundTrip", testRoundTrip},
		{"LoadReturnsACopy", testLoadCopy},
		{"UnknownRunIsRefused", testUnknownRun},
		{"HaltKindsRoundTrip", testHaltKinds},
		{"HaltIsFinal", testHaltFinal},
		{"InvalidInputIsRefused", testInvalid},
		{"DuplicateTurn", testDuplicateTurn},
		{"TurnsMustBeInOrder", testOrder},
		{"ResumeAtFirstUnrecordedTurn", testResume},
		{"ConcurrentRunsAndRaces", testConcurrent},
		{"ConcurrentResumesAgree", testConcurrentResume},
		{"CancelledContextWritesNothing", testCancelled},
		{"ClosedJournalRefuses", testClosed},
		{"SizeLimits", testLimits},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

// T0 is the tests' epoch.
var T0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// MakeTurn returns a valid turn index of runID by speaker.
func MakeTurn(runID string, index int, speaker string) conversation.Turn {
	start := T0.Add(time.Duration(index) * time.Second)
	return conversation.Turn{
		Index: index, Speaker: speaker, TurnID: conversation.TurnID(runID, index, speaker),
		Text: fmt.Sprintf("turn %d from %s", index, speaker), Attempts: 1,
		StartedAt: start, EndedAt: start.Add(500 * time.Millisecond),
	}
}

func ptr[T any](v T) *T { return &v }

var cmpEntry = cmpopts.EquateEmpty()

func mustBegin(t *testing.T, j conversation.Journal, runID string) {
	t.Helper()
	if err := j.BeginRun(context.Background(), runID, T0); err != nil {
		t.Fatalf("BeginRun(%q): %v", runID, err)
	}
}

func mustAppend(t *testing.T, j conversation.Journal, runID string, turns ...conversation.Turn) {
	t.Helper()
	for _, tr := range turns {
		if err := j.AppendTurn(context.Background(), runID, tr); err != nil {
			t.Fatalf("AppendTurn(%q, %d): %v", runID, tr.Index, err)
		}
	}
}

func mustLoad(t *testing.T, j conversation.Journal, runID string) *conversation.Entry {
	t.Helper()
	e, err := j.LoadRun(context.Background(), runID)
	if err != nil {
		t.Fatalf("LoadRun(%q): %v", runID, err)
	}
	return e
}

// wantRunErr checks that err is a *RunError with cause want.
func wantRunErr(t *testing.T, err, want error) {
	t.Helper()
	var re *conversation.RunError
	if !errors.As(err, &re) || !errors.Is(err, want) {
		t.Fatalf("error = %v, want a *RunError matching %v", err, want)
	}
}

func testLoadMissing(t *testing.T, open Open) {
	j := open(t, conversation.Limits{}).Journal
	if e := mustLoad(t, j, "never-begun"); e != nil {
		t.Fatalf("LoadRun of a run never begun = %+v, want nil", e)
	}
	if n := (*conversation.Entry)(nil).NextIndex(); n != 0 {
		t.Fatalf("absent run's NextIndex = %d, want 0", n)
	}
}

func testBegin(t *testing.T, open Open) {
	j := open(t, conversation.Limits{}).Journal
	ctx := context.Background()
	mustBegin(t, j, "r1")
	// Times are kept to the millisecond: the same instant within it is the same start.
	if err := j.BeginRun(ctx, "r1", T0.Add(400*time.Microsecond)); err != nil {
		t.Fatalf("second BeginRun with the same start: %v", err)
	}
	wantRunErr(t, j.BeginRun(ctx, "r1", T0.Add(time.Second)), conversation.ErrConflict)
	want := &conversation.Entry{RunID: "r1", StartedAt: T0}
	if diff := cmp.Diff(want, mustLoad(t, j, "r1"), cmpEntry); diff != "" {
		t.Fatalf("LoadRun (-want +got):\n%s", diff)
	}
}

// richTurns exercise every field and awkward text.
func richTurns(runID string) []conversation.Turn {
	a := MakeTurn(runID, 0, "Researcher")
	a.SessionID = "sess-1"
	a.Text = "héllo \u0000 \"quoted\" \\ 🙂 \u2028 <b>"
	a.Usage = &conversation.Usage{TokensIn: ptr[int64](120), TokensOut: ptr[int64](0), CostUSD: ptr(0.0125), LatencyMS: ptr(812.5), Model: "m-1"}
	a.Attempts = 3
	b := MakeTurn(runID, 1, "José Ramírez (critic)")
	b.Usage = &conversation.Usage{}
	b.StartedAt = time.Date(2026, 12, 1, 13, 0, 0, 999_999_999, time.FixedZone("X", 3600))
	b.EndedAt = b.StartedAt.Add(time.Nanosecond)
	c := MakeTurn(runID, 2, "Researcher")
	c.Text = ""
	return []conversation.Turn{a, b, c}
}

// kept is t as a journal keeps it: times in UTC to the millisecond.
func kept(t conversation.Turn) conversation.Turn {
	t.StartedAt = t.StartedAt.UTC().Truncate(time.Millisecond)
	t.EndedAt = t.EndedAt.UTC().Truncate(time.Millisecond)
	return t
}

func testRoundTrip(t *testing.T, open Open) {
	s := open(t, conversation.Limits{})
	runID := "conv_round trip/ünï"
	turns := richTurns(runID)
	mustBegin(t, s.Journal, runID)
	mustAppend(t, s.Journal, runID, turns...)
	want := &conversation.Entry{RunID: runID, StartedAt: T0}
	for _, tr := range turns {
		want.Turns = append(want.Turns, kept(tr))
	}
	if diff := cmp.Diff(want, mustLoad(t, s.Journal, runID), cmpEntry); diff != "" {
		t.Fatalf("LoadRun (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, mustLoad(t, s.Reopen(t), runID), cmpEntry); diff != "" {
		t.Fatalf("LoadRun after reopening (-want +got):\n%s", diff)
	}
}

func testLoadCopy(t *testing.T, open Open) {
	j := open(t, conversation.Limits{}).Journal
	turns := richTurns("r")
	mustBegin(t, j, "r")
	mustAppend(t, j, "r", turns[0])
	*turns[0].Usage.TokensIn = 9999 // the caller's value is not the journal's
	e := mustLoad(t, j, "r")
	*e.Turns[0].Usage.TokensIn = 1
	e.Turns[0].Text = "changed"
	e.Turns = append(e.Turns, MakeTurn("r", 1, "x"))
	again := mustLoad(t, j, "r")
	if len(again.Turns) != 1 || *again.Turns[0].Usage.TokensIn != 120 || again.Turns[0].Text != richTurns("r")[0].Text {
		t.Fatalf("a loaded or appended value shares memory with the journal: %+v", again.Turns)
	}
}

func testUnknownRun(t *testing.T, open Open) {
	j := open(t, conversation.Limits{}).Journal
	ctx := context.Background()
	wantRunErr(t, j.AppendTurn(ctx, "nope", MakeTurn("nope", 0, "a")), conversation.ErrUnknownRun)
	wantRunErr(t, j.RecordHalt(ctx, "nope", conversation.Halt{Kind: conversation.HaltAbort}, T0), conversation.ErrUnknownRun)
	if e := mustLoad(t, j, "nope"); e != nil {
		t.Fatalf("refused calls created the run: %+v", e)
	}
}

func testHaltKinds(t *testing.T, open Open) {
	j := open(t, conversation.Limits{})
	cases := []conversation.Halt{
		{Kind: conversation.HaltMaxTurns, Turns: 0},
		{Kind: conversation.HaltMaxTurns, Turns: 7},
		{Kind: conversation.HaltMaxCredits, SpentCents: 250.5, CapCents: 200},
		{Kind: conversation.HaltPredicate, Reason: "predicate_true"},
		{Kind: conversation.HaltPredicate},
		{Kind: conversation.HaltAbort},
		{Kind: conversation.HaltParticipantError, Participant: "critic", Message: "backend 503"},
	}
	for i, h := range cases {
		runID := fmt.Sprintf("halt-%d", i)
		mustBegin(t, j.Journal, runID)
		ended := T0.Add(time.Hour + 123*time.Microsecond)
		if err := j.Journal.RecordHalt(context.Background(), runID, h, ended); err != nil {
			t.Fatalf("RecordHalt(%+v): %v", h, err)
		}
		want := &conversation.Entry{RunID: runID, StartedAt: T0, Halt: &h, EndedAt: ended.Truncate(time.Millisecond)}
		if diff := cmp.Diff(want, mustLoad(t, j.Journal, runID), cmpEntry); diff != "" {
			t.Fatalf("halt %+v (-want +got):\n%s", h, diff)
		}
	}
	bad := []conversation.Halt{
		{Kind: "stopped"},
		{Kind: conversation.HaltAbort, Reason: "why"},
		{Kind: conversation.HaltMaxTurns, Turns: -1},
		{Kind: conversation.HaltMaxCredits, SpentCents: -1},
	}
	mustBegin(t, j.Journal, "bad-halts")
	for _, h := range bad {
		var ie *conversation.InvalidError
		if err := j.Journal.RecordHalt(context.Background(), "bad-halts", h, T0); !errors.As(err, &ie) || !strings.HasPrefix(ie.Pointer, "/halted") {
			t.Fatalf("RecordHalt(%+v) = %v, want an *InvalidError under /halted", h, err)
		}
	}
}

func testHaltFinal(t *testing.T, open Open) {
	s := open(t, conversation.Limits{})
	ctx := context.Background()
	j := s.Journal
	mustBegin(t, j, "r")
	mustAppend(t, j, "r", MakeTurn("r", 0, "a"))
	halt := conversation.Halt{Kind: conversation.HaltMaxTurns, Turns: 1}
	if err := j.RecordHalt(ctx, "r", halt, T0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	wantRunErr(t, j.AppendTurn(ctx, "r", MakeTurn("r", 1, "b")), conversation.ErrHalted)
	// The same halt again is a retry; another one contradicts the record.
	if err := j.RecordHalt(ctx, "r", halt, T0.Add(time.Minute)); err != nil {
		t.Fatalf("repeating the halt: %v", err)
	}
	wantRunErr(t, j.RecordHalt(ctx, "r", conversation.Halt{Kind: conversation.HaltAbort}, T0.Add(time.Minute)), conversation.ErrConflict)
	wantRunErr(t, j.RecordHalt(ctx, "r", halt, T0.Add(2*time.Minute)), conversation.ErrConflict)
	j = s.Reopen(t)
	wantRunErr(t, j.AppendTurn(ctx, "r", MakeTurn("r", 1, "b")), conversation.ErrHalted)
	e := mustLoad(t, j, "r")
	if e.Halt == nil || *e.Halt != halt || len(e.Turns) != 1 || !e.EndedAt.Equal(T0.Add(time.Minute)) {
		t.Fatalf("after reopening: %+v", e)
	}
}

func testInvalid(t *testing.T, open Open) {
	j := open(t, conversation.Limits{}).Journal
	ctx := context.Background()
	mustBegin(t, j, "r")
	cases := []struct {
		name    string
		mutate  func(*conversation.Turn)
		pointer string
	}{
		{"turn id not derived", func(tr *conversation.Turn) { tr.TurnID = "r.t0.other" }, "/turn/turnId"},
		{"empty turn id", func(tr *conversation.Turn) { tr.TurnID = "" }, "/turn/turnId"},
		{"negative index", func(tr *conversation.Turn) { tr.Index = -1 }, "/turn/index"},
		{"empty speaker", func(tr *conversation.Turn) { tr.Speaker = "" }, "/turn/speaker"},
		{"no attempts", func(tr *conversation.Turn) { tr.Attempts = 0 }, "/turn/attempts"},
		{"zero start", func(tr *conversation.Turn) { tr.StartedAt = time.Time{} }, "/turn/startedAt"},
		{"year 10000", func(tr *conversation.Turn) { tr.EndedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "/turn/endedAt"},
		{"negative tokens", func(tr *conversation.Turn) { tr.Usage = &conversation.Usage{TokensIn: ptr[int64](-1)} }, "/turn/usage/tokensIn"},
		{"infinite cost", func(tr *conversation.Turn) {
			inf := math.Inf(1)
			tr.Usage = &conversation.Usage{CostUSD: &inf}
		}, "/turn/usage/costUsd"},
		{"lone surrogate", func(tr *conversation.Turn) { tr.Text = "a\xed\xa0\x80b" }, "/turn/text"},
	}
	for _, c := range cases {
		tr := MakeTurn("r", 0, "a")
		c.mutate(&tr)
		var ie *conversation.InvalidError
		err := j.AppendTurn(ctx, "r", tr)
		if !errors.As(err, &ie) || ie.Pointer != c.pointer {
			t.Errorf("%s: AppendTurn = %v, want an *InvalidError at %s", c.name, err, c.pointer)
		}
	}
	for _, id := range []string{"", "a\nb", "a\x7f", "\xff"} {
		var ie *conversation.InvalidError
		if err := j.BeginRun(ctx, id, T0); !errors.As(err, &ie) || ie.Pointer != "/runId" {
			t.Errorf("BeginRun(%q) = %v, want an *InvalidError at /runId", id, err)
		}
		if _, err := j.LoadRun(ctx, id); !errors.As(err, &ie) {
			t.Errorf("LoadRun(%q) = %v, want an *InvalidError", id, err)
		}
	}
	var ie *conversation.InvalidError
	if err := j.BeginRun(ctx, "z", time.Time{}); !errors.As(err, &ie) || ie.Pointer != "/startedAt" {
		t.Errorf("BeginRun with a zero time = %v", err)
	}
	if e := mustLoad(t, j, "r"); len(e.Turns) != 0 {
		t.Fatalf("refused turns were written: %+v", e.Turns)
	}
}

func testDuplicateTurn(t *testing.T, open Open) {
	s := open(t, conversation.Limits{})
	ctx := context.Background()
	j := s.Journal
	mustBegin(t, j, "r")
	t0, t1 := MakeTurn("r", 0, "a"), MakeTurn("r", 1, "b")
	mustAppend(t, j, "r", t0, t1)
	// A retry after an unacknowledged append: the same turn, again.
	mustAppend(t, j, "r", t1, t0)
	changed := t1
	changed.Text = "a different answer"
	wantRunErr(t, j.AppendTurn(ctx, "r", changed), conversation.ErrConflict)
	// Within the millisecond the journal keeps, a turn is the same.
	sameMs := t1
	sameMs.EndedAt = sameMs.EndedAt.Add(300 * time.Microsecond)
	mustAppend(t, j, "r", sameMs)
	j = s.Reopen(t)
	mustAppend(t, j, "r", t1)
	wantRunErr(t, j.AppendTurn(ctx, "r", changed), conversation.ErrConflict)
	want := &conversation.Entry{RunID: "r", StartedAt: T0, Turns: []conversation.Turn{t0, t1}}
	if diff := cmp.Diff(want, mustLoad(t, j, "r"), cmpEntry); diff != "" {
		t.Fatalf("LoadRun (-want +got):\n%s", diff)
	}
}

func testOrder(t *testing.T, open Open) {
	j := open(t, conversation.Limits{}).Journal
	ctx := context.Background()
	mustBegin(t, j, "r")
	wantRunErr(t, j.AppendTurn(ctx, "r", MakeTurn("r", 1, "a")), conversation.ErrOutOfOrder)
	mustAppend(t, j, "r", MakeTurn("r", 0, "a"))
	wantRunErr(t, j.AppendTurn(ctx, "r", MakeTurn("r", 2, "a")), conversation.ErrOutOfOrder)
	mustAppend(t, j, "r", MakeTurn("r", 1, "b"))
	e := mustLoad(t, j, "r")
	for i, tr := range e.Turns {
		if tr.Index != i {
			t.Fatalf("turn %d has index %d", i, tr.Index)
		}
	}
	if len(e.Turns) != 2 {
		t.Fatalf("%d turns, want 2", len(e.Turns))
	}
}

// testResume is the user-conversation resume mechanism (spec §5, RES-04,
// RES-06): a run resumed with the same id, after a restart, continues at
// its first unrecorded turn with the same identity.
func testResume(t *testing.T, open Open) {
	s := open(t, conversation.Limits{})
	ctx := context.Background()
	speakers := []string{"Researcher", "Critic"}
	runID := "conv_resume"
	e, err := conversation.Resume(ctx, s.Journal, runID, T0)
	if err != nil || e == nil || e.NextIndex() != 0 || !e.StartedAt.Equal(T0) {
		t.Fatalf("Resume of a new run = %+v, %v", e, err)
	}
	var ids []string
	for i := range 3 {
		tr := MakeTurn(runID, i, speakers[i%2])
		ids = append(ids, tr.TurnID)
		mustAppend(t, s.Journal, runID, tr)
	}
	// The process dies after committing three turns; a new one resumes.
	j := s.Reopen(t)
	e, err = conversation.Resume(ctx, j, runID, T0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if e.NextIndex() != 3 || !e.StartedAt.Equal(T0) || e.Halt != nil {
		t.Fatalf("resumed entry: next %d, started %v, halt %v; want 3, %v, none", e.NextIndex(), e.StartedAt, e.Halt, T0)
	}
	for i, tr := range e.Turns {
		if tr.TurnID != ids[i] {
			t.Fatalf("turn %d id %q, want %q", i, tr.TurnID, ids[i])
		}
	}
	next := MakeTurn(runID, e.NextIndex(), speakers[e.NextIndex()%2])
	if next.TurnID != runID+".t3.critic" {
		t.Fatalf("next turn id %q", next.TurnID)
	}
	mustAppend(t, j, runID, next)
	if err := j.RecordHalt(ctx, runID, conversation.Halt{Kind: conversation.HaltMaxTurns, Turns: 4}, T0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	e, err = conversation.Resume(ctx, j, runID, T0)
	if err != nil || e.Halt == nil || e.NextIndex() != 4 {
		t.Fatalf("Resume of a halted run = %+v, %v; want its halt and 4 turns", e, err)
	}
}

func testConcurrent(t *testing.T, open Open) {
	j := open(t, conversation.Limits{}).Journal
	ctx := context.Background()
	const runs, turns = 6, 12
	var wg sync.WaitGroup
	for r := range runs {
		wg.Go(func() {
			runID := fmt.Sprintf("run-%d", r)
			if err := j.BeginRun(ctx, runID, T0); err != nil {
				t.Error(err)
				return
			}
			for i := range turns {
				if err := j.AppendTurn(ctx, runID, MakeTurn(runID, i, "s")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for r := range runs {
		if e := mustLoad(t, j, fmt.Sprintf("run-%d", r)); e.NextIndex() != turns {
			t.Fatalf("run %d has %d turns, want %d", r, e.NextIndex(), turns)
		}
	}

	// Racing begins with different starts: exactly one wins.
	var won atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			err := j.BeginRun(ctx, "race", T0.Add(time.Duration(i)*time.Second))
			switch {
			case err == nil:
				won.Add(1)
			case !errors.Is(err, conversation.ErrConflict):
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d racing begins won, want 1", won.Load())
	}
	// Racing retries of the same turn all succeed and record it once;
	// racing different turns at one index: exactly one is recorded.
	for range 8 {
		wg.Go(func() {
			if err := j.AppendTurn(ctx, "race", MakeTurn("race", 0, "a")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	won.Store(0)
	for i := range 8 {
		wg.Go(func() {
			tr := MakeTurn("race", 1, "b")
			tr.Text = fmt.Sprintf("answer %d", i)
			err := j.AppendTurn(ctx, "race", tr)
			switch {
			case err == nil:
				won.Add(1)
			case !errors.Is(err, conversation.ErrConflict):
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d different turns at one index were accepted, want 1", won.Load())
	}
	if e := mustLoad(t, j, "race"); e.NextIndex() != 2 {
		t.Fatalf("race run has %d turns, want 2", e.NextIndex())
	}
}

func testCancelled(t *testing.T, open Open) {
	j := open(t, conversation.Limits{}).Journal
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("caller went away")
	cancel(cause)
	mustBegin(t, j, "r")
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, cause) {
			t.Fatalf("%s with a cancelled context = %v, want its cause", what, err)
		}
	}
	check("BeginRun", j.BeginRun(ctx, "other", T0))
	check("AppendTurn", j.AppendTurn(ctx, "r", MakeTurn("r", 0, "a")))
	check("RecordHalt", j.RecordHalt(ctx, "r", conversation.Halt{Kind: conversation.HaltAbort}, T0))
	_, err := j.LoadRun(ctx, "r")
	check("LoadRun", err)
	if e := mustLoad(t, j, "other"); e != nil {
		t.Fatalf("a cancelled BeginRun wrote %+v", e)
	}
	if e := mustLoad(t, j, "r"); len(e.Turns) != 0 || e.Halt != nil {
		t.Fatalf("cancelled calls wrote %+v", e)
	}
}

func testClosed(t *testing.T, open Open) {
	j := open(t, conversation.Limits{}).Journal
	mustBegin(t, j, "r")
	c, ok := j.(io.Closer)
	if !ok {
		t.Fatalf("%T has no Close", j)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	_, err := j.LoadRun(ctx, "r")
	for what, err := range map[string]error{
		"LoadRun":    err,
		"BeginRun":   j.BeginRun(ctx, "r2", T0),
		"AppendTurn": j.AppendTurn(ctx, "r", MakeTurn("r", 0, "a")),
		"RecordHalt": j.RecordHalt(ctx, "r", conversation.Halt{Kind: conversation.HaltAbort}, T0),
	} {
		if !errors.Is(err, conversation.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", what, err)
		}
	}
}

func testLimits(t *testing.T, open Open) {
	lim := conversation.Limits{MaxRunIDBytes: 16, MaxTurnBytes: 600, MaxRunBytes: 2000}
	s := open(t, lim)
	j := s.Journal
	ctx := context.Background()
	var tl *conversation.TooLargeError
	if err := j.BeginRun(ctx, strings.Repeat("x", 17), T0); !errors.As(err, &tl) || tl.What != "run id" {
		t.Fatalf("BeginRun with a 17-byte id = %v, want a run id *TooLargeError", err)
	}
	if _, err := j.LoadRun(ctx, strings.Repeat("x", 17)); !errors.As(err, &tl) {
		t.Fatalf("LoadRun with a 17-byte id = %v", err)
	}
	mustBegin(t, j, strings.Repeat("x", 16))
	mustBegin(t, j, "r")
	big := MakeTurn("r", 0, "a")
	big.Text = strings.Repeat("y", 600)
	if err := j.AppendTurn(ctx, "r", big); !errors.As(err, &tl) || tl.What != "turn" || tl.Limit != 600 {
		t.Fatalf("AppendTurn of a big turn = %v, want a turn *TooLargeError", err)
	}
	n := 0
	for ; ; n++ {
		tr := MakeTurn("r", n, "a")
		tr.Text = strings.Repeat("z", 300)
		err := j.AppendTurn(ctx, "r", tr)
		if err == nil {
			continue
		}
		if !errors.As(err, &tl) || tl.What != "run" || tl.Limit != 2000 || tl.Size <= 2000 {
			t.Fatalf("AppendTurn %d = %v, want a run *TooLargeError", n, err)
		}
		break
	}
	if n == 0 {
		t.Fatal("no turn fit")
	}
	halt := conversation.Halt{Kind: conversation.HaltPredicate, Reason: strings.Repeat("w", 600)}
	if err := j.RecordHalt(ctx, "r", halt, T0); !errors.As(err, &tl) || tl.What != "halt" {
		t.Fatalf("RecordHalt of a big halt = %v, want a halt *TooLargeError", err)
	}
	for i := range 2 {
		if i == 1 {
			j = s.Reopen(t)
		}
		e := mustLoad(t, j, "r")
		if e.NextIndex() != n || e.Halt != nil {
			t.Fatalf("after refusals (reopened: %v): %d turns, halt %v; want %d, none", i == 1, e.NextIndex(), e.Halt, n)
		}
	}
}

// testConcurrentResume: processes resuming one new run at once, each with
// its own clock, all continue the one run that was begun (RES-06).
func testConcurrentResume(t *testing.T, open Open) {
	j := open(t, conversation.Limits{}).Journal
	starts := make([]time.Time, 8)
	var wg sync.WaitGroup
	for i := range starts {
		wg.Go(func() {
			e, err := conversation.Resume(context.Background(), j, "shared", T0.Add(time.Duration(i)*time.Second))
			if err != nil || e == nil {
				t.Errorf("Resume = %+v, %v", e, err)
				return
			}
			starts[i] = e.StartedAt
		})
	}
	wg.Wait()
	recorded := mustLoad(t, j, "shared").StartedAt
	for i, s := range starts {
		if !s.Equal(recorded) {
			t.Fatalf("resume %d continued a run started at %v, the journal's started at %v", i, s, recorded)
		}
	}
}
