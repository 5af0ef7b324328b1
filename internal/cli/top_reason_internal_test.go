package cli

import (
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// TestJournalTextKeepsAMultilineReasonOnItsLine: a settlement's reason
// can be a check command's several lines of stderr; top's log shows it
// on the record's one line, its words as they were, as supervise's
// progress line does — not as escaped "\n"s.
func TestJournalTextKeepsAMultilineReasonOnItsLine(t *testing.T) {
	for _, tc := range []struct {
		r    supervise.Record
		want string
	}{
		{supervise.Record{Kind: supervise.KindSettled, Node: "run1:s1", State: "failed", Reason: "first problem\nsecond problem\r\n\tthird"},
			"settled     run1:s1 failed (first problem second problem third)"},
		{supervise.Record{Kind: supervise.KindFinished, Outcome: "no-winner", Reason: "all-children-down:\nrun1:s1 failed"},
			"finished    no-winner (all-children-down: run1:s1 failed)"},
	} {
		if got := journalText(tc.r); got != tc.want {
			t.Errorf("journalText(%s) = %q, want %q", tc.r.Kind, got, tc.want)
		}
	}
}
