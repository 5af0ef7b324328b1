package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
)

// River's tables live in a schema of their own (Options.RiverSchema, by
// default agentrt_river), apart from the run store's: a run submitted
// and worked through River there completes, River's job table is in
// River's schema and not in the store's, and the store's tables are not
// in River's.
func TestRiverInItsOwnSchema(t *testing.T) {
	conn := pgtest.Schema(t) // a fresh store schema; River's beside it
	storeSchema := schemaOf(t, conn)
	riverSchema := storeSchema + "_river"
	ctx := t.Context()
	f, err := fleet.Open(ctx, fleet.Options{DatabaseURL: conn, RiverSchema: riverSchema})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	db, err := pgx.Connect(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	t.Cleanup(func() {
		_, _ = db.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{riverSchema}.Sanitize()+` CASCADE`)
	})
	if _, err := f.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sub, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "write the note")})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, conn, riverSchema, fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": provider(t, quickScript)}, PollInterval: 50 * time.Millisecond})
	runs := waitEnded(t, f, []string{sub.RunID}, 2*time.Minute)
	if r := runs[sub.RunID]; r.Status != store.StatusCompleted {
		t.Fatalf("run %s: %s %+v", sub.RunID, r.Status, r.Outcome)
	}
	has := func(schema, table string) bool {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2`, schema, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	for _, c := range []struct {
		schema, table string
		want          bool
	}{
		{riverSchema, "river_job", true}, {storeSchema, "river_job", false},
		{storeSchema, "runs", true}, {riverSchema, "runs", false},
	} {
		if got := has(c.schema, c.table); got != c.want {
			t.Errorf("table %s.%s exists: %v, want %v", c.schema, c.table, got, c.want)
		}
	}
	// River records a job's completion after its worker returned (its
	// completer batches), so the run can read completed first.
	var jobs int
	for deadline := time.Now().Add(time.Minute); ; {
		err := db.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{riverSchema, "river_job"}.Sanitize()+` WHERE state = 'completed'`).Scan(&jobs)
		if err != nil {
			t.Fatal(err)
		}
		if jobs == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if jobs != 1 {
		t.Errorf("%d completed jobs in %s after a minute, want the run's one", jobs, riverSchema)
	}
}
