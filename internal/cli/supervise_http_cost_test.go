package cli_test

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// costEndpoint is a local OpenAI-compatible chat-completions endpoint
// for a supervised run on --provider openai: a request offering the
// coordination tools is the manager's, any other a worker's. The manager
// spawns the workers named in plan in its first turn, awaits one event
// per later turn until every worker settled, then answers. A worker
// answers "<label>: DONE". Every answer reports usage unless reply says
// otherwise; the endpoint sums what it reported.
type costEndpoint struct {
	*httptest.Server
	plan []string
	// reply, when set, may take over a response: it returns true when it
	// wrote one itself.
	reply func(w http.ResponseWriter, r *http.Request, worker string, n int) bool

	// omitUsage, when set, says which answers report no usage.
	omitUsage func(manager bool, worker string) bool
	// cost, when set, is the usage.cost (a router's receipt, dollars)
	// every answer that reports usage carries.
	cost float64

	mu           sync.Mutex
	calls        int
	managerCalls int
	// What the endpoint reported, in all and by the manager and workers.
	reportedIn, reportedOut int64
	managerIn, managerOut   int64
	workIn, workOut         int64
}

func newCostEndpoint(t *testing.T, plan ...string) *costEndpoint {
	t.Helper()
	e := &costEndpoint{plan: plan}
	// Started by superviseOverHTTP, once the test has set reply and
	// omitUsage.
	e.Server = httptest.NewUnstartedServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

func (e *costEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	turn, ok := readOpenAITurn(w, r, e.plan)
	if !ok {
		return
	}
	manager, worker, results := turn.Manager, turn.Worker, len(turn.ToolResults)
	e.mu.Lock()
	e.calls++
	n := e.calls
	if manager {
		e.managerCalls++
	}
	e.mu.Unlock()
	if e.reply != nil && e.reply(w, r, worker, n) {
		return
	}
	s := startOpenAIStream(w, fmt.Sprint("c", n), turn.Model)
	finish := "stop"
	var in, out int64
	if manager {
		in, out = int64(100+10*results), 9
		switch {
		case results == 0:
			var calls []openAICall
			for i, label := range e.plan {
				calls = append(calls, openAICall{fmt.Sprint("call_s", i), coordinationPrefix + "spawn_worker",
					map[string]string{"profile": "writer", "label": label, "task": "task " + label}})
			}
			s.calls(calls...)
			finish = "tool_calls"
		case results < 2*len(e.plan):
			s.calls(openAICall{fmt.Sprint("call_a", results), coordinationPrefix + "await_event", map[string]int{"timeoutMs": 60000}})
			finish = "tool_calls"
		default:
			s.text("Every worker settled.")
		}
	} else {
		in, out = 40, 6
		s.text(worker + ": DONE")
	}
	s.finish(finish)
	e.mu.Lock()
	omit := e.omitUsage != nil && e.omitUsage(manager, worker)
	if !omit {
		e.reportedIn += in
		e.reportedOut += out
		if manager {
			e.managerIn += in
			e.managerOut += out
		} else {
			e.workIn += in
			e.workOut += out
		}
	}
	e.mu.Unlock()
	if !omit && e.cost > 0 {
		s.usageCost(in, out, e.cost)
	} else if !omit {
		s.usage(in, out)
	}
	s.done()
}

// superviseOverHTTP runs agentrt supervise with the manager and its
// workers on the endpoint, returning the JSON result and the exit code.
func superviseOverHTTP(t *testing.T, e *costEndpoint, db string, extra ...string) (canonjson.Value, string, int) {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "sk-test-cost-7f2")
	e.Start()
	mgr := writeFile(t, "manager.json", `{"name": "manager", "harness": "cli-base", "model": {"default": "gpt-manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`)
	wrk := writeFile(t, "writer.json", `{"name": "writer", "harness": "cli-base", "model": {"default": "gpt-writer"}}`)
	args := append([]string{"supervise", mgr, "--worker", wrk, "--task", "write the notes", "--provider", "openai",
		"--base-url", e.URL + "/v1/", "--expect", "DONE", "--run-id", "costs", "--workspace", t.TempDir(),
		"--db", db, "--budget-tokens", "5000", "--worker-tokens", "1000", "--iterations", "4", "--json"}, extra...)
	out, errOut, code := run(t, "", args...)
	if strings.TrimSpace(out) == "" {
		t.Fatalf("no result: exit %d\n%s", code, errOut)
	}
	return decode(t, out), out + errOut, code
}

