package retained_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// finished starts a run on p and waits for its end.
func finished(t *testing.T, ctx context.Context, p contract.Provider, s store.Store, key string) *retained.Run {
	t.Helper()
	run, err := retained.StartRetainedRun(ctx, startOptions(p, s, key, "turn-1", (&recorder{}).hook))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	return run
}

// Behaviour 59: events(after) yields only sequences after after.Sequence,
// numbered 1, 2, 3… by position when the provider sends none; the anchor
// is checked before anything is skipped, and a gap, a changed anchor or a
// malformed cursor is an error, never a silent skip.
func TestEventsYieldOnlyAfterTheAnchorWithContiguousSequencesBehaviour59(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		run := finished(t, ctx, scripted.New(script(0), scripted.Options{}), open(t), "key-59")
		all, err := collect(t, ctx, run, retained.Cursor{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) < 3 {
			t.Fatalf("%d events, want at least 3", len(all))
		}
		for i, ev := range all {
			if ev.Sequence != int64(i+1) || ev.Cursor == "" || ev.Cursor != *ev.Event.ID {
				t.Fatalf("event %d: sequence %d cursor %q", i, ev.Sequence, ev.Cursor)
			}
		}
		last := all[len(all)-1]
		for _, tc := range []struct {
			name    string
			after   retained.Cursor
			want    []int64
			wantErr bool
		}{
			{name: "start", after: retained.Cursor{}, want: seqs(1, len(all))},
			{name: "after 2", after: all[1].After(), want: seqs(3, len(all))},
			{name: "after the last", after: last.After(), want: nil},
			{name: "changed anchor", after: retained.Cursor{Cursor: all[0].Cursor, Sequence: 2}, wantErr: true},
			{name: "anchor past the end", after: retained.Cursor{Cursor: last.Cursor, Sequence: last.Sequence + 5}, wantErr: true},
			{name: "sequence without cursor", after: retained.Cursor{Sequence: 2}, wantErr: true},
			{name: "cursor without sequence", after: retained.Cursor{Cursor: all[0].Cursor}, wantErr: true},
			{name: "negative sequence", after: retained.Cursor{Cursor: "x", Sequence: -1}, wantErr: true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := collect(t, ctx, run, tc.after)
				if tc.wantErr {
					if !errors.Is(err, retained.ErrReplay) || len(got) != 0 {
						t.Fatalf("got %d events and %v, want a replay error and nothing", len(got), err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				var gotSeqs []int64
				for _, ev := range got {
					gotSeqs = append(gotSeqs, ev.Sequence)
				}
				if diff := cmp.Diff(tc.want, gotSeqs); diff != "" {
					t.Fatalf("sequences (-want +got):\n%s", diff)
				}
			})
		}
	})
}

func seqs(from, to int) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, int64(i))
	}
	return out
}

// Behaviour 59: an event without an id, or repeating one, cannot be
// anchored; the stream ends with a replay error at its position.
func TestEventsRefuseEventsWithoutIdentityBehaviour59(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alter func(i int, ev *contract.EnvironmentEvent)
	}{
		{"missing id", func(i int, ev *contract.EnvironmentEvent) {
			if i == 1 {
				ev.ID = nil
			}
		}},
		{"repeated id", func(i int, ev *contract.EnvironmentEvent) {
			if i == 1 {
				ev.ID = ptr("same")
			}
			if i == 0 {
				ev.ID = ptr("same")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
				ctx := testCtx(t)
				w := &wrapped{Provider: scripted.New(script(0), scripted.Options{})}
				w.events = func(in iter.Seq2[contract.EnvironmentEvent, error]) iter.Seq2[contract.EnvironmentEvent, error] {
					return func(yield func(contract.EnvironmentEvent, error) bool) {
						i := 0
						for ev, err := range in {
							tc.alter(i, &ev)
							i++
							if !yield(ev, err) {
								return
							}
						}
					}
				}
				run := finished(t, ctx, w, open(t), "key-ids")
				got, err := collect(t, ctx, run, retained.Cursor{})
				var re *retained.ReplayError
				if !errors.As(err, &re) || re.Sequence != 2 || len(got) != 1 {
					t.Fatalf("got %d events and %v, want one event then a replay error at 2", len(got), err)
				}
			})
		})
	}
}

