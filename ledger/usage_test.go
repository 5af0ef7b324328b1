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
			mode string
		}
		wantIn  string
		wantOut string
	}{
		{"delta adds", []struct {
			u    *contract.TokenUsage
			mode string
		}{{report(10, 1), ledger.ModeDelta}, {report(5, 2), ledger.ModeDelta}}, "15", "3"},
		{"cumulative replaces", []struct {
			u    *contract.TokenUsage
			mode string
		}{{report(10, 1), ledger.ModeCumulative}, {report(30, 4), ledger.ModeCumulative}}, "30", "4"},
		{"repeated cumulative adds nothing", []struct {
			u    *contract.TokenUsage
			mode string
		}{{report(30, 4), ledger.ModeCumulative}, {report(30, 4), ledger.ModeCumulative}}, "30", "4"},
		{"cumulative after deltas replaces them", []struct {
			u    *contract.TokenUsage
			mode string
		}{{report(10, 1), ledger.ModeDelta}, {report(12, 3), ledger.ModeCumulative}}, "12", "3"},
		{"absent mode is a floor", []struct {
			u    *contract.TokenUsage
			mode string
		}{{report(10, 1), ledger.ModeUnknown}, {report(8, 3), ledger.ModeUnknown}}, "≥ 10", "≥ 3"},
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
	if err := tu.Observe(report(1, 1), "sometimes"); err == nil {
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
