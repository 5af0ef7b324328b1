package kernel_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// statusSays is an environment whose Status reports status (or fails
// with err) whatever the box underneath says; its sessions still answer.
type statusSays struct {
	contract.Environment
	status contract.EnvironmentStatus
	err    error
}

func (e statusSays) Status(context.Context) (contract.EnvironmentStatus, error) {
	return e.status, e.err
}

// Session keeps the box's sessions reachable through the wrapper.
func (e statusSays) Session(ctx context.Context, id string, ref *contract.RunControlRef) (contract.Session, error) {
	return e.Environment.(contract.SessionOpener).Session(ctx, id, ref)
}

// Spec runtime §5, "Nothing died (same live box, next turn)": a run goes
// on in a kept box's session (Request.Continue) only once the box is
// verified live. A live box is continued in — the same session, no
// create. A box that was destroyed, or that says it stopped, failed or
// expired, or cannot say, is never resumed into, even while its sessions
// still answer: the run is refused with a *kernel.ContinuityError naming
// the box's state, nothing is dispatched or spent, and no fresh box is
// made in its place.
func TestContinueResumesOnlyAVerifiedLiveBox(t *testing.T) {
	for _, tc := range []struct {
		name string
		// box turns the kept environment into the one the run is given;
		// destroy destroys the kept box first.
		box     func(contract.Environment) contract.Environment
		destroy bool
		live    bool
		why     string
	}{
		{name: "live box", box: func(e contract.Environment) contract.Environment { return e }, live: true},
		{name: "destroyed box", box: func(e contract.Environment) contract.Environment { return e }, destroy: true, why: "not live (stopped)"},
		{name: "stopped box whose session answers", box: func(e contract.Environment) contract.Environment {
			return statusSays{Environment: e, status: contract.EnvironmentStopped}
		}, why: "not live (stopped)"},
		{name: "expired box", box: func(e contract.Environment) contract.Environment {
			return statusSays{Environment: e, status: contract.EnvironmentExpired}
		}, why: "not live (expired)"},
		{name: "box that cannot say", box: func(e contract.Environment) contract.Environment {
			return statusSays{Environment: e, status: contract.EnvironmentUnknown, err: errors.New("status endpoint timed out")}
		}, why: "status endpoint timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sp := scripted.New(mustScript(t, `{"turns":[{"repeat":true,"steps":[{"text":"re: {{prompt}}"}]}]}`), scripted.Options{})
			kept := kernel.KeepEnvironment(sp)
			defer kept.Close(ctx)
			s := memory.New(time.Now)
			p := mustProfile(t, noteWriter)
			first, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: "draft", Provider: kept, Store: s, Check: nonEmpty})
			if err != nil {
				t.Fatalf("first run: %v", err)
			}
			env, err := sp.Get(ctx, kept.EnvironmentID())
			if err != nil || env == nil {
				t.Fatalf("looking the kept box up: %v", err)
			}
			from, err := kernel.ContinuableRun(ctx, env, first.NativeSessionID)
			if err != nil {
				t.Fatal(err)
			}
			if tc.destroy {
				if err := kept.Close(ctx); err != nil {
					t.Fatal(err)
				}
			}
			turns, creates := sp.Turns(), sp.Creates()
			res, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: "revise", Provider: sp, Store: s, Check: nonEmpty,
				Continue: &kernel.Continue{Environment: tc.box(env), Run: from, NativeSessionID: first.NativeSessionID}})
			if tc.live {
				if err != nil || res.Text != "re: revise" || res.Continuity != kernel.ContinuityNative || res.EnvironmentID != first.EnvironmentID {
					t.Fatalf("continuing the live box: %+v, %v; want the same session continued", res, err)
				}
				if sp.Counters().NativeContinuations != 1 || sp.Creates() != creates {
					t.Errorf("native continuations %d, creates %d→%d", sp.Counters().NativeContinuations, creates, sp.Creates())
				}
				return
			}
			var ce *kernel.ContinuityError
			if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tc.why) {
				t.Fatalf("resuming into a box that is not verified live: %v; want a *kernel.ContinuityError saying %q", err, tc.why)
			}
			if res.Status != store.StatusFailed || res.Reason != kernel.ReasonRefused || res.Usage != ledger.NoUsage() {
				t.Errorf("recorded %s/%s usage %+v; want failed/refused with nothing spent", res.Status, res.Reason, res.Usage)
			}
			if sp.Turns() != turns || sp.Counters().NativeContinuations != 0 || sp.Creates() != creates {
				t.Errorf("the refused run dispatched or created something (turns %d→%d, continuations %d, creates %d→%d)",
					turns, sp.Turns(), sp.Counters().NativeContinuations, creates, sp.Creates())
			}
		})
	}
}
