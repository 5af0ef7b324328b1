package supervise_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the tamperer's own handle on the store's file

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// tamperedJournal is one home of a run's spawn journal (§3.6: the run
// dir's file, a SQLite store, a PostgreSQL store — one journal
// contract) with a hostile hand on it: rows reads the journal's rows
// (one JSON record each, in order) and write replaces them, bypassing
// every writer the runtime has.
type tamperedJournal struct {
	// where is how a refusal to resume names the journal's place.
	where string
	set   func(*supervise.Options)
	rows  func(t *testing.T) []string
	write func(t *testing.T, rows []string)
	// forgeBlob puts body where result blob ref is kept, in place of
	// the bytes that hash to ref.
	forgeBlob func(t *testing.T, ref, body string)
}

// tamperedJournals opens, per home, a fresh journal for run run1.
func tamperedJournals(t *testing.T) map[string]func(t *testing.T) tamperedJournal {
	return map[string]func(t *testing.T) tamperedJournal{
		"file": func(t *testing.T) tamperedJournal {
			dir := t.TempDir()
			path := filepath.Join(dir, supervise.SpawnJournalFile)
			return tamperedJournal{
				where: dir,
				set:   func(o *supervise.Options) { o.RunDir = dir },
				rows: func(t *testing.T) []string {
					data, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					var out []string
					for line := range bytes.Lines(data) {
						if l := strings.TrimSpace(string(line)); l != "" {
							out = append(out, l)
						}
					}
					return out
				},
				write: func(t *testing.T, rows []string) {
					if err := os.WriteFile(path, []byte(strings.Join(rows, "\n")+"\n"), 0o600); err != nil {
						t.Fatal(err)
					}
				},
				forgeBlob: func(t *testing.T, ref, body string) {
					blob := filepath.Join(dir, supervise.BlobsDir, "sha256-"+strings.TrimPrefix(ref, "sha256:")+".json")
					if _, err := os.Stat(blob); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(blob, []byte(body), 0o600); err != nil {
						t.Fatal(err)
					}
				},
			}
		},
		"sqlite": func(t *testing.T) tamperedJournal {
			path := filepath.Join(t.TempDir(), "runs.db")
			st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return tamperedJournal{
				where: "run run1 in the store",
				set:   func(o *supervise.Options) { o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL },
				rows: func(t *testing.T) []string {
					rs, err := db.Query(`SELECT body FROM events WHERE run_id = 'run1' ORDER BY seq`)
					if err != nil {
						t.Fatal(err)
					}
					defer rs.Close()
					var out []string
					for rs.Next() {
						var b string
						if err := rs.Scan(&b); err != nil {
							t.Fatal(err)
						}
						out = append(out, b)
					}
					if err := rs.Err(); err != nil {
						t.Fatal(err)
					}
					return out
				},
				write: func(t *testing.T, rows []string) {
					tx, err := db.Begin()
					if err != nil {
						t.Fatal(err)
					}
					defer tx.Rollback()
					if _, err := tx.Exec(`DELETE FROM events WHERE run_id = 'run1'`); err != nil {
						t.Fatal(err)
					}
					for i, b := range rows {
						if _, err := tx.Exec(`INSERT INTO events (run_id, seq, id, type, time, body) VALUES ('run1', ?, ?, 'x', 0, ?)`, i+1, fmt.Sprintf("g1.%d", i+1), b); err != nil {
							t.Fatal(err)
						}
					}
					if err := tx.Commit(); err != nil {
						t.Fatal(err)
					}
				},
				forgeBlob: func(t *testing.T, ref, body string) {
					r, err := db.Exec(`UPDATE idempotency SET result = ? WHERE scope = 'supervise.blob' AND key = ?`, body, "run1/"+ref)
					if n, _ := r.RowsAffected(); err != nil || n != 1 {
						t.Fatalf("forging blob %s: %d rows, %v", ref, n, err)
					}
				},
			}
		},
		"postgres": func(t *testing.T) tamperedJournal {
			dsn := pgtest.Schema(t)
			st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close(ctx) })
			return tamperedJournal{
				where: "run run1 in the store",
				set:   func(o *supervise.Options) { o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL },
				rows: func(t *testing.T) []string {
					rs, err := conn.Query(ctx, `SELECT body FROM events WHERE run_id = 'run1' ORDER BY seq`)
					if err != nil {
						t.Fatal(err)
					}
					defer rs.Close()
					var out []string
					for rs.Next() {
						var b string
						if err := rs.Scan(&b); err != nil {
							t.Fatal(err)
						}
						out = append(out, b)
					}
					if err := rs.Err(); err != nil {
						t.Fatal(err)
					}
					return out
				},
				write: func(t *testing.T, rows []string) {
					tx, err := conn.Begin(ctx)
					if err != nil {
						t.Fatal(err)
					}
					defer tx.Rollback(ctx)
					if _, err := tx.Exec(ctx, `DELETE FROM events WHERE run_id = 'run1'`); err != nil {
						t.Fatal(err)
					}
					for i, b := range rows {
						if _, err := tx.Exec(ctx, `INSERT INTO events (run_id, seq, id, type, time, body) VALUES ('run1', $1, $2, 'x', 0, $3)`, i+1, fmt.Sprintf("g1.%d", i+1), b); err != nil {
							t.Fatal(err)
						}
					}
					if err := tx.Commit(ctx); err != nil {
						t.Fatal(err)
					}
				},
				forgeBlob: func(t *testing.T, ref, body string) {
					tag, err := conn.Exec(ctx, `UPDATE idempotency SET result = $1 WHERE scope = 'supervise.blob' AND key = $2`, body, "run1/"+ref)
					if err != nil || tag.RowsAffected() != 1 {
						t.Fatalf("forging blob %s: %d rows, %v", ref, tag.RowsAffected(), err)
					}
				},
			}
		},
	}
}

