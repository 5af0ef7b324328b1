package kernel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// §3.6 Continuity (resume): a run named Request.Continue goes on in the
// kept environment's session through the provider's native continuation
// — no create, the same native session, recorded ContinuityNative — and
// a second Continue from a run the session has since moved past is
// refused with a *ContinuityError before anything is dispatched, never
// run fresh (RG-08's proof before continuing).
func TestContinueGoesOnInTheKeptSession(t *testing.T) {
	ctx := context.Background()
	sp := scripted.New(mustScript(t, `{"turns":[{"repeat":true,"steps":[{"text":"re: {{prompt}}"}]}]}`), scripted.Options{})
	kept := kernel.KeepEnvironment(sp)
	s := memory.New(time.Now)
	p := mustProfile(t, noteWriter)
	first, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: "draft", Provider: kept, Store: s, Check: nonEmpty})
	if err != nil || first.NativeSessionID == "" {
		t.Fatalf("first run: %+v, %v", first, err)
	}
	env, err := sp.Get(ctx, kept.EnvironmentID())
	if err != nil || env == nil {
		t.Fatalf("looking the kept environment up: %v", err)
	}
	from, err := kernel.ContinuableRun(ctx, env, first.NativeSessionID)
	if err != nil {
		t.Fatal(err)
	}
	second, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: "revise", Provider: sp, Store: s, Check: nonEmpty,
		Continue: &kernel.Continue{Environment: env, Run: from, NativeSessionID: first.NativeSessionID}})
	if err != nil {
		t.Fatalf("continued run: %v", err)
	}
	if second.Text != "re: revise" || second.NativeSessionID != first.NativeSessionID || second.Continuity != kernel.ContinuityNative ||
		second.EnvironmentID != first.EnvironmentID {
		t.Errorf("continued run = text %q session %q continuity %q env %q; want the same session %q in %q",
			second.Text, second.NativeSessionID, second.Continuity, second.EnvironmentID, first.NativeSessionID, first.EnvironmentID)
	}
	if c := sp.Counters(); c.NativeContinuations != 1 || sp.Creates() != 1 {
		t.Errorf("provider saw %d native continuations and %d creates, want 1 and 1", c.NativeContinuations, sp.Creates())
	}
	rr, err := kernel.ReadRun(ctx, s, second.RunID)
	if err != nil || rr.Exact == nil || rr.Exact.Continuity != kernel.ContinuityNative || rr.Exact.NativeSessionID != first.NativeSessionID {
		t.Fatalf("the continued run's record: %+v, %v", rr.Exact, err)
	}
	if st, _ := env.Status(ctx); st != contract.EnvironmentRunning {
		t.Errorf("the continued run destroyed the caller's kept environment (%s)", st)
	}

	// The session moved past `from`: continuing from it again is refused.
	turns := sp.Turns()
	stale, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: "again", Provider: sp, Store: s, Check: nonEmpty,
		Continue: &kernel.Continue{Environment: env, Run: from}})
	var ce *kernel.ContinuityError
	if !errors.As(err, &ce) || ce.Reason == "" {
		t.Fatalf("a stale continuation: %v, want a *kernel.ContinuityError", err)
	}
	if stale.Status != store.StatusFailed || stale.Reason != kernel.ReasonRefused || stale.Usage != ledger.NoUsage() {
		t.Errorf("stale continuation recorded %s/%s usage %+v; want failed/refused with nothing spent", stale.Status, stale.Reason, stale.Usage)
	}
	if sp.Turns() != turns || sp.Counters().NativeContinuations != 1 || sp.Creates() != 1 {
		t.Errorf("a refused continuation dispatched something (turns %d→%d)", turns, sp.Turns())
	}
	if err := kept.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// A Continue naming no exact run is refused before anything is recorded.
func TestContinueNeedsAnExactRun(t *testing.T) {
	sp := scripted.New(mustScript(t, `{"turns":[{"repeat":true,"steps":[{"text":"x"}]}]}`), scripted.Options{})
	env, err := sp.Create(context.Background(), &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = kernel.Execute(context.Background(), kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", Provider: sp,
		Store: memory.New(time.Now), Continue: &kernel.Continue{Environment: env}})
	if !errors.Is(err, kernel.ErrInvalidOptions) {
		t.Fatalf("Continue without a run: %v, want ErrInvalidOptions", err)
	}
}
