package improve_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/improve"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
)

// The path keeps its guarantees on the durable stores: SQLite and
// PostgreSQL (AGENTRT_TEST_DATABASE_URL; see internal/pgtest).
func TestHappyPathSQLite(t *testing.T) {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	runHappyPath(t, s)
}

func TestHappyPathPostgres(t *testing.T) {
	s := openPostgres(t)
	runHappyPath(t, s)
}

func openPostgres(t *testing.T) store.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), pgtest.Schema(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestRefusalsPostgres(t *testing.T) { runRefusals(t, openPostgres) }

// Racing executions of one activation on PostgreSQL apply it once.
func TestConcurrentExecutePostgres(t *testing.T) {
	ctx := context.Background()
	f := newFixture(openPostgres(t))
	p := proposalValue(t)
	rec, err := f.svc.ProposeImprovement(ctx, bytesOf(p))
	if err != nil {
		t.Fatal(err)
	}
	r := review(t, rec.Digest, "approve")
	if _, err := f.svc.ReviewProposal(ctx, bytesOf(r)); err != nil {
		t.Fatal(err)
	}
	act, err := f.svc.CreateActivation(ctx, bytesOf(activation(t, rec.Digest, digestOf(r), nil)))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = f.svc.ExecuteActivation(ctx, act.Digest) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, improve.ErrAlreadyExecuted):
			t.Errorf("err = %v", err)
		}
	}
	if ok != 1 || f.targets.Applied() != 1 {
		t.Fatalf("%d executions succeeded and %d applied, want 1 and 1", ok, f.targets.Applied())
	}
}