// Behaviour 60: a retained cancel with the same operation id twice is
// accepted then replayed, and the provider applies the effect once; the
// same id from a re-attached handle in another store connection is
// replayed too; a different request under the id is a conflict that never
// reaches the provider.
func TestCancelSameOperationTwiceIsReplayedAndAppliedOnceBehaviour60(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		w := &wrapped{Provider: scripted.New(script(time.Minute), scripted.Options{})}
		run, err := retained.StartRetainedRun(ctx, startOptions(w, open(t), "key-60", "turn-1", (&recorder{}).hook))
		if err != nil {
			t.Fatal(err)
		}
		first, err := run.Cancel(ctx, retained.CancelRequest{OperationID: "op-1", Reason: ptr("no longer needed")})
		if err != nil {
			t.Fatal(err)
		}
		if first.Status != contract.StatusAccepted || first.Effect != contract.EffectCancelRequested {
			t.Fatalf("first cancel %+v", first)
		}
		second, err := run.Cancel(ctx, retained.CancelRequest{OperationID: "op-1", Reason: ptr("no longer needed")})
		if err != nil {
			t.Fatal(err)
		}
		if second.Status != contract.StatusReplayed || second.Effect != first.Effect || second.RequestDigest != first.RequestDigest {
			t.Fatalf("second cancel %+v, want replayed with the first's effect and digest", second)
		}
		elsewhere, err := retained.ReconnectRetainedRun(ctx, retained.ReconnectOptions{Provider: &wrapped{Provider: w.Reconnect()}, Store: open(t), Ref: run.ControlRef()})
		if err != nil {
			t.Fatal(err)
		}
		res, err := elsewhere.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Success {
			t.Fatalf("a cancelled run succeeded: %+v", res)
		}
		third, err := elsewhere.Cancel(ctx, retained.CancelRequest{OperationID: "op-1", Reason: ptr("no longer needed")})
		if err != nil || third.Status != contract.StatusReplayed || third.Effect != first.Effect {
			t.Fatalf("cancel from another process: %+v, %v", third, err)
		}
		if third.Snapshot.Status == nil || *third.Snapshot.Status != contract.SessionCancelled {
			t.Fatalf("snapshot after the cancel: %+v", third.Snapshot)
		}
		conflict, err := run.Cancel(ctx, retained.CancelRequest{OperationID: "op-1", Reason: ptr("another reason")})
		if err != nil {
			t.Fatal(err)
		}
		if conflict.Status != contract.StatusConflict || conflict.Effect != contract.EffectUnknown ||
			conflict.ExistingRequestDigest == nil || *conflict.ExistingRequestDigest != first.RequestDigest {
			t.Fatalf("conflicting cancel %+v", conflict)
		}
		if diff := cmp.Diff([]string{contract.StatusAccepted, contract.StatusReplayed}, w.acks()); diff != "" {
			t.Fatalf("acknowledgements the provider gave through the first client (-want +got):\n%s", diff)
		}
		rec, err := retained.Load(ctx, open(t), run.ControlRef().Record)
		if err != nil || rec.Status != store.StatusCancelled {
			t.Fatalf("record %+v, %v; want cancelled", rec, err)
		}
	})
}

// Cancel is refused, not guessed, without a durable cancellation
// contract; the answer to an interaction is refused without interactions.
func TestCancelWithoutDurableCancellationIsRefused(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		w := &wrapped{Provider: scripted.New(script(0), scripted.Options{}), noCancel: true}
		run := finished(t, ctx, w, open(t), "key-nocancel")
		if _, err := run.Cancel(ctx, retained.CancelRequest{OperationID: "op"}); !errors.Is(err, retained.ErrNoCancellation) {
			t.Fatalf("cancel: %v, want ErrNoCancellation", err)
		}
		if _, err := run.RespondToInteraction(ctx, &contract.InteractionResponseCommand{}); !errors.Is(err, retained.ErrNoInteractions) {
			t.Fatalf("respond: %v, want ErrNoInteractions", err)
		}
	})
}

// Status reports the provider's status and records a terminal one.
func TestStatusReportsAndRecordsTheEnd(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		s := open(t)
		run := finished(t, ctx, scripted.New(script(0), scripted.Options{}), s, "key-status")
		snap, err := run.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Status == nil || *snap.Status != contract.SessionCompleted || snap.RunID != run.ControlRef().Record || snap.ObservedAt.IsZero() {
			t.Fatalf("snapshot %+v", snap)
		}
	})
}

