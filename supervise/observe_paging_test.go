package supervise_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
	"github.com/agentrt/agentrt/tools"
	"github.com/google/go-cmp/cmp"
)

// longText is a worker's output longer than several pages, with
// characters of two, three and four bytes so that page cuts land inside
// them.
var longText = strings.Repeat("héllo wörld — ✓ 𝄞 ", 2500)

// runSettled runs one worker whose executor returns text and output,
// then calls inspect with the coordinator while the run is still live.
func runSettled(t *testing.T, text string, output canonjson.Value, inspect func(ctx context.Context, c *supervise.Coordinator, id supervise.NodeID)) {
	t.Helper()
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: text, Output: output, Spent: fullSpend(3)}, nil
	})
	o := baseOptions(t, exec, nil)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
			return supervise.BrainReport{}, err
		}
		inspect(ctx, c, sp.WorkerID)
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
}

// §9 observe_agent "settled output; bounded JSON pages via
// outputPath/offset": each page is at most the limit, cut on character
// boundaries, and the pages read in nextOffset order are the value at
// outputPath exactly — the text, or any member of the structured output
// as canonical JSON.
func TestObservePagesSettledOutput(t *testing.T) {
	output := mustDecode(t, `{"items": ["a", "b", "c"], "note": "`+strings.Repeat("ü", 9000)+`"}`)
	runSettled(t, longText, output, func(ctx context.Context, c *supervise.Coordinator, id supervise.NodeID) {
		cases := []struct {
			name, path string
			limit      int64
			want       string
		}{
			{name: "default path and page", want: longText},
			{name: "small pages", limit: 777, want: longText},
			{name: "pages smaller than a character", limit: 1, path: "/output/note", want: strings.Repeat("ü", 9000)},
			{name: "structured member as JSON", path: "/output/items", want: `["a","b","c"]`},
			{name: "one array element", path: "/output/items/1", limit: 3, want: "b"},
			{name: "whole output", path: "/output", limit: 5000, want: string(canonjson.Marshal(output))},
		}
		for _, tc := range cases {
			var got strings.Builder
			off, pages := int64(0), 0
			for {
				o, err := c.ObservePage(ctx, supervise.ObserveArgs{WorkerID: id, OutputPath: tc.path, Offset: off, Limit: tc.limit})
				if err != nil {
					t.Fatalf("%s: page at %d: %v", tc.name, off, err)
				}
				limit := tc.limit
				if limit == 0 {
					limit = supervise.MaxObservePage
				}
				if int64(len(o.Output)) > max(limit, 4) || o.Offset != off {
					t.Fatalf("%s: page at %d is %d bytes from %d, limit %d", tc.name, off, len(o.Output), o.Offset, limit)
				}
				if o.OutputBytes == nil || *o.OutputBytes != int64(len(tc.want)) {
					t.Fatalf("%s: outputBytes %v, want %d", tc.name, o.OutputBytes, len(tc.want))
				}
				got.WriteString(o.Output)
				pages++
				if o.NextOffset == nil {
					break
				}
				if *o.NextOffset <= off || pages > len(tc.want)+1 {
					t.Fatalf("%s: nextOffset %d does not advance from %d", tc.name, *o.NextOffset, off)
				}
				off = *o.NextOffset
			}
			if got.String() != tc.want {
				t.Errorf("%s: the pages joined differ from the value (%d bytes, want %d)", tc.name, got.Len(), len(tc.want))
			}
		}
		// Observe without arguments is the first default page.
		o, err := c.Observe(id)
		if err != nil || len(o.Output) > supervise.MaxObservePage || !strings.HasPrefix(longText, o.Output) || o.NextOffset == nil {
			t.Errorf("Observe: %d bytes, next %v, %v", len(o.Output), o.NextOffset, err)
		}
	})
}

