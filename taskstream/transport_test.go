package taskstream_test

import (
	"context"
	"io"
	"iter"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/taskstream"
)

// breakingProvider is a real provider whose environments' turn streams
// fail with err after their first event, as a served turn whose
// connection broke does.
type breakingProvider struct {
	contract.Provider
	err error
}

func (p breakingProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return breakingEnv{env, p.err}, nil
}

type breakingEnv struct {
	contract.Environment
	err error
}

func (e breakingEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		for ev, err := range e.Environment.Stream(ctx, in) {
			if err != nil || !yield(ev, nil) {
				return
			}
			yield(contract.EnvironmentEvent{}, e.err)
			return
		}
	}
}

// Behaviour 23 through a real provider (§3.2): a turn whose stream
// breaks is a transport failure — backend_error kind transport,
// recoverable, with the HTTP status of the answer that broke it when the
// error carries one (a served turn's *wire.Error) and 0 when the
// connection itself failed — then one final, failed.
func TestProviderTurnTransportFailureIsTypedBehaviour23(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
	}{
		{"server answered 502", &wire.Error{Status: 502, ErrorDetail: wire.ErrorDetail{Code: "unavailable", Message: "upstream down"}}, 502},
		{"connection cut", io.ErrUnexpectedEOF, 0},
		{"refused", contract.ErrUnsupported, -1}, // a refusal is not a transport failure
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := providerBackend(t, `{"turns":[{"steps":[{"text":"Ship"},{"text":" it"}]}]}`)
			b.Provider = breakingProvider{b.Provider, tc.err}
			events, err := collect(t, taskstream.Run(context.Background(), taskstream.Options{Task: task, Backend: b}))
			if err != nil {
				t.Fatal(err)
			}
			var be *taskstream.Event
			for i := range events {
				if events[i].Type == taskstream.EventBackendError {
					be = &events[i]
				}
			}
			n, f := finals(events)
			if be == nil || be.Error == nil || n != 1 || f.Status != taskstream.StatusFailed {
				t.Fatalf("backend_error %+v, %d finals (last %+v)", be, n, f)
			}
			if tc.status < 0 {
				if be.Error.Kind != taskstream.ErrorKindBackend {
					t.Errorf("kind %q for a refusal, want backend", be.Error.Kind)
				}
				return
			}
			if be.Error.Kind != taskstream.ErrorKindTransport || be.Error.Status == nil || *be.Error.Status != tc.status {
				t.Errorf("error %+v, want kind transport, status %d", be.Error, tc.status)
			}
			if be.Recoverable == nil || !*be.Recoverable {
				t.Errorf("recoverable %v, want true", be.Recoverable)
			}
		})
	}
}
