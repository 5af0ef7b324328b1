package contract_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/schema"
)

// pcExplain returns why the Interface 5 verdict on a 1.6.0 case differs
// from the reference's, after checking that the reason really applies, or
// "" when it cannot explain the difference.
type pcExplain func(t *testing.T, c vectors.Case, v5err error) string

// pcCompareV5 runs every 1.6.0 case of kind through the Interface 5
// schema. A case agrees when the verdict, canonical form and digest (or a
// refusal path) are the reference's; every other case must be explained
// by a seed 004 change that explain verifies.
func pcCompareV5(t *testing.T, kind string, accept vectors.Accept, explain pcExplain) {
	t.Helper()
	k, err := vectors.Load(kind)
	if err != nil {
		t.Fatal(err)
	}
	agree := 0
	reasons := map[string]int{}
	for _, c := range k.Cases {
		out, err := accept(c.Raw())
		if pcAgrees(c, out, err) {
			agree++
			continue
		}
		reason := ""
		if explain != nil {
			reason = explain(t, c, err)
		}
		if reason == "" {
			t.Errorf("%s/%s: unexplained difference from the reference (v5 error: %v)", kind, c.Name, err)
			continue
		}
		reasons[reason]++
	}
	var parts []string
	for r, n := range reasons {
		parts = append(parts, fmt.Sprintf("%d: %s", n, r))
	}
	sort.Strings(parts)
	t.Logf("%s: %d of %d cases agree with 1.6.0; differences: %s", kind, agree, len(k.Cases), strings.Join(parts, "; "))
}

func pcAgrees(c vectors.Case, out canonjson.Value, err error) bool {
	if c.Valid {
		if err != nil {
			return false
		}
		if c.Canonical == "" {
			return true
		}
		got, cerr := canonjson.Canonical(out)
		return cerr == nil && string(got) == c.Canonical && canonjson.DigestBytes(got) == c.Digest
	}
	var se *schema.Error
	if err == nil || !errors.As(err, &se) {
		return false
	}
	if len(c.Issues) == 0 {
		return true
	}
	for _, g := range se.Issues {
		for _, w := range c.Issues {
			if vectors.PathMatches(g.Path, w.Path) {
				return true
			}
		}
	}
	return false
}

// pcIssuePaths lists the paths of a refusal.
func pcIssuePaths(err error) []string {
	var se *schema.Error
	if !errors.As(err, &se) {
		return nil
	}
	var out []string
	for _, is := range se.Issues {
		out = append(out, is.Path)
	}
	return out
}

// pcRedigestPlan recomputes the Interface 5 plan digest of the plan at
// pointer in a 1.6.0 case and reports whether the Interface 5 schema then
// accepts the case.
func pcRedigestPlan(t *testing.T, kind string, node, legacy schema.Node, c vectors.Case, pointer string) bool {
	t.Helper()
	raw, err := canonjson.Decode(c.Raw())
	if err != nil {
		return false
	}
	// The reference accepted the case: take its accepted form.
	v, err := schema.Run(kind, legacy, raw)
	if err != nil {
		return false
	}
	pv, ok := canonjson.Resolve(v, pointer)
	if !ok {
		return false
	}
	var plan contract.PortableContextPlan
	if err := canonjson.FromValue(pv, &plan); err != nil {
		return false
	}
	digest, err := contract.PortableContextPlanDigest(&plan)
	if err != nil {
		return false
	}
	plan.Digest = digest
	replaced, err := canonjson.ToValue(plan)
	if err != nil {
		return false
	}
	if pointer != "" {
		var members []canonjson.Member
		for _, m := range v.Members() {
			if m.Name == strings.TrimPrefix(pointer, "/") {
				m.Value = replaced
			}
			members = append(members, m)
		}
		replaced = canonjson.ObjectValue(members)
	}
	_, err = schema.Run(kind, node, replaced)
	return err == nil
}

// explainPlanDigest: a case the reference accepted now fails only at the
// plan digest, and the same plan with its Interface 5 digest is accepted.
func explainPlanDigest(kind string, node, legacy schema.Node, pointer string) pcExplain {
	return func(t *testing.T, c vectors.Case, v5err error) string {
		if !c.Valid || v5err == nil {
			return ""
		}
		for _, p := range pcIssuePaths(v5err) {
			if p != pointer+"/digest" {
				return ""
			}
		}
		if !pcRedigestPlan(t, kind, node, legacy, c, pointer) {
			return ""
		}
		return "seed 004 changed the plan digest algorithm (the same plan with its v5 digest is accepted)"
	}
}