// Arguments out of range are refused with a typed error naming the
// member's JSON pointer, through the Go method and through the verb
// (whose schema and strict decoding refuse unknown members and wrong
// types first).
func TestObserveRefusesBadArguments(t *testing.T) {
	runSettled(t, "short DONE", canonjson.Value{}, func(ctx context.Context, c *supervise.Coordinator, id supervise.NodeID) {
		cases := []struct {
			name string
			args supervise.ObserveArgs
			path string
		}{
			{name: "negative offset", args: supervise.ObserveArgs{Offset: -1}, path: "/offset"},
			{name: "offset past the end", args: supervise.ObserveArgs{Offset: 11}, path: "/offset"},
			{name: "negative limit", args: supervise.ObserveArgs{Limit: -5}, path: "/limit"},
			{name: "limit over the page bound", args: supervise.ObserveArgs{Limit: supervise.MaxObservePage + 1}, path: "/limit"},
			{name: "path not a pointer", args: supervise.ObserveArgs{OutputPath: "text"}, path: "/outputPath"},
			{name: "bad pointer escape", args: supervise.ObserveArgs{OutputPath: "/te~2xt"}, path: "/outputPath"},
			{name: "member the result lacks", args: supervise.ObserveArgs{OutputPath: "/output"}, path: "/outputPath"},
		}
		for _, tc := range cases {
			tc.args.WorkerID = id
			_, err := c.ObservePage(ctx, tc.args)
			var ae *tools.ArgumentsError
			if !errors.As(err, &ae) || ae.Path != tc.path {
				t.Errorf("%s: %v, want an ArgumentsError at %s", tc.name, err, tc.path)
			}
		}
		// The offset at the very end is an empty last page, not an error.
		if o, err := c.ObservePage(ctx, supervise.ObserveArgs{WorkerID: id, Offset: 10}); err != nil || o.Output != "" || o.NextOffset != nil {
			t.Errorf("offset at the end: %+v, %v", o, err)
		}
		if _, err := c.ObservePage(ctx, supervise.ObserveArgs{WorkerID: "run1:s99"}); !errors.Is(err, supervise.ErrUnknownWorker) {
			t.Errorf("unknown worker: %v", err)
		}

		all, err := c.Tools()
		if err != nil {
			t.Fatal(err)
		}
		var observe contract.Tool
		for _, tl := range all {
			if tl.Name == supervise.ToolPrefix+supervise.VerbObserveAgent {
				observe = tl
			}
		}
		verbCases := []struct{ name, args, path string }{
			{name: "unknown member", args: `{"workerId": "` + string(id) + `", "ofset": 3}`, path: ""},
			{name: "offset of the wrong type", args: `{"workerId": "` + string(id) + `", "offset": "3"}`, path: "/offset"},
			{name: "negative limit", args: `{"workerId": "` + string(id) + `", "limit": -1}`, path: "/limit"},
		}
		for _, tc := range verbCases {
			_, err := observe.Run(ctx, mustDecode(t, tc.args))
			var ae *tools.ArgumentsError
			if !errors.As(err, &ae) || (tc.path != "" && ae.Path != tc.path) {
				t.Errorf("verb, %s: %v, want an ArgumentsError at %q", tc.name, err, tc.path)
			}
		}
		v, err := observe.Run(ctx, mustDecode(t, `{"workerId": "`+string(id)+`", "limit": 5}`))
		if err != nil {
			t.Fatal(err)
		}
		if out, _ := canonjson.Resolve(v, "/output"); out.Str() != "short" {
			t.Errorf("verb page: %s", canonjson.Marshal(v))
		}
		if next, _ := canonjson.Resolve(v, "/nextOffset"); next.Kind() != canonjson.Number {
			t.Errorf("verb page has no nextOffset: %s", canonjson.Marshal(v))
		}
	})
}

func mustDecode(t *testing.T, s string) canonjson.Value {
	t.Helper()
	v, err := canonjson.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// manualClock is a clock a test moves.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (m *manualClock) Now() time.Time { m.mu.Lock(); defer m.mu.Unlock(); return m.now }
func (m *manualClock) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
}

// turnExecutor reports one turn to the worker's observer, streams a
// text delta, then waits for release (or its context) before it takes
// the steers its inbox holds: a live worker the test observes.
type turnExecutor struct {
	started chan struct{}
	release chan struct{}
}

func (e *turnExecutor) ReadsInbox() bool { return true }

func (e *turnExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	if w.Observer != nil {
		if _, err := w.Observer.TurnStarted(ctx, kernel.TurnStart{RunID: "r1", RequestedModel: "scripted/other"}); err != nil {
			return supervise.WorkResult{}, err
		}
		delta := "thinking about alpha"
		if err := w.Observer.Event(ctx, contract.EnvironmentEvent{Type: "message.part.updated",
			Normalized: &contract.StreamEvent{Type: contract.EventTypeMessagePartUpdated, MessagePartUpdated: &contract.MessagePartUpdatedEvent{Delta: &delta}}}); err != nil {
			return supervise.WorkResult{}, err
		}
	}
	close(e.started)
	select {
	case <-e.release:
	case <-ctx.Done():
		return supervise.WorkResult{Spent: fullSpend(1)}, ctx.Err()
	}
	w.Inbox.TakeOrSeal(ctx)
	if w.Observer != nil {
		if err := w.Observer.TurnEnded(ctx, kernel.TurnEnd{RunID: "r1", Terminal: contract.TerminalCompleted}); err != nil {
			return supervise.WorkResult{}, err
		}
	}
	return supervise.WorkResult{Text: "alpha DONE", Spent: fullSpend(2)}, nil
}

