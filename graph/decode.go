package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
)

// Decode reads a graph definition from JSON:
//
//	{"nodes": [{"id", "profile"}],
//	 "edges": [{"kind": "delegates", "from", "to", "directive", "maxTraversals"?, "continuity"?}
//	         | {"kind": "analyzes", "analyst", "over", "to", "directive", "maxTraversals"?}],
//	 "budget": {"maxTokens", "maxIterations", "maxUsd"?, "resources"?: {name: {"unit", "limit"}}}}
//
// The budget's keys are spec §2.1's Budget, canonical; the old form
// {"tokens", "iterations"?, "usd"?} still loads (Graph.LegacyBudgetKeys),
// and one budget mixing the two is refused. deadlineMs is refused: the
// run's deadline is RunGraph's (supervise.Options.Deadline), journaled.
//
// Every object is strict: an unknown, misplaced or repeated key is a
// *ValidationError naming its path, and each profile is parsed and
// validated as a profile. The deliverable is code, not data: the caller
// sets Graph.Deliverable. Decode checks the document's shape only;
// RunGraph (or Validate) checks the topology. A definition longer than
// MaxDefinitionLen bytes is refused before it is read (a
// *ValidationError at the root, pointer ""); Decode's cost is linear in
// its input (BenchmarkDecodeWorstCases).
func Decode(data []byte) (Graph, error) {
	var g Graph
	if len(data) > MaxDefinitionLen {
		return g, invalid("graph", "is %d bytes, more than graph.MaxDefinitionLen (%d): give a smaller definition", len(data), MaxDefinitionLen)
	}
	if err := syntax(data); err != nil {
		return g, err
	}
	top, err := object(data, "", "nodes", "edges", "budget")
	if err != nil {
		return g, err
	}
	for _, key := range []string{"nodes", "edges", "budget"} {
		if _, ok := top[key]; !ok {
			return g, invalid(key, "is required")
		}
	}
	var nodes, edges []json.RawMessage
	if err := field(top["nodes"], "nodes", &nodes); err != nil {
		return g, err
	}
	for i, raw := range nodes {
		p := nodePath(i)
		m, err := object(raw, p, "id", "profile")
		if err != nil {
			return g, err
		}
		var n Node
		if err := field(m["id"], p+".id", &n.ID); err != nil {
			return g, err
		}
		if raw, ok := m["profile"]; ok && !isNull(raw) {
			prof, err := profile.Parse(raw)
			if err != nil {
				return g, invalid(p+".profile", "%v", err)
			}
			n.Profile = prof
		}
		g.Nodes = append(g.Nodes, n)
	}
	if err := field(top["edges"], "edges", &edges); err != nil {
		return g, err
	}
	for i, raw := range edges {
		e, err := decodeEdge(raw, edgePath(i))
		if err != nil {
			return g, err
		}
		g.Edges = append(g.Edges, e)
	}
	b, legacy, err := decodeBudget(top["budget"])
	if err != nil {
		return g, err
	}
	g.Budget, g.LegacyBudgetKeys = b, legacy
	return g, nil
}

func decodeEdge(raw json.RawMessage, p string) (Edge, error) {
	var e Edge
	m, err := object(raw, p, "kind", "from", "to", "analyst", "over", "directive", "maxTraversals", "continuity")
	if err != nil {
		return e, err
	}
	var kind string
	if err := field(m["kind"], p+".kind", &kind); err != nil {
		return e, err
	}
	e.Kind = EdgeKind(kind)
	allowed := map[EdgeKind][]string{
		Delegates: {"kind", "from", "to", "directive", "maxTraversals", "continuity"},
		Analyzes:  {"kind", "analyst", "over", "to", "directive", "maxTraversals"},
	}[e.Kind]
	if allowed == nil {
		return e, invalid(p+".kind", "is %q; an edge is delegates or analyzes", kind)
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(allowed, k) {
			return e, invalid(p+"."+k, "%s edge has no %s", article(string(e.Kind)), k)
		}
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"from", &e.From}, {"to", &e.To}, {"analyst", &e.Analyst}, {"directive", &e.Directive}, {"continuity", &e.Continuity}} {
		if err := field(m[f.key], p+"."+f.key, f.dst); err != nil {
			return e, err
		}
	}
	if err := field(m["over"], p+".over", &e.Over); err != nil {
		return e, err
	}
	if raw, ok := m["maxTraversals"]; ok {
		n, err := integer(raw, p+".maxTraversals", math.MaxInt32)
		if err != nil {
			return e, err
		}
		v := int(n)
		e.MaxTraversals = &v
	}
	return e, nil
}

// Budget keys: the spec's (§2.1 Budget, canonical) and the old ones a
// graph file written before them uses, which still load.
var (
	specBudgetKeys   = []string{"maxTokens", "maxIterations", "maxUsd", "deadlineMs", "resources"}
	legacyBudgetKeys = []string{"tokens", "iterations", "usd"}
)

