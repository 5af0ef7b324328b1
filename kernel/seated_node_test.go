package kernel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/storetest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// stageNodes is the node of every stage a seated record names.
func stageNodes(rec *kernel.SeatedRecord) []string {
	var out []string
	for _, at := range rec.Stages {
		out = append(out, at.Node)
	}
	return out
}

// RG-11 (logical node): a standalone seated run is a logical node whose
// id is derived from the run id alone (kernel.SeatedNode), recorded for
// the run and for every stage it tried; a caller's node (a supervised
// worker's) is recorded instead. A quota refusal moves the run on as the
// same node. On the memory store and the SQL stores, read back through a
// second handle.
func TestSeatedRunIsOneLogicalNodeRG11(t *testing.T) {
	run := func(t *testing.T, st, reader store.Store) {
		for _, tc := range []struct{ name, node, want string }{
			{"standalone", "", kernel.SeatedNode("solo-1")},
			{"the caller's node", "run7:s2", "run7:s2"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				id := "solo-1"
				if tc.node != "" {
					id = "worker-1"
				}
				first, second := newSeatProvider(t, "scripted/first", true), newSeatProvider(t, "scripted/second", false)
				accounts := &chain{providers: []contract.Provider{first, second}}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Node: tc.node, Request: kernel.Request{
					Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, Check: nonEmpty, RunID: id}})
				if err != nil || len(res.Stages) != 2 {
					t.Fatalf("ExecuteSeated: %+v, %v", res, err)
				}
				rec, err := kernel.ReadRun(context.Background(), reader, id)
				if err != nil || rec.Seated == nil {
					t.Fatalf("record %+v (%v)", rec, err)
				}
				if rec.Seated.Node != tc.want {
					t.Errorf("the run is node %q; want %q", rec.Seated.Node, tc.want)
				}
				if diff := cmp.Diff([]string{tc.want, tc.want}, stageNodes(rec.Seated)); diff != "" {
					t.Errorf("each stage's node (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(rec.Seated.Stages, res.Stages); diff != "" {
					t.Errorf("the result's stages and the record's differ (-record +result):\n%s", diff)
				}
			})
		}
	}
	t.Run("memory", func(t *testing.T) {
		st := memory.New(nil)
		run(t, st, st)
	})
	storetest.Each(t, func(t *testing.T, open func(t *testing.T) store.Store) { run(t, open(t), open(t)) })
}

// RG-11 (logical node) across a resumption: a resumed seated run goes on
// as the node the interrupted run recorded — its stages, old and new,
// name it — and a caller asking to resume it as another node is refused
// before anything runs. A record from before nodes were recorded goes on
// as the node derived from the interrupted run's id.
func TestResumeSeatedKeepsTheLogicalNodeRG11(t *testing.T) {
	prof := mustProfile(t, seatWriter)
	for _, tc := range []struct{ name, recorded, want string }{
		{"recorded node", "run3:s9", "run3:s9"},
		{"record without a node", "", kernel.SeatedNode("died")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := memory.New(nil)
			interruptedSeated(t, st, "died", prof, time.Now().Add(time.Hour))
			if tc.recorded != "" {
				setRecordedNode(t, st, "died", tc.recorded)
			}
			second := spyOn(t, "scripted/second", false)
			accounts := &chain{providers: []contract.Provider{nil, second}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := kernel.ResumeSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Node: "another-node", Request: kernel.Request{
				Profile: prof, Task: "write a note", Store: st, Check: nonEmpty, RunID: "died"}})
			if oe, ok := errors.AsType[*kernel.OptionsError](err); !ok || oe.Field != "Node" {
				t.Fatalf("resuming as another node: %v; want an *OptionsError naming Node", err)
			}
			if calls, _ := second.seen(); calls != 0 {
				t.Fatalf("the refused resumption called stage 1's provider %d times", calls)
			}
			res, err := kernel.ResumeSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
				Profile: prof, Task: "write a note", Store: st, Check: nonEmpty, RunID: "died"}})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := kernel.ReadRun(context.Background(), st, res.RunID)
			if err != nil || rec.Seated == nil || rec.Seated.ResumeOf != "died" {
				t.Fatalf("resumed record %+v (%v)", rec, err)
			}
			if rec.Seated.Node != tc.want {
				t.Errorf("the resumed run is node %q; want %q", rec.Seated.Node, tc.want)
			}
			// Stage 0 was recorded by the interrupted run (without a
			// node in the helper's record); stage 1 ran on resume.
			if n := len(rec.Seated.Stages); n != 2 || rec.Seated.Stages[1].Node != tc.want || rec.Seated.Stages[1].Outcome != kernel.StageCompleted {
				t.Errorf("resumed stages %+v; want stage 1 completed as node %q", rec.Seated.Stages, tc.want)
			}
		})
	}
}

// setRecordedNode rewrites the seated record id to name node, as a run
// recorded with one does.
func setRecordedNode(t *testing.T, st store.Store, id, node string) {
	t.Helper()
	if _, err := st.UpdateRun(context.Background(), id, func(r *store.Run) error {
		rec, err := kernel.DecodeSeatedRecord(r.Doc)
		if err != nil {
			return err
		}
		rec.Node = node
		for i := range rec.Stages {
			rec.Stages[i].Node = node
		}
		r.Doc, err = canonjson.ToValue(rec)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// SeatedRequest.FreshTask: a stage that starts a fresh session after the
// chain moved on to it is sent FreshTask (a caller's whole conversation),
// while the stage the walk starts at is sent Task; the stage's record
// says which task it ran.
func TestSeatedFreshStageIsSentFreshTask(t *testing.T) {
	echo := func(name string) contract.Provider {
		return scripted.New(mustScript(t, `{"turns":[{"repeat":true,"steps":[{"text":"echo: {{prompt}}"}]}]}`), scripted.Options{Name: name})
	}
	first := &seatProvider{Provider: echo("first"), quota: true}
	accounts := &chain{providers: []contract.Provider{first, echo("second")}}
	st := memory.New(nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, FreshTask: "the conversation so far, then: two",
		Request: kernel.Request{Profile: mustProfile(t, seatWriter), Task: "two", Store: st, Check: nonEmpty, RunID: "fresh-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Final == nil || res.Final.Text != "echo: the conversation so far, then: two" || res.Stages[1].Continuity != kernel.ContinuityFresh {
		t.Fatalf("final %+v, stages %+v; want stage 1 fresh, sent the fresh task", res.Final, res.Stages)
	}
	rec, err := kernel.ReadRun(context.Background(), st, "fresh-1.stage-1")
	if err != nil || rec.Exact == nil || rec.Exact.Task != "the conversation so far, then: two" {
		t.Errorf("stage 1's record %+v (%v); want it to name the task it ran", rec.Exact, err)
	}
}
