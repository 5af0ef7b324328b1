package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/store"
)

// checkNoSecretStored fails t when any secret appears in what the fleet
// stored for runIDs — each fleet run's document, each of its attempts'
// kernel run documents and events — or in River's jobs (their
// arguments, errors and metadata) in schema: a job carries the admitted
// request by digest, and events and receipts never carry a credential.
func checkNoSecretStored(t *testing.T, ctx context.Context, st store.Store, conn, schema string, runIDs []string, secrets ...string) {
	t.Helper()
	var scanned int
	check := func(where string, b []byte) {
		scanned += len(b)
		for _, s := range secrets {
			if s != "" && strings.Contains(string(b), s) {
				t.Errorf("%s carries a secret (%d bytes of it)", where, len(s))
			}
		}
	}
	for _, id := range runIDs {
		r, err := st.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		check("fleet run "+id, canonjson.Marshal(r.Doc))
		run, err := fleet.DecodeRun(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range run.Attempts {
			ar, err := st.GetRun(ctx, a.RunID)
			if err != nil {
				t.Fatal(err)
			}
			check("attempt "+a.RunID, canonjson.Marshal(ar.Doc))
			evs, err := st.Events(ctx, a.RunID, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				check("attempt "+a.RunID+" event "+e.ID, canonjson.Marshal(e.Body))
			}
		}
	}
	db, err := pgx.Connect(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	rows, err := db.Query(ctx, `SELECT id, args::text, errors::text, metadata::text FROM `+pgx.Identifier{schema, "river_job"}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	jobs := 0
	for rows.Next() {
		var id int64
		var args string
		var errs, meta *string
		if err := rows.Scan(&id, &args, &errs, &meta); err != nil {
			t.Fatal(err)
		}
		jobs++
		check("River job args", []byte(args))
		if errs != nil {
			check("River job errors", []byte(*errs))
		}
		if meta != nil {
			check("River job metadata", []byte(*meta))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if jobs < len(runIDs) {
		t.Errorf("%d River jobs for %d runs: the scan did not see them all", jobs, len(runIDs))
	}
	t.Logf("no secret in %d bytes of %d runs' records and events and %d River jobs", scanned, len(runIDs), jobs)
}
