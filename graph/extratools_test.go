package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// lookupTool is an extra tool whose Run counts its calls and answers
// {"found": <q>}.
func lookupTool(t *testing.T, runs *atomic.Int64) contract.Tool {
	t.Helper()
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

// toolReplies records the tool messages each turn of the root is given.
type toolReplies struct {
	inner contract.ChatModel
	mu    sync.Mutex
	seen  []string
}

func (m *toolReplies) Turn(ctx context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	m.mu.Lock()
	for _, msg := range messages {
		if msg.Role == contract.ChatTool && msg.Content != nil {
			m.seen = append(m.seen, *msg.Content)
		}
	}
	m.mu.Unlock()
	return m.inner.Turn(ctx, messages, tools)
}

// lookupPlan is a root that looks a fact up, then delegates to the coder
// and awaits its settlement.
func lookupPlan() []contract.ChatEvent {
	return []contract.ChatEvent{
		scripted.Call("x1", "lookup", `{"q":"alpha"}`),
		call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "Fix test_login."}),
		call("c2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30000}),
	}
}

// §3.6 extraTools / executeExtraTool through RunGraph (the reference's
// runGraph forwards extraTools and executeExtraTool verbatim): the
// graph's root router brain is offered the caller's work tool beside the
// graph's verbs, its call runs the caller's function once, and the call
// is journaled started and done; a caller's graph Brain gets the same
// tool from Driver.ExtraTools.
func TestGraphForwardsExtraTools(t *testing.T) {
	t.Run("router root", func(t *testing.T) {
		var runs atomic.Int64
		model := &toolNames{inner: &planModel{plan: lookupPlan(), text: "The coder reported."}}
		o := options(t, kernelWorkers(t, workerScript), model)
		o.Supervise.RunDir = t.TempDir()
		o.Supervise.ExtraTools = []contract.Tool{lookupTool(t, &runs)}
		if err := graph.Validate(starGraph(t), o); err != nil {
			t.Fatalf("Validate: %v, want ExtraTools forwarded", err)
		}
		res, err := graph.RunGraph(context.Background(), starGraph(t), o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Result.Status != supervise.StatusWinner || res.Result.Winner.Node != "g:s1" {
			t.Fatalf("result %s winner %+v error %+v, want the coder g:s1", res.Result.Status, res.Result.Winner, res.Result.Error)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("lookup ran %d times, want once", n)
		}
		model.mu.Lock()
		names := slices.Clone(model.names)
		model.mu.Unlock()
		if !slices.Contains(names, "lookup") || !slices.Contains(names, supervise.ToolPrefix+supervise.VerbSpawnWorker) {
			t.Errorf("the root was offered %v, want lookup beside the graph's verbs", names)
		}
		kinds := journalKinds(t, o.Supervise.RunDir, "lookup x1")
		if !slices.Equal(kinds, []string{supervise.KindExtraToolCalled, supervise.KindExtraToolDone}) {
			t.Errorf("the journal holds %v for lookup x1, want it started then done", kinds)
		}
	})
	t.Run("caller's Brain", func(t *testing.T) {
		var runs atomic.Int64
		o := options(t, kernelWorkers(t, workerScript), nil)
		o.Supervise.Router = nil
		o.Supervise.ExtraTools = []contract.Tool{lookupTool(t, &runs)}
		var answer canonjson.Value
		o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
			ts := d.ExtraTools()
			if len(ts) != 1 || ts[0].Name != "lookup" {
				t.Errorf("Driver.ExtraTools %v, want lookup", ts)
				return supervise.BrainReport{}, nil
			}
			args, err := canonjson.Decode([]byte(`{"q":"beta"}`))
			if err != nil {
				return supervise.BrainReport{}, err
			}
			answer, err = ts[0].Run(ctx, args)
			return supervise.BrainReport{Text: "looked it up"}, err
		})
		if _, err := graph.RunGraph(context.Background(), starGraph(t), o); err != nil {
			t.Fatal(err)
		}
		if got, _ := canonjson.Resolve(answer, "/found"); got.Str() != "beta" || runs.Load() != 1 {
			t.Errorf("lookup answered %v and ran %d times, want found beta once", answer, runs.Load())
		}
	})
}

// journalKinds returns the kinds of dir's journal records keyed key, in
// order.
func journalKinds(t *testing.T, dir, key string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for line := range bytes.Lines(data) {
		var r supervise.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("a journal line does not decode: %v", err)
		}
		if r.Key == key {
			kinds = append(kinds, r.Kind)
		}
	}
	return kinds
}

// cutAfterKind truncates dir's journal right after its first record of
// kind keyed key: what a process killed at that instant leaves of the
// append-only journal.
func cutAfterKind(t *testing.T, dir, kind, key string) {
	t.Helper()
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []byte
	for line := range bytes.Lines(data) {
		kept = append(kept, line...)
		var r supervise.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("a journal line does not decode: %v", err)
		}
		if r.Kind == kind && r.Key == key {
			if err := os.WriteFile(path, kept, 0o600); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("the journal holds no %s record of %s", kind, key)
}

// §3.6 executeExtraTool, RES-03 through RunGraph (behaviour 46): a graph
// run whose router root called an extra tool is killed after the call's
// started record (its outcome never journaled: in doubt) or after its
// done record, and resumed from its run dir. The resumed root's tool
// loop runs the call again from its journaled conversation; it gets the
// journaled outcome back, or is answered in doubt, and the caller's
// function ran once in all. The run then goes on to its winner.
func TestResumedGraphRootExtraToolCallActsOnceBehaviour46(t *testing.T) {
	for _, tc := range []struct {
		kind, answer string
	}{
		{supervise.KindExtraToolCalled, "not run again"},
		{supervise.KindExtraToolDone, `"found":"alpha"`},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			var runs atomic.Int64
			dir := t.TempDir()
			o := options(t, kernelWorkers(t, workerScript), &planModel{plan: lookupPlan(), text: "The coder reported."})
			o.Supervise.RunDir = dir
			o.Supervise.ExtraTools = []contract.Tool{lookupTool(t, &runs)}
			if _, err := graph.RunGraph(context.Background(), starGraph(t), o); err != nil {
				t.Fatal(err)
			}
			cutAfterKind(t, dir, tc.kind, "lookup x1")

			second := &toolReplies{inner: &planModel{plan: lookupPlan(), text: "The coder reported."}}
			o = options(t, kernelWorkers(t, workerScript), second)
			o.Supervise.RunDir, o.Supervise.Resume = dir, true
			o.Supervise.ExtraTools = []contract.Tool{lookupTool(t, &runs)}
			res, err := graph.RunGraph(context.Background(), starGraph(t), o)
			if err != nil {
				t.Fatal(err)
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("lookup ran %d times in all, want once", n)
			}
			second.mu.Lock()
			seen := strings.Join(second.seen, "\n")
			second.mu.Unlock()
			if !strings.Contains(seen, tc.answer) {
				t.Errorf("the resumed root read %q, want the call's answer to hold %s", seen, tc.answer)
			}
			if res.Result.Status != supervise.StatusWinner || res.Result.Winner.Node != "g:s1" {
				t.Errorf("resumed result %s winner %+v error %+v, want the coder g:s1", res.Result.Status, res.Result.Winner, res.Result.Error)
			}
			if kinds := journalKinds(t, dir, "lookup x1"); slices.Index(kinds, supervise.KindExtraToolCalled) != 0 || strings.Count(strings.Join(kinds, " "), supervise.KindExtraToolCalled) != 1 {
				t.Errorf("the journal holds %v for lookup x1, want it started once", kinds)
			}
		})
	}
}
