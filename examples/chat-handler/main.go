package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/chatturn"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	path, err := sqlite.DefaultPath()
	if err != nil {
		log.Fatal(err)
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	h, err := newHandler(st, &messages{}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Addr: *listen, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
		h.Shutdown(shutdown)
	}()
	fmt.Fprintf(os.Stderr, "serving chat turns on http://%s (POST /?session=ID&turn=N)\n", *listen)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

const assistant = `{"name":"assistant","harness":"cli-base","model":{"provider":"scripted","default":"scripted/assistant"}}`

// script answers every turn with a few words, a pause between them.
const script = `{"turns":[{"steps":[
  {"text":"Restores "},{"delayMs":150},
  {"text":"are one "},{"delayMs":150},
  {"text":"click now."},
  {"usage":{"inputTokens":31,"outputTokens":7},"mode":"delta"}
]}]}`

// messages is the application's conversation store; here, memory.
type messages struct {
	mu   sync.Mutex
	byID map[string]string
}

func (m *messages) persist(_ context.Context, id chatturn.Identity, text string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID = make(map[string]string)
	}
	m.byID[id.ExecutionID()] = text
	return nil
}

func (m *messages) get(executionID string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.byID[executionID]
	return t, ok
}

// newHandler serves turns recorded in st; each turn's model work is an
// exact run of the scripted assistant, its text deltas streamed as
// {"type":"text","data":{"delta":…}} lines.
func newHandler(st store.Store, msgs *messages, log *slog.Logger) (*chatturn.Handler, error) {
	p, err := profile.Parse([]byte(assistant))
	if err != nil {
		return nil, err
	}
	sc, err := scripted.ParseScript([]byte(script))
	if err != nil {
		return nil, err
	}
	answer := func(ctx context.Context, runID string) chatturn.Production {
		return production(kernel.StreamRun(ctx, kernel.Request{
			Profile: p, Task: "Say what changed about restores.", Provider: scripted.New(sc, scripted.Options{}),
			Store: st, RunID: runID,
		}))
	}
	return &chatturn.Handler{
		Store:  st,
		Logger: log,
		Turn: func(r *http.Request) (*chatturn.Turn, error) {
			// A real host authenticates the request here.
			session := r.URL.Query().Get("session")
			turn, err := strconv.Atoi(r.URL.Query().Get("turn"))
			if err != nil {
				return nil, fmt.Errorf("?turn= must be the turn's index: %w", err)
			}
			id := chatturn.Identity{ProjectID: "demo", TenantID: "acme", SessionID: session, TurnIndex: turn}
			return &chatturn.Turn{Identity: id, Logger: log, Hooks: chatturn.Hooks{
				Produce: func(ctx context.Context) (chatturn.Production, error) {
					return answer(ctx, "model:"+id.ExecutionID()), nil
				},
				// The model runs in this process: when the process serving
				// a turn died, its model run died with it, so a retry's new
				// attempt of the execution answers again, recorded as a
				// model run of its own.
				Resume: func(ctx context.Context, a chatturn.Attempt) (chatturn.Production, error) {
					return answer(ctx, fmt.Sprintf("model:%s.attempt-%d", a.ExecutionID, a.Number)), nil
				},
				PersistAssistantMessage: msgs.persist,
			}}, nil
		},
	}, nil
}

// production streams a model run's text deltas as turn lines.
func production(run *kernel.StreamedRun) chatturn.Production {
	var res *kernel.Result
	return chatturn.Production{
		Events: func(yield func(chatturn.Line, error) bool) {
			for env, err := range run.Events() {
				if err != nil {
					yield(chatturn.Line{}, err)
					return
				}
				if u := env.Event.MessagePartUpdated; u != nil && u.Delta != nil {
					data := canonjson.ObjectValue([]canonjson.Member{{Name: "delta", Value: canonjson.StringValue(*u.Delta)}})
					if !yield(chatturn.Line{Type: "text", Data: data}, nil) {
						return
					}
				}
			}
			var err error
			if res, err = run.Result(); err != nil {
				yield(chatturn.Line{}, err)
			}
		},
		FinalText: func() string { return res.Text },
		Usage:     func() ledger.Usage { return res.Usage },
	}
}