// threeWriters spawns alpha, beta and slow gamma one after the other,
// awaiting each settlement; resumed, it returns at once (and reports
// whether the resumed pool conserves).
func threeWriters(conserved *error) supervise.BrainFunc {
	return func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if c.Reentry().Resumed {
			*conserved = c.Readout().Conserved()
			return supervise.BrainReport{}, nil
		}
		for _, task := range []string{"write alpha", "write beta", "write slow gamma"} {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				return supervise.BrainReport{}, err
			}
			if ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || ev.Event == nil {
				return supervise.BrainReport{}, fmt.Errorf("await after %q: %+v, %v", task, ev, err)
			}
		}
		return supervise.BrainReport{}, nil
	}
}

// jrRowOf returns the index of the first row of kind naming node.
func jrRowOf(rows []string, kind, node string) int {
	for i, r := range rows {
		if strings.Contains(r, `"kind":"`+kind+`"`) && strings.Contains(r, `"node":"`+node+`"`) {
			return i
		}
	}
	return -1
}

// withoutFinished is rows up to the finished record: a run that did not
// end, which a resume drives on.
func withoutFinished(rows []string) []string {
	for i, r := range rows {
		if strings.Contains(r, `"kind":"finished"`) {
			return rows[:i]
		}
	}
	return rows
}

// insertAfter puts row after rows[i].
func insertAfter(rows []string, i int, row string) []string {
	out := append([]string{}, rows[:i+1]...)
	out = append(out, row)
	return append(out, rows[i+1:]...)
}

// jr19Resume runs the three writers on j, lets tamper rewrite its
// journal's rows, and resumes it; it returns the resume's result, the
// executor the resume ran on, the resumed pool's conservation (nil
// when the resumed brain did not run) and the resume's error.
func jr19Resume(t *testing.T, j tamperedJournal, returnEnded bool, tamper func(rows []string) []string) (supervise.SupervisedResult, *countingExecutor, error, error) {
	t.Helper()
	var conserved error
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	j.set(&o)
	o.Brain = threeWriters(&conserved)
	if res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o); err != nil || res.Winner == nil {
		t.Fatalf("the first run: %+v, %v", res, err)
	}
	j.write(t, tamper(j.rows(t)))
	again := newCounting(t, workerProvider(t))
	o = baseOptions(t, again, nil)
	j.set(&o)
	o.Resume, o.ReturnEnded, o.Brain = true, returnEnded, threeWriters(&conserved)
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	return res, again, conserved, err
}

// refusedAt fails t unless err is a *supervise.ResumeError naming
// where.
func refusedAt(t *testing.T, err error, where string) {
	t.Helper()
	re, ok := errors.AsType[*supervise.ResumeError](err)
	if !ok || !strings.Contains(re.Error(), where) {
		t.Fatalf("the resume: %v (%T); want a *supervise.ResumeError naming %s", err, err, where)
	}
}