// StartRetainedRunInEnvironment starts a fresh session in an environment
// whose retained key the provider's metadata proves; another key is
// refused before any dispatch.
func TestStartInEnvironmentVerifiesTheRetainedKey(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := scripted.New(script(0), scripted.Options{})
		first := finished(t, ctx, p, open(t), "key-env")
		envID := first.ControlRef().Run.EnvironmentID
		rec := &recorder{}
		o := retained.InEnvironmentOptions{Provider: p.Reconnect(), Store: open(t), EnvironmentID: envID, IdempotencyKey: "key-env",
			Turn: contract.TurnInput{TurnID: ptr("turn-2"), Prompt: ptr("the next job")}, OnAdmission: rec.hook}
		run, err := retained.StartRetainedRunInEnvironment(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		ref := run.ControlRef().Run
		if ref.EnvironmentID != envID || ref.SessionID == first.ControlRef().Run.SessionID {
			t.Fatalf("control ref %+v: want environment %s and a fresh session", ref, envID)
		}
		if res, err := run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
		if got := rec.seen[0].Intent.ExistingEnvironmentID; got == nil || *got != envID {
			t.Fatalf("intent %+v does not name the existing environment", rec.seen[0].Intent)
		}
		turns := p.Turns()
		o.IdempotencyKey, o.Turn.TurnID = "another-key", ptr("turn-3")
		if _, err := retained.StartRetainedRunInEnvironment(ctx, o); !errors.Is(err, retained.ErrMismatch) || p.Turns() != turns {
			t.Fatalf("another key: %v with %d new turns, want a mismatch and none", err, p.Turns()-turns)
		}
	})
}

// failingUpdates is a run store whose document updates fail: the
// environment record can never become durable.
type failingUpdates struct{ store.Store }

func (f failingUpdates) UpdateRun(ctx context.Context, id string, fn func(*store.Run) error) (store.Run, error) {
	return store.Run{}, errors.New("the disk is full")
}

// An environment this start created whose record cannot be written is
// unused: it is destroyed, and nothing was dispatched to it.
func TestUnrecordedEnvironmentIsCleanedUp(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := &wrapped{Provider: scripted.New(script(0), scripted.Options{})}
		_, err := retained.StartRetainedRun(ctx, startOptions(p, failingUpdates{open(t)}, "key-unused", "turn-1", (&recorder{}).hook))
		if err == nil {
			t.Fatal("the start succeeded without its environment record")
		}
		if len(p.created) != 1 || p.Turns() != 0 {
			t.Fatalf("environments %v, %d turns: want one environment, no turn", p.created, p.Turns())
		}
		if env, err := p.Get(ctx, p.created[0]); err != nil || env != nil {
			t.Fatalf("environment %s was left behind (%v)", p.created[0], err)
		}
	})
}

// A dispatch whose answer is lost keeps the environment (the turn may be
// running) and the start fails; recovery with the admitted turn finds the
// same run through turn idempotency, dispatched once.
func TestLostDispatchAnswerKeepsTheEnvironmentAndRecovers(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		w := &wrapped{Provider: scripted.New(script(0), scripted.Options{}), dispatchErr: errors.New("connection reset")}
		o := startOptions(w, open(t), "key-lost", "turn-1", (&recorder{}).hook)
		if _, err := retained.StartRetainedRun(ctx, o); err == nil {
			t.Fatal("the start succeeded although the dispatch answer was lost")
		}
		_, recID, _ := retained.DeriveIdentity("key-lost", "turn-1")
		rec, err := retained.Load(ctx, open(t), recID)
		if err != nil || rec.Environment == nil || rec.Dispatched != nil {
			t.Fatalf("record %+v, %v: want the environment admitted and no dispatch recorded", rec, err)
		}
		if env, err := w.Get(ctx, rec.Environment.EnvironmentID); err != nil || env == nil {
			t.Fatalf("the environment was not kept: %v", err)
		}
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: w.Reconnect(), Store: open(t), RunID: recID, Turn: &o.Turn})
		if err != nil || got.Outcome != retained.Recovered {
			t.Fatalf("recovery %+v, %v", got, err)
		}
		if w.Turns() != 1 {
			t.Fatalf("%d turns dispatched, want 1", w.Turns())
		}
		if res, err := got.Run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
	})
}