// Issue 13, angle 1: a manager and two workers on a real HTTP endpoint
// that reports usage on every answer: the run's spent tokens are exactly
// what the endpoint reported, the manager's share exactly its turns',
// nothing is unknown and no spend gap is named.
func TestSuperviseHTTPCostsReconcile(t *testing.T) {
	e := newCostEndpoint(t, "alpha", "beta")
	res, out, code := superviseOverHTTP(t, e, filepath.Join(t.TempDir(), "runs.db"))
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	e.mu.Lock()
	total, mgrTokens, work := e.reportedIn+e.reportedOut, e.managerIn+e.managerOut, e.workIn+e.workOut
	mcalls := e.managerCalls
	e.mu.Unlock()
	if mcalls != 4 {
		t.Errorf("manager calls %d, want 4", mcalls)
	}
	spent := member(res, "spent")
	if got := member(spent, "tokens"); got.Kind() != canonjson.Number || int64(got.Float()) != total {
		t.Errorf("spent tokens %v, want the %d the endpoint reported (manager %d + workers %d):\n%s", got, total, mgrTokens, work, out)
	}
	if got := member(member(res, "manager"), "tokens"); got.Kind() != canonjson.Number || int64(got.Float()) != mgrTokens {
		t.Errorf("manager tokens %v, want %d:\n%s", got, mgrTokens, out)
	}
	if got := member(spent, "iterations"); got.Kind() != canonjson.Number || got.Float() != 2 {
		t.Errorf("spent iterations %v, want 2 (one per worker):\n%s", got, out)
	}
	// The endpoint reports no dollars (OpenAI's chat completions never
	// do): every node's usd is unreported, and only usd.
	if got := member(spent, "usd"); got.Kind() != canonjson.Null {
		t.Errorf("spent usd %v, want null (no dollars were reported):\n%s", got, out)
	}
	gaps := member(res, "spendGaps").Items()
	for _, g := range gaps {
		if ch := member(g, "channels").Items(); member(g, "kind").Str() != "unreported" || len(ch) != 1 || ch[0].Str() != "usd" {
			t.Errorf("gap %s: %s %v, want unreported usd only:\n%s", member(g, "id").Str(), member(g, "kind").Str(), ch, out)
		}
	}
	if len(gaps) != 3 {
		t.Errorf("%d spend gaps, want 3 (the manager and two workers, usd):\n%s", len(gaps), out)
	}
	if w := member(res, "workers").Items(); len(w) != 2 {
		t.Errorf("%d workers, want 2:\n%s", len(w), out)
	}
}