// decodeBudget reads a graph's budget in the spec's form {maxTokens,
// maxIterations, maxUsd?, resources?} or the old {tokens, iterations,
// usd?}; legacy says it was the old. One budget mixing both is refused
// at its first key of the form it has less of (the old, on a tie).
func decodeBudget(raw json.RawMessage) (b *ledger.Budget, legacy bool, err error) {
	m, err := object(raw, "budget", append(slices.Clone(specBudgetKeys), legacyBudgetKeys...)...)
	if err != nil {
		return nil, false, err
	}
	var specs, olds []string
	for _, k := range sortedKeys(m) {
		if slices.Contains(legacyBudgetKeys, k) {
			olds = append(olds, k)
		} else {
			specs = append(specs, k)
		}
	}
	if len(specs) > 0 && len(olds) > 0 {
		odd := olds[0]
		if len(specs) < len(olds) {
			odd = specs[0]
		}
		return nil, false, invalid("budget."+odd, "mixes the old budget keys (%s) with the spec's (maxTokens, maxIterations, maxUsd, resources); write one form, the spec's", strings.Join(olds, ", "))
	}
	legacy = len(olds) > 0
	tokens, iterations, usd := "maxTokens", "maxIterations", "maxUsd"
	if legacy {
		tokens, iterations, usd = "tokens", "iterations", "usd"
	}
	b = &ledger.Budget{}
	for _, f := range []struct {
		key string
		dst **int64
	}{{tokens, &b.Tokens}, {iterations, &b.Iterations}} {
		raw, ok := m[f.key]
		if !ok {
			if !legacy { // §2.1: maxIterations and maxTokens are required
				return nil, false, invalid("budget."+f.key, "is required")
			}
			continue
		}
		n, err := integer(raw, "budget."+f.key, ledger.MaxQuantity)
		if err != nil {
			return nil, false, err
		}
		*f.dst = &n
	}
	if raw, ok := m[usd]; ok {
		var dollars float64
		if err := field(raw, "budget."+usd, &dollars); err != nil {
			return nil, false, err
		}
		if dollars < 0 || dollars > 1e9 {
			return nil, false, invalid("budget."+usd, "is %v; dollars are between 0 and 1e9", dollars)
		}
		micro := int64(math.Round(dollars * 1e6))
		b.MicroUSD = &micro
	}
	if _, ok := m["deadlineMs"]; ok {
		return nil, false, invalid("budget.deadlineMs", "is not taken from a graph file: a relative deadline would restart on every resume; give the run's deadline to RunGraph (agentrt graph --timeout)")
	}
	if raw, ok := m["resources"]; ok {
		var members map[string]json.RawMessage
		if err := json.Unmarshal(raw, &members); err != nil || members == nil {
			return nil, false, invalid("budget.resources", "is not a JSON object")
		}
		b.Resources = map[string]int64{}
		for _, name := range sortedKeys(members) {
			p := "budget.resources[" + strconv.Quote(name) + "]"
			r, err := object(members[name], p, "unit", "limit")
			if err != nil {
				return nil, false, err
			}
			var unit string
			if r["unit"] == nil {
				return nil, false, invalid(p+".unit", "is required")
			}
			if err := field(r["unit"], p+".unit", &unit); err != nil {
				return nil, false, err
			}
			if unit == "" {
				return nil, false, invalid(p+".unit", "is empty")
			}
			if r["limit"] == nil {
				return nil, false, invalid(p+".limit", "is required")
			}
			n, err := integer(r["limit"], p+".limit", ledger.MaxQuantity)
			if err != nil {
				return nil, false, err
			}
			b.Resources[name] = n
		}
	}
	return b, legacy, nil
}

// object decodes raw as a JSON object whose keys are among allowed.
func object(raw json.RawMessage, path string, allowed ...string) (map[string]json.RawMessage, error) {
	where := path
	if where == "" {
		where = "graph"
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, invalid(where, "is not a JSON object")
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(allowed, k) {
			return nil, invalid(memberPath(path, k), "unknown field (known: %s)", strings.Join(allowed, ", "))
		}
	}
	return m, nil
}

// memberPath is the path of member name of the object at path: path.name,
// or path["name"] when name is empty or holds a path's punctuation (., [
// or ]), so that ValidationError.Pointer reads it back as one token.
func memberPath(path, name string) string {
	if name == "" || strings.ContainsAny(name, ".[]") {
		return path + "[" + strconv.Quote(name) + "]"
	}
	if path == "" {
		return name
	}
	return path + "." + name
}

// syntax refuses a document that is not JSON, saying where it stops
// being JSON.
func syntax(data []byte) error {
	if json.Valid(data) {
		// Strict beyond encoding/json: two members of one name are
		// refused, not read last-wins (which one holds would be a
		// parser's guess), with the path of the second.
		var de *canonjson.DecodeError
		if _, err := canonjson.DecodeWith(data, canonjson.DecodeOptions{MaxValues: -1}); errors.As(err, &de) && de.Code == canonjson.CodeDuplicateName {
			return invalid(pointerPath(de.Pointer), "is given twice; a member appears once")
		}
		return nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		return invalid("graph", "is not valid JSON")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 {
		return invalid("graph", "is not valid JSON: %v (at byte %d)", err, se.Offset)
	}
	return invalid("graph", "is not valid JSON: %v", err)
}

// pointerPath writes a JSON pointer as the paths of this package's
// refusals: /edges/0/to as edges[0].to.
func pointerPath(pointer string) string {
	if pointer == "" {
		return "graph"
	}
	path := ""
	for _, tok := range strings.Split(pointer, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if tok != "" && strings.Trim(tok, "0123456789") == "" {
			path += "[" + tok + "]"
			continue
		}
		path = memberPath(path, tok)
	}
	return path
}

// field decodes an optional member into dst; an absent one leaves dst.
func field(raw json.RawMessage, path string, dst any) error {
	if raw == nil {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return invalid(path, "%v", err)
	}
	return nil
}

// integer decodes a non-negative integer no greater than limit.
func integer(raw json.RawMessage, path string, limit int64) (int64, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var n json.Number
	if err := d.Decode(&n); err != nil {
		return 0, invalid(path, "is not a number")
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || v < 0 || v > limit {
		return 0, invalid(path, "is %s; want an integer from 0 to %d", n, limit)
	}
	return v, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// article is "a kind" or "an kind", as kind's first letter sounds.
func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
