package cli_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// Spec §3.6 result, §6, §7 rule 1 on the scripted provider, dollars
// reported: the manager's three turns and the worker's one each report a
// cost, under --budget-usd with the worker reserving --worker-usd.
// spentTotal.usd is their sum, known; spentBreakdown's driverInference
// and childWork sum to it on iterations, tokens and usd; nothing is a
// gap; the worker's kernel run in the store ledgers its own cost. When
// the manager's first turn reports no cost, the dollars are unknown
// (null, usdKnown false, the manager named an unreported usd gap), yet
// the spawn that turn asked for is admitted: the driver's own unknown
// dollars do not taint the dollar channel (§6 observe).
func TestSuperviseKnownDollarsReconcile(t *testing.T) {
	const worker = `{"turns": [{"match": "note", "repeat": true, "steps": [{"text": "Done: note"},
		{"usage": {"inputTokens": 10, "outputTokens": 2, "cost": 0.0025}, "mode": "delta"}]}]}`
	for _, tc := range []struct {
		name        string
		firstCost   string // the manager's first turn's cost member
		wantUSD     float64
		wantUSDKnow bool
	}{
		{"every turn reports", `, "cost": 0.001`, 0.001 + 0.002 + 0.003 + 0.0025, true},
		{"the manager's first turn does not", ``, 0.002 + 0.003 + 0.0025, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := managerScript(t, `{"turns": [
				{"calls": [{"verb": "spawn_worker", "args": {"profile": "note-writer", "label": "note", "task": "Write a note."}}], "usage": {"inputTokens": 40, "outputTokens": 10`+tc.firstCost+`}},
				{"calls": [{"verb": "await_event", "args": {"timeoutMs": 60000}}], "usage": {"inputTokens": 20, "outputTokens": 5, "cost": 0.002}},
				{"text": "The note is in.", "usage": {"inputTokens": 30, "outputTokens": 5, "cost": 0.003}}]}`)
			db := filepath.Join(t.TempDir(), "runs.db")
			args := append(superviseArgs(t, script, t.TempDir(), "--json", "--budget-usd", "1", "--worker-usd", "0.1",
				"--script", writeFile(t, "worker-script.json", worker)), "--db", db)
			out, errOut, code := run(t, "", args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			res := decode(t, out)
			total := member(res, "spentTotal")
			usd := member(total, "usd")
			if tc.wantUSDKnow {
				if usd.Kind() != canonjson.Number || math.Abs(usd.Float()-tc.wantUSD) > 1e-9 || !member(total, "usdKnown").Bool() {
					t.Errorf("spentTotal usd %v usdKnown %v, want %v known:\n%s", usd, member(total, "usdKnown"), tc.wantUSD, out)
				}
				if g := member(res, "spendGaps").Items(); len(g) != 0 {
					t.Errorf("spendGaps %s, want none", canonjson.Marshal(member(res, "spendGaps")))
				}
			} else {
				if member(total, "usdKnown").Bool() || (usd.Kind() == canonjson.Number && usd.Float() < tc.wantUSD-1e-9) {
					t.Errorf("spentTotal usd %v usdKnown %v, want unknown (null, or a floor of at least %v):\n%s", usd, member(total, "usdKnown"), tc.wantUSD, out)
				}
				var named bool
				for _, g := range member(res, "spendGaps").Items() {
					ch := member(g, "channels").Items()
					named = named || (member(g, "id").Str() == "rel" && member(g, "kind").Str() == "unreported" && len(ch) == 1 && ch[0].Str() == "usd")
				}
				if !named {
					t.Errorf("spendGaps %s, want the manager (rel) unreported usd", canonjson.Marshal(member(res, "spendGaps")))
				}
			}
			if w := member(res, "workers").Items(); len(w) != 1 || member(w[0], "state").Str() != "done" {
				t.Fatalf("workers %s, want the one spawn admitted and done:\n%s", canonjson.Marshal(member(res, "workers")), out)
			}
			if got := member(member(total, "tokens"), "total"); int64(got.Float()) != 40+10+20+5+30+5+12 || !member(total, "tokensKnown").Bool() {
				t.Errorf("spentTotal tokens %v, want 122 known", got)
			}
			bd := member(res, "spentBreakdown")
			driver, child := member(bd, "driverInference"), member(bd, "childWork")
			for _, ch := range []string{"iterations", "usd"} {
				if d, c, s := charged(t, member(driver, ch)), charged(t, member(child, ch)), charged(t, member(total, ch)); math.Abs(d+c-s) > 1e-9 {
					t.Errorf("%s: driverInference %v + childWork %v != spentTotal %v", ch, d, c, s)
				}
			}
			if d, c, s := charged(t, member(member(driver, "tokens"), "total")), charged(t, member(member(child, "tokens"), "total")), charged(t, member(member(total, "tokens"), "total")); d+c != s {
				t.Errorf("tokens: driverInference %v + childWork %v != spentTotal %v", d, c, s)
			}
			if got := member(child, "usd"); got.Kind() != canonjson.Number || math.Abs(got.Float()-0.0025) > 1e-9 || !member(child, "usdKnown").Bool() {
				t.Errorf("childWork usd %v usdKnown %v, want 0.0025 known", got, member(child, "usdKnown"))
			}
			shown, showErr, code := run(t, "", "runs", "show", "rel", "--db", db, "--json")
			if code != 0 {
				t.Fatalf("runs show rel: exit %d\n%s%s", code, shown, showErr)
			}
			for _, w := range member(member(decode(t, shown), "record"), "workers").Items() {
				wout, werr, code := run(t, "", "runs", "show", member(w, "execution").Str(), "--db", db, "--json")
				if code != 0 {
					t.Fatalf("runs show %s: exit %d\n%s%s", member(w, "execution").Str(), code, wout, werr)
				}
				if got := member(member(decode(t, wout), "spend"), "costUsd"); got.Kind() != canonjson.Number || math.Abs(got.Float()-0.0025) > 1e-9 {
					t.Errorf("the worker's run ledgers costUsd %v, want 0.0025: %s", got, wout)
				}
			}
		})
	}
}

// A scripted manager turn's usage.cost must be a finite non-negative
// number of dollars: a negative one is refused before the run starts.
func TestSuperviseManagerScriptRefusesNegativeCost(t *testing.T) {
	script := managerScript(t, `{"turns": [{"text": "done", "usage": {"inputTokens": 1, "outputTokens": 1, "cost": -0.5}}]}`)
	out, errOut, code := run(t, "", superviseArgs(t, script, t.TempDir())...)
	if code == 0 || !strings.Contains(errOut, "usage.cost -0.5 is not a finite non-negative number of dollars") {
		t.Errorf("exit %d, want a refusal naming usage.cost:\n%s%s", code, out, errOut)
	}
}
