package supervise_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
	"github.com/google/go-cmp/cmp"
)

// §2.1/§9: spawn_worker's budget is a Budget, spelled as the spec and a
// TypeScript peer spell it (maxTokens, maxIterations, maxUsd), merged
// per field over the per-worker default. A key the spec does not name
// is refused as invalid arguments, never silently dropped.
func TestSpawnBudgetSpecSpelling(t *testing.T) {
	cases := []struct {
		name     string
		budget   map[string]any
		usdless  bool
		want     map[string]any // the reply, without workerId/assignment/reason
		reserved map[string]any // observe_agent's reserved, when admitted
	}{{
		name:     "maxTokens and maxIterations merge over the default",
		budget:   map[string]any{"maxTokens": 2000, "maxIterations": 2},
		want:     map[string]any{"live": 1.0, "freeSlots": nil},
		reserved: map[string]any{"tokens": 2000.0, "iterations": 2.0, "microUsd": 100000.0},
	}, {
		name:     "maxUsd",
		budget:   map[string]any{"maxUsd": 0.25},
		want:     map[string]any{"live": 1.0, "freeSlots": nil},
		reserved: map[string]any{"tokens": 1000.0, "iterations": 1.0, "microUsd": 250000.0},
	}, {
		name:    "maxUsd against a root without maxUsd is usd-unbudgeted",
		budget:  map[string]any{"maxUsd": 0.25},
		usdless: true,
		want:    map[string]any{"error": "usd-unbudgeted", "live": 0.0, "freeSlots": nil, "hint": usdUnbudgetedHint},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := &gateExecutor{release: make(chan struct{})}
			o := baseOptions(t, gate, nil)
			if tc.usdless {
				o.Budget.MicroUSD, o.PerWorker.MicroUSD = nil, nil
			}
			var got, reserved map[string]any
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				defer close(gate.release)
				got = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "x", "budget": tc.budget})
				if id, ok := got["workerId"].(string); ok {
					obs := tool(t, ctx, c, supervise.VerbObserveAgent, map[string]any{"workerId": id})
					reserved, _ = obs["reserved"].(map[string]any)
				}
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbObserveAgent), "t", o); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"workerId", "assignment", "assignmentId", "continuity", "reason", "cause"} {
				delete(got, k)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.reserved, reserved); diff != "" {
				t.Errorf("reserved (-want +got):\n%s", diff)
			}
		})
	}
}

// The old spellings (tokens, iterations, usd) are not the spec's: a
// budget that names one is refused as invalid arguments at its pointer.
func TestSpawnBudgetUnknownKeyRefused(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	close(gate.release)
	o := baseOptions(t, gate, nil)
	var runErr error
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		runErr = toolErr(t, ctx, c, supervise.VerbSpawnWorker, `{"profile":"writer","task":"x","budget":{"tokens":5}}`)
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if runErr == nil || !strings.Contains(runErr.Error(), "/budget") {
		t.Fatalf("budget {tokens} = %v, want invalid arguments naming /budget", runErr)
	}
}

// §3.6: a preflight refusal is {error: preflight-refused, cause, detail}
// (with reason, live and freeSlots as every spawn refusal).
func TestPreflightRefusalCarriesDetail(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	close(gate.release)
	o := baseOptions(t, gate, nil)
	var got map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		got = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": strings.Repeat("x", 300<<10)})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	detail, _ := got["detail"].(string)
	if detail == "" || got["reason"] == nil {
		t.Fatalf("preflight refusal without detail or reason: %v", got)
	}
	delete(got, "detail")
	delete(got, "reason")
	want := map[string]any{"error": "preflight-refused", "cause": "invalid-task", "live": 0.0, "freeSlots": nil}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refusal (-want +got):\n%s", diff)
	}
}

// toolErr runs one coordination verb on raw JSON arguments and returns
// the error its Run returned (nil when it returned a result).
func toolErr(t *testing.T, ctx context.Context, c *supervise.Coordinator, verb, raw string) error {
	t.Helper()
	tools, err := c.Tools()
	if err != nil {
		t.Fatal(err)
	}
	args, err := canonjson.Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name == supervise.ToolPrefix+verb {
			_, err := tl.Run(ctx, args)
			return err
		}
	}
	t.Fatalf("no tool %s", verb)
	return nil
}

