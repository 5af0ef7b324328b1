package clibridge

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/internal/clitest"
)

// The bridge passes the providertest suite with the real claude binary:
// every scenario of an ability it declares runs, and the scenarios of
// abilities it does not declare (detach, replay, sessions, workspace,
// branching, observation, interactions, context transfer, exact
// process) skip with the reason.
func TestConformance(t *testing.T) {
	f := newFakeAnthropic(t, toolScript)
	bin := clitest.Claude(t)
	providertest.Run(t, func(t *testing.T) contract.Provider {
		p, err := New(Options{Binary: bin, BaseURL: f.URL(), APIKey: fakeKey, WorkRoot: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, providertest.Options{RequireUsage: true})
}

// The codex bridge passes the providertest suite with the real codex
// binary against a fake Responses API.
func TestCodexConformance(t *testing.T) {
	f := newFakeServer(t, openAIAPI{}, codexScript)
	bin := clitest.Codex(t)
	providertest.Run(t, func(t *testing.T) contract.Provider {
		p, err := New(Options{Harness: harness.Codex, Binary: bin, BaseURL: f.URL() + "/v1", APIKey: fakeKey, WorkRoot: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, providertest.Options{RequireUsage: true})
}

// The opencode bridge passes the providertest suite with the real
// binary.
func TestOpencodeConformance(t *testing.T) {
	f := newFakeServer(t, chatCompletionsAPI{}, opencodeScript)
	clitest.OpenCode(t)
	providertest.Run(t, func(t *testing.T) contract.Provider { return newOpencodeProvider(t, f) }, providertest.Options{RequireUsage: true})
}
