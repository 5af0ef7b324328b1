package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
)

// agentrt runs cancel against a database that stopped answering says so
// within seconds (the pool's connect bound, pgdb.DefaultConnectTimeout,
// then --store-timeout for the store's answers), rather than waiting for
// ever.
func TestRunsCancelOnABlackHoledStoreIsBounded(t *testing.T) {
	conn, proxy := pgtest.ProxiedSchema(t)
	s, err := postgres.Open(context.Background(), conn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRun(t.Context(), store.Run{ID: "stuck", Kind: "execute", Status: store.StatusRunning, Generation: 1, Owner: "w", LeaseUntil: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	proxy.BlackHole()
	start := time.Now()
	_, errOut, code := run(t, "", "runs", "cancel", "stuck", "--database", conn, "--store-timeout", "2s")
	took := time.Since(start)
	if code != 1 || !strings.Contains(errOut, "run store") || !strings.Contains(errOut, "timeout") && !strings.Contains(errOut, "did not answer") {
		t.Errorf("exit %d, stderr %q; want 1 saying the run store did not answer", code, errOut)
	}
	if took > 30*time.Second {
		t.Errorf("cancel took %s against a black-holed store", took)
	}
	t.Logf("cancel against a black-holed store returned in %s", took)
}
