package localproc

import (
	"context"
	"errors"
	"testing"

	"github.com/agentrt/agentrt/contract"
)

// Where the probe fails, nothing is declared and nothing is offered, and
// the document and the offer agree either way (EXP-13).
func TestDeclaredOnlyWhenEnforced(t *testing.T) {
	p, err := New(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, available := range []bool{true, false} {
		if !available {
			p.facet, p.unavailable = nil, errors.New("simulated: no namespaces")
		} else if p.unavailable != nil {
			continue
		}
		c, err := p.Capabilities(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if (c.ExactProcess != nil) != available || (p.ExactProcess() != nil) != available {
			t.Errorf("available %v: declared %v, offered %v", available, c.ExactProcess != nil, p.ExactProcess() != nil)
		}
		if available && (len(c.ExactProcess.Egress) != 1 || c.ExactProcess.Egress[0] != contract.EgressBlocked) {
			t.Errorf("declared egress %v; want only blocked", c.ExactProcess.Egress)
		}
		if err := contract.CheckProviderExposure(c, p); err != nil {
			t.Errorf("available %v: %v", available, err)
		}
		if _, err := contract.Validate(contract.KindEnvironmentCapabilities, contract.CapabilitiesSchema, c); err != nil {
			t.Errorf("available %v: the document is invalid: %v", available, err)
		}
	}
}