// Issue 13, angle 2: the endpoint omits usage on beta's answer and on
// the manager's turns: tokens are unknown (null, never 0), and both
// nodes are named as unreported tokens in spendGaps; alpha, which was
// reported, is not named for tokens.
func TestSuperviseHTTPUnreportedUsage(t *testing.T) {
	for _, tc := range []struct {
		name           string
		omit           func(manager bool, worker string) bool
		managerUnknown bool
		unknownNode    string // a worker id whose tokens are unreported
	}{
		{"worker", func(m bool, w string) bool { return w == "beta" }, false, "costs:s2"},
		{"manager", func(m bool, w string) bool { return m }, true, ""},
		{"one manager turn", oneManagerTurn(2), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCostEndpoint(t, "alpha", "beta")
			e.omitUsage = tc.omit
			res, out, _ := superviseOverHTTP(t, e, filepath.Join(t.TempDir(), "runs.db"))
			if got := member(member(res, "spent"), "tokens"); got.Kind() != canonjson.Null {
				t.Errorf("spent tokens %v, want null (unreported usage):\n%s", got, out)
			}
			if got := member(member(res, "manager"), "tokens"); (got.Kind() == canonjson.Null) != tc.managerUnknown {
				t.Errorf("manager tokens %v, unknown want %v:\n%s", got, tc.managerUnknown, out)
			}
			tokenGaps := map[string]string{}
			for _, g := range member(res, "spendGaps").Items() {
				for _, ch := range member(g, "channels").Items() {
					if ch.Str() == "tokens" {
						tokenGaps[member(g, "id").Str()] = member(g, "kind").Str()
					}
				}
			}
			want := map[string]string{}
			if tc.unknownNode != "" {
				want[tc.unknownNode] = "unreported"
			}
			if tc.managerUnknown {
				want["costs"] = "unreported"
			}
			if fmt.Sprint(tokenGaps) != fmt.Sprint(want) {
				t.Errorf("token gaps %v, want %v:\n%s", tokenGaps, want, out)
			}
		})
	}
}

// oneManagerTurn omits usage on the manager's nth answer only.
func oneManagerTurn(n int) func(manager bool, worker string) bool {
	seen := 0
	return func(manager bool, _ string) bool {
		if manager {
			seen++
		}
		return manager && seen == n
	}
}

