package supervise_test

import (
	"testing"
)

// JR19 (a), behaviour 46 over §3.6 ("payload conflict fails closed";
// "metered (driver own inference ...)"): a manager's spend journaled
// under a node the journal never spawned — a metered record, or a
// transcript record carrying a model turn's spend — belongs to no
// manager the run had. Replayed, it was charged to a view of that
// phantom node, which never settles: the spend vanished from the
// resumed run's spentTotal while the run claimed its tokens known. It
// is refused with a *ResumeError naming the journal's place, in every
// home alike.
func TestJR19SpendOfANodeNeverSpawnedIsRefused(t *testing.T) {
	rows := map[string]string{
		"metered":    `{"kind":"metered","node":"run1:s99","spent":{"tokens":500,"iterations":0,"microUsd":500}}`,
		"transcript": `{"kind":"transcript","node":"run1:s99","messages":[{"role":"assistant","content":"hi"}],"spent":{"tokens":500,"iterations":0,"microUsd":500}}`,
	}
	for hname, mk := range tamperedJournals(t) {
		for name, row := range rows {
			t.Run(hname+"/"+name, func(t *testing.T) {
				j := mk(t)
				res, _, _, err := jr19Resume(t, j, false, func(rows []string) []string {
					return append(withoutFinished(rows), row)
				})
				if err == nil {
					t.Fatalf("the resume returned %s, spent %+v; want a *supervise.ResumeError naming %s", res.Status, res.Spent, j.where)
				}
				refusedAt(t, err, j.where)
			})
		}
	}
}
