package providertest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// Factory returns a fresh provider for one scenario.
type Factory func(t *testing.T) contract.Provider

// Options adjusts Run.
type Options struct {
	// CreateInput is the input scenarios create environments with; nil
	// means a minimal profile named "providertest".
	CreateInput *contract.CreateInput
	// Prompt is the turn prompt the stream scenario sends; "" means
	// "Say hello.".
	Prompt string
}

func (o Options) createInput(key string) *contract.CreateInput {
	in := &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("providertest")}}}
	if o.CreateInput != nil {
		cp := *o.CreateInput
		in = &cp
	}
	if key != "" {
		in.IdempotencyKey = &key
	}
	name := "providertest"
	if in.Name == nil {
		in.Name = &name
	}
	return in
}

// Run runs every scenario against providers from factory.
func Run(t *testing.T, factory Factory, opts Options) {
	t.Helper()
	scenarios := []struct {
		name string
		fn   func(t *testing.T, p contract.Provider, opts Options)
	}{
		{"provider-shape", providerShape},
		{"capabilities", capabilities},
		{"capability-exposure", capabilityExposure},
		{"create-idempotency", createIdempotency},
		{"create-idempotency-collision", createIdempotencyCollision},
		{"create-idempotency-concurrent", createIdempotencyConcurrent},
		{"stream", stream},
		{"workspace-read-write", workspaceReadWrite},
		{"destroy", destroy},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) { s.fn(t, factory(t), opts) })
	}
}

func caps(t *testing.T, p contract.Provider) *contract.Capabilities {
	t.Helper()
	c, err := p.Capabilities(context.Background())
	if err != nil {
		t.Fatalf("Capabilities: %v", err)
	}
	if c == nil {
		t.Fatal("Capabilities returned nil")
	}
	return c
}

func create(t *testing.T, p contract.Provider, in *contract.CreateInput) contract.Environment {
	t.Helper()
	env, err := p.Create(context.Background(), in)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if env.Creation() != contract.CreationReplayed {
			env.Destroy(context.Background())
		}
	})
	return env
}

func providerShape(t *testing.T, p contract.Provider, _ Options) {
	if p.Name() == "" {
		t.Error("provider name is empty")
	}
	caps(t, p)
}

func capabilities(t *testing.T, p contract.Provider, _ Options) {
	c := caps(t, p)
	if _, err := contract.Validate(contract.KindEnvironmentCapabilities, contract.CapabilitiesSchema, c); err != nil {
		t.Errorf("the capability document is invalid: %v", err)
	}
}

func capabilityExposure(t *testing.T, p contract.Provider, opts Options) {
	c := caps(t, p)
	if err := contract.CheckProviderExposure(c, p); err != nil {
		t.Errorf("provider exposure: %v", err)
	}
	env := create(t, p, opts.createInput(""))
	if own := env.Capabilities(); own != nil {
		if _, err := contract.Validate(contract.KindEnvironmentCapabilities, contract.CapabilitiesSchema, own); err != nil {
			t.Errorf("the environment's capability document is invalid: %v", err)
		}
	}
	if err := contract.CheckExposure(c, env); err != nil {
		t.Errorf("environment exposure: %v", err)
	}
}

func createIdempotency(t *testing.T, p contract.Provider, opts Options) {
	first := create(t, p, opts.createInput("providertest-key"))
	again, err := p.Create(context.Background(), opts.createInput("providertest-key"))
	if err != nil {
		t.Fatalf("replayed Create: %v", err)
	}
	if again.ID() != first.ID() || again.Provider() != first.Provider() {
		t.Errorf("replay returned %s/%s, want %s/%s", again.Provider(), again.ID(), first.Provider(), first.ID())
	}
	if again.Creation() == contract.CreationCreated {
		t.Error("a replayed create said created")
	}
	if first.Creation() != "" && again.Creation() != contract.CreationReplayed {
		t.Errorf("replay said %q after the first call stated %q", again.Creation(), first.Creation())
	}
}

func createIdempotencyCollision(t *testing.T, p contract.Provider, opts Options) {
	create(t, p, opts.createInput("providertest-collision"))
	changed := opts.createInput("providertest-collision")
	other := "providertest-changed"
	changed.Name = &other
	env, err := p.Create(context.Background(), changed)
	if err == nil {
		env.Destroy(context.Background())
		t.Fatal("the same key with a changed name was accepted")
	}
	if !errors.Is(err, contract.ErrIdempotencyConflict) {
		t.Errorf("collision error %v does not match contract.ErrIdempotencyConflict", err)
	}
}