// explainUnbound: the reference refused a destination without an
// environment id; Interface 5 accepts unbound destinations.
func explainUnbound(pointer string) pcExplain {
	return func(t *testing.T, c vectors.Case, v5err error) string {
		if c.Valid || v5err != nil {
			return ""
		}
		v, err := canonjson.Decode(c.Raw())
		if err != nil {
			return ""
		}
		dest, ok := canonjson.Resolve(v, pointer)
		if !ok {
			return ""
		}
		if _, bound := dest.Get("environmentId"); bound {
			return ""
		}
		for _, is := range c.Issues {
			if is.Path != pointer+"/environmentId" {
				return ""
			}
		}
		return "seed 004 allows an unbound destination (no environmentId)"
	}
}

func pcEither(explains ...pcExplain) pcExplain {
	return func(t *testing.T, c vectors.Case, v5err error) string {
		for _, e := range explains {
			if r := e(t, c, v5err); r != "" {
				return r
			}
		}
		return ""
	}
}

// TestContextVectorsV5 compares the Interface 5 schemas with every 1.6.0
// case of the eight kinds seed 004 made informative, and explains each
// difference by a seed change (checklist CTX-07, CTX-15, CTX-23, CTX-24,
// CTX-34).
func TestContextVectorsV5(t *testing.T) {
	pcCompareV5(t, contract.KindPortableConversationContext,
		acceptVia[contract.PortableConversationContext](contract.KindPortableConversationContext, contract.PortableConversationContextSchema), nil)
	pcCompareV5(t, contract.KindPortableContextPartPlan,
		acceptVia[contract.PortableContextPartPlan](contract.KindPortableContextPartPlan, contract.PortableContextPartPlanSchema), nil)
	pcCompareV5(t, contract.KindPortableContextPlanRequest,
		acceptVia[contract.PortableContextPlanRequest](contract.KindPortableContextPlanRequest, contract.PortableContextPlanRequestSchema),
		explainUnbound("/destination"))
	pcCompareV5(t, contract.KindPortableContextPlan,
		acceptVia[contract.PortableContextPlan](contract.KindPortableContextPlan, contract.PortableContextPlanSchema),
		pcEither(explainPlanDigest(contract.KindPortableContextPlan, contract.PortableContextPlanSchema, contract.LegacyPortableContextPlanSchema, ""), explainUnbound("/destination")))
	pcCompareV5(t, contract.KindPortableContextPlanResult,
		acceptVia[contract.PortableContextPlanResult](contract.KindPortableContextPlanResult, contract.PortableContextPlanResultSchema),
		pcEither(explainPlanDigest(contract.KindPortableContextPlanResult, contract.PortableContextPlanResultSchema, contract.LegacyPortableContextPlanResultSchema, "/plan"), explainUnbound("/plan/destination")))
	pcCompareV5(t, contract.KindContextTransferReceipt,
		acceptVia[contract.ContextTransferReceipt](contract.KindContextTransferReceipt, contract.ContextTransferReceiptSchema),
		explainUnbound("/destination"))
	pcCompareV5(t, contract.KindContextTransferResult,
		acceptVia[contract.ContextTransferResult](contract.KindContextTransferResult, contract.ContextTransferResultSchema),
		explainUnbound("/destination"))
	pcCompareV5(t, contract.KindContextTransferRequest,
		func(raw []byte) (canonjson.Value, error) {
			req, err := contract.ParseContextTransferRequest(raw)
			if err != nil {
				return canonjson.Value{}, err
			}
			return canonjson.ToValue(req)
		},
		func(t *testing.T, c vectors.Case, v5err error) string {
			if errors.Is(v5err, contract.ErrLegacyContextTransferRequest) {
				var se *schema.Error
				if !errors.As(v5err, &se) {
					t.Errorf("%s: a legacy refusal is not a *schema.Error", c.Name)
				}
				return "seed 004: a request carrying the complete local plan is refused as legacy (typed error)"
			}
			return ""
		})
}
