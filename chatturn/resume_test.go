package chatturn_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/chatturn"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// substrate is a model server over HTTP that keeps its executions, as an
// orchestrator does (spec/runtime.md §3.3): an execution runs on inside
// the substrate whether or not anyone reads it, a dispatch under an
// execution id it already has lands on that execution (the turn id is
// idempotent), and a reader re-attaches after the last event id it got.
// It is also the application's message store: persist calls land here,
// so that the test counts them across processes.
type substrate struct {
	deltas int
	pause  time.Duration

	mu        sync.Mutex
	execs     map[string]*execution
	starts    map[string]int
	persisted map[string][]string
	began     map[string]int
	// hangPersist makes a persist call block until its caller goes away
	// (the process persisting is killed mid-persist).
	hangPersist bool
	begun       chan string
}

type execution struct {
	mu      sync.Mutex
	deltas  []string
	done    bool
	changed chan struct{}
}

func newSubstrate(deltas int, pause time.Duration) *substrate {
	return &substrate{deltas: deltas, pause: pause, execs: map[string]*execution{}, starts: map[string]int{},
		persisted: map[string][]string{}, began: map[string]int{}, begun: make(chan string, 16)}
}

func (s *substrate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, id, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch kind {
	case "exec":
		s.serveExec(w, r, id)
	case "persist":
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.began[id]++
		hang := s.hangPersist
		s.mu.Unlock()
		s.begun <- id
		if hang {
			<-r.Context().Done()
			return
		}
		s.mu.Lock()
		s.persisted[id] = append(s.persisted[id], string(body))
		s.mu.Unlock()
	case "forget":
		s.mu.Lock()
		delete(s.execs, id)
		s.mu.Unlock()
	default:
		http.NotFound(w, r)
	}
}

