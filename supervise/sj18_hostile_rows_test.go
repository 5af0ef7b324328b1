package supervise_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the hostile writer's own handle on the store's file

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// hostileBodies are event bodies no StoreSpawnLog writes: torn or
// invalid JSON, JSON of the wrong shape, records that name no node or
// one the journal never spawned.
var hostileBodies = []struct{ name, body string }{
	{"torn", `{"kind":"settled","node":"ru`},
	{"not-json", `{not json`},
	{"kind-number", `{"kind":5}`},
	{"null", `null`},
	{"array", `[]`},
	{"unknown-member", `{"kind":"settled","node":"run1:s1","status":"done"}`},
	{"settled-no-node", `{"kind":"settled"}`},
	{"spawned-no-node", `{"kind":"spawned"}`},
	{"settled-unknown-node", `{"kind":"settled","node":"run1:s99"}`},
	{"spawned-unknown-parent", `{"kind":"spawned","node":"zzz","parent":"qq"}`},
	{"spawned-again", `{"kind":"spawned","node":"run1:s1","parent":"run1"}`},
}

// SJ18 check 5, §3.6 "Readers are tolerant ... payload conflict fails
// closed" (RES-03, behaviour 46): a row no StoreSpawnLog wrote,
// inserted straight into the events table of a store-journaled run that
// has no run dir (SQLite's file, PostgreSQL live), never panics its
// resume, and a resume that refuses it refuses with a *ResumeError
// naming where the journal is — the store's run, as ReadRunStarted and
// the graph's resume name it — as the run dir's file journal's refusal
// names its directory. Before, an undecodable row was an untyped error,
// and a row the replay refused was "cannot resume : ..." naming nothing.
func TestSJ18HostileStoreJournalRowRefusedNamingTheStoreRun(t *testing.T) {
	type home struct {
		open   func(t *testing.T) store.Store
		insert func(t *testing.T, body string)
	}
	homes := map[string]func(t *testing.T) home{
		"sqlite": func(t *testing.T) home {
			path := filepath.Join(t.TempDir(), "runs.db")
			return home{
				open: func(t *testing.T) store.Store {
					st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { st.Close() })
					return st
				},
				insert: func(t *testing.T, body string) {
					db, err := sql.Open("sqlite", path)
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					if _, err := db.Exec(`INSERT INTO events (run_id, seq, id, type, time, body) VALUES ('run1', (SELECT max(seq)+1 FROM events WHERE run_id = 'run1'), 'hostile', 'x', 0, ?)`, body); err != nil {
						t.Fatal(err)
					}
				},
			}
		},
		"postgres": func(t *testing.T) home {
			dsn := pgtest.Schema(t)
			return home{
				open: func(t *testing.T) store.Store {
					st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { st.Close() })
					return st
				},
				insert: func(t *testing.T, body string) {
					ctx := context.Background()
					conn, err := pgx.Connect(ctx, dsn)
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close(ctx)
					if _, err := conn.Exec(ctx, `INSERT INTO events (run_id, seq, id, type, time, body) VALUES ('run1', (SELECT max(seq)+1 FROM events WHERE run_id = 'run1'), 'hostile', 'x', 0, $1)`, body); err != nil {
						t.Fatal(err)
					}
				},
			}
		},
	}
	for hname, mk := range homes {
		for _, hb := range hostileBodies {
			t.Run(hname+"/"+hb.name, func(t *testing.T) {
				h := mk(t)
				st := h.open(t)
				run := func(resume bool, sp store.Store, brain supervise.BrainFunc) (supervise.SupervisedResult, error) {
					o := baseOptions(t, askingExecutor, nil)
					o.RunID, o.Resume, o.Brain = "run1", resume, brain
					o.SpawnStore, o.SpawnLeaseTTL = sp, kernel.MinLeaseTTL
					return supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
				}
				// q1 answered and its worker settled, q2's worker left
				// undecided when the store took nothing more.
				if _, err := run(false, &cutStore{Store: st, kind: supervise.KindSettled, after: 2}, answerQ1LeaveQ2(t)); !errors.Is(err, errCut) {
					t.Fatalf("the cut run: %v, want its journal's failure", err)
				}
				h.insert(t, hb.body)
				// The CLI's first check of a --resume reads the run-started
				// record the same way: it or the same typed refusal.
				ro := baseOptions(t, askingExecutor, nil)
				ro.SpawnStore = st
				if first, err := supervise.ReadRunStarted(context.Background(), ro); err != nil {
					if re, ok := errors.AsType[*supervise.ResumeError](err); !ok || !strings.Contains(re.Error(), "run run1 in the store") {
						t.Errorf("ReadRunStarted over a hostile row: %v (%T); want a *supervise.ResumeError naming run run1 in the store", err, err)
					}
				} else if first.Kind != supervise.KindRunStarted {
					t.Errorf("ReadRunStarted over a hostile row: %+v", first)
				}
				res, err := run(true, st, func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
					return supervise.BrainReport{}, nil
				})
				if err == nil {
					t.Logf("read past: %s %s", res.Status, res.Reason)
					return
				}
				var re *supervise.ResumeError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), "run run1 in the store") {
					t.Errorf("the resume over a hostile row: %v (%T); want a *supervise.ResumeError naming run run1 in the store", err, err)
				}
			})
		}
	}
}

// SJ18, behaviour 47 for a store-journaled run with no run dir: a new
// run under the id of a journal the store holds is refused with a
// *RunExistsError that names where that journal is, the store's run,
// not an empty run dir ("already has a journal in ; ...").
func TestSJ18RunExistsInTheStoreNamesTheStoreRun(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := baseOptions(t, askingExecutor, nil)
	o.Brain = answerQ1LeaveQ2(t)
	o.SpawnStore, o.SpawnLeaseTTL = &cutStore{Store: st, kind: supervise.KindSettled, after: 2}, kernel.MinLeaseTTL
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); !errors.Is(err, errCut) {
		t.Fatalf("the cut run: %v, want its journal's failure", err)
	}
	o.SpawnStore = st
	_, err = supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if exists, ok := errors.AsType[*supervise.RunExistsError](err); !ok || exists.RunDir != "run run1 in the store" {
		t.Errorf("a new run over the store's journal: %v (%T); want a *RunExistsError naming run run1 in the store", err, err)
	}
}
