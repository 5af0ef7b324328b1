package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

const noteWriter = `{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`

func mustProfile(t *testing.T, s string) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustScript(t *testing.T, s string) *scripted.Script {
	t.Helper()
	sc, err := scripted.ParseScript([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func nonEmpty(ctx context.Context, out kernel.Outcome) (kernel.Verdict, error) {
	return kernel.Verdict{Passed: strings.TrimSpace(out.Text) != "", Reason: "the note is not empty"}, nil
}

// Issue 4 "truthfulness matrix": each misbehaviour is recorded as what it
// is — unknown (not 0), failed (not success), mismatch, not delivered.
func TestTruthfulnessMatrix(t *testing.T) {
	tests := []struct {
		name          string
		script        string
		check         kernel.Check
		status        store.Status
		reason        string
		delivered     bool
		input, output string // usage as rendered
	}{
		{"honest", `{"turns":[{"steps":[{"text":"Shipped one-click restore."},{"usage":{"inputTokens":12,"outputTokens":5},"mode":"delta"}]}]}`,
			nonEmpty, store.StatusCompleted, "", true, "12", "5"},
		{"no usage reported", `{"turns":[{"steps":[{"text":"A note."}]}]}`,
			nonEmpty, store.StatusCompleted, "", true, "unknown", "unknown"},
		{"cumulative reported twice", `{"turns":[{"steps":[{"text":"A note."},{"usage":{"inputTokens":30,"outputTokens":4},"mode":"cumulative"},{"usage":{"inputTokens":30,"outputTokens":4},"mode":"cumulative"}]}]}`,
			nonEmpty, store.StatusCompleted, "", true, "30", "4"},
		{"usage without a mode", `{"turns":[{"steps":[{"text":"A note."},{"usage":{"inputTokens":10,"outputTokens":1}},{"usage":{"inputTokens":10,"outputTokens":1}}]}]}`,
			nonEmpty, store.StatusCompleted, "", true, "≥ 10", "≥ 1"},
		{"in-band error", `{"turns":[{"steps":[{"text":"partial"}],"end":"failed","error":"quota exhausted"}]}`,
			nonEmpty, store.StatusFailed, kernel.ReasonInBandError, false, "unknown", "unknown"},
		{"death mid-turn", `{"turns":[{"steps":[{"text":"par"}],"end":"die","error":"connection reset"}]}`,
			nonEmpty, store.StatusFailed, kernel.ReasonTransport, false, "unknown", "unknown"},
		{"no terminal event", `{"turns":[{"steps":[{"text":"a note"}],"end":"no-terminal"}]}`,
			nonEmpty, store.StatusFailed, kernel.ReasonNoTerminal, false, "unknown", "unknown"},
		{"another model served", `{"servedModel":"scripted/cheaper-model","turns":[{"steps":[{"text":"A note."}]}]}`,
			nonEmpty, store.StatusFailed, kernel.ReasonModelMismatch, false, "unknown", "unknown"},
		{"empty result fails its check", `{"turns":[{"steps":[]}]}`,
			nonEmpty, store.StatusCompleted, "", false, "unknown", "unknown"},
		{"check that errors", `{"turns":[{"steps":[{"text":"A note."}]}]}`,
			func(context.Context, kernel.Outcome) (kernel.Verdict, error) {
				return kernel.Verdict{}, errors.New("grader offline")
			},
			store.StatusCompleted, "", false, "unknown", "unknown"},
		{"check that panics", `{"turns":[{"steps":[{"text":"A note."}]}]}`,
			func(context.Context, kernel.Outcome) (kernel.Verdict, error) { panic("grader bug") },
			store.StatusCompleted, "", false, "unknown", "unknown"},
		{"no check", `{"turns":[{"steps":[{"text":"A note."}]}]}`,
			nil, store.StatusCompleted, "", false, "unknown", "unknown"},
		// A cancellation nobody requested is the provider failing.
		{"provider reports cancellation", `{"turns":[{"steps":[],"end":"cancelled"}]}`,
			nonEmpty, store.StatusFailed, kernel.ReasonInBandError, false, "unknown", "unknown"},
		// ERR-04/05: a turn that ends early keeps what it reported, as a floor.
		{"death after usage", `{"turns":[{"steps":[{"usage":{"inputTokens":12,"outputTokens":5},"mode":"cumulative"},{"text":"par"}],"end":"die","error":"connection reset"}]}`,
			nonEmpty, store.StatusFailed, kernel.ReasonTransport, false, "≥ 12", "≥ 5"},
		{"in-band error after usage", `{"turns":[{"steps":[{"usage":{"inputTokens":7,"outputTokens":2},"mode":"delta"}],"end":"failed","error":"overloaded"}]}`,
			nonEmpty, store.StatusFailed, kernel.ReasonInBandError, false, "≥ 7", "≥ 2"},
		{"no terminal after usage", `{"turns":[{"steps":[{"usage":{"inputTokens":3,"outputTokens":1},"mode":"delta"}],"end":"no-terminal"}]}`,
			nonEmpty, store.StatusFailed, kernel.ReasonNoTerminal, false, "≥ 3", "≥ 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := memory.New(nil)
			res, err := kernel.Execute(context.Background(), kernel.Request{
				Profile: mustProfile(t, noteWriter), Task: "Write a release note.", Provider: scripted.New(mustScript(t, tc.script), scripted.Options{}),
				Store: st, Check: tc.check,
			})
			if res == nil {
				t.Fatalf("no result: %v", err)
			}
			if res.Status != tc.status || res.Reason != tc.reason || res.Delivered != tc.delivered {
				t.Errorf("status %s reason %q delivered %v (%s); want %s %q %v", res.Status, res.Reason, res.Delivered, res.Detail, tc.status, tc.reason, tc.delivered)
			}
			if (err == nil) != (tc.status == store.StatusCompleted) {
				t.Errorf("err = %v for status %s", err, res.Status)
			}
			var re *kernel.RunError
			if err != nil && (!errors.As(err, &re) || re.Status != res.Status) {
				t.Errorf("err %v is not a RunError with status %s", err, res.Status)
			}
			if strings.Contains(tc.script, `{"text":"par"}`) && res.Text != "par" {
				t.Errorf("text %q: the text streamed before the turn broke was not kept", res.Text)
			}
			if got := res.Usage.InputTokens.String(); got != tc.input {
				t.Errorf("input tokens %s, want %s", got, tc.input)
			}
			if got := res.Usage.OutputTokens.String(); got != tc.output {
				t.Errorf("output tokens %s, want %s", got, tc.output)
			}
			// The store holds the same facts.
			run, err := st.GetRun(context.Background(), res.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != tc.status {
				t.Errorf("recorded status %s", run.Status)
			}
			if d, _ := run.Doc.Get("delivered"); d.Bool() != tc.delivered {
				t.Errorf("recorded delivered %v", d.Bool())
			}
			usage, _ := run.Doc.Get("usage")
			if in, _ := usage.Get("inputTokens"); tc.input == "unknown" && in.Kind() != canonjson.Null {
				t.Errorf("unknown input tokens recorded as %s", canonjson.Marshal(in))
			}
			if (tc.check == nil || tc.name == "check that errors" || tc.name == "check that panics") && tc.status == store.StatusCompleted {
				if ce, _ := run.Doc.Get("checkError"); ce.Str() == "" {
					t.Error("the check's failure to judge was not recorded")
				}
			}
			events, _ := st.Events(context.Background(), res.RunID, "", 0)
			if len(events) != res.Events {
				t.Errorf("%d events recorded, result says %d", len(events), res.Events)
			}
			// The ledger: progress entries (floors) as usage was reported,
			// then one turn entry that reconciles with the run.
			ledgerEntries, _ := st.Ledger(context.Background(), res.RunID)
			if len(ledgerEntries) == 0 {
				t.Fatal("no ledger entry")
			}
			last := ledgerEntries[len(ledgerEntries)-1].Body
			if k, _ := last.Get("kind"); k.Str() != kernel.LedgerTurn {
				t.Errorf("the last ledger entry is %s, want a turn entry", canonjson.Marshal(last))
			}
			if lu, _ := last.Get("usage"); !canonjson.Equal(lu, usage) {
				t.Errorf("ledger usage %s does not reconcile with the run's %s", canonjson.Marshal(lu), canonjson.Marshal(usage))
			}
			for _, e := range ledgerEntries[:len(ledgerEntries)-1] {
				if k, _ := e.Body.Get("kind"); k.Str() != kernel.LedgerProgress {
					t.Errorf("ledger entry %s before the turn entry is not a progress entry", canonjson.Marshal(e.Body))
				}
			}
		})
	}
}

// Served model read back and recorded.
func TestServedModelRecorded(t *testing.T) {
	st := memory.New(nil)
	res, err := kernel.Execute(context.Background(), kernel.Request{Profile: mustProfile(t, noteWriter), Task: "x",
		Provider: scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"ok"}]}]}`), scripted.Options{}), Store: st, Check: nonEmpty})
	if err != nil {
		t.Fatal(err)
	}
	if res.Served.Model != "scripted/note-writer" || res.Served.Provider != "scripted" || res.RequestedModel != "scripted/note-writer" {
		t.Errorf("served %+v requested %s", res.Served, res.RequestedModel)
	}
	if res.AuthoredDigest == "" || res.EffectiveDigest != res.AuthoredDigest {
		t.Errorf("digests authored %s effective %s (no seats: equal)", res.AuthoredDigest, res.EffectiveDigest)
	}
}

// Checklist PRF-07, SYS-05: refusal before any spend — no environment, no
// turn, no budget charge.
func TestRefusedBeforeSpend(t *testing.T) {
	tests := []struct{ name, profile string }{
		{"mcp the provider cannot mount", `{"harness":"cli-base","model":{"default":"scripted/x"},"mcp":{"docs":{"url":"https://mcp.example.com"}}}`},
		{"reasoning effort the harness cannot express", `{"harness":"cli-base","model":{"default":"scripted/x","reasoningEffort":"high"}}`},
		{"model the harness cannot run", `{"harness":"codex","model":{"default":"anthropic/claude-opus-5-5"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prov := scripted.New(mustScript(t, `{"turns":[{"repeat":true,"steps":[{"text":"ok"}]}]}`), scripted.Options{})
			pool, _ := ledger.NewPool(ledger.Budget{Tokens: ptr(int64(1000)), Iterations: ptr(int64(5))}, ledger.PoolOptions{})
			res, err := kernel.Execute(context.Background(), kernel.Request{Profile: mustProfile(t, tc.profile), Task: "x", Provider: prov,
				Store: memory.New(nil), Check: nonEmpty, Budget: pool, Reserve: ledger.Budget{Tokens: ptr(int64(100)), Iterations: ptr(int64(1))}})
			if !errors.Is(err, kernel.ErrRefused) || res.Status != store.StatusFailed {
				t.Fatalf("err %v status %v", err, res.Status)
			}
			if prov.Creates() != 0 || prov.Turns() != 0 {
				t.Errorf("%d creates, %d turns before the refusal", prov.Creates(), prov.Turns())
			}
			if b := pool.Readout().Channels[ledger.ChannelTokens]; b.Committed != 0 || b.Reserved != 0 {
				t.Errorf("the budget was charged: %+v", b)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestCancelAndTimeout(t *testing.T) {
	slow := `{"turns":[{"repeat":true,"steps":[{"text":"a"},{"delayMs":2000},{"text":"b"}]}]}`
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	res, err := kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "x",
		Provider: scripted.New(mustScript(t, slow), scripted.Options{}), Store: memory.New(nil), Check: nonEmpty})
	if res.Status != store.StatusCancelled || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %s, %v", res.Status, err)
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer tcancel()
	res, err = kernel.Execute(tctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "x",
		Provider: scripted.New(mustScript(t, slow), scripted.Options{}), Store: memory.New(nil), Check: nonEmpty})
	if res.Status != store.StatusTimedOut || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timed-out run: %s, %v", res.Status, err)
	}
}

