package kernel_test

import (
	"context"
	"errors"
	"iter"
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
// no run destroying it, the keeper destroying it once at the end; the
// native session observation, which runs keep private, reaches the keeper
// (NSO-01, NSO-02, ENV-06).
func TestKeptEnvironmentAcrossTurns(t *testing.T) {
	ctx := context.Background()
	sp := scripted.New(mustScript(t, `{"turns":[{"repeat":true,"steps":[{"text":"re: {{prompt}}"}]}]}`), scripted.Options{})
	kept := kernel.KeepEnvironment(nativeProvider{Provider: sp, id: "native-1"})
	kept.SetSessionID("conv-1")
	s := memory.New(time.Now)
	p := mustProfile(t, noteWriter)
	var envs, texts []string
	for _, task := range []string{"one", "two", "three"} {
		res, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: task, Provider: kept, Store: s, Check: nonEmpty})
		if err != nil {
			t.Fatalf("turn %q: %v", task, err)
		}
		envs, texts = append(envs, res.EnvironmentID), append(texts, res.Text)
		r, err := s.GetRun(ctx, res.RunID)
		if err != nil || r.Status != store.StatusCompleted {
			t.Fatalf("turn %q recorded %v, %v", task, r.Status, err)
		}
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
	if diff := cmp.Diff(&contract.NativeSessionObserved{Provider: "scripted", NativeSessionID: "native-1"}, kept.NativeSession()); diff != "" {
		t.Errorf("native session (-want +got):\n%s", diff)
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