// serveExec streams execution id after event ?after=, starting it when
// ?mode=start and the substrate does not have it; ?mode=attach of an
// execution it does not have is 404 (gone, or never started).
func (s *substrate) serveExec(w http.ResponseWriter, r *http.Request, id string) {
	after, _ := strconv.Atoi(r.URL.Query().Get("after"))
	s.mu.Lock()
	e, ok := s.execs[id]
	if !ok && r.URL.Query().Get("mode") == "start" {
		e = &execution{changed: make(chan struct{})}
		s.execs[id] = e
		s.starts[id]++
		go s.run(e)
		ok = true
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no such execution", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	for i := after; ; {
		e.mu.Lock()
		next, done, changed := e.deltas[min(i, len(e.deltas)):], e.done, e.changed
		all := strings.Join(e.deltas, "")
		e.mu.Unlock()
		for _, d := range next {
			i++
			enc.Encode(map[string]any{"id": strconv.Itoa(i), "delta": d})
		}
		if done {
			enc.Encode(map[string]any{"done": true, "text": all})
			return
		}
		if rc.Flush() != nil {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

func (s *substrate) run(e *execution) {
	for i := 1; i <= s.deltas; i++ {
		time.Sleep(s.pause)
		e.mu.Lock()
		e.deltas = append(e.deltas, "d"+strconv.Itoa(i)+" ")
		close(e.changed)
		e.changed = make(chan struct{})
		if i == s.deltas {
			e.done = true
		}
		e.mu.Unlock()
	}
}

func (s *substrate) counts(id string) (starts int, persisted []string, began int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts[id], append([]string(nil), s.persisted[id]...), s.began[id]
}

var errGone = errors.New("the substrate does not have the execution")

// substrateTurn is a host's turn over the substrate at base: it
// dispatches the execution under the turn's execution id, and its Resume
// re-attaches after the last event id, or — when the substrate proves
// the execution gone — dispatches it again under the same id.
func substrateTurn(base string) func(*http.Request) (*chatturn.Turn, error) {
	return func(r *http.Request) (*chatturn.Turn, error) {
		id := ident
		exec := id.ExecutionID()
		return &chatturn.Turn{Identity: id, Hooks: chatturn.Hooks{
			Produce: func(ctx context.Context) (chatturn.Production, error) {
				return dispatch(ctx, base, exec, "start", "")
			},
			Resume: func(ctx context.Context, a chatturn.Attempt) (chatturn.Production, error) {
				if a.ExecutionID != exec {
					return chatturn.Production{}, fmt.Errorf("attempt of %q, want %q", a.ExecutionID, exec)
				}
				p, err := dispatch(ctx, base, exec, "attach", a.LastEventID)
				if errors.Is(err, errGone) {
					return dispatch(ctx, base, exec, "start", "")
				}
				p.Continues = err == nil
				return p, err
			},
			PersistAssistantMessage: func(ctx context.Context, id chatturn.Identity, text string) error {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/persist/"+url.PathEscape(id.ExecutionID()), strings.NewReader(text))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				resp.Body.Close()
				return nil
			},
		}}, nil
	}
}

// dispatch streams execution exec of the substrate at base.
func dispatch(ctx context.Context, base, exec, mode, after string) (chatturn.Production, error) {
	u := base + "/exec/" + url.PathEscape(exec) + "?" + url.Values{"mode": {mode}, "after": {after}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return chatturn.Production{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return chatturn.Production{}, err
	}
	if resp.StatusCode == http.StatusNotFound {
		resp.Body.Close()
		return chatturn.Production{}, errGone
	}
	var final string
	return chatturn.Production{
		Events: func(yield func(chatturn.Line, error) bool) {
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				var ev struct {
					ID, Delta, Text string
					Done            bool
				}
				if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
					yield(chatturn.Line{}, err)
					return
				}
				if ev.Done {
					final = ev.Text
					return
				}
				l := text(ev.Delta)
				l.EventID = ev.ID
				if !yield(l, nil) {
					return
				}
			}
			err := sc.Err()
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			yield(chatturn.Line{}, fmt.Errorf("the substrate's stream ended before the execution did: %w", err))
		},
		FinalText: func() string { return final },
	}, nil
}

// deltasOf returns the text deltas among lines.
func deltasOf(lines []chatturn.Line) []string {
	var out []string
	for _, l := range lines {
		if l.Type == "text" {
			d, _ := l.Data.Get("delta")
			out = append(out, d.Str())
		}
	}
	return out
}

func wantDeltas(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "d" + strconv.Itoa(i+1) + " "
	}
	return out
}

// The process serving a chat turn is SIGKILLed mid-turn while its
// substrate (another process: the substrate server here) still runs the
// execution. The client retries on another process sharing the store,
// with the execution id and the last line it got, before the dead
// process's lease lapsed: that process carries the turn on as a second
// attempt of the same execution — its Resume re-attaches to the
// substrate's execution after the last recorded event id — and the
// client gets every delta exactly once and one session.run.completed.
// The substrate started the execution once, the assistant message was
// persisted once, in full, and the record names both attempts: the dead
// one interrupted, the second completed (spec/runtime.md §3.3
// deriveExecutionId, §5; FD-02). On SQLite and PostgreSQL.
func TestRetryAfterServerKilledReattachesToTheSubstrate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	eachSharedStore(t, func(t *testing.T, where string, open func(t *testing.T) store.Store) {
		sub := newSubstrate(30, 40*time.Millisecond)
		subSrv := httptest.NewServer(sub)
		defer subSrv.Close()
		cmd, addr := startTurnServer(t, where, "CHATTURN_HELPER_SUBSTRATE="+subSrv.URL)
		got := killAfter(t, cmd, addr, 4) // started, d1, d2, d3

		h := &chatturn.Handler{Store: open(t), Turn: substrateTurn(subSrv.URL), PollInterval: 50 * time.Millisecond, LeaseTTL: kernel.MinLeaseTTL}
		srv := httptest.NewServer(h)
		defer srv.Close()
		exec := ident.ExecutionID()
		rest, resp := post(t, srv.URL, http.Header{chatturn.HeaderExecutionID: {exec}, "Last-Event-Id": {strconv.Itoa(len(got))}})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("retry: status %d", resp.StatusCode)
		}
		all := append(got, rest...)
		wantTypes := append(append([]string{chatturn.TypeStarted}, strings.Fields(strings.Repeat("text ", 30))...), chatturn.TypeCompleted)
		if diff := cmp.Diff(wantTypes, types(all)); diff != "" {
			t.Fatalf("lines across the kill (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantDeltas(30), deltasOf(all)); diff != "" {
			t.Errorf("deltas (-want +got):\n%s", diff)
		}
		if err := h.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		starts, persisted, _ := sub.counts(exec)
		if starts != 1 {
			t.Errorf("the substrate started the execution %d times, want once", starts)
		}
		if diff := cmp.Diff([]string{strings.Join(wantDeltas(30), "")}, persisted); diff != "" {
			t.Errorf("persisted (-want +got):\n%s", diff)
		}
		checkAttempts(t, h.Store, exec, store.StatusInterrupted, store.StatusCompleted)
		// Readers come back at any line of the execution, across its
		// attempts: the rest, numbered on; at the end, nothing; past it,
		// 410 (no reader has such a line).
		for after, want := range map[int]int{2: len(all) - 2, 10: len(all) - 10, len(all): 0} {
			rest, _ := post(t, srv.URL, http.Header{chatturn.HeaderExecutionID: {exec}, "Last-Event-Id": {strconv.Itoa(after)}})
			if len(rest) != want || want > 0 && (rest[0].Type != all[after].Type || rest[len(rest)-1].Type != chatturn.TypeCompleted) {
				t.Errorf("after line %d: %v; want the last %d lines", after, types(rest), want)
			}
		}
		if _, resp := post(t, srv.URL, http.Header{chatturn.HeaderExecutionID: {exec}, "Last-Event-Id": {strconv.Itoa(len(all) + 1)}}); resp.StatusCode != http.StatusGone {
			t.Errorf("after line %d, past the %d lines across both attempts: status %d; want 410", len(all)+1, len(all), resp.StatusCode)
		}
	})
}

