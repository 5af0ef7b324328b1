package retained_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// NSO-02 for a detached run: the run record of a retained run names the
// provider's own conversation id under the run's execution id as soon as
// the dispatched session reports it — the record, not the run's public
// events, which never carry the observation (NSO-03). A record written
// before the provider reported it (or by an older agentrt) is bound by
// the next process that attaches. On SQLite and PostgreSQL.
func TestRetainedRecordBindsTheNativeSessionNSO02(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := scripted.New(script(0), scripted.Options{})
		st := open(t)
		run := finished(t, ctx, p, st, "key-native")
		ref := run.ControlRef()
		want := &retained.NativeRecord{ExecutionID: ref.Run.ExecutionID, Provider: p.Name(), NativeSessionID: ref.Run.SessionID}
		rec, err := retained.Load(ctx, open(t), ref.Record)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, rec.Native); diff != "" {
			t.Errorf("native session on the record (-want +got):\n%s", diff)
		}
		evs, err := collect(t, ctx, run, retained.Cursor{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Event.Type == contract.EventTypeNativeSessionObserved {
				t.Errorf("event %d is the private native observation", ev.Sequence)
			}
		}

		// A record that does not name it yet is bound on attach.
		if _, err := st.UpdateRun(ctx, ref.Record, func(r *store.Run) error {
			r.Doc = r.Doc.Without("native")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if rec, err := retained.Load(ctx, st, ref.Record); err != nil || rec.Native != nil {
			t.Fatalf("record %+v (%v); want it without its native session", rec, err)
		}
		other := open(t)
		if _, err := retained.Attach(context.WithoutCancel(ctx), p.Reconnect(), other, ref.Record); err != nil {
			t.Fatal(err)
		}
		rec, err = retained.Load(ctx, other, ref.Record)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, rec.Native); diff != "" {
			t.Errorf("native session bound on attach (-want +got):\n%s", diff)
		}
	})
}