// §9: read_journal{sinceRow?, kinds?, limit?, maxBytes?} — maxBytes
// bounds one page's rows (the first row over it is named, not
// returned, so the cursor still moves), and paging on from nextRow
// reads every row exactly once.
func TestReadJournalMaxBytes(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	close(gate.release)
	o := baseOptions(t, gate, nil)
	var whole map[string]any
	var pages []map[string]any
	var tiny map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, task := range []string{"one", "two", "three"} {
			tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs(task))
		}
		for range 3 {
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{})
		}
		whole = tool(t, ctx, c, supervise.VerbReadJournal, map[string]any{})
		since := 0.0
		for range 100 {
			p := tool(t, ctx, c, supervise.VerbReadJournal, map[string]any{"sinceRow": since, "maxBytes": 700})
			pages = append(pages, p)
			since = p["nextRow"].(float64)
			if p["more"] != true {
				break
			}
		}
		tiny = tool(t, ctx, c, supervise.VerbReadJournal, map[string]any{"maxBytes": 10})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbReadJournal), "t", o); err != nil {
		t.Fatal(err)
	}
	var all []any
	for _, p := range pages {
		rows := p["rows"].([]any)
		if len(rows) > 1 {
			b, _ := json.Marshal(rows)
			if len(b) > 700 {
				t.Errorf("a page of %d rows holds %d bytes, over maxBytes 700", len(rows), len(b))
			}
		}
		all = append(all, rows...)
		if ov, ok := p["oversize"].(map[string]any); ok && ov["bytes"].(float64) <= 700 {
			t.Errorf("row %v named oversize at %v bytes", ov["row"], ov["bytes"])
		}
	}
	if len(pages) < 2 {
		t.Fatalf("maxBytes 700 read the journal in %d page(s)", len(pages))
	}
	if whole["more"] == true {
		t.Fatalf("the default page did not hold the whole journal; the comparison below needs it: %v", whole)
	}
	wantRows := whole["rows"].([]any)
	// The pages' rows are the whole journal's, in order, each once: a
	// subsequence of it, short only by the rows named oversize.
	next := 0
	for _, r := range all {
		b, _ := json.Marshal(r)
		for next < len(wantRows) {
			w, _ := json.Marshal(wantRows[next])
			next++
			if string(w) == string(b) {
				b = nil
				break
			}
		}
		if b != nil {
			t.Fatalf("a paged row is not the journal's next row: %s", b)
		}
	}
	oversized := 0
	for _, p := range pages {
		if p["oversize"] != nil {
			oversized++
		}
	}
	if len(all)+oversized != len(wantRows) {
		t.Errorf("paging by bytes read %d rows and named %d oversize, want %d rows", len(all), oversized, len(wantRows))
	}
	if rows := tiny["rows"].([]any); len(rows) != 0 || tiny["oversize"] == nil || tiny["nextRow"] != 1.0 {
		t.Errorf("maxBytes 10 = %v, want no rows, the first named oversize, nextRow 1", tiny)
	}
}

// spawn_worker's reply as the reference's: {workerId, assignmentId,
// continuity, live, freeSlots}, unkeyed assignments counted from
// ordinal:0 per manager (agentrt's own "assignment" beside it), a key's
// as key:<k>.
func TestSpawnReplyReferenceShape(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	o := baseOptions(t, gate, nil)
	o.MaxLiveWorkers = 3
	var got []map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		defer close(gate.release)
		for _, a := range []map[string]any{{"profile": "writer", "task": "x"}, {"profile": "writer", "task": "y"},
			{"profile": "writer", "task": "z", "key": "kz", "continuity": "fresh"}} {
			got = append(got, tool(t, ctx, c, supervise.VerbSpawnWorker, a))
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"workerId": "run1:s1", "assignment": "ordinal:0", "assignmentId": "ordinal:0", "continuity": "fresh", "live": 1.0, "freeSlots": 2.0},
		{"workerId": "run1:s2", "assignment": "ordinal:1", "assignmentId": "ordinal:1", "continuity": "fresh", "live": 2.0, "freeSlots": 1.0},
		{"workerId": "run1:s3", "assignment": "key:kz", "assignmentId": "key:kz", "continuity": "fresh", "live": 3.0, "freeSlots": 0.0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
}