// checkAttempts checks the statuses of execution exec's attempt records.
func checkAttempts(t *testing.T, st store.Store, exec string, want ...store.Status) {
	t.Helper()
	ctx := context.Background()
	for i, w := range want {
		id := exec
		if i > 0 {
			id = exec + ".resume-" + strconv.Itoa(i)
		}
		r, err := kernel.ReadRun(ctx, st, id)
		if err != nil || r.Status != w {
			t.Errorf("attempt %d (%s) reads %s (%v); want %s", i+1, id, r.Run.Status, err, w)
		}
	}
	if _, err := st.GetRun(ctx, exec+".resume-"+strconv.Itoa(len(want))); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("attempt %d exists (%v); want %d attempts", len(want)+1, err, len(want))
	}
}

// As TestRetryAfterServerKilledReattachesToTheSubstrate, but the
// substrate lost the execution with the serving process (it was the
// process's own, or the substrate restarted) and the client retries
// after the dead process's lease lapsed: the second attempt's Resume
// finds the execution gone and dispatches it again under the same
// execution id — a new attempt of the same execution, never one under
// another id. The client gets session.run.restarted (drop what you had)
// and then the whole answer; the message is persisted once.
func TestRetryAfterServerKilledRestartsAGoneExecution(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	eachSharedStore(t, func(t *testing.T, where string, open func(t *testing.T) store.Store) {
		sub := newSubstrate(12, 40*time.Millisecond)
		subSrv := httptest.NewServer(sub)
		defer subSrv.Close()
		cmd, addr := startTurnServer(t, where, "CHATTURN_HELPER_SUBSTRATE="+subSrv.URL)
		got := killAfter(t, cmd, addr, 3) // started, d1, d2
		exec := ident.ExecutionID()
		if _, err := http.Post(subSrv.URL+"/forget/"+url.PathEscape(exec), "", nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(kernel.MinLeaseTTL + 500*time.Millisecond) // the lease lapsed: the retry starts the attempt itself

		h := &chatturn.Handler{Store: open(t), Turn: substrateTurn(subSrv.URL), PollInterval: 50 * time.Millisecond}
		srv := httptest.NewServer(h)
		defer srv.Close()
		rest, resp := post(t, srv.URL, http.Header{chatturn.HeaderExecutionID: {exec}, "Last-Event-Id": {strconv.Itoa(len(got))}})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("retry: status %d", resp.StatusCode)
		}
		if len(rest) == 0 || rest[0].Type == chatturn.TypeStarted {
			t.Fatalf("retry lines %v", types(rest))
		}
		// What the client keeps: the lines after the last restart.
		i := len(rest) - 1
		for i >= 0 && rest[i].Type != chatturn.TypeRestarted {
			i--
		}
		if i < 0 {
			t.Fatalf("lines %v carry no %s", types(append(got, rest...)), chatturn.TypeRestarted)
		}
		if a, _ := rest[i].Data.Get("attempt"); a.Float() != 2 {
			t.Errorf("restarted line %s; want attempt 2", canonjson.Marshal(rest[i].Value()))
		}
		if diff := cmp.Diff(wantDeltas(12), deltasOf(rest[i+1:])); diff != "" {
			t.Errorf("deltas after the restart (-want +got):\n%s", diff)
		}
		if last := rest[len(rest)-1]; last.Type != chatturn.TypeCompleted {
			t.Errorf("last line %s", last.Type)
		}
		if err := h.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		starts, persisted, _ := sub.counts(exec)
		if starts != 2 {
			t.Errorf("the substrate started execution %s %d times, want twice (the lost one and its new attempt)", exec, starts)
		}
		if diff := cmp.Diff([]string{strings.Join(wantDeltas(12), "")}, persisted); diff != "" {
			t.Errorf("persisted (-want +got):\n%s", diff)
		}
		checkAttempts(t, h.Store, exec, store.StatusInterrupted, store.StatusCompleted)
	})
}

