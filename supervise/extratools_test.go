package supervise_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// lookupTool is an extra tool whose Run counts its calls and answers
// {"found": <q>}.
func lookupTool(t *testing.T, runs *atomic.Int64) contract.Tool {
	schema, err := canonjson.Decode([]byte(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`))
	if err != nil {
		t.Fatal(err)
	}
	return contract.Tool{Name: "lookup", Description: "look a fact up", InputSchema: schema,
		Run: func(_ context.Context, args canonjson.Value) (canonjson.Value, error) {
			runs.Add(1)
			q, _ := canonjson.Resolve(args, "/q")
			return canonjson.Decode([]byte(`{"found":"` + q.Str() + `"}`))
		}}
}

func lookupCall(id string) contract.ChatEvent { return scripted.Call(id, "lookup", `{"q":"alpha"}`) }

// §3.6 extraTools / executeExtraTool: the router manager is offered the
// caller's work tools beside the coordination verbs; a call runs the
// caller's function and its result is the call's tool result; each call
// is journaled started and done.
func TestExtraToolsRunForTheRouterManager(t *testing.T) {
	var runs, workers atomic.Int64
	manager := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(lookupCall("x1"), managerUsage(10, 5, 0.0001)),
		turn(scripted.Text("looked it up"), managerUsage(10, 5, 0.0001)),
	}})
	o := baseOptions(t, progressExecutor{runs: &workers}, manager)
	o.RunDir, o.ExtraTools = t.TempDir(), []contract.Tool{lookupTool(t, &runs)}
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 || res.BrainText != "looked it up" {
		t.Fatalf("lookup ran %d times, brain said %q", runs.Load(), res.BrainText)
	}
	journal := string(readJournal(t, o.RunDir))
	called := strings.Index(journal, `{"key":"lookup x1","kind":"`+supervise.KindExtraToolCalled+`","label":"lookup"}`)
	done := strings.Index(journal, `{"data":{"found":"alpha"},"key":"lookup x1","kind":"`+supervise.KindExtraToolDone+`","label":"lookup"}`)
	answered := strings.Index(journal, `lookup → ok: {\"found\":\"alpha\"}`)
	if called < 0 || done < called || answered < done {
		t.Errorf("the journal does not hold the call started, done with its result, then answered in the transcript:\n%s", journal)
	}
}

// A manager whose process died after an extra tool call ran — its
// outcome journaled, or only its start — is resumed with the call run
// again by its tool loop (its transcript has the call, not the result):
// the journaled outcome comes back, or the call is answered in doubt;
// either way the caller's function ran once in all (§3.6; doc.go "re-run
// calls act at most once").
func TestExtraToolCallActsOnceAcrossResume(t *testing.T) {
	for _, kind := range []string{supervise.KindExtraToolDone, supervise.KindExtraToolCalled} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			var runs, workers atomic.Int64
			mgr := managerProfile(t, supervise.VerbSpawnWorker)
			first := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
				turn(lookupCall("x1"), managerUsage(10, 5, 0.0001)),
				turn(scripted.Text("unreached"), managerUsage(10, 5, 0.0001)),
			}})
			o := baseOptions(t, progressExecutor{runs: &workers}, first)
			o.RunDir, o.ExtraTools = dir, []contract.Tool{lookupTool(t, &runs)}
			var dead atomic.Bool
			ctx := supervise.WithSpawnLogWrapper(context.Background(), func(sl supervise.SpawnLog) supervise.SpawnLog {
				return cutAfter{SpawnLog: sl, kind: kind, dead: &dead}
			})
			if _, err := supervise.Supervise(ctx, mgr, "t", o); err == nil || !dead.Load() {
				t.Fatalf("first run: err %v, cut %v; want it cut after %s", err, dead.Load(), kind)
			}
			var seen []string
			second := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
				turn(scripted.Text("resumed"), managerUsage(10, 5, 0.0001)),
			}})
			o.Router, o.Resume, o.Budget = recordingModel{inner: second, seen: &seen}, true, ledger.Budget{}
			res, err := supervise.Supervise(context.Background(), mgr, "", o)
			if err != nil {
				t.Fatal(err)
			}
			if runs.Load() != 1 || res.BrainText != "resumed" {
				t.Errorf("lookup ran %d times in all, brain said %q; want once", runs.Load(), res.BrainText)
			}
			want := `"found":"alpha"`
			if kind == supervise.KindExtraToolCalled {
				want = "not run again"
			}
			if !strings.Contains(strings.Join(seen, "\n"), want) {
				t.Errorf("the resumed manager read %q, want the call's answer to hold %s", seen, want)
			}
		})
	}
}

