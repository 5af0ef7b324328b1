package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// agentrt top --json prints one snapshot of the runs and workers the
// frame shows (runtime spec §11 top: status, budget, spend, workers,
// totals), every member present under a stable name, and what is not
// known null, never 0: a store run's budget, a live run's spend, an
// unsettled worker's spend and latency, an unreported token count.
func TestTopJSON(t *testing.T) {
	db, s := topStore(t)
	s.Close()
	dir := tornRunDir(t)
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"top", "--json", "--db", db, "--run-dir", dir}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	if code != 0 || errb.Len() != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", code, errb.String(), out.String())
	}
	// Stable names: every member, always there.
	var raw struct {
		Runs []map[string]json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	runKeys := []string{"budget", "id", "kind", "live", "notes", "resume", "runDir", "spend", "startedAt", "status", "supervisor", "tail", "task", "totals", "workers"}
	workerKeys := []string{"budget", "id", "label", "latencyMs", "lead", "parent", "spend", "state", "task", "tokensIn", "tokensOut", "verdict"}
	for _, r := range raw.Runs {
		if got := slices.Sorted(mapsKeys(r)); !slices.Equal(got, runKeys) {
			t.Errorf("run members %v, want %v", got, runKeys)
		}
		var ws []map[string]json.RawMessage
		if err := json.Unmarshal(r["workers"], &ws); err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if got := slices.Sorted(mapsKeys(w)); !slices.Equal(got, workerKeys) {
				t.Errorf("worker members %v, want %v", got, workerKeys)
			}
		}
	}

	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	dec.DisallowUnknownFields()
	var doc topJSONDoc
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != 1 || doc.Errors == nil || len(doc.Errors) != 0 {
		t.Errorf("schemaVersion %d, errors %q", doc.SchemaVersion, doc.Errors)
	}
	byID := map[string]topJSONRun{}
	for _, r := range doc.Runs {
		byID[r.ID] = r
	}
	type run struct {
		Status  string
		Live    bool
		Task    *string
		RunDir  *string
		Budget  *topJSONBudget
		Spend   *topJSONSpend
		Started bool
	}
	view := func(r topJSONRun) run {
		return run{r.Status, r.Live, r.Task, r.RunDir, r.Budget, r.Spend, r.StartedAt != nil}
	}
	want := map[string]run{
		"run-live":   {Status: "running", Live: true, Task: new("fix the failing test"), Started: true},
		"run-ended":  {Status: "completed", Task: new("summarise the report"), Started: true, Spend: &topJSONSpend{InputTokens: new(int64(1200)), OutputTokens: new(int64(300)), Tokens: new(int64(1500)), MicroUSD: new(int64(12500))}},
		"run-broken": {Status: "failed", Started: true},
		"sup-1":      {Status: "running", Live: true, Task: new("refactor the parser"), RunDir: new(dir), Started: true, Spend: &topJSONSpend{Tokens: new(int64(4200)), MicroUSD: new(int64(15000)), Floor: true}},
	}
	for id, w := range want {
		if diff := cmp.Diff(w, view(byID[id])); diff != "" {
			t.Errorf("run %s (-want +got):\n%s", id, diff)
		}
	}
	sup := byID["sup-1"]
	if sup.Supervisor != nil || sup.Resume != nil {
		t.Errorf("a run dir without supervise.lock has supervisor %+v, resume %v", sup.Supervisor, sup.Resume)
	}
	wantWorkers := []topJSONWorker{
		{ID: "sup-1:s1", Label: new("lexer"), Parent: new("sup-1"), State: "running", Task: new("split the lexer"),
			Budget: &topJSONBudget{Tokens: new(int64(20000)), MicroUSD: new(int64(500000))}},
		{ID: "sup-1:s2", Label: new("tests"), Parent: new("sup-1"), State: "done", Verdict: new("passed"), Task: new("write tests"),
			Budget: &topJSONBudget{Tokens: new(int64(10000))}, Spend: &topJSONSpend{Tokens: new(int64(4200)), MicroUSD: new(int64(15000))}},
		{ID: "sup-1:s1:s3", Label: new("lexer-docs"), Parent: new("sup-1:s1"), Lead: new("sup-1:s1"), State: "failed", Verdict: new("none"), Task: new("document the lexer")},
	}
	if diff := cmp.Diff(wantWorkers, sup.Workers); diff != "" {
		t.Errorf("workers (-want +got):\n%s", diff)
	}
	wantTotals := &topJSONTotals{Workers: 3, States: map[string]int{"running": 1, "done": 1, "failed": 1}, InFlight: 1, Settled: 2,
		MicroUSD: new(int64(15000)), Floor: true}
	if diff := cmp.Diff(wantTotals, sup.Totals); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if byID["run-live"].Totals != nil || len(sup.Tail) == 0 || byID["run-live"].Notes == nil {
		t.Errorf("a store run has totals %+v, or the run dir's tail is empty %q", byID["run-live"].Totals, sup.Tail)
	}

	// --json prints data, not a view.
	errb.Reset()
	if code := Main(context.Background(), []string{"top", "--json", "--detail", "--db", db}, IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != ExitUsage {
		t.Errorf("--json --detail: exit %d, want %d (%s)", code, ExitUsage, errb.String())
	}
}

func mapsKeys(m map[string]json.RawMessage) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
