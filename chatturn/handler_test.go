package chatturn_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/chatturn"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/storetest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
)

func openStore(t *testing.T, path string) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// gatedProducer yields n deltas "d1"…"dn", each after the previous one
// was released on gate (nil: no gate).
func gatedProducer(rec *recorder, n int, gate <-chan struct{}, pause time.Duration) func(context.Context) (chatturn.Production, error) {
	return func(ctx context.Context) (chatturn.Production, error) {
		rec.produced.Add(1)
		var all strings.Builder
		return chatturn.Production{
			Events: func(yield func(chatturn.Line, error) bool) {
				for i := 1; i <= n; i++ {
					if i > 1 && gate != nil {
						select {
						case <-gate:
						case <-ctx.Done():
							yield(chatturn.Line{}, ctx.Err())
							return
						}
					}
					if pause > 0 {
						time.Sleep(pause)
					}
					d := "d" + strconv.Itoa(i)
					all.WriteString(d)
					if !yield(text(d), nil) {
						return
					}
				}
			},
			FinalText: all.String,
			Usage: func() ledger.Usage {
				return ledger.Usage{InputTokens: ledger.ExactAmount[int64](40), OutputTokens: ledger.ExactAmount[int64](int64(n))}
			},
		}, nil
	}
}

func turnFor(rec *recorder, produce func(context.Context) (chatturn.Production, error)) func(*http.Request) (*chatturn.Turn, error) {
	return func(r *http.Request) (*chatturn.Turn, error) {
		id := ident
		if s := r.URL.Query().Get("session"); s != "" {
			id.SessionID = s
		}
		return &chatturn.Turn{Identity: id, Hooks: chatturn.Hooks{Produce: produce, PersistAssistantMessage: rec.persist}}, nil
	}
}

// A reader that drops its connection mid-turn does not stop the turn;
// coming back to another server sharing the store (another handle on the
// same database) with the execution id and its Last-Event-ID, it gets
// the rest of the same execution — never a second production — and the
// text is persisted once.
// It runs on SQLite and on PostgreSQL: the store is what the servers
// share.
func TestReattachAfterDroppedConnection(t *testing.T) {
	storetest.Each(t, testReattachAfterDroppedConnection)
}

func testReattachAfterDroppedConnection(t *testing.T, open func(t *testing.T) store.Store) {
	rec := &recorder{}
	gate := make(chan struct{})
	h1 := &chatturn.Handler{Store: open(t), Turn: turnFor(rec, gatedProducer(rec, 4, gate, 0))}
	h2 := &chatturn.Handler{Store: open(t), Turn: turnFor(rec, gatedProducer(rec, 4, nil, 0)), PollInterval: 20 * time.Millisecond}
	srv1, srv2 := httptest.NewServer(h1), httptest.NewServer(h2)
	defer srv1.Close()
	defer srv2.Close()

	// Read two lines (started, d1), then drop the connection.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv1.URL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	execID := resp.Header.Get(chatturn.HeaderExecutionID)
	if execID != "p:s:3" {
		t.Fatalf("execution id %q", execID)
	}
	sc := bufio.NewScanner(resp.Body)
	var first []chatturn.Line
	for len(first) < 2 && sc.Scan() {
		first = append(first, decodeLine(t, sc.Bytes()))
	}
	cancel()
	resp.Body.Close()
	close(gate) // the turn goes on without its reader

	rest, resp2 := post(t, srv2.URL, http.Header{chatturn.HeaderExecutionID: {execID}, "Last-Event-Id": {"2"}})
	if resp2.StatusCode != http.StatusOK {
		t.Fatalf("re-attach: status %d", resp2.StatusCode)
	}
	all := append(first, rest...)
	want := []string{chatturn.TypeStarted, "text", "text", "text", "text", chatturn.TypeCompleted}
	if diff := cmp.Diff(want, types(all)); diff != "" {
		t.Fatalf("lines across the two connections (-want +got):\n%s", diff)
	}
	for i, l := range all[1:5] {
		if d, _ := l.Data.Get("delta"); d.Str() != "d"+strconv.Itoa(i+1) {
			t.Errorf("line %d is %s", i+2, canonjson.Marshal(l.Value()))
		}
	}
	if err := h1.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec.produced.Load() != 1 || len(rec.persisted) != 1 || rec.persisted[0] != "d1d2d3d4" {
		t.Errorf("produced %d times, persisted %v; want one production persisted once", rec.produced.Load(), rec.persisted)
	}
	// The record: a completed runtime run with the producer's usage.
	r, err := kernel.ReadRun(context.Background(), h2.Store, execID)
	if err != nil || r.Status != store.StatusCompleted || r.Runtime == nil || r.Events != 6 {
		t.Fatalf("record %+v (%v)", r, err)
	}
	if r.Spend.InputTokens != ledger.ExactAmount[int64](40) || r.Spend.CostUSD.Reported {
		t.Errorf("spend %+v; want 40 input tokens and the unreported cost unknown", r.Spend)
	}

	// A plain retry of the same turn (no Last-Event-ID) replays it from
	// the start instead of running it again.
	again, _ := post(t, srv2.URL, nil)
	if diff := cmp.Diff(want, types(again)); diff != "" || rec.produced.Load() != 1 {
		t.Errorf("retry (-want +got):\n%s\nproduced %d times", diff, rec.produced.Load())
	}
}

