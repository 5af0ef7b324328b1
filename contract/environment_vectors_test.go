package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
)

func TestEnvironmentVectors(t *testing.T) {
	// Checklist CAP-01..CAP-12, SYS-01, SYS-07, CTL-08 (retained control),
	// NAT-07, EXP-13: every reference verdict, canonical form and digest of
	// the capability document.
	res := vectors.CheckKind(t, contract.KindEnvironmentCapabilities,
		acceptVia[contract.Capabilities](contract.KindEnvironmentCapabilities, contract.CapabilitiesSchema))
	t.Logf("%s: %d cases, %d valid, %d canonical", contract.KindEnvironmentCapabilities, res.Cases, res.Valid, res.Canonical)
	// Checklist ENV-03, ENV-04: the creation verdict.
	res = vectors.CheckKind(t, contract.KindEnvironmentCreation,
		acceptVia[contract.Creation](contract.KindEnvironmentCreation, contract.CreationSchema))
	t.Logf("%s: %d cases, %d valid, %d canonical", contract.KindEnvironmentCreation, res.Cases, res.Valid, res.Canonical)
}
