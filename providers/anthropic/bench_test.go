package anthropic_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/providers/anthropic"
)

// BenchmarkStreamedTurn is one text turn (message_start, two text deltas,
// a ping, message_delta, message_stop) against a local HTTP server: the
// request built and sent, the stream decoded, the events yielded.
func BenchmarkStreamedTurn(b *testing.B) {
	tr, err := transcript.Load(filepath.Join("testdata", "text.txtar"))
	if err != nil {
		b.Fatal(err)
	}
	ex := tr.Exchanges[0]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range ex.ResponseHeader {
			w.Header()[k] = vs
		}
		w.WriteHeader(ex.Status)
		_, _ = w.Write(ex.ResponseBody)
	}))
	defer srv.Close()
	m, err := anthropic.NewModel(anthropic.Options{BaseURL: srv.URL, APIKey: testKey, Model: testModel, MaxTokens: 1024})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, err := range m.Turn(ctx, hello, nil) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 4 {
			b.Fatalf("%d events, want 4", n)
		}
	}
}
