package sidecar_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/sidecar"
)

const benchEvents = 2000

// BenchmarkSSE compares events/s of a sidecar turn stream on loopback
// with a bare Go SSE writer sending the same event bytes (one flush per
// event), read by the same client loop.
func BenchmarkSSE(b *testing.B) {
	b.ReportAllocs()
	steps := strings.Repeat(`{"text":"x"},`, benchEvents-1) + `{"text":"x"}`
	script, err := scripted.ParseScript([]byte(`{"turns":[{"repeat":true,"steps":[` + steps + `]}]}`))
	if err != nil {
		b.Fatal(err)
	}
	p := scripted.New(script, scripted.Options{})
	s, err := sidecar.New(p, sidecar.Options{Token: testToken})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()
	env := mustCreateB(b, ts)

	// The bare writer sends the frames of one real sidecar turn.
	frames := turnFrames(b, ts, env)

	// Every turn gets a fresh id: a known id would replay the turn's
	// kept frames instead of running the provider.
	turns := 0
	turnBody := func() string {
		turns++
		return `{"turnId":"bench-` + itoa(turns) + `","input":{"prompt":"go"}}`
	}
	b.Run("sidecar", func(b *testing.B) {
		n := 0
		for range b.N {
			body := turnBody()
			n += countEvents(b, ts.Client(), http.MethodPost, ts.URL+"/v1/environments/"+env+"/turns", body)
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	})
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", wire.ContentTypeSSE)
		fl := w.(http.Flusher)
		for _, f := range frames {
			_, _ = w.Write(f)
			fl.Flush()
		}
	}))
	defer bare.Close()
	b.Run("bare", func(b *testing.B) {
		n := 0
		for range b.N {
			n += countEvents(b, bare.Client(), http.MethodGet, bare.URL, "")
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	})
	// interleaved alternates one sidecar turn and one bare stream, so a
	// busy machine slows both alike and the ratio stays comparable.
	b.Run("interleaved", func(b *testing.B) {
		var side, plain time.Duration
		n, m := 0, 0
		for range b.N {
			start := time.Now()
			body := turnBody()
			n += countEvents(b, ts.Client(), http.MethodPost, ts.URL+"/v1/environments/"+env+"/turns", body)
			side += time.Since(start)
			start = time.Now()
			m += countEvents(b, bare.Client(), http.MethodGet, bare.URL, "")
			plain += time.Since(start)
		}
		sideRate, plainRate := float64(n)/side.Seconds(), float64(m)/plain.Seconds()
		b.ReportMetric(sideRate, "sidecar-events/s")
		b.ReportMetric(plainRate, "bare-events/s")
		b.ReportMetric(100*sideRate/plainRate, "%-of-bare")
	})
}

func itoa(i int) string { return strconvItoa(i) }

func mustCreateB(b *testing.B, ts *httptest.Server) string {
	status, body := do(b, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil)
	res, err := wire.ParseCreateResult(body)
	if status != http.StatusCreated || err != nil {
		b.Fatalf("create: %d %s %v", status, body, err)
	}
	return res.Environment.ID
}

func turnFrames(b *testing.B, ts *httptest.Server, env string) [][]byte {
	_, body := do(b, ts, http.MethodPost, "/v1/environments/"+env+"/turns", `{"turnId":"frames","input":{"prompt":"go"}}`, nil)
	var frames [][]byte
	for _, ev := range sseEvents(b, body) {
		f, err := wire.AppendSSE(nil, mustID(b, ev.ID), ev.Event, ev.Data)
		if err != nil {
			b.Fatal(err)
		}
		frames = append(frames, f)
	}
	if len(frames) < benchEvents {
		b.Fatalf("the turn had %d frames", len(frames))
	}
	return frames
}

func mustID(b *testing.B, id string) int64 {
	if id == "" {
		return 0
	}
	n, err := wire.ParseEventID(id)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// countEvents reads one SSE response to its end and counts its events.
func countEvents(b *testing.B, c *http.Client, method, url, body string) int {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(context.Background(), method, url, r)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", wire.ContentTypeJSON)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sse := wire.NewSSEReader(resp.Body)
	n := 0
	for {
		ev, err := sse.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if ev.Event == "" {
			if _, err := wire.ParseEnvironmentEvent(ev.Data); err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	if n < benchEvents {
		b.Fatalf("%d events, want at least %d", n, benchEvents)
	}
	return n
}

// BenchmarkLegacyCheckpointReplay: one re-sent legacy checkpoint (the
// same operation id and request) over HTTP, answered from the server's
// record without a second provider effect — the cost a client pays to
// resolve a lost answer.
func BenchmarkLegacyCheckpointReplay(b *testing.B) {
	b.ReportAllocs()
	ts, _ := serve(b, newScripted(b), sidecar.Options{})
	status, body := do(b, ts, http.MethodPost, wire.PathEnvironments, createBody, nil)
	if status != http.StatusCreated {
		b.Fatalf("create: %d %s", status, body)
	}
	eb, err := wire.ParseCreateResult(body)
	if err != nil {
		b.Fatal(err)
	}
	path := "/v1/environments/" + eb.Environment.ID + "/checkpoints"
	call := `{"operationId":"bench","request":{"name":"cp"}}`
	if status, body := do(b, ts, http.MethodPost, path, call, nil); status != http.StatusOK {
		b.Fatalf("checkpoint: %d %s", status, body)
	}
	for b.Loop() {
		if status, body := do(b, ts, http.MethodPost, path, call, nil); status != http.StatusOK {
			b.Fatalf("replay: %d %s", status, body)
		}
	}
}