// JR19 (a), behaviour 46 over §3.6 "payload conflict fails closed"
// (RES-03): a resume of an ended run (ReturnEnded) returns the finished
// record's outcome only when its winner is one the journal delivered —
// a child of the root settled done and delivered under the same outRef,
// or the run's submitted result. A finished record naming a node never
// spawned, or a settled worker whose result was not delivered, is
// refused with a *ResumeError naming the journal's place, in the run
// dir's file as in a SQLite or PostgreSQL store. Before, the resume
// returned winner run1:s99, a node absent from its own tree, and winner
// run1:s2 (its check failed) with alpha's text.
func TestJR19EndedWinnerTheJournalNeverDeliveredIsRefused(t *testing.T) {
	finished := func(edit func(string) string) func([]string) []string {
		return func(rows []string) []string {
			i := len(rows) - 1
			if !strings.Contains(rows[i], `"kind":"finished"`) {
				t.Fatalf("the journal's last row is not its finished record: %s", rows[i])
			}
			rows[i] = edit(rows[i])
			return rows
		}
	}
	cases := []struct {
		name   string
		tamper func([]string) []string
	}{
		{"never-spawned", finished(func(r string) string { return strings.Replace(r, `"node":"run1:s1"`, `"node":"run1:s99"`, 1) })},
		{"not-delivered", finished(func(r string) string { return strings.Replace(r, `"node":"run1:s1"`, `"node":"run1:s2"`, 1) })},
		{"not-delivered-own-result", func(rows []string) []string {
			s2 := rows[jrRowOf(rows, "settled", "run1:s2")]
			_, ref, _ := strings.Cut(s2, `"outRef":"`)
			ref, _, _ = strings.Cut(ref, `"`)
			return finished(func(r string) string {
				r = strings.Replace(r, `"node":"run1:s1"`, `"node":"run1:s2"`, 1)
				return strings.Replace(r, `"text":"alpha: DONE"`, `"text":"beta: half"`, 1)
			})(replaceWinnerRef(rows, ref))
		}},
		{"submitted-never", finished(func(r string) string {
			return strings.Replace(r, `"node":"run1:s1"`, `"node":"run1","submitted":true`, 1)
		})},
	}
	for hname, mk := range tamperedJournals(t) {
		t.Run(hname+"/untouched", func(t *testing.T) {
			res, again, _, err := jr19Resume(t, mk(t), true, func(rows []string) []string { return rows })
			if err != nil || res.Winner == nil || res.Winner.Node != "run1:s1" || res.Winner.Text != "alpha: DONE" {
				t.Fatalf("the resume of the ended run: %+v, %v; want winner run1:s1 with alpha's text", res.Winner, err)
			}
			if again.count("alpha")+again.count("beta")+again.count("slow") != 0 {
				t.Errorf("the resume of an ended run ran a worker again")
			}
		})
		for _, tc := range cases {
			t.Run(hname+"/"+tc.name, func(t *testing.T) {
				j := mk(t)
				res, _, _, err := jr19Resume(t, j, true, tc.tamper)
				if err == nil {
					t.Fatalf("the resume returned %s winner %+v; want a *supervise.ResumeError naming %s", res.Status, res.Winner, j.where)
				}
				refusedAt(t, err, j.where)
			})
		}
	}
}

// replaceWinnerRef sets the finished record's winner outRef to ref.
func replaceWinnerRef(rows []string, ref string) []string {
	i := len(rows) - 1
	head, rest, _ := strings.Cut(rows[i], `"winner":{`)
	_, old, _ := strings.Cut(rest, `"outRef":"`)
	old, _, _ = strings.Cut(old, `"`)
	rows[i] = head + `"winner":{` + strings.Replace(rest, old, ref, 1)
	return rows
}

// JR19 (c), §3.6 ("spentDelta/breakdown sums equal spentTotal on
// iterations/tokens/usd"; "tokensKnown/usdKnown ... true is a checked
// claim"): a finished record is a result Supervise could have returned
// only if its spentTotal is the sum of its breakdown, every quantity
// non-negative and each total known only when both of its parts are.
// A resume of the ended run refuses another with a *ResumeError naming
// the journal's place. Before, a record whose spent said 1 token
// (its breakdown 182) resumed to spentTotal 1 token, known.
func TestJR19EndedSpendNotItsBreakdownIsRefused(t *testing.T) {
	edits := map[string]func(string) string{
		"spent-below-breakdown": func(r string) string {
			return strings.Replace(r, `"spent":{"iterations":3,"iterationsKnown":true,"microUsd":3001,"tokens":182,`, `"spent":{"iterations":3,"iterationsKnown":true,"microUsd":3001,"tokens":1,`, 1)
		},
		"negative-everywhere": func(r string) string {
			return strings.Replace(r, `"tokens":182`, `"tokens":-182`, -1)
		},
		"known-over-unknown": func(r string) string {
			return strings.Replace(r, `"driverInference":{"iterations":0,"iterationsKnown":true,"microUsd":0,"tokens":0,"tokensKnown":true`, `"driverInference":{"iterations":0,"iterationsKnown":true,"microUsd":0,"tokens":0,"tokensKnown":false`, 1)
		},
	}
	for hname, mk := range tamperedJournals(t) {
		for name, edit := range edits {
			t.Run(hname+"/"+name, func(t *testing.T) {
				j := mk(t)
				res, _, _, err := jr19Resume(t, j, true, func(rows []string) []string {
					i := len(rows) - 1
					edited := edit(rows[i])
					if edited == rows[i] {
						t.Fatalf("the edit changed nothing in %s", rows[i])
					}
					rows[i] = edited
					return rows
				})
				if err == nil {
					t.Fatalf("the resume returned %s spent %+v; want a *supervise.ResumeError naming %s", res.Status, res.Spent, j.where)
				}
				refusedAt(t, err, j.where)
			})
		}
	}
}
