package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/tools"
)

// testKey is the key the transcript expects.
const testKey = "sk-test-4f9c2a7b1e"

// Issue 18 "done when": the program gives the endpoint two typed tools
// with schemas inferred from Go types (the transcript checks the request
// bodies, schemas included), both run, and the run is recorded completed
// in SQLite with the profile's identity.
func TestPlanOverHTTP(t *testing.T) {
	srv := transcript.Serve(t, filepath.Join("testdata", "trip.txtar"), transcript.ServerOptions{Complete: true})
	db := filepath.Join(t.TempDir(), "agentrt.db")
	var out bytes.Buffer
	if err := plan(context.Background(), &out, openai.Options{BaseURL: srv.BaseURL(), APIKey: testKey, Model: "gpt-5.2"}, db); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(ctx, store.ListOptions{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("recorded %d runs (%v), want 1", len(runs), err)
	}
	want := `weather({"city":"Lisbon"}) → {"celsius":21,"sky":"sunny"}
convert_currency({"amount":200,"from":"USD","to":"EUR"}) → 160
Lisbon is sunny at 21 °C, and your 200 USD is 160 EUR.
run ` + runs[0].ID + `: completed after 2 model turns
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	rec, err := kernel.ReadRun(ctx, st, runs[0].ID)
	if err != nil || rec.ToolLoop == nil {
		t.Fatalf("ReadRun: %v", err)
	}
	p, err := profile.Parse([]byte(agent))
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := profile.Digest(p)
	if rec.Status != store.StatusCompleted || rec.ToolLoop.StopReason != kernel.StopCompleted {
		t.Errorf("recorded %s, stop %s", rec.Status, rec.ToolLoop.StopReason)
	}
	if n := rec.ToolLoop.ToolResults; n == nil || *n != 2 {
		t.Errorf("recorded tool results %v, want 2", n)
	}
	if rec.ToolLoop.ProfileDigest != digest || rec.ToolLoop.RequestedModel != "openai/gpt-5.2" {
		t.Errorf("recorded profile %s, model %s", rec.ToolLoop.ProfileDigest, rec.ToolLoop.RequestedModel)
	}
	if got := rec.Spend.InputTokens.String(); got != "455" {
		t.Errorf("recorded input tokens %s, want 455", got)
	}
}

// The profile and the Go tools must match: leaving one declared tool
// without its function is refused before any request.
func TestUndeclaredToolsRefusedBeforeRequest(t *testing.T) {
	srv := transcript.Serve(t, filepath.Join("testdata", "trip.txtar"), transcript.ServerOptions{})
	m, err := openai.New(openai.Options{BaseURL: srv.BaseURL(), APIKey: testKey, Model: "gpt-5.2"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse([]byte(agent))
	if err != nil {
		t.Fatal(err)
	}
	_, err = kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, Profile: p, User: "Lisbon?",
		Tools: []contract.Tool{tools.Must(tools.NewTool("weather", "", weather))}})
	if !errors.Is(err, kernel.ErrInvalidOptions) || !strings.Contains(err.Error(), "convert_currency") {
		t.Errorf("err %v, want ErrInvalidOptions naming convert_currency", err)
	}
	if srv.Requests() != 0 {
		t.Errorf("%d requests", srv.Requests())
	}
}