// The serving process is killed while it persists the assistant message
// (the persist call reached the application's store and never
// returned). The retry carries the turn on, but its persist is in doubt:
// the message may be stored, so it is never handed to
// PersistAssistantMessage a second time, and the turn fails saying so
// (PersistInDoubtError) — persist runs at most once per execution, in
// any process.
func TestRetryAfterServerKilledInPersistNeverPersistsTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	eachSharedStore(t, func(t *testing.T, where string, open func(t *testing.T) store.Store) {
		sub := newSubstrate(3, 10*time.Millisecond)
		sub.hangPersist = true
		subSrv := httptest.NewServer(sub)
		defer subSrv.Close()
		cmd, addr := startTurnServer(t, where, "CHATTURN_HELPER_SUBSTRATE="+subSrv.URL)
		resp, err := http.Post("http://"+addr+"/", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		select {
		case <-sub.begun:
		case <-time.After(30 * time.Second):
			t.Fatal("the server process never began persisting")
		}
		cmd.Process.Kill()
		cmd.Wait()
		sub.mu.Lock()
		sub.hangPersist = false
		sub.mu.Unlock()

		h := &chatturn.Handler{Store: open(t), Turn: substrateTurn(subSrv.URL), PollInterval: 50 * time.Millisecond}
		srv := httptest.NewServer(h)
		defer srv.Close()
		exec := ident.ExecutionID()
		rest, _ := post(t, srv.URL, http.Header{chatturn.HeaderExecutionID: {exec}, "Last-Event-Id": {"4"}}) // started and the 3 deltas
		if diff := cmp.Diff([]string{chatturn.TypeError, chatturn.TypeFailed}, types(rest)); diff != "" {
			t.Fatalf("retry lines (-want +got):\n%s", diff)
		}
		if msg, _ := rest[1].Data.Get("message"); !strings.Contains(msg.Str(), "not persisted again") {
			t.Errorf("failure %q does not say the persist is in doubt", msg.Str())
		}
		if err := h.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, persisted, began := sub.counts(exec)
		if began != 1 || len(persisted) != 0 {
			t.Errorf("persist began %d times, completed %v; want begun once (by the killed process), never again", began, persisted)
		}
		checkAttempts(t, h.Store, exec, store.StatusInterrupted, store.StatusFailed)
		// A later retry replays that failure: no third attempt.
		again, _ := post(t, srv.URL, http.Header{chatturn.HeaderExecutionID: {exec}})
		if n := len(again); n == 0 || again[n-1].Type != chatturn.TypeFailed {
			t.Errorf("a later retry got %v; want the recorded failure", types(again))
		}
		checkAttempts(t, h.Store, exec, store.StatusInterrupted, store.StatusFailed)
	})
}
