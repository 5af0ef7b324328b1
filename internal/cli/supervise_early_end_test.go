package cli_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
)

// betaChunk is one chat-completions stream frame carrying beta's text.
const betaChunk = `data: {"id":"x","object":"chat.completion.chunk","model":"gpt-writer","choices":[{"index":0,"delta":{"role":"assistant","content":"beta: DONE"},"finish_reason":null}]}` + "\n\n"

// Task L, angle 1: beta's stream ends early in ways that close the
// connection cleanly (so no transport error): no terminal event, a half
// JSON line, a 200 with an empty body, a finish without the usage chunk
// and the [DONE] that should follow. beta must fail, not deliver, be
// charged its ceiling and be named in spendGaps for tokens.
func TestSuperviseHTTPWorkerStreamEndsEarly(t *testing.T) {
	const ceiling = 1000
	for _, tc := range []struct {
		name string
		body string
	}{
		{"no terminal event", betaChunk},
		{"half json line", betaChunk + `data: {"id":"x","object":"chat.completion.chunk","choi`},
		{"empty 200", ""},
		{"finish without usage or done", betaChunk + `data: {"id":"x","object":"chat.completion.chunk","model":"gpt-writer","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCostEndpoint(t, "alpha", "beta")
			e.reply = func(w http.ResponseWriter, _ *http.Request, worker string, _ int) bool {
				if worker != "beta" {
					return false
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, tc.body)
				return true
			}
			res, out, _ := superviseOverHTTP(t, e, filepath.Join(t.TempDir(), "runs.db"))
			e.mu.Lock()
			reported := e.reportedIn + e.reportedOut
			e.mu.Unlock()
			spent := member(res, "spent")
			if got := member(spent, "tokens"); got.Kind() != canonjson.Null {
				t.Errorf("spent tokens %v, want null:\n%s", got, out)
			}
			if charged := int64(member(member(spent, "charged"), "tokens").Float()); charged != reported+ceiling {
				t.Errorf("charged tokens %d, want %d (reported %d + beta's ceiling):\n%s", charged, reported+ceiling, reported, out)
			}
			var gaps []string
			for _, g := range member(res, "spendGaps").Items() {
				for _, ch := range member(g, "channels").Items() {
					if ch.Str() == "tokens" {
						gaps = append(gaps, member(g, "id").Str())
					}
				}
			}
			if len(gaps) != 1 || gaps[0] != "costs:s2" {
				t.Errorf("token gaps %v, want [costs:s2]:\n%s", gaps, out)
			}
			found := false
			for _, w := range member(res, "workers").Items() {
				if member(w, "id").Str() != "costs:s2" {
					continue
				}
				found = true
				t.Logf("beta: %s %q", member(w, "state").Str(), member(w, "reason").Str())
				if member(w, "state").Str() != "failed" || member(w, "delivered").Bool() || !strings.Contains(member(w, "reason").Str(), "stream") {
					t.Errorf("beta: %s %q delivered %v, want failed naming the stream, not delivered:\n%s",
						member(w, "state").Str(), member(w, "reason").Str(), member(w, "delivered").Bool(), out)
				}
			}
			if !found {
				t.Errorf("no worker costs:s2:\n%s", out)
			}
		})
	}
}

// Task L, angle 2: the manager's second turn ends mid tool-call
// arguments (the connection closes cleanly after half an await's
// arguments) while both workers are still running. The run must end as a
// no-winner driver-failed naming the stream, the workers torn down
// (cancelled, not delivered) and charged, the manager's last turn named
// as a tokens gap.
func TestSuperviseHTTPManagerStreamEndsMidToolCall(t *testing.T) {
	e := newCostEndpoint(t, "alpha", "beta")
	// Both workers reach the endpoint before the manager's turn is cut.
	var arrived sync.WaitGroup
	arrived.Add(2)
	e.reply = func(w http.ResponseWriter, r *http.Request, worker string, _ int) bool {
		if worker != "" {
			// Workers hang until the run tears them down.
			arrived.Done()
			hang(w, r)
			return true
		}
		e.mu.Lock()
		second := e.managerCalls == 2
		e.mu.Unlock()
		if !second {
			return false
		}
		waitGroupWithin(t, &arrived, 30*time.Second)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"m2","object":"chat.completion.chunk","model":"gpt-manager","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"agent_runtime_coordination_await_event","arguments":"{\"timeo"}}]},"finish_reason":null}]}`+"\n\n")
		return true
	}
	res, out, code := superviseOverHTTP(t, e, filepath.Join(t.TempDir(), "runs.db"), "--timeout", "60s")
	if code == 0 {
		t.Errorf("exit 0, want non-zero for a run with no winner:\n%s", out)
	}
	if st, reason := member(res, "status").Str(), member(res, "reason").Str(); st != "no-winner" || reason != "driver-failed" {
		t.Errorf("status %q reason %q, want no-winner driver-failed:\n%s", st, reason, out)
	}
	if msg := member(member(res, "error"), "message").Str(); !strings.Contains(msg, "stream") {
		t.Errorf("error %s, want it to name the cut stream:\n%s", msg, out)
	}
	e.mu.Lock()
	reported := e.reportedIn + e.reportedOut
	e.mu.Unlock()
	spent := member(res, "spent")
	if charged := int64(member(member(spent, "charged"), "tokens").Float()); charged < reported+2*1000 {
		t.Errorf("charged tokens %d, want at least %d (reported %d + two workers' ceilings):\n%s", charged, reported+2000, reported, out)
	}
	workers := member(res, "workers").Items()
	if len(workers) != 2 {
		t.Fatalf("%d workers, want 2:\n%s", len(workers), out)
	}
	for _, w := range workers {
		if member(w, "state").Str() != "cancelled" || member(w, "delivered").Bool() {
			t.Errorf("worker %s: %s delivered %v, want cancelled, not delivered:\n%s", member(w, "id").Str(),
				member(w, "state").Str(), member(w, "delivered").Bool(), out)
		}
	}
	gaps := map[string]bool{}
	for _, g := range member(res, "spendGaps").Items() {
		for _, ch := range member(g, "channels").Items() {
			if ch.Str() == "tokens" {
				gaps[member(g, "id").Str()] = true
			}
		}
	}
	for _, id := range []string{"costs", "costs:s1", "costs:s2"} {
		if !gaps[id] {
			t.Errorf("%s not named a tokens gap (%v):\n%s", id, gaps, out)
		}
	}
}

// waitGroupWithin waits for wg, failing the test after d.
func waitGroupWithin(t *testing.T, wg *sync.WaitGroup, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Errorf("the workers did not reach the endpoint within %v", d)
	}
}