// §9 observe_agent's progress and steer_agent's reply progress: a live
// worker reports its turns, recent activity (its streamed text merged),
// the model its turn asked for that differs from its profile's, how long
// it has been idle and, once idle past StallAfter, stalled; a steer
// waits in its inbox as a pending message; the steer's reply and a
// settled worker carry progress too, no longer steerable.
func TestObserveAndSteerReportProgress(t *testing.T) {
	clock := &manualClock{now: time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)}
	exec := &turnExecutor{started: make(chan struct{}), release: make(chan struct{})}
	o := baseOptions(t, exec, nil)
	o.Now = clock.Now
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		select {
		case <-exec.started:
		case <-time.After(60 * time.Second):
			t.Fatal("the worker never started")
		}
		clock.Advance(30 * time.Second)
		ob, err := c.Observe(sp.WorkerID)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		p := ob.Progress
		if p == nil || p.Turns == nil || *p.Turns != 1 || p.IdleMS == nil || *p.IdleMS != 30_000 || p.Stalled || !p.Steerable ||
			p.PendingMessages == nil || *p.PendingMessages != 0 {
			t.Errorf("live progress %+v", p)
		}
		wantActivity := []supervise.Activity{
			{Kind: supervise.ActivityStarted, AtMS: clock.now.Add(-30 * time.Second).UnixMilli()},
			{Kind: supervise.ActivityTurnStarted, AtMS: clock.now.Add(-30 * time.Second).UnixMilli(), Text: "scripted/other"},
			{Kind: supervise.ActivityText, AtMS: clock.now.Add(-30 * time.Second).UnixMilli(), Text: "thinking about alpha"},
		}
		if diff := cmp.Diff(wantActivity, p.RecentActivity); diff != "" {
			t.Errorf("recent activity (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]supervise.ProfileChange{{Field: "model", From: "scripted/writer", To: "scripted/other"}}, p.ProfileChanges); diff != "" {
			t.Errorf("profile changes (-want +got):\n%s", diff)
		}
		clock.Advance(supervise.StallAfter)
		if ob, _ = c.Observe(sp.WorkerID); !ob.Progress.Stalled {
			t.Errorf("a worker idle for %s is not stalled: %+v", supervise.StallAfter+30*time.Second, ob.Progress)
		}

		// A steer waits in the inbox until the worker's turn takes it.
		steered := make(chan supervise.SteerResult, 1)
		go func() {
			r, err := c.Steer(ctx, supervise.SteerArgs{WorkerID: sp.WorkerID, Instruction: "add a title"})
			if err != nil {
				t.Error(err)
			}
			steered <- r
		}()
		deadline := time.Now().Add(60 * time.Second)
		for {
			ob, _ = c.Observe(sp.WorkerID)
			if n := ob.Progress.PendingMessages; n != nil && *n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the steer never waited in the inbox: %+v", ob.Progress)
			}
			time.Sleep(5 * time.Millisecond)
		}
		close(exec.release)
		r := <-steered
		if !r.Delivered || r.Progress == nil || r.Progress.Turns == nil || r.Progress.PendingMessages == nil || *r.Progress.PendingMessages != 0 {
			t.Errorf("steer reply %+v, progress %+v", r, r.Progress)
		}
		if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
			return supervise.BrainReport{}, err
		}
		clock.Advance(time.Hour)
		ob, _ = c.Observe(sp.WorkerID)
		p = ob.Progress
		if p.Stalled || p.Steerable || p.IdleMS == nil || *p.IdleMS != 0 || ob.Output != "alpha DONE" {
			t.Errorf("settled progress %+v (idle stops at the settlement), output %q", p, ob.Output)
		}
		if last := p.RecentActivity[len(p.RecentActivity)-1]; last.Kind != supervise.ActivityTurnEnded || last.Text != string(contract.TerminalCompleted) {
			t.Errorf("last activity %+v, want the turn's end", last)
		}
		notLive, err := c.Steer(ctx, supervise.SteerArgs{WorkerID: sp.WorkerID, Instruction: "too late"})
		if err != nil || notLive.Outcome != string(supervise.SteerNotLive) || notLive.Progress == nil || notLive.Progress.Steerable {
			t.Errorf("steer of a settled worker: %+v, %v", notLive, err)
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
}

// A worker this process did not run (replayed from the journal) has no
// progress it could know: idle time and turns are unknown, not zero.
func TestReplayedWorkerProgressUnknown(t *testing.T) {
	dir := t.TempDir()
	handJournal(t, dir, "")
	var got keyedOutcome
	o := baseOptions(t, plainExecutor{inner: &supervise.KernelExecutor{Provider: workerProvider(t), Store: newStore(t)}}, nil)
	o.RunDir, o.Resume, o.Brain = dir, true, keyedBrain(t, &got)
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	p := got.observed.Progress
	if p == nil || p.IdleMS != nil || p.Turns != nil || p.PendingMessages != nil || p.Steerable || p.Stalled || len(p.RecentActivity) != 0 {
		t.Errorf("progress of a replayed, in-doubt worker: %+v", p)
	}
}
