package kernel_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/sqlite"
)

func collect(t *testing.T, seq func(func(contract.EventEnvelope, error) bool)) []contract.EventEnvelope {
	t.Helper()
	var out []contract.EventEnvelope
	for e, err := range seq {
		if err != nil {
			t.Fatalf("stream error: %v", err)
		}
		out = append(out, e)
	}
	return out
}

// Issue 4 (kernel.Stream), CTL-05: one turn as envelopes that validate
// against the contract, numbered without gaps, ending in exactly one
// terminal envelope that states the recorded outcome — and Replay from
// the store yields the same envelopes.
func TestStreamEndsInTheRecordedOutcome(t *testing.T) {
	tests := []struct {
		name    string
		profile string
		script  string
		status  string
		detail  string
	}{
		{"delivered", noteWriter, `{"turns":[{"steps":[{"text":"A note."}]}]}`, contract.StreamStatusCompleted, "delivered"},
		{"not delivered", noteWriter, `{"turns":[{"steps":[{"text":"  "}]}]}`, contract.StreamStatusCompleted, "not delivered"},
		{"provider says completed, another model served", noteWriter,
			`{"servedModel":"other/model","turns":[{"steps":[{"text":"A note."}]}]}`, contract.StreamStatusFailed, "served-model-mismatch: requested scripted/note-writer but the platform served other/model"},
		{"no terminal", noteWriter, `{"turns":[{"steps":[{"text":"half"}],"end":"no-terminal"}]}`, contract.StreamStatusFailed, "no-terminal-event"},
		{"in-band failure", noteWriter, `{"turns":[{"steps":[{"text":"half"}],"end":"failed","error":"quota exhausted"}]}`, contract.StreamStatusFailed, "in-band-error: quota exhausted"},
		{"transport breaks", noteWriter, `{"turns":[{"steps":[{"text":"half"}],"end":"die","error":"reset"}]}`, contract.StreamStatusFailed, "transport"},
		{"refused before dispatch", `{"name":"x","mcp":{"fs":{"transport":"stdio","command":"fs"}}}`,
			`{"turns":[{"steps":[{"text":"never"}]}]}`, contract.StreamStatusFailed, "refused: "},
	}
	for _, tc := range tests {
		for _, backend := range []string{"memory", "sqlite"} {
			t.Run(tc.name+"/"+backend, func(t *testing.T) {
				ctx := context.Background()
				var st store.Store = memory.New(nil)
				if backend == "sqlite" {
					s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close()
					st = s
				}
				p := scripted.New(mustScript(t, tc.script), scripted.Options{})
				live := collect(t, kernel.Stream(ctx, kernel.Request{Profile: mustProfile(t, tc.profile), Task: "t", Provider: p, Store: st, Check: nonEmpty}))
				if len(live) == 0 {
					t.Fatal("no envelopes")
				}
				terminals := 0
				for i, e := range live {
					if e.Sequence != int64(i+1) || e.RunID != live[0].RunID {
						t.Errorf("envelope %d: sequence %d run %s", i, e.Sequence, e.RunID)
					}
					if _, err := contract.Validate(contract.KindEventEnvelope, contract.EventEnvelopeSchema, e); err != nil {
						t.Errorf("envelope %d does not validate: %v", i, err)
					}
					if _, ok := e.Terminal(); ok {
						terminals++
					}
				}
				last := live[len(live)-1]
				if kind, ok := last.Terminal(); terminals != 1 || !ok {
					t.Fatalf("%d terminal envelopes; last terminal=%v %v", terminals, ok, kind)
				}
				if got := last.Event.Status; got.Status != tc.status || got.Detail == nil || !strings.HasPrefix(*got.Detail, tc.detail) {
					t.Errorf("terminal %+v, want %s %q…", got, tc.status, tc.detail)
				}
				replayed := collect(t, kernel.Replay(ctx, st, live[0].RunID))
				if diff := cmp.Diff(wire(t, live), wire(t, replayed)); diff != "" {
					t.Errorf("replay differs from the live stream (-live +replay):\n%s", diff)
				}
			})
		}
	}
}

