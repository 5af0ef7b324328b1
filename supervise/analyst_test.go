package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// analystScript answers analyst tasks (they open with ANALYST LENS)
// with findings, and writer tasks as workerScript does.
const analystScript = `{"turns": [
  {"match": "ANALYST LENS", "repeat": true, "steps": [{"text": "finding: the note cites no source"}, {"usage": {"inputTokens": 30, "outputTokens": 7, "cost": 0.0005}, "mode": "delta"}]},
  {"match": "alpha", "repeat": true, "steps": [{"text": "alpha: DONE"}, {"usage": {"inputTokens": 100, "outputTokens": 20, "cost": 0.002}, "mode": "delta"}]}
]}`

// analystExecutor runs the kernel on analystScript and counts analyst
// and writer executions.
func analystExecutor(t *testing.T) *countingExecutor {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(analystScript), &s); err != nil {
		t.Fatal(err)
	}
	e := newCounting(t, scripted.New(&s, scripted.Options{}))
	e.calls["ANALYST LENS"] = &atomic.Int64{}
	return e
}

func validLens() map[string]any {
	return map[string]any{"id": "source-check", "description": "Does the note cite its sources?", "area": "evidence",
		"question": "Which statements lack a source?", "instructions": "List statements without a cited source.",
		"toolGroup": "singleTrace", "limits": map[string]any{"maxIterations": 1, "maxOutputChars": 200}, "minimumEvidenceCitations": 1}
}

// §9 list_analysts / run_analyst / define_analyst on a live run: the
// menu lists the built-in lenses; a lens off the menu, an unsettled or
// unknown worker and an invalid definition are refused as tool results
// {error, reason}; a lens runs as an analyst worker of the run, charged
// to its pool, and its findings come back from await_event as a finding
// event, never as a deliverable.
func TestAnalystVerbsRunALensOverASettledWorker(t *testing.T) {
	exec := analystExecutor(t)
	gate := make(chan struct{})
	gated := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		if w.Profile.Name != nil && *w.Profile.Name == "writer" {
			<-gate // the writer settles only once the manager let it
		}
		return exec.Execute(ctx, w)
	})
	o := baseOptions(t, gated, nil)
	o.RunDir = t.TempDir()
	got := map[string]map[string]any{}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		got["menu"] = tool(t, ctx, c, supervise.VerbListAnalysts, map[string]any{})
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("alpha"))
		got["unsettled"] = tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "failure-triage", "workerId": "run1:s1"})
		close(gate)
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		got["offMenu"] = tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "mind-reader", "workerId": "run1:s1"})
		got["unknown"] = tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "failure-triage", "workerId": "run1:s9"})
		bad := validLens()
		bad["question"] = strings.Repeat("q", supervise.MaxLensQuestion+1)
		got["invalid"] = tool(t, ctx, c, supervise.VerbDefineAnalyst, bad)
		got["defined"] = tool(t, ctx, c, supervise.VerbDefineAnalyst, validLens())
		got["again"] = tool(t, ctx, c, supervise.VerbDefineAnalyst, validLens())
		got["run"] = tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "source-check", "workerId": "run1:s1"})
		got["finding"] = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		got["overAnalyst"] = tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "failure-triage", "workerId": "run1:s2"})
		got["menu2"] = tool(t, ctx, c, supervise.VerbListAnalysts, map[string]any{})
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range got["menu"]["analysts"].([]any) {
		ids = append(ids, l.(map[string]any)["id"].(string))
	}
	if diff := cmp.Diff([]string{"failure-triage", "claims-check"}, ids); diff != "" || got["menu"]["definitionsLeft"] != 8.0 {
		t.Errorf("menu %v (-want +got ids):\n%s", got["menu"], diff)
	}
	for name, code := range map[string]string{"unsettled": "worker-not-settled", "offMenu": "unknown-analyst", "unknown": "unknown-worker",
		"invalid": "invalid-definition", "again": "duplicate-analyst", "overAnalyst": "not-a-worker"} {
		if got[name]["error"] != code || got[name]["reason"] == "" {
			t.Errorf("%s: %v, want refusal %s with a reason", name, got[name], code)
		}
	}
	if r, _ := got["invalid"]["reason"].(string); !strings.HasPrefix(r, "/question: ") {
		t.Errorf("invalid definition reason %q, want the JSON pointer /question", r)
	}
	if got["defined"]["definitionsLeft"] != 7.0 || got["run"]["analystWorkerId"] != "run1:s2" || got["run"]["freeSlots"] != nil {
		t.Errorf("defined %v, run %v", got["defined"], got["run"])
	}
	ev, _ := got["finding"]["event"].(map[string]any)
	want := map[string]any{"kind": "finding", "workerId": "run1:s2", "lens": "source-check", "sourceWorkerId": "run1:s1",
		"output": "finding: the note cites no source", "delivered": false}
	for k, v := range want {
		if ev[k] != v {
			t.Errorf("finding event %s = %v, want %v (event %v)", k, ev[k], v, ev)
		}
	}
	if menu := got["menu2"]["analysts"].([]any); len(menu) != 3 || menu[2].(map[string]any)["defined"] != true {
		t.Errorf("menu after define: %v", got["menu2"])
	}
	if res.Winner == nil || res.Winner.Node != "run1:s1" {
		t.Errorf("winner %+v, want the writer: findings are never delivered", res.Winner)
	}
	// The analyst is charged like any worker: alpha 120 + analyst 37.
	if res.Breakdown.ChildWork.Tokens != 157 || !res.Breakdown.ChildWork.TokensKnown || exec.count("ANALYST LENS") != 1 {
		t.Errorf("child work %+v, analyst runs %d", res.Breakdown.ChildWork, exec.count("ANALYST LENS"))
	}
	if n := len(res.Tree); n != 2 || res.Tree[1].Profile != "analyst-source-check" || res.Tree[1].Delivered {
		t.Errorf("tree %+v", res.Tree)
	}
}