// Unknown stays unknown: a cancellation whose answer is lost is reported
// unknown (with the error), never as accepted; a status the provider
// cannot tell is nil, never a guess, and the record is not settled.
func TestUnknownOutcomesStayUnknown(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		w := &wrapped{Provider: scripted.New(script(time.Minute), scripted.Options{}),
			cancelErr: errors.New("connection reset"), statusUnknown: true}
		s := open(t)
		run, err := retained.StartRetainedRun(ctx, startOptions(w, s, "key-unknown", "turn-1", (&recorder{}).hook))
		if err != nil {
			t.Fatal(err)
		}
		out, err := run.Cancel(ctx, retained.CancelRequest{OperationID: "op-lost"})
		if err == nil || out.Status != contract.StatusUnknown || out.Effect != contract.EffectUnknown || out.Message == nil {
			t.Fatalf("lost cancellation: %+v, %v; want unknown with an error", out, err)
		}
		snap, err := run.Status(ctx)
		if err != nil || snap.Status != nil || snap.Reason == "" {
			t.Fatalf("unknown status: %+v, %v", snap, err)
		}
		rec, err := retained.Load(ctx, s, run.ControlRef().Record)
		if err != nil || rec.Status != store.StatusRunning {
			t.Fatalf("record %+v, %v: want still running", rec, err)
		}
		// The answer was lost, not the binding: the same request reaches
		// the provider again once it answers.
		w.cancelErr = nil
		again, err := run.Cancel(ctx, retained.CancelRequest{OperationID: "op-lost"})
		if err != nil || again.Status != contract.StatusAccepted || again.RequestDigest != out.RequestDigest {
			t.Fatalf("retried cancellation: %+v, %v", again, err)
		}
	})
}

const askScript = `{"turns":[{"repeat":true,"steps":[
 {"text":"Which colour? "},
 {"interaction":{"request":{"id":"colour","kind":"question","title":"Which colour?",
  "answerSpec":{"fields":[{"type":"select","name":"colour","label":"Colour","required":true,"options":[{"value":"red","label":"Red"}]}]}}}},
 {"text":"red it is"}]}]}`

// FD-08: a run waiting on a question outlives its starter; the handle
// re-attached from a new store connection sees the question, answers it,
// and follows the run to its result.
func TestReattachedHandleAnswersTheRunsInteraction(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		sc, err := scripted.ParseScript([]byte(askScript))
		if err != nil {
			t.Fatal(err)
		}
		p := scripted.New(sc, scripted.Options{})
		starter, err := retained.StartRetainedRun(ctx, startOptions(p, open(t), "key-ask", "turn-1", (&recorder{}).hook))
		if err != nil {
			t.Fatal(err)
		}
		ticket := starter.ControlRef()
		starter = nil

		run, err := retained.ReconnectRetainedRun(ctx, retained.ReconnectOptions{Provider: p.Reconnect(), Store: open(t), Ref: ticket})
		if err != nil {
			t.Fatal(err)
		}
		answered, text := false, ""
		for ev, err := range run.Events(ctx, retained.Cursor{}) {
			if err != nil {
				t.Fatal(err)
			}
			if n := ev.Event.Normalized; n != nil && n.Interaction != nil && !answered {
				req := n.Interaction.Request
				cmd, err := contract.NewInteractionResponseCommand("answer-1", req.ResponseBinding(),
					contract.InteractionResponse{ID: req.ID, Outcome: contract.InteractionOutcomeAccepted, Data: contract.InteractionData{"colour": contract.ChoiceAnswer("red")}})
				if err != nil {
					t.Fatal(err)
				}
				ack, err := run.RespondToInteraction(ctx, cmd)
				if err != nil || ack.Status != contract.InteractionAckAccepted {
					t.Fatalf("answer: %+v, %v", ack, err)
				}
				answered = true
			}
			if d, ok := ev.Event.Data["delta"]; ok {
				text += d.Str()
			}
		}
		res, err := run.Result(ctx)
		if err != nil || !answered || !res.Success || !strings.Contains(res.Text, "red it is") {
			t.Fatalf("answered %v, result %+v, %v (streamed %q)", answered, res, err, text)
		}
	})
}
