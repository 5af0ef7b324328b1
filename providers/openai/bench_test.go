package openai_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/providers/openai"
)

// BenchmarkStreamedTurn is one streamed text turn against the local
// endpoint, for each API: request encoding, HTTP over loopback, SSE and
// event decoding (Chat Completions: deltas, finish, usage, [DONE];
// Responses: response.created, in_progress, the message's item and part
// events, two text deltas, response.completed with usage).
func BenchmarkStreamedTurn(b *testing.B) {
	for _, tc := range []struct {
		api        openai.API
		transcript string
	}{{openai.APIChatCompletions, "text"}, {openai.APIResponses, "responses/text"}} {
		b.Run(string(tc.api), func(b *testing.B) {
			srv := server(b, tc.transcript, transcript.ServerOptions{Cycle: true})
			m, err := openai.New(openai.Options{API: tc.api, BaseURL: srv.BaseURL(), APIKey: testKey, Model: "gpt-5.2"})
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
		})
	}
}
