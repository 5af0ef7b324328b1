package scripted_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/providers/scripted"
)

func hello() *scripted.Script {
	s, err := scripted.ParseScript([]byte(`{"turns":[{"repeat":true,"steps":[
		{"text":"Hello."},{"usage":{"inputTokens":12,"outputTokens":3},"mode":"delta"}]}]}`))
	if err != nil {
		panic(err)
	}
	return s
}

// Issue 3: the scripted provider passes providertest.
func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) contract.Provider { return scripted.New(hello(), scripted.Options{}) }, providertest.Options{})
}

// liar declares durable branching it does not implement.
type liar struct{ *scripted.Provider }

func (l liar) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	c, err := l.Provider.Capabilities(ctx)
	c.Branching = contract.BranchingCapabilities{Checkpoint: true, Fork: true, RetrySafe: ptr(true), Lookup: ptr(true), Cleanup: ptr(true)}
	return c, err
}

// hider implements an ability (Dispatcher) it does not declare.
type hiderEnv struct{ contract.Environment }

func (hiderEnv) Dispatch(context.Context, *contract.TurnInput) (*contract.SessionRef, error) {
	return nil, nil
}

func ptr[T any](v T) *T { return &v }

// Issue 3 "Done when": a deliberately wrong provider fails capability
// exposure, in either direction.
func TestExposureCatchesLiars(t *testing.T) {
	ctx := context.Background()
	p := scripted.New(hello(), scripted.Options{})
	env, err := p.Create(ctx, &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	lying := liar{p}
	c, _ := lying.Capabilities(ctx)
	if err := contract.CheckProviderExposure(c, lying); err == nil {
		t.Error("a provider declaring durable branching without BranchingProvider passed")
	}
	if err := contract.CheckExposure(c, env); err == nil {
		t.Error("an environment declared durably branchable without DurableBrancher passed")
	}
	honest, _ := p.Capabilities(ctx)
	if err := contract.CheckExposure(honest, hiderEnv{env}); err == nil {
		t.Error("an environment implementing an undeclared Dispatcher passed")
	}
	if err := contract.CheckExposure(honest, env); err != nil {
		t.Errorf("the honest environment failed: %v", err)
	}
}

// The default script answers with the prompt it was given, so a run with
// no script still shows the task flowed through to the provider.
func TestDefaultScriptEchoesPrompt(t *testing.T) {
	ctx := context.Background()
	p := scripted.New(scripted.DefaultScript(), scripted.Options{})
	env, err := p.Create(ctx, &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	var text string
	terminal := 0
	for ev, err := range env.Stream(ctx, &contract.TurnInput{Prompt: ptr("Write a note.")}) {
		if err != nil {
			t.Fatal(err)
		}
		if n := ev.Normalized; n != nil && n.MessagePartUpdated != nil && n.MessagePartUpdated.Part.IsText() {
			text = *n.MessagePartUpdated.Part.Text
		}
		if _, ok := contract.EnvironmentEventTerminal(ev); ok {
			terminal++
		}
	}
	if text != "Done: Write a note." || terminal != 1 {
		t.Errorf("text %q, %d terminal events; want %q and 1", text, terminal, "Done: Write a note.")
	}
}
