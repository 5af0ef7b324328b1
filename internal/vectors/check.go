package vectors

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Accept parses raw JSON text as one kind and returns the accepted value
// (the validator's output, whose canonical form is the identity), or an
// error. Refusals must be *schema.Error.
type Accept func(raw []byte) (canonjson.Value, error)

// Result counts how a kind's cases went.
type Result struct {
	Cases, Valid, Canonical int
}

// deviations are the vector cases agentrt deliberately disagrees with, each
// with the reason. Keep this list tiny and explained.
var deviations = map[string]string{
	"InteractionBinding/delete@/sessionId of recorded-9233e4badc": "seed 000 binds a response to an \"optional provider session\"; " +
		"vectors/README.md says the reference cases refusing a binding without sessionId were left out and spec/provider.md decision P.5 " +
		"makes sessionId optional, but this one case remained",
}

// informative are the kinds whose vectors the seeds override (vectors
// README, "Where the seeds win"): seed 004 changed the plan digest and the
// transfer request. Their cases are checked by contract's own v5 tests,
// which explain every difference.
var informative = map[string]bool{
	"ContextTransferRequest": true, "ContextTransferResult": true, "ContextTransferReceipt": true,
	"PortableContextPlan": true, "PortableContextPlanRequest": true, "PortableContextPlanResult": true,
	"PortableContextPartPlan": true, "PortableConversationContext": true,
}

// Informative reports whether a kind's vectors are informative only.
func Informative(kind string) bool { return informative[kind] }

// Deviation reports whether agentrt deliberately disagrees with a case,
// and why.
func Deviation(kind, name string) (string, bool) {
	reason, ok := deviations[kind+"/"+name]
	return reason, ok
}

// CheckKind runs every case of kind through accept and fails t on any
// disagreement with the reference: verdict, canonical bytes and digest for
// valid cases, and for refused cases at least one issue whose path is one
// of the reference's.
func CheckKind(t *testing.T, kind string, accept Accept) Result {
	t.Helper()
	k, err := Load(kind)
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	for _, c := range k.Cases {
		if _, ok := Deviation(kind, c.Name); ok {
			continue
		}
		res.Cases++
		out, err := accept(c.Raw())
		if c.Valid {
			if err != nil {
				t.Errorf("%s/%s: refused a valid value: %v", kind, c.Name, err)
				continue
			}
			res.Valid++
			if c.Canonical == "" {
				continue
			}
			got, err := canonjson.Canonical(out)
			if err != nil {
				t.Errorf("%s/%s: canonical: %v", kind, c.Name, err)
				continue
			}
			if string(got) != c.Canonical {
				t.Errorf("%s/%s: canonical\n got %s\nwant %s", kind, c.Name, got, c.Canonical)
			} else if d := canonjson.DigestBytes(got); d != c.Digest {
				t.Errorf("%s/%s: digest %s, want %s", kind, c.Name, d, c.Digest)
			} else {
				res.Canonical++
			}
			continue
		}
		if err == nil {
			t.Errorf("%s/%s: accepted a value the reference refuses (%s)", kind, c.Name, describeIssues(c.Issues))
			continue
		}
		var se *schema.Error
		if !errors.As(err, &se) {
			t.Errorf("%s/%s: refusal is %T, want *schema.Error: %v", kind, c.Name, err, err)
			continue
		}
		if !anyPathMatches(se.Issues, c.Issues) {
			t.Errorf("%s/%s: no issue at the reference's paths\n got %s\nwant one of %s", kind, c.Name, describeSchemaIssues(se.Issues), describeIssues(c.Issues))
		}
	}
	if res.Cases == 0 {
		t.Fatalf("%s: no cases", kind)
	}
	return res
}

func anyPathMatches(got []schema.Issue, want []Issue) bool {
	if len(want) == 0 {
		return true
	}
	for _, g := range got {
		for _, w := range want {
			if PathMatches(g.Path, w.Path) {
				return true
			}
		}
	}
	return false
}

func describeIssues(issues []Issue) string {
	var parts []string
	for _, i := range issues {
		parts = append(parts, "["+i.Path+"] "+i.Code+": "+i.Message)
	}
	return strings.Join(parts, "; ")
}

func describeSchemaIssues(issues []schema.Issue) string {
	var parts []string
	for _, i := range issues {
		parts = append(parts, "["+i.Path+"] "+i.Code+": "+i.Message)
	}
	return strings.Join(parts, "; ")
}

// AcceptVia returns an Accept that validates raw text as kind with node,
// then decodes the accepted value into a fresh T and converts it back, so
// the vectors also prove that the Go type keeps presence (absent stays
// absent; "", false and 0 stay present).
func AcceptVia[T any](kind string, node schema.Node) Accept {
	return func(raw []byte) (canonjson.Value, error) {
		v, err := schema.Decode(kind, raw)
		if err != nil {
			return canonjson.Value{}, err
		}
		out, err := schema.Run(kind, node, v)
		if err != nil {
			return canonjson.Value{}, err
		}
		typed := new(T)
		if err := canonjson.FromValue(out, typed); err != nil {
			return canonjson.Value{}, errors.New("accepted value does not fit the Go type: " + err.Error())
		}
		back, err := canonjson.ToValue(typed)
		if err != nil {
			return canonjson.Value{}, err
		}
		if !canonjson.Equal(back, out) {
			return canonjson.Value{}, errors.New("Go type does not round-trip: " + string(canonjson.Marshal(back)) + " vs " + string(canonjson.Marshal(out)))
		}
		return out, nil
	}
}
