package kernel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
)

// NSO-02 through a kept environment: a provider that reports its native
// session only to the turn's owner (contract.OwnedStreamer, as the
// scripted provider does) still has it recorded on every run of the
// conversation, as it is on a run without a keeper.
func TestKeptEnvironmentRecordsOwnedNativeSession(t *testing.T) {
	prov := scripted.New(mustScript(t, `{"turns": [{"repeat": true, "steps": [{"text": "ok"}]}]}`), scripted.Options{})
	st := memory.New(nil)
	p := mustProfile(t, noteWriter)
	alone, err := kernel.Execute(context.Background(), kernel.Request{Profile: p, Task: "one", Provider: prov, Store: st, RunID: "alone"})
	if err != nil {
		t.Fatal(err)
	}
	if alone.NativeSessionID == "" {
		t.Fatal("without a keeper the scripted run records no native session; the test's premise is wrong")
	}
	kept := kernel.KeepEnvironment(prov)
	defer kept.Close(context.Background())
	for _, id := range []string{"turn1", "turn2"} {
		res, err := kernel.Execute(context.Background(), kernel.Request{Profile: p, Task: id, Provider: kept, Store: st, RunID: id})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.NativeSessionID, "-session-") {
			t.Errorf("run %s in the kept environment records native session %q, want the provider's", id, res.NativeSessionID)
		}
	}
}