// Analyst runs are journaled in the run's one journal: a resumed run
// offers the lens the manager defined — the same definition again (a
// define_analyst call a resumed manager runs again, issue 13) is
// answered defined and replayed, another under its id is refused
// analyst-exists — and run_analyst of a completed
// analysis returns its findings (resumed: completed) without running
// the analyst again or spending.
func TestResumedRunDoesNotRerunACompletedAnalysis(t *testing.T) {
	dir := t.TempDir()
	brain := func(got map[string]map[string]any) supervise.Brain {
		return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("alpha"))
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"settled"}})
			got["define"] = tool(t, ctx, c, supervise.VerbDefineAnalyst, validLens())
			other := validLens()
			other["description"] = "another lens under the same id"
			got["redefine"] = tool(t, ctx, c, supervise.VerbDefineAnalyst, other)
			got["run"] = tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "source-check", "workerId": "run1:s1"})
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"finding"}})
			return supervise.BrainReport{}, nil
		})
	}
	first, second := map[string]map[string]any{}, map[string]map[string]any{}
	o := baseOptions(t, analystExecutor(t), nil)
	o.RunDir, o.Brain = dir, brain(first)
	before, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	exec := analystExecutor(t)
	o = baseOptions(t, exec, nil)
	o.RunDir, o.Resume, o.Brain = dir, true, brain(second)
	after, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if first["run"]["resumed"] != nil || second["define"]["defined"] != true || second["define"]["replayed"] != true ||
		second["redefine"]["error"] != "duplicate-analyst" {
		t.Errorf("first run %v, second define %v and redefine %v", first["run"], second["define"], second["redefine"])
	}
	if second["run"]["resumed"] != "completed" || second["run"]["findings"] != "finding: the note cites no source" ||
		second["run"]["analystWorkerId"] != "run1:s2" {
		t.Errorf("resumed run_analyst %v", second["run"])
	}
	if exec.count("ANALYST LENS") != 0 || exec.count("alpha") != 0 {
		t.Errorf("the resumed process ran the analyst %d and the writer %d times; want 0, 0", exec.count("ANALYST LENS"), exec.count("alpha"))
	}
	if diff := cmp.Diff(before.Spent, after.Spent); diff != "" {
		t.Errorf("a replayed analysis spent again (-before +after):\n%s", diff)
	}
}

