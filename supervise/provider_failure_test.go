package supervise_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/supervise"
)

// flakyEndpoint is an OpenAI-compatible Chat Completions endpoint whose
// first request fails as mode says (429, 500, a body cut mid-stream, a
// 200 with an empty body, a reset after the usage chunk and before
// [DONE], a stall past the client's timeout) and whose later requests answer
// "DONE" with usage 100 in, 20 out.
func flakyEndpoint(t *testing.T, mode string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	chunk := func(w http.ResponseWriter, body string) {
		fmt.Fprintf(w, "data: %s\n\n", body)
		w.(http.Flusher).Flush()
	}
	const head = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test",`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first := n.Add(1) == 1
		if first && (mode == "429" || mode == "500") {
			code := http.StatusTooManyRequests
			if mode == "500" {
				code = http.StatusInternalServerError
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After-Ms", "1")
			w.WriteHeader(code)
			fmt.Fprint(w, `{"error":{"message":"try again","type":"server_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if first && mode == "empty" {
			w.WriteHeader(http.StatusOK)
			return
		}
		chunk(w, head+`"choices":[{"index":0,"delta":{"role":"assistant","content":"DO"},"finish_reason":null}]}`)
		if first && mode == "cut" {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if first && mode == "stall" {
			<-r.Context().Done()
			return
		}
		chunk(w, head+`"choices":[{"index":0,"delta":{"content":"NE"},"finish_reason":"stop"}]}`)
		chunk(w, head+`"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`)
		if first && mode == "reset" {
			resetConn(t, w)
			return
		}
		chunk(w, "[DONE]")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// A worker's provider failing on its first attempt: a refusal the
// model's own retry absorbs (429, 500) charges only the accepted
// attempt's reported tokens; a stream cut or stalled mid-answer (which
// no retry can take back) settles the worker down with its tokens a
// named gap (unreported), charged at its ceiling, never 0. After every
// step the pool conserves (ledger.Readout.Conserved).
func TestWorkerProviderFailingFirstAttempt(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		requests  int64
		done      bool
		tokens    int64
		gap       bool
		tokensKnw bool
	}{
		{"429", 2, true, 120, false, true},
		{"500", 2, true, 120, false, true},
		{"cut", 1, false, 1000, true, false},
		{"stall", 1, false, 1000, true, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			srv, requests := flakyEndpoint(t, tc.mode)
			p, err := openai.NewProvider(openai.ProviderOptions{Options: openai.Options{BaseURL: srv.URL + "/v1/", APIKey: "k", Model: "gpt-test",
				HTTPClient: &http.Client{Timeout: 500 * time.Millisecond}}, ReportsUsage: true, StripModelPrefix: "openai/"})
			if err != nil {
				t.Fatal(err)
			}
			o := baseOptions(t, &supervise.KernelExecutor{Provider: p, Store: newStore(t)}, nil)
			o.Profiles = map[string]*profile.Profile{"writer": mustProfile(t, `{"name": "writer", "harness": "cli-base", "model": {"provider": "openai", "default": "openai/gpt-test"}}`)}
			o.Budget.MicroUSD, o.PerWorker.MicroUSD = nil, nil
			var steps []string
			conserved := func(c *supervise.Coordinator, step string) {
				if err := c.Readout().Conserved(); err != nil {
					steps = append(steps, step+": "+err.Error())
				}
			}
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				conserved(c, "start")
				tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("write"))
				conserved(c, "spawned")
				_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000})
				conserved(c, "settled")
				return supervise.BrainReport{}, err
			})
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) > 0 {
				t.Errorf("the pool did not conserve: %v", steps)
			}
			if got := requests.Load(); got != tc.requests {
				t.Errorf("%d requests, want %d", got, tc.requests)
			}
			if len(res.Tree) != 1 {
				t.Fatalf("tree %+v", res.Tree)
			}
			w := res.Tree[0]
			if (w.State == supervise.StateDone) != tc.done || (res.Status == supervise.StatusWinner) != tc.done {
				t.Errorf("worker %s (%s), run %s %s", w.State, w.Reason, res.Status, res.Reason)
			}
			if res.Spent.Tokens != tc.tokens || res.Spent.TokensKnown != tc.tokensKnw {
				t.Errorf("spent tokens %d known %v, want %d known %v", res.Spent.Tokens, res.Spent.TokensKnown, tc.tokens, tc.tokensKnw)
			}
			gap := slices.ContainsFunc(res.SpendGaps, func(g supervise.SpendGap) bool {
				return g.ID == w.ID && g.Kind == supervise.GapUnreported && slices.Contains(g.Channels, "tokens")
			})
			if gap != tc.gap {
				t.Errorf("spend gaps %+v: an unreported-tokens gap for %s is %v, want %v", res.SpendGaps, w.ID, gap, tc.gap)
			}
		})
	}
}

