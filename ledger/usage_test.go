package ledger_test

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
)

func report(in, out int64) *contract.TokenUsage {
	return &contract.TokenUsage{InputTokens: in, OutputTokens: out}
}

// Seed 000 usageMode; checklist USG-01..05.
func TestTurnUsageModes(t *testing.T) {
	tests := []struct {
		name    string
		reports []struct {
			u    *contract.TokenUsage
			mode contract.UsageMode
		}
		wantIn  string
		wantOut string
	}{
		{"delta adds", []struct {
			u    *contract.TokenUsage
			mode contract.UsageMode
		}{{report(10, 1), contract.UsageDelta}, {report(5, 2), contract.UsageDelta}}, "15", "3"},
		{"cumulative replaces", []struct {
			u    *contract.TokenUsage
			mode contract.UsageMode
		}{{report(10, 1), contract.UsageCumulative}, {report(30, 4), contract.UsageCumulative}}, "30", "4"},
		{"repeated cumulative adds nothing", []struct {
			u    *contract.TokenUsage
			mode contract.UsageMode
		}{{report(30, 4), contract.UsageCumulative}, {report(30, 4), contract.UsageCumulative}}, "30", "4"},
		{"cumulative after deltas replaces them", []struct {
			u    *contract.TokenUsage
			mode contract.UsageMode
		}{{report(10, 1), contract.UsageDelta}, {report(12, 3), contract.UsageCumulative}}, "12", "3"},
		{"absent mode is a floor", []struct {
			u    *contract.TokenUsage
			mode contract.UsageMode
		}{{report(10, 1), ""}, {report(8, 3), ""}}, "≥ 10", "≥ 3"},
		{"no usage is unknown", nil, "unknown", "unknown"},
	}
	for _, tc := range tests {
		var tu ledger.TurnUsage
		for _, r := range tc.reports {
			if err := tu.Observe(r.u, r.mode); err != nil {
				t.Fatal(err)
			}
		}
		got := tu.Total()
		if got.InputTokens.String() != tc.wantIn || got.OutputTokens.String() != tc.wantOut {
			t.Errorf("%s: input %s output %s, want %s %s", tc.name, got.InputTokens, got.OutputTokens, tc.wantIn, tc.wantOut)
		}
	}
	var tu ledger.TurnUsage
	if err := tu.Observe(report(1, 1), contract.UsageMode("sometimes")); err == nil {
		t.Error("an unknown usage mode was accepted")
	}
}

func TestUnreportedChannelsStayUnknown(t *testing.T) {
	u := ledger.FromTokenUsage(&contract.TokenUsage{InputTokens: 5, OutputTokens: 0})
	if !u.OutputTokens.Known() || u.OutputTokens.Value != 0 {
		t.Error("a reported zero must stay an exact zero")
	}
	if u.CacheReadTokens.Reported || u.CostUSD.Reported || u.CostUSD.String() != "unknown" {
		t.Errorf("unreported channels became known: %+v", u)
	}
	cost := 0.25
	sum := ledger.FromTokenUsage(&contract.TokenUsage{InputTokens: 1, OutputTokens: 1, Cost: &cost}).Plus(u)
	if sum.CostUSD.Known() || sum.CostUSD.String() != "≥ 0.25" {
		t.Errorf("a partial sum must be a floor: %s", sum.CostUSD)
	}
	if (ledger.Usage{}).Plus(ledger.Usage{}).InputTokens.Reported {
		t.Error("unknown plus unknown became known")
	}
}

func usageEvent(id string, u *contract.TokenUsage, mode contract.UsageMode) contract.EnvironmentEvent {
	return contract.EnvironmentEvent{Type: "usage", ID: &id, Usage: u, UsageMode: mode}
}

// Replayed or reconnected streams repeat events; each id counts once.
func TestTurnUsageIgnoresReplayedEvents(t *testing.T) {
	var tu ledger.TurnUsage
	for _, e := range []contract.EnvironmentEvent{
		usageEvent("a", report(10, 1), contract.UsageDelta),
		usageEvent("a", report(10, 1), contract.UsageDelta),
		usageEvent("b", report(4, 0), contract.UsageDelta),
		{Type: "text"},
	} {
		if _, err := tu.ObserveEvent(e); err != nil {
			t.Fatal(err)
		}
	}
	if got := tu.Total().InputTokens.String(); got != "14" {
		t.Errorf("input %s, want 14", got)
	}
}

// A count only some deltas report is a floor; one no report has stays
// unknown.
func TestPartialCountsAreFloors(t *testing.T) {
	var tu ledger.TurnUsage
	total, cost := int64(2), 0.5
	withExtras := report(1, 1)
	withExtras.CacheReadInputTokens, withExtras.Cost = &total, &cost
	tu.Observe(withExtras, contract.UsageDelta)
	tu.Observe(report(1, 1), contract.UsageDelta)
	got := tu.Total()
	if got.InputTokens.String() != "2" || got.CacheReadTokens.String() != "≥ 2" || got.CostUSD.String() != "≥ 0.5" || got.CacheWriteTokens.Reported {
		t.Errorf("partial counts: %+v", got)
	}
}
