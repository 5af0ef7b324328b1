package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/chatturn"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
)

// servedIdent is the turn of the served-substrate kill test.
var servedIdent = chatturn.Identity{ProjectID: "demo", TenantID: "acme", SessionID: "served", UserID: "u", TurnIndex: 2}

// servedSteps is how many text steps the served turn streams.
const servedSteps = 16

// servedScript answers every turn with servedSteps words, a pause
// before each.
func servedScript() *scripted.Script {
	var steps []scripted.Step
	ms := int64(60)
	for i := 1; i <= servedSteps; i++ {
		w := "w" + strconv.Itoa(i) + " "
		steps = append(steps, scripted.Step{DelayMS: &ms}, scripted.Step{Text: &w})
	}
	return &scripted.Script{Turns: []scripted.Turn{{Repeat: true, Steps: steps}}}
}

// retainedTurn is a host's turn whose substrate is an agentrt server
// (the sidecar's HTTP API, reached through providers/remote): the turn
// is a retained run keyed by the turn's execution id, used as both the
// environment's idempotency key and the turn id (spec/runtime.md §3.3),
// so dispatching it again lands on the same served run; Resume streams
// its events on after the last recorded event id. Lines are
// {"type":"substrate.event","data":{"seq":N,"type":T}}; the final text is
// the run's result.
func retainedTurn(url string, st store.Store, persist func(context.Context, chatturn.Identity, string) error) func(*http.Request) (*chatturn.Turn, error) {
	return func(r *http.Request) (*chatturn.Turn, error) {
		id := servedIdent
		exec := id.ExecutionID()
		produce := func(ctx context.Context, after retained.Cursor) (chatturn.Production, error) {
			p, err := remote.New(remote.Options{BaseURL: url, RetryBackoff: 10 * time.Millisecond})
			if err != nil {
				return chatturn.Production{}, err
			}
			run, err := retained.StartRetainedRun(ctx, retained.StartOptions{Provider: p, Store: st,
				Environment: &contract.CreateInput{IdempotencyKey: &exec, Profile: profile.Ref{CatalogID: "chat-worker"}},
				Turn:        contract.TurnInput{TurnID: &exec, Prompt: ptr("answer the user")},
				OnAdmission: func(context.Context, retained.Admission) error { return nil }})
			if err != nil {
				return chatturn.Production{}, err
			}
			var final string
			return chatturn.Production{
				Events: func(yield func(chatturn.Line, error) bool) {
					for ev, err := range run.Events(ctx, after) {
						if err != nil {
							yield(chatturn.Line{}, err)
							return
						}
						l := chatturn.Line{Type: "substrate.event", EventID: strconv.FormatInt(ev.Sequence, 10) + " " + ev.Cursor,
							Data: canonjson.ObjectValue([]canonjson.Member{
								{Name: "seq", Value: canonjson.NumberValue(float64(ev.Sequence))},
								{Name: "type", Value: canonjson.StringValue(ev.Event.Type)},
							})}
						if !yield(l, nil) {
							return
						}
					}
					res, err := run.Result(ctx)
					if err != nil {
						yield(chatturn.Line{}, err)
						return
					}
					final = res.Text
				},
				FinalText: func() string { return final },
			}, nil
		}
		return &chatturn.Turn{Identity: id, Hooks: chatturn.Hooks{
			Produce: func(ctx context.Context) (chatturn.Production, error) { return produce(ctx, retained.Cursor{}) },
			Resume: func(ctx context.Context, a chatturn.Attempt) (chatturn.Production, error) {
				var after retained.Cursor
				if a.LastEventID != "" {
					seq, cur, ok := strings.Cut(a.LastEventID, " ")
					n, err := strconv.ParseInt(seq, 10, 64)
					if !ok || err != nil {
						return chatturn.Production{}, fmt.Errorf("last event id %q is not this host's", a.LastEventID)
					}
					after = retained.Cursor{Sequence: n, Cursor: cur}
				}
				p, err := produce(ctx, after)
				p.Continues = true
				return p, err
			},
			PersistAssistantMessage: persist,
		}}, nil
	}
}

// openShared opens the store a server process and the test share:
// "sqlite:PATH" or "postgres:URL".
func openShared(where string) (store.Store, error) {
	if conn, ok := strings.CutPrefix(where, "postgres:"); ok {
		return postgres.Open(context.Background(), conn, postgres.Options{})
	}
	return sqlite.Open(context.Background(), strings.TrimPrefix(where, "sqlite:"), sqlite.Options{})
}