// Server-sent events on request: each line an event with its number as
// id, so EventSource's own Last-Event-ID resumes it.
func TestServerSentEvents(t *testing.T) {
	rec := &recorder{}
	h := &chatturn.Handler{Store: openStore(t, filepath.Join(t.TempDir(), "turns.db")), Turn: turnFor(rec, gatedProducer(rec, 2, nil, 0))}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != chatturn.ContentTypeSSE {
		t.Fatalf("content type %q", ct)
	}
	var ids, events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		switch line := sc.Text(); {
		case strings.HasPrefix(line, "id: "):
			ids = append(ids, strings.TrimPrefix(line, "id: "))
		case strings.HasPrefix(line, "event: "):
			events = append(events, strings.TrimPrefix(line, "event: "))
		}
	}
	if diff := cmp.Diff([]string{"1", "2", "3", "4"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{chatturn.TypeStarted, "text", "text", chatturn.TypeCompleted}, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestHandlerRefusals(t *testing.T) {
	rec := &recorder{}
	durable := &chatturn.Handler{Store: openStore(t, filepath.Join(t.TempDir(), "turns.db")), Turn: turnFor(rec, rec.producer("x"))}
	inMemory := &chatturn.Handler{Turn: turnFor(rec, rec.producer("x"))}
	cases := []struct {
		name   string
		h      http.Handler
		header http.Header
		want   int
	}{
		{"another turn's execution id", durable, http.Header{chatturn.HeaderExecutionID: {"p:other:1"}}, http.StatusConflict},
		{"a Last-Event-ID that is not a number", durable, http.Header{"Last-Event-Id": {"abc"}}, http.StatusBadRequest},
		{"a negative Last-Event-ID", durable, http.Header{"Last-Event-Id": {"-1"}}, http.StatusBadRequest},
		{"resuming without a store", inMemory, http.Header{"Last-Event-Id": {"2"}}, http.StatusConflict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.h)
			defer srv.Close()
			_, resp := post(t, srv.URL, c.header)
			if resp.StatusCode != c.want {
				t.Errorf("status %d; want %d", resp.StatusCode, c.want)
			}
		})
	}
	if rec.produced.Load() != 0 {
		t.Errorf("a refused request produced %d turns", rec.produced.Load())
	}
}

// The turn's server process is killed (SIGKILL) mid-turn, and the turn
// has no Resume hook: a reader that re-attaches through another process
// sharing the store gets the lines recorded before the kill, then — once
// the dead process's lease lapsed — the same execution carried on by a
// second attempt that starts the turn over: session.run.restarted, the
// new production, session.run.completed. The dead attempt's record stays
// interrupted; the second is recorded completed (spec/runtime.md §3.3,
// §5; FD-02). It runs on SQLite and on PostgreSQL.
func TestReattachAfterServerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	eachSharedStore(t, testReattachAfterServerKilled)
}