// recordingModel keeps the tool messages of every turn it is asked.
type recordingModel struct {
	inner contract.ChatModel
	seen  *[]string
}

func (m recordingModel) Turn(ctx context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	for _, msg := range messages {
		if msg.Role == contract.ChatTool {
			if msg.Content != nil {
				*m.seen = append(*m.seen, *msg.Content)
			}
		}
	}
	return m.inner.Turn(ctx, messages, tools)
}

// Extra tools are refused at start when a name is a coordination verb's,
// repeats, breaks MCP's name rule, has no Run, or when the manager is not the router brain.
func TestExtraToolsRefusedAtStart(t *testing.T) {
	var runs, workers atomic.Int64
	good := lookupTool(t, &runs)
	for _, tc := range []struct {
		name  string
		tools []contract.Tool
		brain supervise.Brain
	}{
		{"bare verb", []contract.Tool{{Name: supervise.VerbSpawnWorker, Run: good.Run}}, nil},
		{"prefixed verb", []contract.Tool{{Name: supervise.ToolPrefix + supervise.VerbStop, Run: good.Run}}, nil},
		{"twice", []contract.Tool{good, good}, nil},
		{"no run", []contract.Tool{{Name: "x"}}, nil},
		{"no name", []contract.Tool{{Run: good.Run}}, nil},
		{"a space in the name", []contract.Tool{{Name: "look up", Run: good.Run}}, nil},
		{"not the router brain", []contract.Tool{good}, &settleLoop{t: t}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, progressExecutor{runs: &workers}, scripted.NewChatModel(scripted.ChatScript{}))
			o.ExtraTools, o.Brain = tc.tools, tc.brain
			_, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if !errors.Is(err, supervise.ErrInvalidOptions) {
				t.Errorf("%v, want ErrInvalidOptions", err)
			}
		})
	}
}

// A provider that gives no call ids (the tool loop names such a call
// "call_<tool>") or reuses them makes two different calls of a tool share
// an id: within one process each is a call of its own and runs; only a
// call a resumed manager runs again from its journaled transcript gets a
// journaled outcome back (§3.6 executeExtraTool).
func TestExtraToolCallsSharingAnIDEachRun(t *testing.T) {
	var runs, workers atomic.Int64
	manager := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(scripted.Call("", "lookup", `{"q":"alpha"}`), managerUsage(10, 5, 0.0001)),
		turn(scripted.Call("", "lookup", `{"q":"beta"}`), managerUsage(10, 5, 0.0001)),
		turn(scripted.Text("looked both up"), managerUsage(10, 5, 0.0001)),
	}})
	var seen []string
	o := baseOptions(t, progressExecutor{runs: &workers}, recordingModel{inner: manager, seen: &seen})
	o.RunDir, o.ExtraTools = t.TempDir(), []contract.Tool{lookupTool(t, &runs)}
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 2 || res.BrainText != "looked both up" {
		t.Errorf("lookup ran %d times, brain said %q; want 2", runs.Load(), res.BrainText)
	}
	if all := strings.Join(seen, "\n"); !strings.Contains(all, `"found":"beta"`) {
		t.Errorf("the manager read %q, want the second call's own answer (beta)", seen)
	}
}

// An extra tool is the caller's code: one that ignores its context is
// not waited for past the run's end (here its deadline); the call is
// left in doubt, not journaled done (it may still act).
func TestExtraToolThatBlocksIsBoundedByTheRun(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var workers atomic.Int64
	manager := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(lookupCall("x1"), managerUsage(10, 5, 0.0001)),
		turn(scripted.Text("unreached"), managerUsage(10, 5, 0.0001)),
	}})
	o := baseOptions(t, progressExecutor{runs: &workers}, manager)
	o.RunDir = t.TempDir()
	o.ExtraTools = []contract.Tool{{Name: "lookup", Description: "look a fact up",
		Run: func(context.Context, canonjson.Value) (canonjson.Value, error) {
			<-release
			return canonjson.Value{}, nil
		}}}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Supervise did not return 30s after its context ended: it waits on the blocked extra tool")
	}
	if journal := string(readJournal(t, o.RunDir)); strings.Contains(journal, supervise.KindExtraToolDone) {
		t.Errorf("the blocked call was journaled done:\n%s", journal)
	}
}