// The manager's (driver's) endpoint failing on its first attempt: a
// refusal its model's retry absorbs charges only the accepted attempt's
// reported tokens to the driver; a stream cut mid-answer — with no
// event, a 200 with an empty body, reset after its usage was sent, or
// stalled past the client's timeout — fails the driver (driver-failed)
// and its unreported tokens are a named gap on the root, never a known
// 0. What the cut turn did report is a floor the result keeps: the pool
// debited it (ledger.Pool.Observe), so the result's spend is not below
// it (spec §6; behaviours 41, 42).
func TestManagerProviderFailingFirstAttempt(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		reason    supervise.NoWinnerReason
		tokens    int64
		tokensKnw bool
	}{
		{"429", supervise.ReasonAllChildrenDown, 120, true},
		{"500", supervise.ReasonAllChildrenDown, 120, true},
		{"cut", supervise.ReasonDriverFailed, 0, false},
		{"empty", supervise.ReasonDriverFailed, 0, false},
		{"reset", supervise.ReasonDriverFailed, 120, false},
		{"stall", supervise.ReasonDriverFailed, 0, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			srv, _ := flakyEndpoint(t, tc.mode)
			m, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1/", APIKey: "k", Model: "gpt-test", HTTPClient: &http.Client{Timeout: 500 * time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			o := baseOptions(t, newCounting(t, workerProvider(t)), m)
			manager := mustProfile(t, `{"name": "manager", "harness": "cli-base", "model": {"default": "gpt-test"}, "tools": {"`+supervise.ToolPrefix+supervise.VerbSpawnWorker+`": true}}`)
			res, err := supervise.Supervise(context.Background(), manager, "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != tc.reason || res.Spent.Tokens != tc.tokens || res.Spent.TokensKnown != tc.tokensKnw {
				t.Errorf("reason %s (%+v) spent tokens %d known %v; want %s, %d known %v", res.Reason, res.Error, res.Spent.Tokens, res.Spent.TokensKnown, tc.reason, tc.tokens, tc.tokensKnw)
			}
			gap := slices.ContainsFunc(res.SpendGaps, func(g supervise.SpendGap) bool {
				return g.ID == "run1" && g.Kind == supervise.GapUnreported && slices.Contains(g.Channels, "tokens")
			})
			if gap == tc.tokensKnw {
				t.Errorf("spend gaps %+v: an unreported-tokens gap for the manager is %v, want %v", res.SpendGaps, gap, !tc.tokensKnw)
			}
		})
	}
}

// The manager's endpoint stalls after its first chunk — the 200 and some
// text, then nothing — and its HTTP client has no timeout of its own:
// the run's deadline ends the manager's turn, Supervise returns within
// the deadline plus slack, and the run's result says the budget's
// deadline ended it (spec: budget-exhausted) with the manager's tokens
// an unreported gap, never a known 0 (behaviours 41, 42; §3.6).
func TestManagerStreamStalledPastTheRunDeadline(t *testing.T) {
	srv, _ := flakyEndpoint(t, "stall")
	m, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1/", APIKey: "k", Model: "gpt-test", HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	o := baseOptions(t, newCounting(t, workerProvider(t)), m)
	const deadline = 3 * time.Second
	o.Deadline = time.Now().Add(deadline)
	manager := mustProfile(t, `{"name": "manager", "harness": "cli-base", "model": {"default": "gpt-test"}, "tools": {"`+supervise.ToolPrefix+supervise.VerbSpawnWorker+`": true}}`)
	type outcome struct {
		res supervise.SupervisedResult
		err error
	}
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		res, err := supervise.Supervise(context.Background(), manager, "t", o)
		done <- outcome{res, err}
	}()
	var got outcome
	select {
	case got = <-done:
	case <-time.After(deadline + time.Minute):
		t.Fatalf("Supervise had not returned %v after its deadline", time.Minute)
	}
	took := time.Since(start)
	t.Logf("returned after %v: status %s, reason %s (%+v), spent %+v, err %v", took.Round(time.Millisecond), got.res.Status, got.res.Reason, got.res.Error, got.res.Spent, got.err)
	if took > deadline+30*time.Second {
		t.Errorf("Supervise returned after %v; its deadline was %v", took, deadline)
	}
	res := got.res
	if got.err != nil || res.Status == supervise.StatusWinner || res.Reason != supervise.ReasonBudgetExhausted {
		t.Errorf("status %s reason %s err %v; want no winner, budget-exhausted (the deadline)", res.Status, res.Reason, got.err)
	}
	if res.Spent.TokensKnown || !slices.ContainsFunc(res.SpendGaps, func(g supervise.SpendGap) bool {
		return g.ID == "run1" && g.Kind == supervise.GapUnreported && slices.Contains(g.Channels, "tokens")
	}) {
		t.Errorf("spent %+v gaps %+v; want the manager's tokens an unreported gap", res.Spent, res.SpendGaps)
	}
}
