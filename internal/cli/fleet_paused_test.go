package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// pausedTurnScript: the "paused" task's turn says "one ", then a tick
// every 2s for 70s, then "done" with its usage — long enough to outlast
// River's rescue of a paused worker's job (its rescuer looks every 30s)
// and the paused worker's resumption after it.
func pausedTurnScript() string {
	steps := []string{`{"text":"one "}`}
	for range 35 {
		steps = append(steps, `{"delayMs":2000}`, `{"text":"tick "}`)
	}
	steps = append(steps, `{"text":"done"}`, `{"usage":{"inputTokens":5,"outputTokens":3},"mode":"delta"}`)
	return `{"turns":[{"match":"paused","repeat":true,"steps":[` + strings.Join(steps, ",") + `]}]}`
}

// serverCalls counts, for one client of an `agentrt serve`, the calls
// that change the server's state: environment creates, turn streams
// opened (each with the turn id it names), turn cancels and environment
// destroys.
type serverCalls struct {
	mu                         sync.Mutex
	creates, cancels, destroys int
	turns                      []string
}

func (c *serverCalls) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%d creates, turns %v, %d cancels, %d destroys", c.creates, c.turns, c.cancels, c.destroys)
}

// countingProxy starts an HTTP proxy in front of the server at base that
// counts its client's calls; it is closed when the test ends.
func countingProxy(t *testing.T, base string) (string, *serverCalls) {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	calls := new(serverCalls)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // turn streams are SSE: pass every event on at once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		calls.mu.Lock()
		switch {
		case r.Method == http.MethodPost && p == wire.PathEnvironments:
			calls.creates++
		case r.Method == http.MethodPost && strings.HasSuffix(p, "/cancel") && strings.Contains(p, "/turns/"):
			calls.cancels++
		case r.Method == http.MethodPost && strings.HasSuffix(p, "/turns"):
			calls.turns = append(calls.turns, r.Header.Get(wire.HeaderLastEventID))
		case r.Method == http.MethodDelete && strings.HasPrefix(p, wire.PathEnvironments+"/"):
			calls.destroys++
		}
		calls.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, calls
}

// pause SIGSTOPs the process; the test SIGCONTs it (resume) or it is
// killed when the test ends.
func (p *proc) pause(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Signal(syscall.SIGCONT) })
}