// Analysts are charged to the scope like any worker: run_analyst over a
// pool that cannot fit the analyst is refused budget-exhausted, with
// live and freeSlots, and nothing runs.
func TestRunAnalystRefusedWhenThePoolCannotFitIt(t *testing.T) {
	exec := analystExecutor(t)
	o := baseOptions(t, exec, nil)
	// The writer reserves 1000 of 1100 tokens and spends 120: 980 are
	// left, short of the analyst's 1000 ceiling.
	o.Budget.Tokens = new(int64(1_100))
	var run map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("alpha"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		run = tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "failure-triage", "workerId": "run1:s1"})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if run["error"] != "budget-exhausted" || exec.count("ANALYST LENS") != 0 {
		t.Errorf("run_analyst %v, analyst runs %d", run, exec.count("ANALYST LENS"))
	}
	if _, ok := run["live"]; !ok {
		t.Errorf("a spawn refusal carries live: %v", run)
	}
}

// §9 define_analyst bounds, decoded strictly: every refusal is a
// *LensError whose pointer names the member.
func TestDecodeLensRefusesWithJSONPointer(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name    string
		edit    func(m map[string]any)
		pointer string
	}{
		{"bad id", func(m map[string]any) { m["id"] = "Bad_ID" }, "/id"},
		{"one-letter id", func(m map[string]any) { m["id"] = "a" }, "/id"},
		{"description", func(m map[string]any) { m["description"] = long(301) }, "/description"},
		{"area", func(m map[string]any) { m["area"] = long(65) }, "/area"},
		{"question", func(m map[string]any) { m["question"] = long(1001) }, "/question"},
		{"empty question", func(m map[string]any) { m["question"] = "  " }, "/question"},
		{"instructions", func(m map[string]any) { m["instructions"] = long(20001) }, "/instructions"},
		{"tool group", func(m map[string]any) { m["toolGroup"] = "everything" }, "/toolGroup"},
		{"negative llm calls", func(m map[string]any) { m["limits"] = map[string]any{"maxLlmCalls": -1} }, "/limits/maxLlmCalls"},
		{"zero limit", func(m map[string]any) { m["limits"] = map[string]any{"maxIterations": 0} }, "/limits/maxIterations"},
		{"citations", func(m map[string]any) { m["minimumEvidenceCitations"] = 0 }, "/minimumEvidenceCitations"},
		{"unknown member", func(m map[string]any) { m["tools"] = []string{"bash"} }, ""},
		{"unknown limit", func(m map[string]any) { m["limits"] = map[string]any{"seconds": 3} }, "/limits"},
		{"wrong type", func(m map[string]any) { m["area"] = 3 }, "/area"},
		{"missing question", func(m map[string]any) { delete(m, "question") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validLens()
			tt.edit(m)
			doc, _ := json.Marshal(m)
			_, err := supervise.DecodeLens(doc)
			var le *supervise.LensError
			if !errors.As(err, &le) {
				t.Fatalf("DecodeLens = %v, want a *LensError", err)
			}
			if le.Pointer != tt.pointer {
				t.Errorf("pointer %q, want %q (%v)", le.Pointer, tt.pointer, err)
			}
		})
	}
	doc, _ := json.Marshal(validLens())
	l, err := supervise.DecodeLens(doc)
	if err != nil || l.ID != "source-check" || *l.Limits.OutputChars != 200 {
		t.Fatalf("valid lens: %+v %v", l, err)
	}
	var le *supervise.LensError
	if _, err := supervise.DecodeLens(make([]byte, supervise.MaxLensDocument+1)); !errors.As(err, &le) {
		t.Errorf("an oversized document: %v", err)
	}
	for _, b := range supervise.BuiltinLenses() {
		if err := supervise.ValidateLens(b); err != nil {
			t.Errorf("built-in lens %s: %v", b.ID, err)
		}
	}
}

// Caller lenses (Options.Analysts) are validated before the run starts.
func TestOptionsAnalystsValidated(t *testing.T) {
	o := baseOptions(t, analystExecutor(t), nil)
	o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
		return supervise.BrainReport{}, nil
	})
	o.Analysts = []supervise.Lens{{ID: "failure-triage", Description: "d", Area: "a", Question: "q", Instructions: "i", ToolGroup: supervise.ToolGroupAll}}
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); !errors.Is(err, supervise.ErrInvalidOptions) {
		t.Errorf("a lens id already on the menu: %v", err)
	}
	o.Analysts = []supervise.Lens{{ID: "ok-lens", Description: "d", Area: "a", Question: "q", Instructions: "i", ToolGroup: "nope"}}
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err == nil || !strings.Contains(err.Error(), "Analysts[0]/toolGroup") {
		t.Errorf("an invalid caller lens: %v", err)
	}
}

