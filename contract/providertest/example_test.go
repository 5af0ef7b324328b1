package providertest_test

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
)

// echo is a tiny provider: each turn answers with its prompt. It
// declares live streaming and nothing else, so every scenario about
// another ability skips.
type echo struct {
	keyed contract.KeyedCreate[*echoEnv]
	mu    sync.Mutex
	n     int
}

func (p *echo) Name() string { return "echo" }

func (p *echo) Capabilities(context.Context) (*contract.Capabilities, error) {
	return &contract.Capabilities{Streaming: contract.StreamingCapabilities{Live: true}}, nil
}

func (p *echo) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if in == nil {
		in = &contract.CreateInput{}
	}
	// A profile asking for more than the document declares is refused
	// before anything exists.
	if err := contract.CheckProfileSupport(&contract.ProfileCapabilities{}, in.Profile.Inline); err != nil {
		return nil, err
	}
	env, creation, err := p.keyed.Do(ctx, in, func(context.Context, *contract.CreateInput) (*echoEnv, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.n++
		e := &echoEnv{p: p, id: fmt.Sprintf("echo-%d", p.n)}
		if in.IdempotencyKey != nil {
			e.key = in.Key()
		}
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return &echoHandle{echoEnv: env, creation: creation}, nil
}

// echoEnv is one environment; echoHandle is what one Create returned.
type echoEnv struct {
	p         *echo
	id, key   string
	mu        sync.Mutex
	destroyed bool
}

type echoHandle struct {
	*echoEnv
	creation contract.Creation
}

func (e *echoHandle) ID() string                           { return e.id }
func (e *echoHandle) Provider() string                     { return e.p.Name() }
func (e *echoHandle) Name() string                         { return "" }
func (e *echoHandle) Creation() contract.Creation          { return e.creation }
func (e *echoHandle) Metadata() map[string]canonjson.Value { return nil }
func (e *echoHandle) Capabilities() *contract.Capabilities { return nil }

func (e *echoHandle) Status(context.Context) (contract.EnvironmentStatus, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.destroyed {
		return contract.EnvironmentStopped, nil
	}
	return contract.EnvironmentRunning, nil
}

func (e *echoHandle) Destroy(context.Context) error {
	e.mu.Lock()
	e.destroyed = true
	e.mu.Unlock()
	if e.key != "" {
		e.p.keyed.Forget(e.key)
	}
	return nil
}

func (e *echoHandle) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		if s, _ := e.Status(ctx); s != contract.EnvironmentRunning {
			yield(contract.EnvironmentEvent{}, fmt.Errorf("echo: %w: %s", contract.ErrDestroyed, e.id))
			return
		}
		if in == nil || in.Prompt == nil {
			yield(contract.EnvironmentEvent{}, fmt.Errorf("echo: a turn without a prompt: %w", contract.ErrUnsupported))
			return
		}
		if ctx.Err() != nil {
			yield(contract.CancelledEvent(nil), nil)
			return
		}
		yield(contract.CompletedEvent(map[string]canonjson.Value{"text": canonjson.StringValue(*in.Prompt)}), nil)
	}
}

// A provider author runs the whole suite on a tiny provider. In a test,
// providertest.Run(t, factory, opts) does the same and reports each
// failure where it happened.
func ExampleCheck() {
	reports := providertest.Check(func() contract.Provider { return &echo{} }, providertest.Options{})
	skipped := 0
	for _, name := range providertest.Names() {
		switch r := reports[name]; {
		case r.Failed:
			fmt.Println("FAIL", name, r.Messages)
		case r.Skipped:
			skipped++
		default:
			fmt.Println("pass", name)
		}
	}
	fmt.Println(skipped, "skipped: abilities echo does not declare")
	// Output:
	// pass provider-shape
	// pass capabilities
	// pass capability-exposure
	// pass create-readiness
	// pass create-idempotency
	// pass create-idempotency-collision
	// pass create-idempotency-concurrent
	// pass stream
	// pass destroy
	// 13 skipped: abilities echo does not declare
}