// eachSharedStore runs fn on a SQLite file and a PostgreSQL schema that
// a server process and the test share: where names the store for the
// server process, open opens another handle on it.
func eachSharedStore(t *testing.T, fn func(t *testing.T, where string, open func(t *testing.T) store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "turns.db")
		fn(t, "sqlite:"+path, func(t *testing.T) store.Store { return openStore(t, path) })
	})
	t.Run("postgres", func(t *testing.T) {
		conn := pgtest.Schema(t)
		open := func(t *testing.T) store.Store {
			st, err := postgres.Open(context.Background(), conn, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		open(t).Close() // migrated before the server process starts
		fn(t, "postgres:"+conn, open)
	})
}

// startTurnServer starts the server process of a kill test (the
// TestHelperTurnServer test of this binary) on the store where, with the
// environment env, and returns its address.
func startTurnServer(t *testing.T, where string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTurnServer$")
	cmd.Env = append(append(os.Environ(), "CHATTURN_HELPER_STORE="+where), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("the server process printed no address")
	}
	return cmd, strings.TrimSpace(sc.Text())
}

// killAfter posts a turn to the server process at addr, reads n lines
// and kills the process (SIGKILL) while the turn runs.
func killAfter(t *testing.T, cmd *exec.Cmd, addr string, n int) []chatturn.Line {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(resp.Body)
	var got []chatturn.Line
	for len(got) < n && lines.Scan() {
		got = append(got, decodeLine(t, lines.Bytes()))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	resp.Body.Close()
	if len(got) < n {
		t.Fatalf("read %d lines before the kill, want %d", len(got), n)
	}
	return got
}

func testReattachAfterServerKilled(t *testing.T, where string, open func(t *testing.T) store.Store) {
	cmd, addr := startTurnServer(t, where)
	got := killAfter(t, cmd, addr, 3)

	rec := &recorder{}
	h := &chatturn.Handler{Store: open(t), Turn: turnFor(rec, rec.producer("never")), PollInterval: 50 * time.Millisecond}
	srv := httptest.NewServer(h)
	defer srv.Close()
	rest, _ := post(t, srv.URL, http.Header{"Last-Event-Id": {strconv.Itoa(len(got))}})
	all := types(append(got, rest...))
	if len(all) < 6 || all[0] != chatturn.TypeStarted || all[len(all)-3] != chatturn.TypeRestarted || all[len(all)-1] != chatturn.TypeCompleted {
		t.Fatalf("lines %v; want started, the recorded deltas, then session.run.restarted, the new production and session.run.completed", all)
	}
	if err := h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"never"}, rec.persisted); diff != "" || rec.produced.Load() != 1 {
		t.Errorf("produced %d times here, persisted (-want +got):\n%s", rec.produced.Load(), diff)
	}
	ctx := context.Background()
	if r, err := h.Store.GetRun(ctx, "p:s:3"); err != nil || r.Status != store.StatusInterrupted {
		t.Errorf("the killed attempt reads %s (%v); want interrupted", r.Status, err)
	}
	if r, err := h.Store.GetRun(ctx, "p:s:3.resume-1"); err != nil || r.Status != store.StatusCompleted {
		t.Errorf("the second attempt reads %s (%v); want completed", r.Status, err)
	}
}

// TestHelperTurnServer is the server process of the kill tests
// (TestReattachAfterServerKilled, TestRetryAfterServerKilled…): with
// CHATTURN_HELPER_SUBSTRATE its turns are executions of that substrate,
// otherwise a long gated production.
func TestHelperTurnServer(t *testing.T) {
	where := os.Getenv("CHATTURN_HELPER_STORE")
	if where == "" {
		t.Skip("the server process of TestReattachAfterServerKilled")
	}
	var (
		st  store.Store
		err error
	)
	if conn, ok := strings.CutPrefix(where, "postgres:"); ok {
		st, err = postgres.Open(context.Background(), conn, postgres.Options{})
	} else {
		st, err = sqlite.Open(context.Background(), strings.TrimPrefix(where, "sqlite:"), sqlite.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	h := &chatturn.Handler{Store: st, Turn: turnFor(rec, gatedProducer(rec, 1000, nil, 20*time.Millisecond)), LeaseTTL: kernel.MinLeaseTTL}
	if url := os.Getenv("CHATTURN_HELPER_SUBSTRATE"); url != "" {
		h.Turn = substrateTurn(url)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(ln.Addr())
	http.Serve(ln, h) // until killed
}
