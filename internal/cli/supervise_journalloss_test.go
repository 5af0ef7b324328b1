package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// Task H2 point 2: a run whose winner its journal could not fully hold
// (spec §3.6: the journal is the run's durable truth; §13: settlement
// is not delivery). The result is still shown — it is what the process
// observed — but not as a plain winner: the text says the journal lost
// it, --json carries the loss as a member of its own (the command then
// exits non-zero, supervise.go's journalIncomplete).
func TestSupervisedWinnerTheJournalLostIsNotAPlainWinner(t *testing.T) {
	res := supervise.SupervisedResult{RunID: "sup-1", Status: supervise.StatusWinner,
		Winner: &supervise.Winner{Node: "sup-1:s2", Text: "Done: the note."}}
	loss := &supervise.JournalLossError{Count: 2, Lost: []supervise.LostRecord{{Kind: supervise.KindSettled, Node: "sup-1:s2"}, {Kind: "finished"}},
		Err: errors.New("supervise: journal append: disk full")}
	var text strings.Builder
	printSupervisedLost(&text, res, "/runs/sup-1", loss)
	first, _, _ := strings.Cut(text.String(), "\n")
	if want := "supervised run sup-1  winner sup-1:s2 NOT RECORDED: its journal lost 2 record(s) (settled of sup-1:s2, finished)"; first != want {
		t.Errorf("first line %q, want %q", first, want)
	}
	v := journalLossValue(supervisedValue(res, "/runs/sup-1"), loss)
	jl, ok := v.Get("journalIncomplete")
	if !ok {
		t.Fatalf("--json has no journalIncomplete member: %v", v)
	}
	if n, _ := jl.Get("count"); n.Float() != 2 {
		t.Errorf("journalIncomplete.count = %v, want 2", n)
	}
	if lost, _ := jl.Get("lost"); lost.Len() != 2 {
		t.Errorf("journalIncomplete.lost = %v, want 2 records", lost)
	}
	if msg, _ := jl.Get("error"); !strings.Contains(msg.Str(), "disk full") {
		t.Errorf("journalIncomplete.error = %v, want the append's failure", msg)
	}
	// A complete run says nothing of the kind.
	whole := journalLossValue(supervisedValue(res, "/runs/sup-1"), nil)
	if _, ok := whole.Get("journalIncomplete"); ok {
		t.Errorf("a complete run's --json has journalIncomplete: %v", whole)
	}
	var plain strings.Builder
	printSupervisedLost(&plain, res, "/runs/sup-1", nil)
	if !strings.HasPrefix(plain.String(), "supervised run sup-1  winner sup-1:s2\n") {
		t.Errorf("a complete run's text: %q", plain.String())
	}
}