// wire is the canonical JSON of each envelope: the contract's identity.
func wire(t *testing.T, envs []contract.EventEnvelope) []string {
	t.Helper()
	var out []string
	for _, e := range envs {
		v, err := canonjson.ToValue(e)
		if err != nil {
			t.Fatal(err)
		}
		b, err := canonjson.Canonical(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// Breaking out of the stream cancels the run; it is recorded cancelled,
// and nothing is yielded after the break.
func TestStreamBreakCancels(t *testing.T) {
	ctx := context.Background()
	st := memory.New(nil)
	p := scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"one"},{"delayMs":50},{"text":"two"},{"delayMs":50},{"text":"three"}]}]}`), scripted.Options{})
	var runID string
	n := 0
	for e, err := range kernel.Stream(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: st, Check: nonEmpty}) {
		if err != nil {
			t.Fatal(err)
		}
		runID = e.RunID
		n++
		if n == 2 {
			break
		}
	}
	r, err := st.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.StatusCancelled {
		t.Errorf("status %q after the consumer left, want cancelled", r.Status)
	}
	replayed := collect(t, kernel.Replay(ctx, st, runID))
	if last := replayed[len(replayed)-1]; last.Event.Status == nil || last.Event.Status.Status != contract.StreamStatusCancelled {
		t.Errorf("replayed terminal %+v", last.Event)
	}
}

// A run that cannot be recorded yields one error and no envelopes.
func TestStreamUnrecordable(t *testing.T) {
	ctx := context.Background()
	st := memory.New(nil)
	req := kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", RunID: "dup", Provider: scripted.New(scripted.DefaultScript(), scripted.Options{}), Store: st}
	collect(t, kernel.Stream(ctx, req))
	var errs, envs int
	for _, err := range kernel.Stream(ctx, req) { // same run id again
		if err != nil {
			errs++
		} else {
			envs++
		}
	}
	if errs != 1 || envs != 0 {
		t.Errorf("%d errors, %d envelopes; want 1, 0", errs, envs)
	}
	for _, err := range kernel.Replay(ctx, st, "missing") {
		if err == nil {
			t.Error("replaying a missing run yielded an envelope")
		}
	}
}

// A consumer whose loop body panics does not leave the run running: the
// record ends failed (reason panic) and the panic goes on.
func TestStreamConsumerPanicEndsTheRecord(t *testing.T) {
	st := memory.New(nil)
	p := scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"one"},{"text":"two"}]}]}`), scripted.Options{})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		for range kernel.Stream(context.Background(), kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", RunID: "boom", Provider: p, Store: st}) {
			panic("consumer bug")
		}
	}()
	r, err := st.GetRun(context.Background(), "boom")
	if err != nil || r.Status != store.StatusFailed {
		t.Fatalf("record %q, %v; want failed", r.Status, err)
	}
	if term, _ := r.Doc.Get("terminal"); !strings.Contains(string(canonjson.Marshal(term)), "panic") {
		t.Errorf("terminal %s does not say panic", canonjson.Marshal(term))
	}
}

// After a streamed run, the caller has its typed result without reading
// the store: status, delivered, usage, served model, verdict — the same
// facts the terminal envelope states.
func TestStreamRunResult(t *testing.T) {
	st := memory.New(nil)
	run := kernel.StreamRun(context.Background(), kernel.Request{Profile: mustProfile(t, noteWriter), Task: "Write a release note.",
		Provider: scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"Shipped."},{"usage":{"inputTokens":12,"outputTokens":5},"mode":"delta"}]}]}`), scripted.Options{}),
		Store:    st, Check: nonEmpty})
	if _, err := run.Result(); !errors.Is(err, kernel.ErrStreamNotDone) {
		t.Fatalf("Result before the stream ran: %v; want ErrStreamNotDone", err)
	}
	var last contract.EventEnvelope
	for env, err := range run.Events() {
		if err != nil {
			t.Fatal(err)
		}
		last = env
	}
	res, err := run.Result()
	if err != nil || res == nil {
		t.Fatalf("result %v, %v", res, err)
	}
	if res.Status != store.StatusCompleted || !res.Delivered || res.Verdict == nil || !res.Verdict.Passed ||
		res.Served.Model != "scripted/note-writer" || res.Usage.InputTokens.String() != "12" || res.Text != "Shipped." {
		t.Errorf("result %+v", res)
	}
	if last.RunID != res.RunID || last.Event.Status == nil || last.Event.Status.Status != contract.StreamStatusCompleted {
		t.Errorf("last envelope %+v does not state the result", last)
	}
	// The typed record in the store says the same.
	rec, err := kernel.ReadRun(context.Background(), st, res.RunID)
	if err != nil || rec.Exact == nil {
		t.Fatalf("ReadRun: %v", err)
	}
	if *rec.Exact.Delivered != res.Delivered || rec.Exact.Usage.Usage != res.Usage || string(rec.Exact.ServedModel) != res.Served.Model ||
		rec.Events != int64(res.Events) || rec.Spend != res.Usage {
		t.Errorf("record %+v (spend %+v, %d events) disagrees with result %+v", rec.Exact, rec.Spend, rec.Events, res)
	}
}
