package sidecar_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/internal/servetest"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/sidecar"
)

const benchEvents = 2000

// BenchmarkSSE compares events/s of a sidecar turn stream on loopback
// with a bare Go SSE writer sending the same event bytes (one flush per
// event), read by the same client loop.
func BenchmarkSSE(b *testing.B) {
	b.ReportAllocs()
	script, err := scripted.ParseScript([]byte(benchScript))
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
	benchSSEAgainst(b, "sidecar", ts.Client(), ts.URL)
}

// BenchmarkSSEServe is BenchmarkSSE through the real `agentrt serve`
// process (issue 14, Done when: "SSE events/s from agentrt serve on
// loopback compared with a bare Go SSE writer in the same run. Goal:
// ≥50% of the bare writer"): the built binary serves the scripted
// provider on a loopback port, and its turn streams are read by the same
// reader as a bare net/http SSE writer's of the same frames, in the same
// run; "interleaved" reports both rates and serve's share of the bare
// writer's.
func BenchmarkSSEServe(b *testing.B) {
	b.ReportAllocs()
	path := filepath.Join(b.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(benchScript), 0o600); err != nil {
		b.Fatal(err)
	}
	base, _ := servetest.Serve(b, []string{"AGENTRT_SERVE_TOKEN=" + testToken}, "--provider", "scripted", "--script", path)
	benchSSEAgainst(b, "serve", &http.Client{}, base)
}

// benchScript's turn is benchEvents texts, as fast as the provider goes.
var benchScript = `{"turns":[{"repeat":true,"steps":[` + strings.Repeat(`{"text":"x"},`, benchEvents-1) + `{"text":"x"}]}]}`

// benchSSEAgainst runs the server at base's turn streams (sub-benchmark
// name), a bare SSE writer of the frames of one of its turns ("bare"),
// and both alternately ("interleaved"), all read by countEvents.
func benchSSEAgainst(b *testing.B, name string, c *http.Client, base string) {
	env := mustCreateAt(b, c, base)
	turns := base + "/v1/environments/" + env + "/turns"
	// The bare writer sends the frames of one real turn of the server.
	frames := turnFrames(b, c, turns)

	// Every turn gets a fresh id: a known id would replay the turn's
	// kept frames instead of running the provider.
	n := 0
	turnBody := func() string {
		n++
		return `{"turnId":"bench-` + itoa(n) + `","input":{"prompt":"go"}}`
	}
	b.Run(name, func(b *testing.B) {
		n := 0
		for range b.N {
			n += countEvents(b, c, http.MethodPost, turns, turnBody())
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
	// interleaved alternates one server turn and one bare stream, so a
	// busy machine slows both alike and the ratio stays comparable.
	b.Run("interleaved", func(b *testing.B) {
		var side, plain time.Duration
		n, m := 0, 0
		for range b.N {
			start := time.Now()
			n += countEvents(b, c, http.MethodPost, turns, turnBody())
			side += time.Since(start)
			start = time.Now()
			m += countEvents(b, bare.Client(), http.MethodGet, bare.URL, "")
			plain += time.Since(start)
		}
		sideRate, plainRate := float64(n)/side.Seconds(), float64(m)/plain.Seconds()
		b.ReportMetric(sideRate, name+"-events/s")
		b.ReportMetric(plainRate, "bare-events/s")
		b.ReportMetric(100*sideRate/plainRate, "%-of-bare")
	})
}

func itoa(i int) string { return strconvItoa(i) }

// mustCreateAt creates an environment on the server at base.
func mustCreateAt(b *testing.B, c *http.Client, base string) string {
	status, body := post(b, c, base+wire.PathEnvironments, `{"profile":{"name":"t"}}`)
	res, err := wire.ParseCreateResult(body)
	if status != http.StatusCreated || err != nil {
		b.Fatalf("create: %d %s %v", status, body, err)
	}
	return res.Environment.ID
}

// post sends body with the test token and returns the answer.
func post(b *testing.B, c *http.Client, url, body string) (int, []byte) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", wire.ContentTypeJSON)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return resp.StatusCode, out
}

// turnFrames runs one turn at turns and returns its SSE frames.
func turnFrames(b *testing.B, c *http.Client, turns string) [][]byte {
	_, body := post(b, c, turns, `{"turnId":"frames","input":{"prompt":"go"}}`)
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