// createIdempotencyConcurrent: concurrent creates with one key and the same
// input converge on one environment, all but one replayed.
func createIdempotencyConcurrent(t *testing.T, p contract.Provider, opts Options) {
	const n = 16
	var wg sync.WaitGroup
	envs := make([]contract.Environment, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			envs[i], errs[i] = p.Create(context.Background(), opts.createInput("providertest-concurrent"))
		}()
	}
	wg.Wait()
	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		if envs[i].ID() != envs[0].ID() {
			t.Errorf("create %d returned %s, create 0 returned %s", i, envs[i].ID(), envs[0].ID())
		}
		if envs[i].Creation() != contract.CreationReplayed {
			created++
		}
	}
	if created > 1 {
		t.Errorf("%d of %d concurrent keyed creates did not report replayed", created, n)
	}
	envs[0].Destroy(context.Background())
}

func stream(t *testing.T, p contract.Provider, opts Options) {
	c := caps(t, p)
	env := create(t, p, opts.createInput(""))
	prompt := opts.Prompt
	if prompt == "" {
		prompt = "Say hello."
	}
	var events []contract.EnvironmentEvent
	usage, terminal := false, false
	for e, err := range env.Stream(context.Background(), &contract.TurnInput{Prompt: &prompt}) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if err := contract.CheckPublicEnvironmentEvent(e); err != nil {
			t.Errorf("a private event reached the public stream: %v", err)
		}
		if _, err := contract.Validate(contract.KindEnvironmentEvent, contract.EnvironmentEventSchema, e); err != nil {
			t.Errorf("event %d is not a valid AgentEnvironmentEvent: %v", len(events), err)
		}
		if u, mode, ok := e.UsageReport(); ok {
			usage = true
			if u == nil || mode != "" && !mode.Known() {
				t.Errorf("event %d reports malformed usage (mode %q)", len(events), mode)
			}
		}
		if _, ok := contract.EnvironmentEventTerminal(e); ok {
			terminal = true
		}
		events = append(events, e)
	}
	if len(events) == 0 {
		t.Fatal("the turn emitted no event")
	}
	if !terminal {
		t.Error("the turn emitted no terminal event")
	}
	if c.Usage && !usage {
		t.Error("usage is declared but no event carried usage")
	}
}

func workspaceReadWrite(t *testing.T, p contract.Provider, opts Options) {
	c := caps(t, p)
	env := create(t, p, opts.createInput(""))
	ctx := context.Background()
	if c.Workspace.Write {
		w := env.(contract.WorkspaceWriter)
		if err := w.WriteFile(ctx, "providertest/hello.txt", "hello\n", ""); err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		if c.Workspace.Read {
			got, err := env.(contract.WorkspaceReader).ReadFile(ctx, "providertest/hello.txt", "")
			if err != nil || got != "hello\n" {
				t.Errorf("ReadFile = %q, %v", got, err)
			}
		}
	}
	if c.Workspace.Exec {
		res, err := env.(contract.CommandExecutor).Exec(ctx, "echo ok", &contract.ExecRequest{})
		if err != nil {
			t.Fatalf("Exec: %v", err)
		}
		if res.ExitCode != 0 {
			t.Errorf("echo ok exited %d", res.ExitCode)
		}
	}
}

func destroy(t *testing.T, p contract.Provider, opts Options) {
	env, err := p.Create(context.Background(), opts.createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	// A file that exists before Destroy must not be readable after it.
	probe := "providertest-destroy.txt"
	w, writes := env.(contract.WorkspaceWriter)
	if writes {
		if err := w.WriteFile(context.Background(), probe, "x", ""); err != nil {
			t.Fatalf("WriteFile before Destroy: %v", err)
		}
	}
	if err := env.Destroy(context.Background()); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if status, err := env.Status(context.Background()); err == nil && status == contract.EnvironmentRunning {
		t.Error("a destroyed environment still reports running")
	}
	if r, ok := env.(contract.WorkspaceReader); ok && writes {
		if _, err := r.ReadFile(context.Background(), probe, ""); err == nil {
			t.Error("a destroyed environment still serves workspace reads")
		}
	}
	if writes {
		if err := w.WriteFile(context.Background(), "after-destroy.txt", "x", ""); err == nil {
			t.Error("a destroyed environment still accepts workspace writes")
		}
	}
	afterDestroy := "after destroy"
	for _, err := range env.Stream(context.Background(), &contract.TurnInput{Prompt: &afterDestroy}) {
		if err == nil {
			t.Error("a destroyed environment still streams a turn")
		}
		break
	}
	if g, ok := p.(contract.EnvironmentGetter); ok {
		if got, err := g.Get(context.Background(), env.ID()); err == nil && got != nil {
			if s, _ := got.Status(context.Background()); s == contract.EnvironmentRunning {
				t.Errorf("Get still finds destroyed environment %s running", env.ID())
			}
		}
	}
}
