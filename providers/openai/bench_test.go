package openai_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/providers/openai"
)

// BenchmarkStreamedTurn is one streamed turn (text deltas, finish, usage,
// [DONE]) against the local endpoint: request encoding, HTTP over
// loopback, SSE and chunk decoding.
func BenchmarkStreamedTurn(b *testing.B) {
	srv := server(b, "text", transcript.ServerOptions{Cycle: true})
	m, err := openai.New(openai.Options{BaseURL: srv.BaseURL(), APIKey: testKey, Model: "gpt-5.2"})
	if err != nil {
		b.Fatal(err)
	}
	msgs := hello()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for e, err := range m.Turn(ctx, msgs, nil) {
			if err != nil {
				b.Fatal(err)
			}
			if e.Kind == contract.ChatText {
				n++
			}
		}
		if n != 2 {
			b.Fatalf("%d text events", n)
		}
	}
}

// BenchmarkStreamedResponsesTurn is one streamed Responses turn
// (response.created, in_progress, the message's item and part events,
// two text deltas, response.completed with usage) against the local
// endpoint: request encoding, HTTP over loopback, SSE and event decoding.
func BenchmarkStreamedResponsesTurn(b *testing.B) {
	srv := server(b, "responses/text", transcript.ServerOptions{Cycle: true})
	m, err := openai.New(openai.Options{API: openai.APIResponses, BaseURL: srv.BaseURL(), APIKey: testKey, Model: "gpt-5.2"})
	if err != nil {
		b.Fatal(err)
	}
	msgs := hello()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for e, err := range m.Turn(ctx, msgs, nil) {
			if err != nil {
				b.Fatal(err)
			}
			if e.Kind == contract.ChatText {
				n++
			}
		}
		if n != 2 {
			b.Fatalf("%d text events", n)
		}
	}
}
