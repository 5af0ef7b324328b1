package cli

import (
	"testing"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// A submitted record is the run's when it names no node and a nested
// manager's when it names one (issue 13): the progress and journal lines
// say whose result it is.
func TestSubmittedRecordLines(t *testing.T) {
	passed := &kernel.Verdict{Passed: true}
	tests := []struct {
		name           string
		rec            supervise.Record
		progress, text string
	}{
		{"the run's", supervise.Record{Kind: supervise.KindSubmitted, Verdict: passed},
			"submitted the manager's result: " + deliveryText(true, passed, "", ""),
			"submitted   verdict " + verdictText(passed)},
		{"a nested manager's", supervise.Record{Kind: supervise.KindSubmitted, Node: "run1:s1", Verdict: passed},
			"submitted run1:s1's result: " + deliveryText(true, passed, "", ""),
			"submitted   run1:s1 verdict " + verdictText(passed)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := progressLine(tc.rec); got != tc.progress {
				t.Errorf("progressLine = %q, want %q", got, tc.progress)
			}
			if got := journalText(tc.rec); got != tc.text {
				t.Errorf("journalText = %q, want %q", got, tc.text)
			}
		})
	}
}
