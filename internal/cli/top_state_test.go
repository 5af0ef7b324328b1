package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/supervise"
)

// agentrt top reads a run dir's state.json (§3.6 "Supervisor run
// layout") for status, budget and spend when it belongs to the run, and
// falls back to the journal, with a note, when it is unreadable or of
// another run.
func TestTopReadsRunState(t *testing.T) {
	tokens, micro, spentTokens, spentMicro := int64(50_000), int64(1_000_000), int64(4200), int64(15_000)
	ended := supervise.RunState{SchemaVersion: supervise.RunStateSchemaVersion, RunID: "sup-1", Status: "no-winner",
		Reason: "budget-exhausted", UpdatedAtMS: 1772366460000, Revision: 9, Spawned: 3,
		Budget: &supervise.BudgetRecord{Tokens: &tokens, MicroUSD: &micro},
		Spent:  &supervise.SpendRecord{Tokens: &spentTokens, MicroUSD: &spentMicro}}
	live := ended
	live.Status, live.Reason, live.Live = supervise.RunStatusRunning, "", 1
	other := ended
	other.RunID = "sup-9"
	encode := func(st supervise.RunState) string {
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	type view struct {
		Status, Budget, Spend string
		Live                  bool
		LexerState            string
		Note                  string
	}
	tests := []struct {
		name  string
		state string
		want  view
	}{
		{"ended run", encode(ended), view{Status: "no-winner", Budget: "tok 50000 $1", Spend: "tok 4200 $0.015", LexerState: "down"}},
		{"live run: spend is a floor", encode(live), view{Status: "running", Live: true, Budget: "tok 50000 $1", Spend: "tok ≥ 4200 ≥ $0.015", LexerState: "running"}},
		{"torn state falls back", encode(ended)[:30], view{Status: "running", Live: true, Budget: "unknown", Spend: "tok ≥ 4200 ≥ $0.015", LexerState: "running", Note: "state.json unreadable"}},
		{"another run's state is ignored", encode(other), view{Status: "running", Live: true, Budget: "unknown", Spend: "tok ≥ 4200 ≥ $0.015", LexerState: "running", Note: "state.json is of run sup-9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tornRunDir(t)
			if err := os.WriteFile(filepath.Join(dir, supervise.StateFile), []byte(tt.state), 0o600); err != nil {
				t.Fatal(err)
			}
			run, err := readSuperviseRun(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			got := view{Status: run.Status, Budget: run.Budget, Spend: run.Spend, Live: run.Live, LexerState: run.Workers[0].State}
			for _, n := range run.Notes {
				if tt.want.Note != "" && strings.Contains(n, tt.want.Note) {
					got.Note = tt.want.Note
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("top's view (-want +got):\n%s\nnotes: %q", diff, run.Notes)
			}
		})
	}
}