// TestHelperServedTurnServer is the chat server process of
// TestRetryAfterServerKilledLandsOnTheServedRun; it serves until killed.
func TestHelperServedTurnServer(t *testing.T) {
	where, url := os.Getenv("CHAT_HELPER_STORE"), os.Getenv("CHAT_HELPER_SERVED")
	if where == "" {
		t.Skip("the server process of TestRetryAfterServerKilledLandsOnTheServedRun")
	}
	st, err := openShared(where)
	if err != nil {
		t.Fatal(err)
	}
	h := &chatturn.Handler{Store: st, LeaseTTL: kernel.MinLeaseTTL,
		Turn: retainedTurn(url, st, func(context.Context, chatturn.Identity, string) error { return nil })}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(ln.Addr())
	http.Serve(ln, h) // until killed
}

type servedLine struct {
	Type string `json:"type"`
	Data struct {
		Seq float64 `json:"seq"`
	} `json:"data"`
}

// readLines reads up to n NDJSON lines of body (n < 0: all).
func readLines(t *testing.T, body *bufio.Scanner, n int) []servedLine {
	t.Helper()
	var out []servedLine
	for (n < 0 || len(out) < n) && body.Scan() {
		var l servedLine
		if err := json.Unmarshal(body.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", body.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// The chat turn's substrate is an agentrt server (the sidecar's HTTP API
// over the scripted provider, reached through providers/remote) that
// keeps the turn's run when its client goes away; the turn is a
// retained run whose idempotency key and turn id are the turn's
// execution id. The process serving the chat turn is SIGKILLed mid-turn;
// the client's retry on another process sharing the store re-dispatches
// under the same execution id, which the server answers with the run it
// already has, and streams on after the last recorded event: every event
// of the served run reaches the client once, in order, the served
// provider ran one turn in one environment, and the message is persisted
// once with the run's text (spec/runtime.md §3.3, §5; FD-02, FD-08). On
// SQLite and PostgreSQL.
func TestRetryAfterServerKilledLandsOnTheServedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	stores := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "turns.db") },
		"postgres": func(t *testing.T) string { return "postgres:" + pgtest.Schema(t) },
	}
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			where := stores[name](t)
			st, err := openShared(where) // migrated before the server process starts
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			sp := scripted.New(servedScript(), scripted.Options{})
			side, err := sidecar.New(sp, sidecar.Options{})
			if err != nil {
				t.Fatal(err)
			}
			served := httptest.NewServer(side)
			defer served.Close()

			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServedTurnServer$")
			cmd.Env = append(os.Environ(), "CHAT_HELPER_STORE="+where, "CHAT_HELPER_SERVED="+served.URL)
			cmd.Stderr = os.Stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			sc := bufio.NewScanner(stdout)
			if !sc.Scan() {
				t.Fatal("the server process printed no address")
			}
			resp, err := http.Post("http://"+strings.TrimSpace(sc.Text())+"/", "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			got := readLines(t, bufio.NewScanner(resp.Body), 4) // started and the first events
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			resp.Body.Close()
			if len(got) < 4 {
				t.Fatalf("read %d lines before the kill", len(got))
			}

			var mu sync.Mutex
			var persisted []string
			h := &chatturn.Handler{Store: st, PollInterval: 50 * time.Millisecond, LeaseTTL: kernel.MinLeaseTTL,
				Turn: retainedTurn(served.URL, st, func(_ context.Context, _ chatturn.Identity, text string) error {
					mu.Lock()
					defer mu.Unlock()
					persisted = append(persisted, text)
					return nil
				})}
			srv := httptest.NewServer(h)
			defer srv.Close()
			exec := servedIdent.ExecutionID()
			req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
			req.Header.Set(chatturn.HeaderExecutionID, exec)
			req.Header.Set("Last-Event-ID", strconv.Itoa(len(got)))
			client := &http.Client{Timeout: time.Minute}
			resp, err = client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			all := append(got, readLines(t, bufio.NewScanner(resp.Body), -1)...)
			resp.Body.Close()
			if all[0].Type != chatturn.TypeStarted || all[len(all)-1].Type != chatturn.TypeCompleted {
				t.Fatalf("lines %+v", all)
			}
			for i, l := range all[1 : len(all)-1] {
				if l.Type != "substrate.event" || int(l.Data.Seq) != i+1 {
					t.Fatalf("line %d is %+v; want served event %d: every event once, in order (%+v)", i+2, l, i+1, all)
				}
			}
			if err := h.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := ""
			for i := 1; i <= servedSteps; i++ {
				want += "w" + strconv.Itoa(i) + " "
			}
			if diff := cmp.Diff([]string{want}, persisted); diff != "" {
				t.Errorf("persisted (-want +got):\n%s", diff)
			}
			if turns, creates := sp.Turns(), sp.Creates(); turns != 1 || creates != 1 {
				t.Errorf("the served provider ran %d turns in %d environments, want 1 in 1 (the retry landed on the same run)", turns, creates)
			}
			for id, want := range map[string]store.Status{exec: store.StatusInterrupted, exec + ".resume-1": store.StatusCompleted} {
				if r, err := st.GetRun(context.Background(), id); err != nil || r.Status != want {
					t.Errorf("attempt %s reads %s (%v), want %s", id, r.Status, err, want)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
