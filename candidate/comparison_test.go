package candidate_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/schema"
)

// validInput returns the input of a valid vector case of kind.
func validInput(t *testing.T, kind, name string) canonjson.Value {
	t.Helper()
	k, err := vectors.Load(kind)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range k.Cases {
		if c.Name == name && c.Valid {
			return c.Input
		}
	}
	t.Fatalf("%s has no valid case %s", kind, name)
	return canonjson.Value{}
}

// setAt replaces the value at a slash-separated member and index path.
func setAt(t *testing.T, v canonjson.Value, path string, raw string) canonjson.Value {
	t.Helper()
	x, err := canonjson.Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return replace(t, v, strings.Split(path, "/"), x)
}

func replace(t *testing.T, v canonjson.Value, path []string, x canonjson.Value) canonjson.Value {
	t.Helper()
	if len(path) == 0 {
		return x
	}
	if v.Kind() == canonjson.Array {
		items := slices.Clone(v.Items())
		i := 0
		for _, ch := range path[0] {
			i = i*10 + int(ch-'0')
		}
		items[i] = replace(t, items[i], path[1:], x)
		return canonjson.ArrayValue(items)
	}
	inner, _ := v.Get(path[0])
	return v.With(path[0], replace(t, inner, path[1:], x))
}

func getAt(v canonjson.Value, path string) canonjson.Value {
	for _, name := range strings.Split(path, "/") {
		if v.Kind() == canonjson.Array {
			i := 0
			for _, ch := range name {
				i = i*10 + int(ch-'0')
			}
			v = v.Items()[i]
			continue
		}
		v, _ = v.Get(name)
	}
	return v
}

