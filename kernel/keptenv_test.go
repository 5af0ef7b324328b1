package kernel_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// nativeProvider wraps a provider so that every turn first reports a
// native session observation, as the CLI bridges do (NSO-01).
type nativeProvider struct {
	contract.Provider
	id string
}

func (p nativeProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return nativeEnv{Environment: env, id: p.id}, nil
}

type nativeEnv struct {
	contract.Environment
	id string
}

func (e nativeEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		obs := contract.NativeSessionObserved{Provider: "scripted", NativeSessionID: e.id}.Event()
		ev := contract.EnvironmentEvent{Type: contract.EventTypeNativeSessionObserved, Normalized: &obs,
			Data: map[string]canonjson.Value{"provider": canonjson.StringValue("scripted"), "nativeSessionId": canonjson.StringValue(e.id)}}
		if !yield(ev, nil) {
			return
		}
		for ev, err := range e.Environment.Stream(ctx, in) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// A conversation's turns run through Execute in one kept environment:
// one create, every turn recorded as its own run naming that environment,
// no run destroying it, the keeper destroying it once at the end; each
// run's record names the native session its turn observed, which is never
// among its events (NSO-02, NSO-03, ENV-06).
func TestKeptEnvironmentAcrossTurns(t *testing.T) {
	ctx := context.Background()
	sp := scripted.New(mustScript(t, `{"turns":[{"repeat":true,"steps":[{"text":"re: {{prompt}}"}]}]}`), scripted.Options{})
	kept := kernel.KeepEnvironment(nativeProvider{Provider: sp, id: "native-1"})
	kept.SetSessionID("conv-1")
	s := memory.New(time.Now)
	p := mustProfile(t, noteWriter)
	var envs, texts, natives []string
	for _, task := range []string{"one", "two", "three"} {
		res, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: task, Provider: kept, Store: s, Check: nonEmpty})
		if err != nil {
			t.Fatalf("turn %q: %v", task, err)
		}
		envs, texts = append(envs, res.EnvironmentID), append(texts, res.Text)
		rr, err := kernel.ReadRun(ctx, s, res.RunID)
		if err != nil || rr.Status != store.StatusCompleted || rr.Exact == nil {
			t.Fatalf("turn %q recorded %+v, %v", task, rr, err)
		}
		natives = append(natives, res.NativeSessionID, rr.Exact.NativeSessionID)
		if events, _ := s.Events(ctx, res.RunID, "", 100); hasType(events, contract.EventTypeNativeSessionObserved) {
			t.Errorf("turn %q recorded the private native session event", task)
		}
	}
	if got := sp.Creates(); got != 1 {
		t.Errorf("creates = %d, want 1", got)
	}
	want := kept.EnvironmentID()
	if diff := cmp.Diff([]string{want, want, want}, envs); diff != "" {
		t.Errorf("environments (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"re: one", "re: two", "re: three"}, texts); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(slices.Repeat([]string{"native-1"}, 6), natives); diff != "" {
		t.Errorf("native session of each result and record (-want +got):\n%s", diff)
	}
	env, err := sp.Get(ctx, want)
	if err != nil || env == nil {
		t.Fatalf("the environment is gone before Close: %v", err)
	}
	if st, _ := env.Status(ctx); st != contract.EnvironmentRunning {
		t.Errorf("before Close the environment is %s", st)
	}
	if err := kept.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := env.Status(ctx); st == contract.EnvironmentRunning {
		t.Errorf("after Close the environment is still running")
	}
	if _, err := kept.Create(ctx, &contract.CreateInput{}); err == nil {
		t.Error("Create after Close succeeded")
	}
}

// A kept environment serves one profile: a run for another is refused
// before anything is streamed.
func TestKeptEnvironmentRefusesAnotherProfile(t *testing.T) {
	ctx := context.Background()
	sp := scripted.New(scripted.DefaultScript(), scripted.Options{})
	kept := kernel.KeepEnvironment(sp)
	defer kept.Close(ctx)
	s := memory.New(time.Now)
	if _, err := kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "a", Provider: kept, Store: s}); err != nil {
		t.Fatal(err)
	}
	other := `{"name":"other","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`
	_, err := kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, other), Task: "b", Provider: kept, Store: s})
	var re *kernel.RunError
	if !errors.As(err, &re) || !errors.Is(err, kernel.ErrKeptProfileChanged) {
		t.Errorf("another profile: %v, want a run error wrapping ErrKeptProfileChanged", err)
	}
	if got := sp.Creates(); got != 1 {
		t.Errorf("creates = %d, want 1", got)
	}
}

func hasType(events []store.Event, typ string) bool {
	for _, e := range events {
		if e.Type == typ {
			return true
		}
	}
	return false
}

// NSO-01: only a well-formed observation binds a native session: a
// padded, empty or over-long id, or a public event, is none.
func TestNativeObservation(t *testing.T) {
	obs := func(provider, id string) contract.EnvironmentEvent {
		return contract.EnvironmentEvent{Type: contract.EventTypeNativeSessionObserved,
			Data: map[string]canonjson.Value{"provider": canonjson.StringValue(provider), "nativeSessionId": canonjson.StringValue(id)}}
	}
	tests := []struct {
		name string
		e    contract.EnvironmentEvent
		want string
	}{
		{"data", obs("claude-code", "s-1"), "s-1"},
		{"padded", obs("claude-code", " s-1"), ""},
		{"empty", obs("claude-code", ""), ""},
		{"over-long", obs("claude-code", strings.Repeat("x", contract.MaxNativeSessionIDLength+1)), ""},
		{"bad provider", obs("Claude", "s-1"), ""},
		{"public event", contract.EnvironmentEvent{Type: "session.updated", Data: map[string]canonjson.Value{"nativeSessionId": canonjson.StringValue("s-1")}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if o := kernel.NativeObservation(tc.e); o != nil {
				got = o.NativeSessionID
			}
			if got != tc.want {
				t.Errorf("NativeObservation = %q, want %q", got, tc.want)
			}
		})
	}
}
