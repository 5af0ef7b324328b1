package taskstream_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/taskstream"
)

func providerBackend(t *testing.T, script string) *taskstream.ProviderBackend {
	t.Helper()
	p, err := profile.Parse([]byte(`{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scripted.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return &taskstream.ProviderBackend{Provider: scripted.New(sc, scripted.Options{}), Profile: p, Store: memory.New(nil)}
}

// FD-01 over a real provider: an exact kernel run's text parts stream as
// text deltas, and its observed usage is one llm_call, unknown cost left
// unknown.
func TestProviderBackendCompletes(t *testing.T) {
	b := providerBackend(t, `{"turns":[{"steps":[{"text":"Shipped "},{"text":"restores."},{"usage":{"inputTokens":12,"outputTokens":4},"mode":"delta"}]}]}`)
	events, err := collect(t, taskstream.Run(context.Background(), taskstream.Options{Task: task, Backend: b}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"task_start", "readiness_start", "readiness_end", "session_created", "backend_start",
		"text_delta", "text_delta", "llm_call", "backend_end", "task_end", "final"}
	if diff := cmp.Diff(want, types(events)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	call := events[7].LLMCall
	if call.Model != "scripted/note-writer" || *call.TokensIn != 12 || *call.TokensOut != 4 || !call.TokensKnown || call.USDKnown || call.CostUSD != nil {
		t.Errorf("llm_call %+v", call)
	}
	if f := events[10]; f.Status != taskstream.StatusCompleted || f.Text != "Shipped restores." {
		t.Errorf("final %+v", f)
	}
}

// A turn that fails in band is the backend's failure: never an empty
// success.
func TestProviderBackendInBandFailure(t *testing.T) {
	b := providerBackend(t, `{"turns":[{"steps":[{"text":"Ship"}],"end":"failed","error":"model overloaded"}]}`)
	events, err := collect(t, taskstream.Run(context.Background(), taskstream.Options{Task: task, Backend: b}))
	if err != nil {
		t.Fatal(err)
	}
	f := events[len(events)-1]
	if f.Type != taskstream.EventFinal || f.Status != taskstream.StatusFailed || f.Error == nil || f.Error.Kind != taskstream.ErrorKindBackend {
		t.Fatalf("final %+v", f)
	}
	if !strings.Contains(f.Reason, "model overloaded") {
		t.Errorf("reason %q does not say why", f.Reason)
	}
}