// resume SIGCONTs a paused process.
func (p *proc) resume(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// TestFleetWorkerPausedPastItsLeaseIsFenced (fleet/doc.go "Who runs a
// job"; spec/runtime.md §5 and RES-01/RES-06: never two live executors,
// a writer that lost its lease never writes again, work in doubt is
// never run again): a real `agentrt worker` process running a run on
// a real `agentrt serve` is SIGSTOPped mid-turn, past its 2s lease. A
// second worker takes the run over: the paused worker's attempt reads
// interrupted, and the second re-attaches to its live environment and
// turn. Then the first is SIGCONTed while the turn still runs. It must
// act as the loser it is:
//   - its writes to the fleet run and to its attempt are refused by the
//     fence: nothing of its attempt is recorded after the takeover, and
//     it neither ends the fleet run nor hands it back;
//   - it has no effect on the server either: it neither cancels the turn
//     (which is the second worker's now) nor destroys the environment;
//   - the run reaches one terminal state, completed by the second
//     attempt with the whole turn; the server made one environment and
//     ran one turn (the second worker re-attached to it, after the
//     events it had seen);
//   - the ledger states each attempt's recorded usage; `runs events`
//     shows contiguous sequences, and every event acknowledged before the
//     pause is still there.
func TestFleetWorkerPausedPastItsLeaseIsFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("pauses a worker past its lease and waits for River's rescuer (about a minute)")
	}
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	script := writeFile(t, "script.json", pausedTurnScript())
	urls := make(chan string, 1)
	server := startProc(t, "server", urls, "serve", "--listen", "127.0.0.1:0", "--provider", "scripted", "--script", script)
	var base string
	select {
	case base = <-urls:
	case <-time.After(time.Minute):
		t.Fatalf("the server did not start:\n%s", server.logs)
	}
	pausedURL, pausedCalls := countingProxy(t, base)
	takerURL, takerCalls := countingProxy(t, base)
	workerArgs := func(id, url string) []string {
		return append([]string{"worker", "--id", id, "--provider", "remote", "--base-url", url, "--lease", "2s", "--rescue-after", "2s",
			"--poll-interval", "100ms", "--log-format", "json"}, db...)
	}
	paused := startProc(t, "paused", nil, workerArgs("paused", pausedURL)...)
	f := openTestFleet(t, conn, schema)
	raw, err := os.ReadFile(noteWriter)
	if err != nil {
		t.Fatal(err)
	}
	pv, err := canonjson.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := f.Submit(t.Context(), fleet.Submission{Spec: fleet.Spec{Profile: pv, Task: "paused turn", Provider: "remote"}})
	if err != nil {
		t.Fatal(err)
	}
	runID, first := sub.RunID, sub.RunID+".g1"

	// Pause the worker once its attempt recorded the turn's first text.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		evs, err := f.Store().Events(t.Context(), first, "", 0)
		if err == nil && len(evs) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first worker's attempt never began its turn:\n%s", paused.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	paused.pause(t)
	pausedAt := time.Now()
	acked, err := f.Store().Events(t.Context(), first, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	taker := startProc(t, "taker", nil, workerArgs("taker", takerURL)...)
	dump := func() string {
		return fmt.Sprintf("paused worker (%s):\n%s\ntaker (%s):\n%s\nserver:\n%s", pausedCalls, paused.logs, takerCalls, taker.logs, server.logs)
	}

	// Wait for the takeover: the second attempt re-attached to the turn
	// and recorded more of it than the paused worker had seen.
	var second string
	for deadline := time.Now().Add(3 * time.Minute); ; {
		r, err := f.Get(t.Context(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Attempts) >= 2 {
			second = r.Attempts[1].RunID
			evs, err := f.Store().Events(t.Context(), second, "", 0)
			if err == nil && len(evs) > len(acked) {
				break
			}
		}
		if r.Status.Terminal() {
			t.Fatalf("the run ended %s before the takeover was seen: %+v\n%s", r.Status, r.Attempts, dump())
		}
		if time.Now().After(deadline) {
			t.Fatalf("no takeover within 3 minutes of the pause: %+v\n%s", r.Attempts, dump())
		}
		time.Sleep(100 * time.Millisecond)
	}
	tookOverAt := time.Now()
	t.Logf("taken over %s after the pause", tookOverAt.Sub(pausedAt).Round(time.Millisecond))
	paused.resume(t)

	// The paused worker notices it lost the run.
	noticed := func() bool {
		logs := paused.logs.String()
		return strings.Contains(logs, "lost the fleet run's lease") || strings.Contains(logs, "the fleet run moved on")
	}
	for deadline := time.Now().Add(2 * time.Minute); !noticed(); {
		if time.Now().After(deadline) {
			t.Fatalf("the resumed worker never noticed it lost the run\n%s", dump())
		}
		time.Sleep(50 * time.Millisecond)
	}

	var r *fleet.Run
	for deadline := time.Now().Add(3 * time.Minute); ; {
		if r, err = f.Get(t.Context(), runID); err != nil {
			t.Fatal(err)
		}
		if r.Status.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end within 3 minutes of the resumption: %+v\n%s", r, dump())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.Status != store.StatusCompleted || len(r.Attempts) != 2 || r.Outcome == nil || !r.Outcome.Delivered || r.Outcome.RunID != second {
		t.Fatalf("run %s, attempts %+v, outcome %+v; want completed and delivered by the second attempt\n%s", r.Status, r.Attempts, r.Outcome, dump())
	}
	if a := r.Attempts[0]; a.Status != string(store.StatusInterrupted) || a.Worker != "paused" || !strings.Contains(a.Note, "taken over by taker") {
		t.Errorf("the paused worker's attempt %+v; want it recorded interrupted by the taker", a)
	}
	if a := r.Attempts[1]; a.Worker != "taker" || !strings.Contains(a.Note, "resumed environment") {
		t.Errorf("the second attempt %+v; want the taker's, resuming the paused worker's environment", a)
	}
	if !strings.Contains(r.Outcome.Text, "one tick") || !strings.HasSuffix(r.Outcome.Text, "done") || strings.Count(r.Outcome.Text, "tick") != 35 {
		t.Errorf("outcome text %q; want the whole turn, once", r.Outcome.Text)
	}
	// The worker stays up and the run stays as it ended.
	time.Sleep(2 * time.Second)
	again, err := f.Get(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != r.Status || again.Generation != r.Generation || len(again.Attempts) != len(r.Attempts) || again.Attempts[0] != r.Attempts[0] {
		t.Errorf("the run moved on after it ended: %s %+v, then %s %+v", r.Status, r.Attempts, again.Status, again.Attempts)
	}

	// Nothing of the paused attempt was written after the takeover.
	dead, err := kernel.ReadRun(t.Context(), f.Store(), first)
	if err != nil {
		t.Fatal(err)
	}
	took, err := kernel.ReadRun(t.Context(), f.Store(), second)
	if err != nil {
		t.Fatal(err)
	}
	if dead.Run.Status != store.StatusInterrupted || dead.Run.Generation != 1 {
		t.Errorf("the paused attempt reads %s in lease generation %d; want interrupted, generation 1", dead.Run.Status, dead.Run.Generation)
	}
	secondStart, err := time.Parse(time.RFC3339Nano, r.Attempts[1].StartedAt)
	if err != nil {
		t.Fatal(err)
	}
	deadEvents, err := f.Store().Events(t.Context(), first, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range deadEvents {
		if e.Time.After(secondStart) {
			t.Errorf("the paused attempt appended event %d (%s) at %s, after the takeover at %s: two live executors", e.Sequence, e.Type, e.Time.Format(time.RFC3339Nano), secondStart.Format(time.RFC3339Nano))
		}
	}
	// Every event acknowledged before the pause is still there.
	if len(deadEvents) < len(acked) {
		t.Errorf("the paused attempt has %d events; %d were acknowledged before the pause", len(deadEvents), len(acked))
	}
	for i, e := range acked {
		if i < len(deadEvents) && (deadEvents[i].ID != e.ID || deadEvents[i].Sequence != e.Sequence) {
			t.Errorf("acknowledged event %d (%s) became %d (%s)", e.Sequence, e.ID, deadEvents[i].Sequence, deadEvents[i].ID)
		}
	}
	// The server: one environment, one turn; the paused worker neither
	// cancelled the turn nor destroyed the environment.
	pausedCalls.mu.Lock()
	takerCalls.mu.Lock()
	if pausedCalls.creates != 1 || takerCalls.creates != 0 {
		t.Errorf("environment creates: %d by the paused worker, %d by the taker; want 1 and 0 (re-attached)", pausedCalls.creates, takerCalls.creates)
	}
	if pausedCalls.cancels != 0 || pausedCalls.destroys != 0 {
		t.Errorf("the paused worker, fenced, sent %d turn cancels and %d destroys to the server; want none: the turn and environment are the taker's", pausedCalls.cancels, pausedCalls.destroys)
	}
	if takerCalls.cancels != 0 {
		t.Errorf("the taker cancelled the turn %d times", takerCalls.cancels)
	}
	if len(takerCalls.turns) == 0 {
		t.Error("the taker never opened the turn's stream")
	}
	takerCalls.mu.Unlock()
	pausedCalls.mu.Unlock()
	if took.Exact == nil || dead.Exact == nil || took.Exact.EnvironmentID == "" || took.Exact.EnvironmentID != dead.Exact.EnvironmentID {
		t.Errorf("the paused attempt's environment %v, the taker's %v; want the same, re-attached", dead.Exact, took.Exact)
	}

	// The ledger states what each attempt recorded it used, and the
	// interrupted attempt claims no completed usage.
	var ledgerIn, usageIn int64
	for _, rec := range []*kernel.RunRecord{dead, took} {
		if rec.Exact == nil || rec.Exact.Usage == nil {
			continue
		}
		u := rec.Exact.Usage.Usage
		if rec.Spend.InputTokens.Value != u.InputTokens.Value || rec.Spend.OutputTokens.Value != u.OutputTokens.Value {
			t.Errorf("attempt %s: ledger %d in, %d out; its record says %d, %d", rec.Run.ID, rec.Spend.InputTokens.Value, rec.Spend.OutputTokens.Value, u.InputTokens.Value, u.OutputTokens.Value)
		}
		ledgerIn, usageIn = ledgerIn+rec.Spend.InputTokens.Value, usageIn+u.InputTokens.Value
	}
	if ledgerIn != usageIn || took.Spend.InputTokens.Value != 5 || took.Spend.OutputTokens.Value != 3 {
		t.Errorf("ledger %d in (the taker's %d in, %d out); usage %d in; want the taker's 5 in, 3 out and the totals equal", ledgerIn, took.Spend.InputTokens.Value, took.Spend.OutputTokens.Value, usageIn)
	}

	// runs events: both attempts, each contiguous from 1.
	out, errOut, code := run(t, "", "runs", "events", runID, "--database", conn, "--json")
	if code != 0 {
		t.Fatalf("runs events: %d %s", code, errOut)
	}
	next := map[string]int64{}
	for _, line := range decodeLines(t, out) {
		attempt, seq := member(line, "attempt").Str(), int64(member(line, "sequence").Float())
		if seq != next[attempt]+1 {
			t.Errorf("runs events: attempt %s jumps from event %d to %d", attempt, next[attempt], seq)
		}
		next[attempt] = seq
	}
	if next[first] != int64(len(deadEvents)) || next[second] == 0 {
		t.Errorf("runs events shows %v; want the paused attempt's %d events and the taker's", next, len(deadEvents))
	}

	if !strings.Contains(paused.logs.String(), "superseded by generation 2") {
		t.Errorf("the resumed worker's log names no fence refusal (generation 1 superseded by 2):\n%s", paused.logs)
	}
	select {
	case <-paused.exited:
		t.Errorf("the resumed worker exited:\n%s", paused.logs)
	default:
	}
	if t.Failed() {
		t.Log(dump())
	}
	paused.stop(t)
	taker.stop(t)
	server.stop(t)
}
