package kernel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
)

// NSO-01, NSO-02, NSO-03: a run on the scripted provider reads the
// owner's stream (contract.OwnedStreamer), so the provider's native
// session observation is bound to the run — its result and its record
// name the session the turn ran in — and never becomes one of the run's
// events.
func TestExecuteBindsScriptedNativeSessionNSO02(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := memory.New(nil)
	p := scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"done"}]}]}`), scripted.Options{})
	res, err := kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, `{"name":"w","harness":"cli-base","model":{"provider":"scripted","default":"scripted/m"}}`),
		Task: "go", Provider: p, Store: st, RunID: "native-1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.NativeSessionID == "" || !strings.HasPrefix(res.NativeSessionID, res.EnvironmentID+"-session-") {
		t.Fatalf("native session %q; want the session of environment %s", res.NativeSessionID, res.EnvironmentID)
	}
	run, err := st.GetRun(ctx, "native-1")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := kernel.DecodeRecord(run.Doc)
	if err != nil {
		t.Fatal(err)
	}
	if rec.NativeSessionID != res.NativeSessionID {
		t.Errorf("the record names native session %q, the result %q", rec.NativeSessionID, res.NativeSessionID)
	}
	events, err := st.Events(ctx, "native-1", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Type == contract.EventTypeNativeSessionObserved || strings.Contains(string(canonjson.Marshal(e.Body)), contract.EventTypeNativeSessionObserved) {
			t.Errorf("event %d carries the private observation", e.Sequence)
		}
	}
}