// An extra tool that panics fails its call, the run goes on, and the
// panic is the call's journaled outcome (a resume does not read it in
// doubt).
func TestExtraToolPanicIsTheCallsJournaledError(t *testing.T) {
	var workers atomic.Int64
	manager := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(lookupCall("x1"), managerUsage(10, 5, 0.0001)),
		turn(scripted.Text("went on"), managerUsage(10, 5, 0.0001)),
	}})
	var seen []string
	o := baseOptions(t, progressExecutor{runs: &workers}, recordingModel{inner: manager, seen: &seen})
	o.RunDir = t.TempDir()
	o.ExtraTools = []contract.Tool{{Name: "lookup", Description: "look a fact up",
		Run: func(context.Context, canonjson.Value) (canonjson.Value, error) { panic("the caller's tool broke") }}}
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.BrainText != "went on" || !strings.Contains(strings.Join(seen, "\n"), "the tool panicked: the caller's tool broke") {
		t.Errorf("brain said %q, read %q; want the panic as the call's failure", res.BrainText, seen)
	}
	if journal := string(readJournal(t, o.RunDir)); !strings.Contains(journal, `"kind":"`+supervise.KindExtraToolDone+`","label":"lookup","reason":"the tool panicked: the caller's tool broke"`) {
		t.Errorf("the journal does not hold the panic as the call's outcome:\n%s", journal)
	}
}

// offeringBrain is an ExtraToolsOfferer: it offers the root's extra
// tools itself, calling lookup once through Coordinator.ExtraTools.
type offeringBrain struct {
	got []string
	out string
}

func (b *offeringBrain) Drive(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
	for _, tl := range c.ExtraTools() {
		b.got = append(b.got, tl.Name)
	}
	ts := c.ExtraTools()
	if len(ts) != 1 {
		return supervise.BrainReport{}, nil
	}
	args, err := canonjson.Decode([]byte(`{"q":"gamma"}`))
	if err != nil {
		return supervise.BrainReport{}, err
	}
	v, err := ts[0].Run(ctx, args)
	if err != nil {
		return supervise.BrainReport{}, err
	}
	found, _ := canonjson.Resolve(v, "/found")
	b.out = found.Str()
	return supervise.BrainReport{Text: "looked it up"}, nil
}

func (*offeringBrain) OffersExtraTools() {}

// §3.6 extraTools beyond the router brain: a brain that offers the
// root's extra tools itself (supervise.ExtraToolsOfferer — package
// graph's root brain is one) is accepted with ExtraTools, and
// Coordinator.ExtraTools gives it the tools, each call journaled started
// and done as the router brain's are; any other brain is still refused
// (TestExtraToolsRefusedAtStart).
func TestExtraToolsOfferedByAnExtraToolsOfferer(t *testing.T) {
	var runs, workers atomic.Int64
	brain := &offeringBrain{}
	o := baseOptions(t, progressExecutor{runs: &workers}, nil)
	o.RunDir, o.Brain, o.ExtraTools = t.TempDir(), brain, []contract.Tool{lookupTool(t, &runs)}
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if len(brain.got) != 1 || brain.got[0] != "lookup" || brain.out != "gamma" || runs.Load() != 1 {
		t.Errorf("the brain was given %v, lookup answered %q and ran %d times; want lookup, gamma, once", brain.got, brain.out, runs.Load())
	}
	journal := string(readJournal(t, o.RunDir))
	called := strings.Index(journal, `"kind":"`+supervise.KindExtraToolCalled+`","label":"lookup"`)
	done := strings.Index(journal, `"kind":"`+supervise.KindExtraToolDone+`","label":"lookup"`)
	if called < 0 || done < called {
		t.Errorf("the journal does not hold the call started then done:\n%s", journal)
	}
}
