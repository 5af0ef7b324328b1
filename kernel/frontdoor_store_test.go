package kernel_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// Every front door of the kernel reports a run whose terminal write the
// store refused the same way (runtime.md §15 lifecycle: every run ends in
// exactly one terminal state, and one this process could not record reads
// interrupted once its lease lapses, never completed): a *kernel.RunError
// interrupted with ReasonStoreFailed whose cause is a *kernel.StoreError
// of Op "end" for the run — Execute, RunToolLoop, Rounds, a runtime
// run's Complete, ExecuteSeated and ResumeSeated alike. The store is a
// real SQLite database that records everything but the run's end
// (storefault.FailingEnds).
func TestEveryFrontDoorTypesAnUnrecordedEnd(t *testing.T) {
	// Long enough that no renewal is starved out on a loaded 2-CPU
	// machine: with 2 s, the Rounds case's lease once lapsed in CI
	// before its end was written (lease-lost, not store-failed); the
	// wait for the record to read interrupted grows with it.
	const lease = 8 * time.Second
	noteScript := `{"turns":[{"repeat":true,"steps":[{"text":"a note"},{"usage":{"inputTokens":5,"outputTokens":3},"mode":"delta"}]}]}`
	seatScript := `{"servedModel":"scripted/first","turns":[{"repeat":true,"steps":[{"text":"a note from scripted/first"}]}]}`
	seats := func(t *testing.T) kernel.AccountManager {
		p := scripted.New(mustScript(t, seatScript), scripted.Options{})
		return kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil })
	}
	for _, tc := range []struct {
		name string
		// run calls the front door on st under runID and returns its error.
		run func(t *testing.T, ctx context.Context, st store.Store, runID string) error
	}{
		{"Execute", func(t *testing.T, ctx context.Context, st store.Store, runID string) error {
			_, err := kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t",
				Provider: scripted.New(mustScript(t, noteScript), scripted.Options{}), Store: st, Check: nonEmpty, RunID: runID, LeaseTTL: lease})
			return err
		}},
		{"RunToolLoop", func(t *testing.T, ctx context.Context, st store.Store, runID string) error {
			_, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: model(scripted.ChatTurn{Events: []contract.ChatEvent{scripted.Text("done")}}),
				User: "t", Store: st, RunID: runID, LeaseTTL: lease})
			return err
		}},
		{"Rounds", func(t *testing.T, ctx context.Context, st store.Store, runID string) error {
			_, err := kernel.Rounds(ctx, kernel.RoundsOptions[string, string]{
				Task: "t", RunID: runID, LeaseTTL: lease,
				Driver: kernel.Driver[string, string]{
					Plan: func(_ context.Context, _ string, h []kernel.Iteration[string, string]) ([]string, error) {
						if len(h) > 0 {
							return nil, nil
						}
						return []string{"a"}, nil
					},
					Decide: func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
						return kernel.DecisionDone, nil
					},
				},
				Agents:   []kernel.Agent[string]{{Name: "only", Profile: mustProfile(t, noteWriter)}},
				Parse:    parseNote,
				Provider: scripted.InProcess(echo),
				Store:    st,
			})
			return err
		}},
		{"StartRuntimeRun", func(t *testing.T, ctx context.Context, st store.Store, runID string) error {
			run, err := kernel.StartRuntimeRun(ctx, kernel.RuntimeRunOptions{WorkspaceID: "ws", TaskID: "task", RunID: runID, Store: st, LeaseTTL: lease})
			if err != nil {
				t.Fatalf("starting the runtime run: %v", err)
			}
			err = run.Complete(kernel.RuntimeCompletion{Status: store.StatusCompleted})
			if got := run.Status(); got != store.StatusInterrupted {
				t.Errorf("the runtime run says %s after its end went unrecorded; want interrupted", got)
			}
			return err
		}},
		{"ExecuteSeated", func(t *testing.T, ctx context.Context, st store.Store, runID string) error {
			_, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: seats(t), Request: kernel.Request{
				Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, Check: nonEmpty, RunID: runID, LeaseTTL: lease}})
			return err
		}},
		{"ResumeSeated", func(t *testing.T, ctx context.Context, st store.Store, runID string) error {
			// An interrupted seated run that had recorded no stage.
			doc, err := canonjson.ToValue(kernel.SeatedRecord{Task: "write a note", Stages: []kernel.StageAttempt{}})
			if err != nil {
				t.Fatal(err)
			}
			prior := runID + "-prior"
			if _, err := st.CreateRun(ctx, store.Run{ID: prior, Kind: kernel.KindSeated, Status: store.StatusInterrupted, Doc: doc}); err != nil {
				t.Fatalf("recording the interrupted seated run: %v", err)
			}
			_, err = kernel.ResumeSeated(ctx, kernel.SeatedRequest{Accounts: seats(t), Request: kernel.Request{
				Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, Check: nonEmpty, RunID: prior, LeaseTTL: lease}})
			// The resumption is a run of its own.
			if re, ok := errors.AsType[*kernel.RunError](err); ok && re.RunID != prior+".resume-1" {
				t.Errorf("run error names %s; want the resumption %s.resume-1", re.RunID, prior)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			real, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { real.Close() })
			runID := "frontdoor-" + tc.name
			err = tc.run(t, ctx, storefault.FailingEnds(real), runID)
			re, ok := errors.AsType[*kernel.RunError](err)
			if !ok {
				t.Fatalf("err %T %v; want a *kernel.RunError", err, err)
			}
			if re.Status != store.StatusInterrupted || re.Reason != kernel.ReasonStoreFailed {
				t.Errorf("run error %s (%s); want interrupted (%s)", re.Status, re.Reason, kernel.ReasonStoreFailed)
			}
			se, ok := errors.AsType[*kernel.StoreError](err)
			if !ok || se.Op != "end" || se.RunID != re.RunID || !errors.Is(err, storefault.ErrEndRefused) {
				t.Fatalf("err %v; want a *kernel.StoreError of the end of run %s wrapping the store's refusal", err, re.RunID)
			}
			// The store holds no completion: the run's record is running
			// under a lease nobody renews, so it reads interrupted.
			for {
				run, err := real.GetRun(ctx, se.RunID)
				if err != nil {
					t.Fatalf("reading run %s: %v", se.RunID, err)
				}
				if run.Status == store.StatusCompleted {
					t.Fatalf("run %s reads completed although its end was refused", se.RunID)
				}
				if run.Status == store.StatusInterrupted {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("run %s still reads %s", se.RunID, run.Status)
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
	}
}
