package cli

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// `runs list` summarises every kind of run record the runtime writes: a
// seated run and a runtime run were "(unreadable record)" because they
// were read as an exact run's record.
func TestRunsListSummarisesEveryRecordKind(t *testing.T) {
	doc := func(v any) canonjson.Value {
		t.Helper()
		d, err := canonjson.ToValue(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name string
		run  store.Run
		want string
	}{
		{"seated", store.Run{Kind: kernel.KindSeated, Doc: doc(kernel.SeatedRecord{Task: "write a note", Stages: []kernel.StageAttempt{
			{Stage: 0, Outcome: kernel.StageQuotaRefused}, {Stage: 1, Outcome: kernel.StageCompleted}}})},
			`"write a note", 2 stage(s), stage 1 completed`},
		{"runtime", store.Run{Kind: kernel.KindRuntime, Doc: doc(kernel.RuntimeRecord{TaskID: "nightly-report", ResultSummary: "3 files changed"})},
			`task nightly-report, "3 files changed"`},
		{"exact", store.Run{Kind: "execute", Doc: doc(kernel.Record{Task: "write a note", Delivered: new(true)})},
			`"write a note", delivered`},
		{"not a record", store.Run{Kind: kernel.KindSeated, Doc: canonjson.StringValue("nonsense")}, "(unreadable record)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summary(tt.run); got != tt.want {
				t.Errorf("summary = %q, want %q", got, tt.want)
			}
		})
	}
}