// hang answers a request with the stream's headers and nothing more,
// until the client goes away.
func hang(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// Issue 13, angle 4: beta's requests fail at the endpoint (a 500, a 429,
// a connection closed mid-stream, a stream that never ends before
// --timeout): beta fails (or is cancelled) naming why, its tokens are
// unknown and charged at its ceiling (--worker-tokens 1000), alpha's and
// the manager's are exactly what the endpoint reported. A manager turn
// that never ends before --timeout leaves the manager's tokens unknown.
func TestSuperviseHTTPFailuresAreCharged(t *testing.T) {
	const ceiling = 1000
	for _, tc := range []struct {
		name    string
		reply   func(w http.ResponseWriter, r *http.Request, e *costEndpoint, worker string) bool
		extra   []string
		state   string // beta's
		reason  string // in beta's reason
		manager bool   // the manager's turn hangs, not beta
	}{
		{name: "500", state: "failed", reason: "HTTP 500", reply: func(w http.ResponseWriter, _ *http.Request, _ *costEndpoint, worker string) bool {
			if worker != "beta" {
				return false
			}
			http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
			return true
		}},
		{name: "429", state: "failed", reason: "HTTP 429", reply: func(w http.ResponseWriter, _ *http.Request, _ *costEndpoint, worker string) bool {
			if worker != "beta" {
				return false
			}
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"error":{"message":"slow down"}}`, http.StatusTooManyRequests)
			return true
		}},
		{name: "closed mid-stream", state: "failed", reason: "stream ended", reply: func(w http.ResponseWriter, _ *http.Request, _ *costEndpoint, worker string) bool {
			if worker != "beta" {
				return false
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","model":"gpt-writer","choices":[{"index":0,"delta":{"role":"assistant","content":"beta: DO"},"finish_reason":null}]}`+"\n\n")
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return true
		}},
		{name: "slow worker", state: "cancelled", reason: "deadline", extra: []string{"--timeout", "2s"}, reply: func(w http.ResponseWriter, r *http.Request, _ *costEndpoint, worker string) bool {
			if worker != "beta" {
				return false
			}
			hang(w, r)
			return true
		}},
		{name: "slow manager", manager: true, extra: []string{"--timeout", "2s"}, reply: func(w http.ResponseWriter, r *http.Request, e *costEndpoint, worker string) bool {
			e.mu.Lock()
			third := worker == "" && e.managerCalls == 3
			e.mu.Unlock()
			if third {
				hang(w, r)
			}
			return third
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCostEndpoint(t, "alpha", "beta")
			e.reply = func(w http.ResponseWriter, r *http.Request, worker string, _ int) bool {
				return tc.reply(w, r, e, worker)
			}
			res, out, _ := superviseOverHTTP(t, e, filepath.Join(t.TempDir(), "runs.db"), tc.extra...)
			e.mu.Lock()
			reported, mgrTokens := e.reportedIn+e.reportedOut, e.managerIn+e.managerOut
			e.mu.Unlock()
			spent := member(res, "spent")
			if got := member(spent, "tokens"); got.Kind() != canonjson.Null {
				t.Errorf("spent tokens %v, want null:\n%s", got, out)
			}
			charged := int64(member(member(spent, "charged"), "tokens").Float())
			want, gapID := reported+ceiling, "costs:s2"
			if tc.manager {
				want, gapID = reported, "costs"
				if got := member(member(res, "manager"), "tokens"); got.Kind() != canonjson.Null {
					t.Errorf("manager tokens %v, want null (its last turn reported nothing):\n%s", got, out)
				}
			} else if got := member(member(res, "manager"), "tokens"); int64(got.Float()) != mgrTokens {
				t.Errorf("manager tokens %v, want %d:\n%s", got, mgrTokens, out)
			}
			if charged != want {
				t.Errorf("charged tokens %d, want %d (reported %d):\n%s", charged, want, reported, out)
			}
			var gaps []string
			for _, g := range member(res, "spendGaps").Items() {
				for _, ch := range member(g, "channels").Items() {
					if ch.Str() == "tokens" {
						gaps = append(gaps, member(g, "id").Str())
					}
				}
			}
			if len(gaps) != 1 || gaps[0] != gapID {
				t.Errorf("token gaps %v, want [%s]:\n%s", gaps, gapID, out)
			}
			if tc.manager {
				return
			}
			for _, w := range member(res, "workers").Items() {
				if member(w, "id").Str() != "costs:s2" {
					continue
				}
				if member(w, "state").Str() != tc.state || !strings.Contains(member(w, "reason").Str(), tc.reason) || member(w, "delivered").Bool() {
					t.Errorf("beta: %s %q delivered %v, want %s naming %q, not delivered:\n%s", member(w, "state").Str(),
						member(w, "reason").Str(), member(w, "delivered").Bool(), tc.state, tc.reason, out)
				}
			}
		})
	}
}

// Spec §6, §7 over a real OpenAI-compatible router that bills every
// answer in usage.cost ($0.0015 each), the manager's turns and both
// workers': the run's dollars are known — spentTotal.usdKnown true, no
// dollar gap — and spentTotal.usd is exactly what the router billed.
func TestSuperviseRouterCostEveryAnswerKnownDollars(t *testing.T) {
	e := newCostEndpoint(t, "alpha", "beta")
	e.cost = 0.0015
	res, out, code := superviseOverHTTP(t, e, filepath.Join(t.TempDir(), "runs.db"), "--budget-usd", "1", "--worker-usd", "0.1")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	e.mu.Lock()
	calls := e.calls
	e.mu.Unlock()
	total := member(res, "spentTotal")
	if !member(total, "usdKnown").Bool() {
		t.Errorf("spentTotal.usdKnown false, want true (every answer billed):\n%s", out)
	}
	if got, want := int64(math.Round(member(total, "usd").Float()*1e6)), int64(calls)*1500; got != want {
		t.Errorf("spentTotal.usd %v, want %d answers x $0.0015 = %d µUSD:\n%s", member(total, "usd"), calls, want, out)
	}
	for _, g := range member(res, "spendGaps").Items() {
		for _, ch := range member(g, "channels").Items() {
			if ch.Str() == "usd" {
				t.Errorf("a dollar spend gap %s, want none:\n%s", canonjson.Marshal(g), out)
			}
		}
	}
}
