package clibridge

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
)

// The bridge passes the providertest suite with the real claude binary:
// every scenario of an ability it declares runs, and the scenarios of
// abilities it does not declare (detach, replay, sessions, workspace,
// branching, observation, interactions, context transfer, exact
// process) skip with the reason.
func TestConformance(t *testing.T) {
	f := newFakeAnthropic(t, toolScript)
	bin := claudeBinary(t)
	providertest.Run(t, func(t *testing.T) contract.Provider {
		p, err := New(Options{Binary: bin, BaseURL: f.URL(), APIKey: fakeKey, WorkRoot: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, providertest.Options{RequireUsage: true})
}
