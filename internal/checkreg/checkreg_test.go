package checkreg_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/checkreg"
	"github.com/agentrt/agentrt/internal/vectors"
)

// outOfScope are the vector kinds agentrt does not register, by name
// prefix, with the vectors README's reason.
var outOfScope = []struct{ prefix, reason string }{
	{"Terminal", "kinds outside the seeds need not be implemented (vectors README)"},
	{"AgentInteractiveSession", "kinds outside the seeds need not be implemented (vectors README)"},
	{"AgentInstance", "kinds outside the seeds need not be implemented (vectors README)"},
}

func excluded(kind string) (string, bool) {
	for _, o := range outOfScope {
		if strings.HasPrefix(kind, o.prefix) {
			return o.reason, true
		}
	}
	return "", false
}

// TestEveryVectorKindIsRegistered (PKG-04): every kind in the vectors'
// INDEX.tsv has a validator behind `agentrt check --kind`, or is listed
// above as out of scope with the vectors README's reason; an out-of-scope
// kind that became registered must leave the list.
func TestEveryVectorKindIsRegistered(t *testing.T) {
	kinds, err := vectors.Kinds()
	if err != nil {
		t.Fatal(err)
	}
	r := checkreg.New()
	for _, kind := range kinds {
		reason, out := excluded(kind)
		switch registered := r.HasKind(kind); {
		case registered && out:
			t.Errorf("%s is registered but listed as out of scope (%s)", kind, reason)
		case !registered && !out:
			t.Errorf("%s is in the vectors' index but not registered in checkreg", kind)
		}
	}
}

// TestImprovementKindsCheck runs one valid and one refused vector of each
// improvement kind through the registry, as `agentrt check` does.
func TestImprovementKindsCheck(t *testing.T) {
	r := checkreg.New()
	for _, kind := range []string{
		"AgentImprovementSource", "AgentImprovementActivation", "AgentImprovementActivationResult",
		"AgentImprovementProposal", "AgentImprovementReview", "AgentProfileImprovementChange",
		"AgentProfileImprovementChangeStep", "AgentProfileImprovementMeasuredComparison",
		"AgentProfileImprovementRunReceipt",
	} {
		t.Run(kind, func(t *testing.T) {
			k, err := vectors.Load(kind)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range k.Cases {
				res, err := r.Check(kind, c.Raw())
				if err != nil {
					t.Fatalf("%s: %v", c.Name, err)
				}
				if res.Valid != c.Valid {
					t.Errorf("%s: valid = %v, want %v", c.Name, res.Valid, c.Valid)
				}
				if c.Digest != "" && (res.Digest == nil || *res.Digest != c.Digest) {
					t.Errorf("%s: digest differs from %s", c.Name, c.Digest)
				}
			}
		})
	}
}