// Seats: the authored profile keeps its identity; the provider receives
// the stage's projection (PRF-09, PRF-10).
func TestSeatProjection(t *testing.T) {
	seated := `{"harness":"codex","model":{"provider":"openai","default":"openai/gpt-6-sol"},"tools":{"Bash":true},
	 "seats":[{"harness":"codex","provider":"openai","model":"openai/gpt-6-sol","selector":{"kind":"all-eligible"}},
	          {"harness":"codex","provider":"openai","model":"openai/gpt-6-luna","selector":{"kind":"seat","id":"team"},"tools":{}}]}`
	p := mustProfile(t, seated)
	authored, _ := profile.Digest(p)
	proj, _ := profile.Project(p, 1)
	effective, _ := profile.Digest(proj)
	res, err := kernel.Execute(context.Background(), kernel.Request{Profile: p, Task: "x", Stage: 1,
		Provider: scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"ok"}]}]}`), scripted.Options{}), Store: memory.New(nil), Check: nonEmpty})
	if err != nil {
		t.Fatal(err)
	}
	if res.AuthoredDigest != authored || res.EffectiveDigest != effective || res.RequestedModel != "openai/gpt-6-luna" || res.Served.Model != "openai/gpt-6-luna" {
		t.Errorf("authored %s effective %s requested %s served %s", res.AuthoredDigest, res.EffectiveDigest, res.RequestedModel, res.Served.Model)
	}
	if _, err := kernel.Execute(context.Background(), kernel.Request{Profile: p, Task: "x", Stage: 2,
		Provider: scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"ok"}]}]}`), scripted.Options{}), Store: memory.New(nil)}); !errors.Is(err, kernel.ErrRefused) {
		t.Errorf("a stage outside the chain: %v", err)
	}
}

