package remote

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/contract"
)

// For every combination of the capabilities that gate remote's optional
// abilities, the exposed environment and session implement exactly the
// declared abilities (contract.CheckExposure, CheckSessionExposure).
func TestExposureMatchesEveryDocument(t *testing.T) {
	gates := []func(*contract.Capabilities){
		func(c *contract.Capabilities) { c.Streaming.Detach = true },
		func(c *contract.Capabilities) { c.Streaming.Replay = true },
		func(c *contract.Capabilities) { c.Sessions.Continue = true },
		func(c *contract.Capabilities) { c.Interactions = &contract.InteractionCapabilities{} },
		func(c *contract.Capabilities) { c.Observation = &contract.ObservationCapabilities{} },
		func(c *contract.Capabilities) { c.RetainedControl = &contract.RetainedControlCapabilities{} },
		func(c *contract.Capabilities) { c.Workspace.Read = true },
		func(c *contract.Capabilities) { c.Workspace.Write = true },
		func(c *contract.Capabilities) { c.Workspace.Exec = true },
		func(c *contract.Capabilities) { c.Branching.Checkpoint = true },
		func(c *contract.Capabilities) { c.Branching.Fork = true },
		func(c *contract.Capabilities) {
			yes := true
			c.Branching.RetrySafe, c.Branching.Lookup, c.Branching.Cleanup = &yes, &yes, &yes
		},
		func(c *contract.Capabilities) {
			c.NativeContinuation = &contract.NativeContinuationCapabilities{AtomicBoundary: true, RequestIdempotency: true}
		},
	}
	for m := range 1 << len(gates) {
		var c contract.Capabilities
		for i, set := range gates {
			if m&(1<<i) != 0 {
				set(&c)
			}
		}
		e := &environment{}
		if err := contract.CheckExposure(&c, envExposed(e, envMask(&c))); err != nil {
			t.Errorf("document %013b: environment exposure: %v", m, err)
		}
		if err := contract.CheckSessionExposure(&c, sessExposed(&session{e: e}, sessMask(&c))); err != nil {
			t.Errorf("document %013b: session exposure: %v", m, err)
		}
	}
}

// exposure_gen.go is what gen_exposure.go writes.
func TestExposureGeneratedUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to run the generator")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "exposure_gen.go")
	cmd := exec.Command("go", "run", "gen_exposure.go", dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run gen_exposure.go: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("exposure_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("exposure_gen.go is stale: run go generate ./providers/remote")
	}
}

// The provider type picked for a document offers profile validation,
// durable branching recovery and context transfer exactly when the
// document declares them.
func TestProviderExposureMatchesDocument(t *testing.T) {
	gates := []func(*contract.Capabilities){
		func(c *contract.Capabilities) { c.Profile.Validation = true },
		func(c *contract.Capabilities) {
			yes := true
			c.Branching.RetrySafe, c.Branching.Lookup, c.Branching.Cleanup = &yes, &yes, &yes
		},
		func(c *contract.Capabilities) {
			c.ContextTransfer = &contract.ContextTransferCapabilities{FreshSession: true, RequestIdempotency: true, Lookup: true}
		},
	}
	for m := range 1 << len(gates) {
		var c contract.Capabilities
		for i, set := range gates {
			if m&(1<<i) != 0 {
				set(&c)
			}
		}
		if err := contract.CheckProviderExposure(&c, provExposed(&Provider{}, provMask(&c))); err != nil {
			t.Errorf("document %03b: %v", m, err)
		}
	}
}
