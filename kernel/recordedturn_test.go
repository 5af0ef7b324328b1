package kernel_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
)

// A run whose turn ended but whose own end the store refused for good
// (storefault.FailingEnds: everything is recorded but the run's end)
// reads interrupted, yet its recorded events hold the turn's end:
// ReadRecordedTurn settles it as Execute read it — its terminal, its
// text, its usage — so that a successor (a fleet worker taking the run
// over) never runs a finished turn again (issue 14; runtime.md §15: a
// turn whose terminal was seen is not run twice). A turn whose stream
// broke off has no recorded end. On SQLite and PostgreSQL.
func TestReadRecordedTurnOfAnUnrecordedEnd(t *testing.T) {
	// The unrecorded end is retried while the lease holds, so the lease
	// is short; not the shortest, which a loaded machine under the race
	// detector let lapse before the turn ended (lease-lost, not the
	// store-failed end this test reads).
	const lease = 3 * kernel.MinLeaseTTL
	stores := map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "agentrt.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) store.Store {
			st, err := postgres.Open(t.Context(), pgtest.Schema(t), postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for name, open := range stores {
		for _, tc := range []struct {
			name, script string
			want         contract.TerminalKind
			wantStatus   store.Status
			wantReason   string
			wantText     string
			wantDetail   string
			wantInput    int64
			wantExact    bool
		}{
			{name: "completed", script: `{"turns":[{"steps":[{"text":"a "},{"usage":{"inputTokens":9,"outputTokens":2},"mode":"cumulative"},{"text":"note"}]}]}`,
				want: contract.TerminalCompleted, wantStatus: store.StatusCompleted, wantText: "a note", wantInput: 9, wantExact: true},
			{name: "failed", script: `{"turns":[{"end":"failed","error":"the tool broke","steps":[{"usage":{"inputTokens":4,"outputTokens":1},"mode":"cumulative"},{"text":"half"}]}]}`,
				want: contract.TerminalFailed, wantStatus: store.StatusFailed, wantReason: kernel.ReasonInBandError, wantText: "half", wantDetail: "the tool broke", wantInput: 4},
			// Execute fails a turn served another model than requested,
			// however it ended: so does its recorded reading.
			{name: "served another model", script: `{"servedModel":"scripted/other","turns":[{"steps":[{"usage":{"inputTokens":5,"outputTokens":1},"mode":"cumulative"},{"text":"a note"}]}]}`,
				want: contract.TerminalCompleted, wantStatus: store.StatusFailed, wantReason: kernel.ReasonModelMismatch, wantText: "a note",
				wantDetail: "requested scripted/note-writer but the platform served scripted/other", wantInput: 5, wantExact: true},
			{name: "broken off", script: `{"turns":[{"end":"die","error":"connection reset","steps":[{"text":"half"}]}]}`},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				real := open(t)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				runID := kernel.NewID("recorded")
				res, err := kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t",
					Provider: scripted.New(mustScript(t, tc.script), scripted.Options{}), Store: storefault.FailingEnds(real),
					Check: nonEmpty, RunID: runID, LeaseTTL: lease})
				if re, ok := errors.AsType[*kernel.RunError](err); !ok || re.Reason != kernel.ReasonStoreFailed || res == nil {
					t.Fatalf("result %+v, err %v; want the end unrecorded (%s)", res, err, kernel.ReasonStoreFailed)
				}
				turn, err := kernel.ReadRecordedTurn(ctx, real, runID)
				if err != nil {
					t.Fatal(err)
				}
				if turn.Terminal != tc.want || turn.Ended() != (tc.want != "") || turn.Events != res.Events || turn.Status != tc.wantStatus || turn.Reason != tc.wantReason {
					t.Fatalf("recorded turn %+v; want terminal %q, status %q (%s) over the %d events the run recorded", turn, tc.want, tc.wantStatus, tc.wantReason, res.Events)
				}
				if tc.want == "" {
					return
				}
				if turn.Text != tc.wantText || turn.Text != res.Text || turn.Detail != tc.wantDetail {
					t.Errorf("text %q, detail %q; want %q (the run read %q), %q", turn.Text, turn.Detail, tc.wantText, res.Text, tc.wantDetail)
				}
				in := turn.Usage.InputTokens
				if !in.Reported || in.Value != tc.wantInput || in.Known() != tc.wantExact {
					t.Errorf("input tokens %v; want %d (exact: %v)", in, tc.wantInput, tc.wantExact)
				}
			})
		}
	}
	t.Run("missing run", func(t *testing.T) {
		_, err := kernel.ReadRecordedTurn(t.Context(), stores["sqlite"](t), "no-such-run")
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("err %v; want store.ErrNotFound", err)
		}
	})
}
