package scripted_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/providers/scripted"
)

// exactImage is a digest-pinned image: the scripted provider refuses tags.
const exactImage = "registry.example.com/providertest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// exactOptions drive the exact-process-lifecycle family against the
// conformance script's greet process.
func exactOptions() providertest.ExactProcessOptions {
	return providertest.ExactProcessOptions{
		CreateInput: &contract.CreateExactProcessInput{
			Image:          exactImage,
			Egress:         contract.EgressPolicy{Mode: contract.EgressBlocked},
			MaxLifetimeMs:  600_000,
			Resources:      contract.ExactProcessResources{CPU: 0.5, MemoryMB: 256, DiskMB: 1},
			Metadata:       map[string]canonjson.Value{"suite": canonjson.StringValue("scripted")},
			IdempotencyKey: "scripted-exact",
		},
		Launch:         &contract.ExactProcessLaunch{Executable: "/opt/tool/greet", Args: []string{"--name", "world"}, Cwd: "/tmp", Env: map[string]string{}, TimeoutMs: 10_000},
		ExpectedStdout: "hello world\n",
		ExpectedStderr: "note: scripted\n",
	}
}

func mustScript(t testing.TB, src string) *scripted.Script {
	t.Helper()
	s, err := scripted.ParseScript([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// conformanceOptions tells providertest how to drive the scripted
// provider's abilities.
func conformanceOptions() providertest.Options {
	return providertest.Options{
		Reconnect: func(p contract.Provider) contract.Provider { return p.(*scripted.Provider).Reconnect() },
		Sessions:  providertest.SessionOptions{LivePrompt: "providertest: live"},
		Interactions: providertest.InteractionOptions{Prompt: "providertest: ask", ExpirePrompt: "providertest: expire",
			UnreachablePrompt: "providertest: unreachable"},
		PortableContext: providertest.PortableContextOptions{Counters: func(p contract.Provider) providertest.ContextCounters {
			c := p.(interface{ Counters() scripted.Counters }).Counters()
			return providertest.ContextCounters{Transfers: c.Transfers, FreshSessions: c.FreshSessions, NativeContinuations: c.NativeContinuations}
		}},
		ExactProcess: exactOptions(),
	}
}

// Issue 3: the scripted provider passes the whole providertest suite,
// every ability declared and exercised.
func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) contract.Provider {
		return scripted.New(mustScript(t, scripted.ConformanceScript), scripted.Options{})
	}, conformanceOptions())
}

// The same provider whose forks own their checkpoint copy: the branching
// family checks the other cleanup order it declares (spec M.2, P.2).
func TestConformanceForksOwnCheckpoints(t *testing.T) {
	opts := conformanceOptions()
	opts.Branching.ForksOwnCheckpoint = true
	providertest.Run(t, func(t *testing.T) contract.Provider {
		return scripted.New(mustScript(t, scripted.ConformanceScript), scripted.Options{ForksOwnCheckpoints: true})
	}, opts)
}

// A provider without interaction steps declares no interactions (and its
// environments do not answer them); the rest still conforms.
func TestConformanceWithoutInteractions(t *testing.T) {
	opts := conformanceOptions()
	opts.Interactions = providertest.InteractionOptions{}
	opts.Sessions.LivePrompt = ""
	providertest.Run(t, func(t *testing.T) contract.Provider { return scripted.New(hello(), scripted.Options{}) }, opts)
}

func TestInProcessConformance(t *testing.T) {
	opts := conformanceOptions()
	opts.Interactions = providertest.InteractionOptions{}
	opts.Sessions.LivePrompt = ""
	providertest.Run(t, func(t *testing.T) contract.Provider {
		return scripted.InProcess(func(ctx context.Context, prompt string, pc scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
			return []contract.EnvironmentEvent{
				{Type: "note", Data: map[string]canonjson.Value{"text": canonjson.StringValue("working")}},
				{Type: "done", Data: map[string]canonjson.Value{"text": canonjson.StringValue("ok")}},
			}, nil
		})
	}, opts)
}
