package supervise_test

import (
	"strings"
	"testing"
)

// JR19 (b), behaviour 46 over §3.6 "payload conflict fails closed": a
// journal holds one run-started record, its first; a second one — here
// naming another run, as a journal mixed from two runs' does — is
// refused with a *ResumeError naming the journal's place and the row,
// in each home alike. Before, the replay passed over it and resumed.
func TestJR19SecondRunStartedIsRefused(t *testing.T) {
	for hname, mk := range tamperedJournals(t) {
		for _, other := range []string{"run2", "run1"} {
			t.Run(hname+"/"+other, func(t *testing.T) {
				j := mk(t)
				_, err, _, _ := jr19Resume(t, j, false, func(rows []string) []string {
					rows = withoutFinished(rows)
					return insertAfter(rows, 2, strings.Replace(rows[0], `"runId":"run1"`, `"runId":"`+other+`"`, 1))
				})
				refusedAt(t, err, j.where)
				if !strings.Contains(err.Error(), "record 4") {
					t.Errorf("the refusal %q does not name the row, record 4", err)
				}
			})
		}
	}
}