// TestComparisonRules mutates the reference's valid proposals and
// profile comparison to exercise rules the visible vectors leave
// unrefused: a proposal needs a shipped, powered comparison whose
// changed surfaces it names; a comparison's summary is recomputed from
// its receipts; executions never share an identity (RTP-12: the
// selected candidate is re-measured independently; RTP-09: accounting
// must equal the signed receipts).
func TestComparisonRules(t *testing.T) {
	profileProposal := validInput(t, candidate.KindImprovementProposal, "recorded-78fc9629aa")
	bundleProposal := validInput(t, candidate.KindImprovementProposal, "recorded-95650b0361")
	comparison := validInput(t, candidate.KindProfileComparison, "recorded-a1f93e56f5")
	cases := []struct {
		name   string
		base   canonjson.Value
		parse  func([]byte) error
		mutate func(t *testing.T, v canonjson.Value) canonjson.Value
		path   string // "" means valid
	}{
		{name: "proposal/profile valid", base: profileProposal},
		{name: "proposal/bundle valid", base: bundleProposal},
		{name: "proposal/hold is not proposable", base: profileProposal, path: "/evaluation/decision/outcome",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "evaluation/decision/outcome", `"hold"`)
			}},
		{name: "proposal/insufficient power", base: bundleProposal, path: "/evaluation/power",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "evaluation/power/sufficient", `false`)
			}},
		{name: "proposal/fewer runs than the policy's minimum", base: profileProposal, path: "/evaluation/power",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "evaluation/experiment/policy/minProductiveRuns", `4`)
			}},
		{name: "proposal/extra surface", base: profileProposal, path: "/changedSurfaces",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "changedSurfaces", `["prompt","tools"]`)
			}},
		{name: "proposal/duplicate surface", base: profileProposal, path: "/changedSurfaces",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "changedSurfaces", `["prompt","prompt"]`)
			}},
		{name: "proposal/bundle surfaces are not recomputed", base: bundleProposal,
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "changedSurfaces", `["code","memory"]`)
			}},
		{name: "proposal/unchanged candidate bundle", base: bundleProposal, path: "/evaluation/experiment/candidate/digest",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "evaluation/experiment/candidate", string(canonjson.Marshal(getAt(v, "evaluation/experiment/baseline"))))
			}},
		{name: "proposal/unknown evaluation kind", base: profileProposal, path: "/evaluation/kind",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "evaluation/kind", `"agent-eval-comparison"`)
			}},
		{name: "proposal/finding must be an object", base: profileProposal, path: "/findings/0",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "findings", `[1]`)
			}},
		{name: "proposal/runId too long", base: profileProposal, path: "/runId",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "runId", `"`+strings.Repeat("r", 201)+`"`)
			}},
		{name: "proposal/execution on another model", base: bundleProposal, path: "/evaluation/measurements/0/candidate/materializationReceipt/resolvedModel",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "evaluation/measurements/0/candidate/materializationReceipt/resolvedModel/snapshot", `"other-snapshot"`)
			}},
		{name: "proposal/execution with another seed", base: bundleProposal, path: "/evaluation/measurements/1/baseline/materializationReceipt/executionPlan/material/runCell",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "evaluation/measurements/1/baseline/materializationReceipt/executionPlan/material/runCell/seed", `7`)
			}},
		{name: "proposal/execution in another container", base: bundleProposal, path: "/evaluation/measurements/2/baseline/materializationReceipt/executionPlan/material/container",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "evaluation/measurements/2/baseline/materializationReceipt/executionPlan/material/container/source", `"pinned-container"`)
			}},
		{name: "proposal/retried attempt is not publishable", base: bundleProposal, path: "/evaluation/measurements/0/baseline/materializationReceipt/executionPlan/material/runCell",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "evaluation/measurements/0/baseline/materializationReceipt/executionPlan/material/runCell/attempt", `2`)
			}},
		{name: "comparison/valid", base: comparison},
		{name: "comparison/reported mean off", base: comparison, path: "/overall/baseline",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "overall/baseline", `0.123`)
			}},
		{name: "comparison/objective without cost", base: comparison, path: "/objectives",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				obj := slices.DeleteFunc(slices.Clone(getAt(v, "objectives").Items()), func(o canonjson.Value) bool {
					k, _ := o.Get("kind")
					return k.Str() == "cost"
				})
				return v.With("objectives", canonjson.ArrayValue(obj))
			}},
		{name: "comparison/swapped arms reuse nothing but break bindings", base: comparison, path: "/measurements/0/baseline/runCell/arm",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				m := getAt(v, "measurements/0")
				b, _ := m.Get("baseline")
				c, _ := m.Get("candidate")
				return setAt(t, v, "measurements/0", string(canonjson.Marshal(m.With("baseline", c).With("candidate", b))))
			}},
		{name: "comparison/repeated measurement reuses identities", base: comparison, path: "/measurements/1/baseline",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "measurements/1", string(canonjson.Marshal(getAt(v, "measurements/0"))))
			}},
		{name: "comparison/provenance must bind the states", base: comparison, path: "/provenance",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "provenance/baselineContentHash", `"`+strings.Repeat("a", 64)+`"`)
			}},
		{name: "comparison/hold may include failures", base: comparison,
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "decision/outcome", `"hold"`)
			}},
		{name: "comparison/a huge repetition count is refused without visiting its cells", base: comparison, path: "/measurements",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "experiment/benchmark/suite/reps", `9007199254740991`)
			}},
		{name: "proposal/a huge repetition count is refused without visiting its cells", base: bundleProposal, path: "/evaluation/measurements",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "evaluation/experiment/benchmark/suite/reps", `9007199254740991`)
			}},
		{name: "comparison/candidate label needs content", base: comparison, path: "/candidate",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value { return setAt(t, v, "candidate", `{}`) }},
		{name: "comparison/unsorted critical dimensions", base: comparison, path: "/experiment/policy/criticalDimensions",
			mutate: func(t *testing.T, v canonjson.Value) canonjson.Value {
				return setAt(t, v, "experiment/policy/criticalDimensions", `["b","a"]`)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.base
			if tc.mutate != nil {
				v = tc.mutate(t, v)
			}
			var err error
			if strings.HasPrefix(tc.name, "proposal/") {
				_, err = candidate.ParseImprovementProposal(canonjson.Marshal(v))
			} else {
				_, err = candidate.ParseProfileMeasuredComparison(canonjson.Marshal(v))
			}
			if tc.path == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *schema.Error at %s", err, tc.path)
			}
			if !slices.ContainsFunc(se.Issues, func(is schema.Issue) bool { return is.Path == tc.path }) {
				t.Fatalf("issues %v, want one at %s", se.Issues, tc.path)
			}
		})
	}
}