// The completion check judges while the environment is alive (spec §3.1
// step 6: validators can read the worker's files); the kernel destroys it
// after the check.
func TestCheckSeesLiveEnvironment(t *testing.T) {
	ctx := context.Background()
	p := scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"wrote it"}]}]}`), scripted.Options{})
	var env contract.Environment
	check := func(ctx context.Context, out kernel.Outcome) (kernel.Verdict, error) {
		env = out.Environment
		w, ok := env.(contract.WorkspaceWriter)
		if !ok {
			return kernel.Verdict{}, errors.New("no workspace")
		}
		if err := w.WriteFile(ctx, "note.md", "restore", ""); err != nil {
			return kernel.Verdict{}, err
		}
		got, err := env.(contract.WorkspaceReader).ReadFile(ctx, "note.md", "")
		return kernel.Verdict{Passed: err == nil && got == "restore", Reason: "note.md written"}, err
	}
	res, err := kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: memory.New(nil), Check: check})
	if err != nil || !res.Delivered {
		t.Fatalf("delivered=%v err=%v check=%q", res.Delivered, err, res.CheckError)
	}
	if _, err := env.(contract.WorkspaceReader).ReadFile(ctx, "note.md", ""); err == nil {
		t.Error("the environment is still alive after Execute returned")
	}
}

// A cancel request recorded by anyone (another process, `agentrt runs
// cancel`) reaches the run's owner, which ends the run cancelled and says
// why; requests to ended or dead runs change nothing.
func TestRequestCancel(t *testing.T) {
	ctx := context.Background()
	st := memory.New(nil)
	p := scripted.New(mustScript(t, `{"turns":[{"repeat":true,"steps":[{"text":"slow"},{"delayMs":30000}]}]}`), scripted.Options{})
	done := make(chan *kernel.Result)
	go func() {
		res, _ := kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", RunID: "victim", Provider: p, Store: st, Check: nonEmpty})
		done <- res
	}()
	for p.Turns() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	effect, _, err := kernel.RequestCancel(ctx, st, "victim", "operator says stop", time.Now())
	if err != nil || effect != kernel.EffectCancelRequested {
		t.Fatalf("effect %q err %v", effect, err)
	}
	select {
	case res := <-done:
		if res.Status != store.StatusCancelled || !strings.Contains(res.Detail, "operator says stop") {
			t.Errorf("status %q detail %q", res.Status, res.Detail)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not notice the cancel request")
	}
	if effect, _, _ := kernel.RequestCancel(ctx, st, "victim", "again", time.Now()); effect != kernel.EffectCancelled {
		t.Errorf("cancelling a cancelled run: %q", effect)
	}
	res, _ := kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", RunID: "finished",
		Provider: scripted.New(scripted.DefaultScript(), scripted.Options{}), Store: st, Check: nonEmpty})
	if effect, r, _ := kernel.RequestCancel(ctx, st, "finished", "late", time.Now()); effect != kernel.EffectNotLive || r.Status != store.StatusCompleted || res.Status != store.StatusCompleted {
		t.Errorf("cancelling a completed run: %q, status %q", effect, r.Status)
	}
	// A run whose owner died (lease lapsed) is not live.
	if _, err := st.CreateRun(ctx, store.Run{ID: "orphan", Kind: "execute", Status: store.StatusRunning, LeaseUntil: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if effect, r, _ := kernel.RequestCancel(ctx, st, "orphan", "x", time.Now()); effect != kernel.EffectNotLive || r.Status != store.StatusInterrupted {
		t.Errorf("cancelling an interrupted run: %q, status %q", effect, r.Status)
	}
	if _, _, err := kernel.RequestCancel(ctx, st, "missing", "x", time.Now()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancelling a missing run: %v", err)
	}
}

// A stream that reports usage with every chunk does not cost a durable
// write per chunk: the first report is recorded at once, later ones at
// most a few times a second, and the closing entry states the whole.
func TestProgressIsThrottled(t *testing.T) {
	var steps []string
	for i := 1; i <= 50; i++ {
		steps = append(steps, fmt.Sprintf(`{"text":"w%d "},{"usage":{"inputTokens":10,"outputTokens":%d},"mode":"cumulative"}`, i, i))
	}
	st := memory.New(nil)
	res, err := kernel.Execute(context.Background(), kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t",
		Provider: scripted.New(mustScript(t, `{"turns":[{"steps":[`+strings.Join(steps, ",")+`]}]}`), scripted.Options{}), Store: st, Check: nonEmpty})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := st.Ledger(context.Background(), res.RunID)
	if len(entries) < 2 || len(entries) > 5 {
		t.Errorf("%d ledger entries for 50 usage reports in one fast turn; want the first progress, few others and the turn", len(entries))
	}
	if res.Usage.OutputTokens.String() != "50" {
		t.Errorf("output tokens %s, want the last cumulative report, 50", res.Usage.OutputTokens)
	}
}
