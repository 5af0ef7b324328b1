package graph

import (
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// analysisSource reads back the source worker of an analyst node's
// task, so a resumed analysis routes its findings with the worker it
// analysed; a task that is not one reads back "".
func TestAnalysisSourceReadsTheTaskBack(t *testing.T) {
	for _, tc := range []struct {
		name, directive, task string
		want                  supervise.NodeID
	}{
		{name: "composed", directive: "Review it.", task: compose("Review it.", analysisPayload("coder", "g:s1", "patch: x (worker y):\nz")), want: "g:s1"},
		{name: "no directive text", task: analysisPayload("coder", "run-7:s12", ""), want: "run-7:s12"},
		{name: "another directive", directive: "Review it.", task: compose("Look.", analysisPayload("coder", "g:s1", "out")), want: ""},
		{name: "not an analysis", directive: "Review it.", task: "Review it.\n\nFix test_login.", want: ""},
		{name: "no worker", task: "Output of node coder:\nout", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := analysisSource(tc.directive, tc.task); got != tc.want {
				t.Errorf("analysisSource = %q, want %q", got, tc.want)
			}
		})
	}
}