func FuzzDecodeLens(f *testing.F) {
	doc, _ := json.Marshal(validLens())
	f.Add(doc)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"id":"ab","description":"d","area":"a","question":"q","instructions":"i","toolGroup":"all","limits":{"maxIterations":99}}`))
	f.Add([]byte(`{"id":"ab","limits":{"maxIterations":-1}}`))
	f.Add([]byte(`[1,2,3]`))
	f.Add([]byte(`{"id":"\u00e9"}`))
	f.Add([]byte(`{"id":"ab","description":" d ","area":"a","question":"q","instructions":"i","toolGroup":"all","model":" m ","minimumEvidenceCitations":11}`))
	f.Add([]byte(`{"id":"ab","a.b":1,"":2,"limits":{"x/y":3}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := supervise.DecodeLens(data)
		if err != nil {
			var le *supervise.LensError
			if !errors.As(err, &le) {
				t.Fatalf("error %T %v is not a *LensError", err, err)
			}
			// The pointer is in the document, or names an absent
			// member of an object in it.
			if doc, derr := canonjson.Decode(data); derr == nil {
				for _, is := range append([]supervise.LensIssue{{Pointer: le.Pointer}}, le.Issues...) {
					_, in := canonjson.Resolve(doc, is.Pointer)
					i := strings.LastIndexByte(is.Pointer, '/')
					_, parentIn := canonjson.Resolve(doc, is.Pointer[:max(i, 0)])
					if !in && (i < 0 || !parentIn) {
						t.Fatalf("refusal at %q, not in the document: %v", is.Pointer, err)
					}
				}
			}
			return
		}
		if err := supervise.ValidateLens(l); err != nil {
			t.Fatalf("a decoded lens does not validate: %v", err)
		}
		// What was accepted re-encodes and reads back the same.
		again, err := supervise.DecodeLens(canonjson.Marshal(mustValue(t, l)))
		if err != nil || !cmp.Equal(l, again) {
			t.Fatalf("lens %+v reads back as %+v, %v", l, again, err)
		}
	})
}

// A lens list (the CLI's --analysts file) decodes item by item; a
// refusal's pointer starts with the item's index.
func TestDecodeLensesPointsIntoTheList(t *testing.T) {
	second := validLens()
	second["id"] = "other-check"
	doc, _ := json.Marshal([]any{validLens(), second})
	got, err := supervise.DecodeLenses(doc)
	if err != nil || len(got) != 2 || got[1].ID != "other-check" {
		t.Fatalf("DecodeLenses = %+v, %v", got, err)
	}
	bad := validLens()
	bad["toolGroup"] = "root"
	tests := []struct {
		name    string
		doc     any
		pointer string
	}{
		{"bad item", []any{validLens(), bad}, "/1/toolGroup"},
		{"duplicate id", []any{validLens(), validLens()}, "/1/id"},
		{"not an object", []any{validLens(), 3}, "/1"},
		{"not a list", validLens(), ""},
		{"too many", make([]any, supervise.MaxLensList+1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := json.Marshal(tt.doc)
			_, err := supervise.DecodeLenses(doc)
			var le *supervise.LensError
			if !errors.As(err, &le) || le.Pointer != tt.pointer {
				t.Errorf("DecodeLenses = %v, want a *LensError at %q", err, tt.pointer)
			}
		})
	}
}

func FuzzDecodeLenses(f *testing.F) {
	doc, _ := json.Marshal([]any{validLens()})
	f.Add(doc)
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{},{"id":"ab"}]`))
	f.Add([]byte(`[[[[[[]]]]]]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ls, err := supervise.DecodeLenses(data)
		if err != nil {
			var le *supervise.LensError
			if !errors.As(err, &le) {
				t.Fatalf("error %T %v is not a *LensError", err, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, l := range ls {
			if err := supervise.ValidateLens(l); err != nil || seen[l.ID] {
				t.Fatalf("decoded lens %s: %v (duplicate %v)", l.ID, err, seen[l.ID])
			}
			seen[l.ID] = true
		}
	})
}

func mustValue(t *testing.T, v any) canonjson.Value {
	t.Helper()
	out, err := canonjson.ToValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
