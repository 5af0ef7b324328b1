package chatturn_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/agentrt/agentrt/chatturn"
	"github.com/agentrt/agentrt/internal/storetest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// A durable turn's recorded usage is exact only when the production ran
// to its end: a turn cut mid-stream (here the producer fails after its
// first event) records what the producer reported so far as a floor,
// never as the turn's usage; a completed turn's stays exact
// (behaviour 28; spec/runtime.md §3.3, usage unknown is never zero).
func TestCutTurnUsageIsAFloor(t *testing.T) {
	storetest.Each(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		for _, tc := range []struct {
			session string
			fail    bool
			want    ledger.Amount[int64]
		}{
			{"completed", false, ledger.ExactAmount[int64](40)},
			{"cut", true, ledger.ExactAmount[int64](40).Floor()},
		} {
			t.Run(tc.session, func(t *testing.T) {
				rec := &recorder{}
				produce := func(ctx context.Context) (chatturn.Production, error) {
					return chatturn.Production{
						Events: func(yield func(chatturn.Line, error) bool) {
							if yield(text("a"), nil) && tc.fail {
								yield(chatturn.Line{}, errors.New("connection reset"))
							}
						},
						FinalText: func() string { return "a" },
						// What the producer reports, as if exact.
						Usage: func() ledger.Usage { return ledger.Usage{InputTokens: ledger.ExactAmount[int64](40)} },
					}, nil
				}
				h := &chatturn.Handler{Store: open(t), Turn: turnFor(rec, produce)}
				srv := httptest.NewServer(h)
				defer srv.Close()
				lines, _ := post(t, srv.URL+"?session="+tc.session, nil)
				if err := h.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
				id := chatturn.DeriveExecutionID(ident.ProjectID, tc.session, ident.TurnIndex)
				r, err := kernel.ReadRun(context.Background(), h.Store, id)
				if err != nil {
					t.Fatal(err)
				}
				if r.Spend.InputTokens != tc.want {
					t.Errorf("lines %v; recorded input tokens %s (%+v); want %s", types(lines), r.Spend.InputTokens, r.Spend.InputTokens, tc.want)
				}
				if u := r.Runtime.Cost.Usage.InputTokens; u != tc.want {
					t.Errorf("the record's cost: input tokens %s; want %s", u, tc.want)
				}
			})
		}
	})
}
