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
				_, _, _, err := jr19Resume(t, j, false, func(rows []string) []string {
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

// JR19 (a), (b), (d), (e), behaviour 46 over §3.6 ("payload conflict
// fails closed"; ids are <parent>:s<seq>): rows no run could have
// written are refused, never read past, with a *ResumeError naming the
// journal's place — the same refusal from the run dir's file as from a
// SQLite or PostgreSQL store. These held before JR19; they guard the
// one journal contract.
func TestJR19ImpossibleRowsRefusedInEveryHome(t *testing.T) {
	spawn := func(node, parent string) string {
		row := `{"kind":"spawned","node":"` + node + `","profile":"writer","task":"write alpha","reserved":{"iterations":1,"microUsd":100000,"tokens":1000}`
		if parent != "" {
			row += `,"parent":"` + parent + `"`
		}
		return row + "}"
	}
	appended := func(row string) func([]string) []string {
		return func(rows []string) []string { return append(withoutFinished(rows), row) }
	}
	cases := map[string]func([]string) []string{
		"settled-never-spawned": appended(`{"kind":"settled","node":"run1:s99","state":"done","spent":{"tokens":1,"iterations":1,"microUsd":1}}`),
		"settled-twice-otherwise": func(rows []string) []string {
			rows = withoutFinished(rows)
			return insertAfter(rows, jrRowOf(rows, "settled", "run1:s1"), `{"kind":"settled","node":"run1:s1","state":"failed","reason":"boom","spent":{"iterations":1,"microUsd":2000,"tokens":120}}`)
		},
		"settled-before-spawned": func(rows []string) []string {
			rows = withoutFinished(rows)
			i, j := jrRowOf(rows, "spawned", "run1:s3"), jrRowOf(rows, "settled", "run1:s3")
			rows[i], rows[j] = rows[j], rows[i]
			return rows
		},
		"settled-not-terminal":   appended(`{"kind":"settled","node":"run1:s3","state":"running"}`),
		"spawned-unknown-parent": appended(spawn("run1:s9:s1", "run1:s9")),
		"spawned-under-a-worker": appended(spawn("run1:s1:s1", "run1:s1")),
		"spawned-odd-id":         appended(spawn("banana", "")),
		"spawned-seq-repeated":   appended(spawn("run1:s2", "")),
		"spawned-other-run":      appended(spawn("run2:s4", "run2")),
		"first-row-other-run": func(rows []string) []string {
			rows = withoutFinished(rows)
			rows[0] = strings.Replace(rows[0], `"runId":"run1"`, `"runId":"run2"`, 1)
			return rows
		},
		"spend-past-int64": func(rows []string) []string {
			rows = withoutFinished(rows)
			i := jrRowOf(rows, "settled", "run1:s1")
			rows[i] = strings.Replace(rows[i], `"microUsd":2000`, `"microUsd":9000000000000000000`, 1)
			return rows
		},
	}
	for hname, mk := range tamperedJournals(t) {
		for name, tamper := range cases {
			t.Run(hname+"/"+name, func(t *testing.T) {
				j := mk(t)
				res, again, _, err := jr19Resume(t, j, false, tamper)
				if err == nil {
					t.Fatalf("the resume returned %s %s winner %+v; want a *supervise.ResumeError naming %s", res.Status, res.Reason, res.Winner, j.where)
				}
				refusedAt(t, err, j.where)
				if n := again.count("alpha") + again.count("beta") + again.count("slow"); n != 0 {
					t.Errorf("the refused resume ran %d workers", n)
				}
			})
		}
	}
}
