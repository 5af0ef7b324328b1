package cli_test

import (
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// charged is a spec Spend member as a number: a null (unknown, nothing
// charged for it) counts 0.
func charged(t *testing.T, v canonjson.Value) float64 {
	t.Helper()
	switch v.Kind() {
	case canonjson.Null:
		return 0
	case canonjson.Number:
		return v.Float()
	}
	t.Fatalf("spend member %s is neither a number nor null", canonjson.Marshal(v))
	return 0
}

// A real supervised run over HTTP: --json carries §3.6's SupervisedResult
// members beside agentrt's own — kind, out, outRef, tree, spentTotal (the
// §2.1 Spend: tokensKnown and usdKnown explicit, unknown dollars null,
// never 0) and spentBreakdown, whose driverInference and childWork sum to
// spentTotal on iterations, tokens and usd.
func TestSuperviseJSONCarriesSpecResult(t *testing.T) {
	e := newCostEndpoint(t, "alpha", "beta")
	res, out, code := superviseOverHTTP(t, e, filepath.Join(t.TempDir(), "runs.db"))
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	if got := member(res, "kind").Str(); got != "winner" {
		t.Fatalf("kind %q, want winner:\n%s", got, out)
	}
	winner := member(res, "winner")
	if got, want := member(res, "out").Str(), member(winner, "text").Str(); got == "" || got != want {
		t.Errorf("out %q, want the winner's text %q", got, want)
	}
	if got := member(winner, "out").Str(); got != member(winner, "text").Str() {
		t.Errorf("winner.out %q, want the winner's text", got)
	}
	if got := member(res, "outRef").Str(); got == "" || got != member(winner, "outRef").Str() {
		t.Errorf("outRef %q, want the winner's %q", got, member(winner, "outRef").Str())
	}
	tree := member(res, "tree")
	if got := member(tree, "root").Str(); got != "costs" {
		t.Errorf("tree.root %q, want costs", got)
	}
	nodes := member(tree, "nodes").Items()
	if len(nodes) != 2 {
		t.Fatalf("tree has %d nodes, want 2:\n%s", len(nodes), out)
	}
	for _, n := range nodes {
		if member(n, "status").Str() != "done" || member(n, "parent").Str() != "costs" || member(n, "label").Str() == "" {
			t.Errorf("tree node %s", canonjson.Marshal(n))
		}
		if s := member(n, "spent"); member(s, "tokensKnown").Kind() != canonjson.Bool || !member(s, "tokensKnown").Bool() {
			t.Errorf("tree node %s: spent %s, want tokens known", member(n, "id").Str(), canonjson.Marshal(s))
		}
	}
	if got := member(tree, "inFlight"); got.Kind() != canonjson.Number || got.Float() != 0 {
		t.Errorf("tree.inFlight %v, want 0", got)
	}
	total := member(res, "spentTotal")
	e.mu.Lock()
	reported := e.reportedIn + e.reportedOut
	e.mu.Unlock()
	if got := member(member(total, "tokens"), "total"); got.Kind() != canonjson.Number || int64(got.Float()) != reported {
		t.Errorf("spentTotal.tokens.total %v, want %d:\n%s", got, reported, out)
	}
	if _, has := member(total, "tokens").Get("input"); has {
		t.Errorf("spentTotal.tokens names an input count the ledger does not keep: %s", canonjson.Marshal(total))
	}
	for name, want := range map[string]bool{"tokensKnown": true, "usdKnown": false} {
		if got := member(total, name); got.Kind() != canonjson.Bool || got.Bool() != want {
			t.Errorf("spentTotal.%s = %v, want %v", name, got, want)
		}
	}
	if got := member(total, "usd"); got.Kind() != canonjson.Null {
		t.Errorf("spentTotal.usd = %v, want null (no dollars reported, none charged)", got)
	}
	if got := member(total, "ms"); got.Kind() != canonjson.Number || got.Float() != member(res, "ms").Float() {
		t.Errorf("spentTotal.ms = %v, want the run's ms", got)
	}
	bd := member(res, "spentBreakdown")
	driver, child := member(bd, "driverInference"), member(bd, "childWork")
	if driver.Kind() != canonjson.Object || child.Kind() != canonjson.Object {
		t.Fatalf("spentBreakdown %s", canonjson.Marshal(bd))
	}
	if charged(t, member(member(driver, "tokens"), "total")) == 0 {
		t.Errorf("driverInference tokens 0: the manager's turns were reported")
	}
	for _, ch := range []string{"iterations", "usd"} {
		if d, c, s := charged(t, member(driver, ch)), charged(t, member(child, ch)), charged(t, member(total, ch)); d+c != s {
			t.Errorf("%s: driverInference %v + childWork %v != spentTotal %v", ch, d, c, s)
		}
	}
	dt, ct, st := member(member(driver, "tokens"), "total"), member(member(child, "tokens"), "total"), member(member(total, "tokens"), "total")
	if d, c, s := charged(t, dt), charged(t, ct), charged(t, st); d+c != s {
		t.Errorf("tokens: driverInference %v + childWork %v != spentTotal %v", d, c, s)
	}
	if _, has := res.Get("error"); has {
		t.Errorf("a winner carries error")
	}
}
