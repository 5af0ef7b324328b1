package supervise_test

import (
	"strings"
	"testing"
)

// JR19 (d), §3.6 "Completion gate (settled ⟺ delivered): valid = check
// resolved exactly true" and behaviour 41: a worker is delivered only
// when its settlement is done with a passing verdict, and its
// settlement record says so together (delivered, verdict). A settled
// record claiming delivered without a passing verdict — or without
// being done — is no run's: replayed, it made a worker whose check
// failed a candidate the finalizer could pick. A resume refuses it with
// a *ResumeError naming the journal's place, in every home alike.
func TestJR19DeliveredWithoutAPassingVerdictIsRefused(t *testing.T) {
	edits := map[string]func([]string) []string{
		"failed-check": func(rows []string) []string {
			i := jrRowOf(rows, "settled", "run1:s2")
			rows[i] = strings.Replace(rows[i], `{"kind":"settled"`, `{"delivered":true,"kind":"settled"`, 1)
			return rows
		},
		"no-verdict": func(rows []string) []string {
			i := jrRowOf(rows, "settled", "run1:s1")
			rows[i] = strings.Replace(rows[i], `,"verdict":{"passed":true}`, ``, 1)
			return rows
		},
		"not-done": func(rows []string) []string {
			i := jrRowOf(rows, "settled", "run1:s1")
			rows[i] = strings.Replace(rows[i], `"state":"done"`, `"state":"failed"`, 1)
			return rows
		},
	}
	for hname, mk := range tamperedJournals(t) {
		for name, edit := range edits {
			t.Run(hname+"/"+name, func(t *testing.T) {
				j := mk(t)
				res, again, _, err := jr19Resume(t, j, false, func(rows []string) []string {
					rows = withoutFinished(rows)
					before := strings.Join(rows, "\n")
					rows = edit(rows)
					if strings.Join(rows, "\n") == before {
						t.Fatal("the edit changed nothing")
					}
					return rows
				})
				if err == nil {
					t.Fatalf("the resume returned %s winner %+v; want a *supervise.ResumeError naming %s", res.Status, res.Winner, j.where)
				}
				refusedAt(t, err, j.where)
				if n := again.count("alpha") + again.count("beta") + again.count("slow"); n != 0 {
					t.Errorf("the refused resume ran %d workers", n)
				}
			})
		}
	}
}
