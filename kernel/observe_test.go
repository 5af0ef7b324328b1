package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

type hookKey struct{}

// recorder is an Observer that writes down each hook as one line and can
// be told to fail or panic in every hook.
type recorder struct {
	calls []string
	fail  error
	panic bool
}

func (r *recorder) note(format string, args ...any) error {
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
	if r.panic {
		panic("observer bug")
	}
	return r.fail
}

func (r *recorder) RunStarted(ctx context.Context, s kernel.RunStart) (context.Context, error) {
	return context.WithValue(ctx, hookKey{}, "run"), r.note("run started %s kind=%s stage=%d", s.RunID, s.Kind, s.Stage)
}

func (r *recorder) TurnStarted(ctx context.Context, s kernel.TurnStart) (context.Context, error) {
	return context.WithValue(ctx, hookKey{}, "turn"), r.note("turn started %s model=%s provider=%s run-ctx=%v", s.RunID, s.RequestedModel, s.Provider, ctx.Value(hookKey{}))
}

func (r *recorder) Event(ctx context.Context, e contract.EnvironmentEvent) error {
	return r.note("event %s ctx=%v", e.Type, ctx.Value(hookKey{}))
}

func (r *recorder) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	return r.note("turn ended %s terminal=%s served=%s", t.RunID, t.Terminal, t.Served.Model)
}

func (r *recorder) RunEnded(ctx context.Context, res kernel.Result) error {
	return r.note("run ended %s %s delivered=%v", res.RunID, res.Status, res.Delivered)
}

// seenCtx records the hook value of the context each Create and Stream
// call was made under.
type seenCtx struct {
	contract.Provider
	seen *[]any
}

func (p seenCtx) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	*p.seen = append(*p.seen, ctx.Value(hookKey{}))
	return p.Provider.Create(ctx, in)
}

// OS-05 (spec runtime §10): the observer sees run start, turn start, each
// durable event, turn end and run end, in order; its errors and panics
// never change the run; the contexts it returns reach the provider.
func TestObserverHooksInOrderAndContained(t *testing.T) {
	honest := `{"turns":[{"steps":[{"text":"A note."},{"usage":{"inputTokens":12,"outputTokens":5},"mode":"delta"}]}]}`
	// A hook that failed keeps the context it was given.
	wantHonest := func(runCtx, turnCtx string) []string {
		return []string{
			"run started r1 kind=execute stage=0",
			"turn started r1 model=scripted/note-writer provider=scripted run-ctx=" + runCtx,
			"event execution.started ctx=" + turnCtx,
			"event message.part.updated ctx=" + turnCtx,
			"event usage ctx=" + turnCtx,
			"event done ctx=" + turnCtx,
			"turn ended r1 terminal=completed served=scripted/note-writer",
			"run ended r1 completed delivered=true",
		}
	}
	tests := []struct {
		name       string
		script     string
		obs        *recorder
		status     store.Status
		delivered  bool
		want       []string
		createCtxs []any
	}{
		{"in order", honest, &recorder{}, store.StatusCompleted, true, wantHonest("run", "turn"), []any{"run"}},
		{"observer errors contained", honest, &recorder{fail: errors.New("exporter down")}, store.StatusCompleted, true, wantHonest("<nil>", "<nil>"), []any{nil}},
		{"observer panics contained", honest, &recorder{panic: true}, store.StatusCompleted, true, wantHonest("<nil>", "<nil>"), []any{nil}},
		{"the served model differs", `{"servedModel":"scripted/other","turns":[{"steps":[{"text":"A note."}]}]}`, &recorder{}, store.StatusFailed, false, []string{
			"run started r1 kind=execute stage=0",
			"turn started r1 model=scripted/note-writer provider=scripted run-ctx=run",
			"event execution.started ctx=turn",
			"event message.part.updated ctx=turn",
			"event done ctx=turn",
			"turn ended r1 terminal=completed served=scripted/other",
			"run ended r1 failed delivered=false",
		}, []any{"run"}},
		{"refused before the turn", `{"turns":[{"steps":[{"text":"A note."}]}]}`, &recorder{}, store.StatusFailed, false, []string{
			"run started r1 kind=execute stage=1",
			"run ended r1 failed delivered=false",
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var seen []any
			stage := 0
			if tc.name == "refused before the turn" {
				stage = 1 // the profile has no seats
			}
			prov := seenCtx{Provider: scripted.New(mustScript(t, tc.script), scripted.Options{}), seen: &seen}
			res, _ := kernel.Execute(t.Context(), kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", Provider: prov,
				Store: memory.New(nil), Check: nonEmpty, RunID: "r1", Observer: tc.obs, Stage: stage})
			if res == nil || res.Status != tc.status || res.Delivered != tc.delivered {
				t.Fatalf("result %+v, want %s delivered=%v", res, tc.status, tc.delivered)
			}
			if diff := cmp.Diff(tc.want, tc.obs.calls); diff != "" {
				t.Errorf("hooks (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.createCtxs, seen); diff != "" {
				t.Errorf("Create's context (-want +got):\n%s", diff)
			}
		})
	}
}

// RoundsOptions.Observe gives each iteration run its own observer; a
// panic in it leaves that iteration unobserved and the rounds unchanged.
func TestRoundsObserveEachIteration(t *testing.T) {
	twice := func(_ context.Context, task string, h []kernel.Iteration[string, string]) ([]string, error) {
		if len(h) == 0 {
			return []string{task, task}, nil
		}
		return nil, nil
	}
	tests := []struct {
		name     string
		panicFor string
		want     map[string]string
	}{
		{"each iteration", "", map[string]string{"rr.0": "run started rr.0 kind=iteration stage=0", "rr.1": "run started rr.1 kind=iteration stage=0"}},
		{"a panicking factory", "rr.0", map[string]string{"rr.1": "run started rr.1 kind=iteration stage=0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]*recorder{}
			res, err := kernel.Rounds(t.Context(), kernel.RoundsOptions[string, string]{
				Task: "t", RunID: "rr",
				Driver: kernel.Driver[string, string]{Plan: twice, Decide: func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
					return kernel.DecisionDone, nil
				}},
				Agents: []kernel.Agent[string]{{Profile: mustProfile(t, noteWriter)}}, Parse: parseNote,
				Provider: scripted.InProcess(echo), Store: memory.New(nil),
				Observe: func(runID string) kernel.Observer {
					if runID == tc.panicFor {
						panic("factory bug")
					}
					mu.Lock()
					defer mu.Unlock()
					seen[runID] = &recorder{}
					return seen[runID]
				},
			})
			if err != nil || len(res.Iterations) != 2 || res.Iterations[0].Err != nil || res.Iterations[1].Err != nil {
				t.Fatalf("rounds %+v, %v", res, err)
			}
			got := map[string]string{}
			for id, r := range seen {
				got[id] = r.calls[0]
				if last := r.calls[len(r.calls)-1]; !strings.HasPrefix(last, "run ended "+id+" completed") {
					t.Errorf("%s ended with %q", id, last)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("observed (-want +got):\n%s", diff)
			}
		})
	}
}
