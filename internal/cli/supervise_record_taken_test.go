package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// The store already holds another kind of run under the supervised
// run's id: agentrt supervise still prints the run's result, then fails
// (exit 1) saying its record could not be stored and why; the other run
// is left as it was.
func TestSuperviseRunIDTakenInTheStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := st.CreateRun(context.Background(), store.Run{ID: "costs", Kind: "execute", Status: store.StatusCompleted, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	e := newCostEndpoint(t, "alpha", "beta")
	res, out, code := superviseOverHTTP(t, e, db)
	if member(res, "status").Str() != "winner" {
		t.Errorf("the result was not printed as a winner:\n%s", out)
	}
	if code != 1 || !strings.Contains(out, "record could not be stored") || !strings.Contains(out, "is a execute run") {
		t.Errorf("exit %d, want 1 naming the record not stored and why:\n%s", code, out)
	}
	shown, _, _ := run(t, "", "runs", "show", "costs", "--db", db, "--json")
	if got := member(decode(t, shown), "kind").Str(); got != "execute" {
		t.Errorf("the other run is now a %q run", got)
	}
}
