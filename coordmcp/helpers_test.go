package coordmcp_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	storememory "github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

func ptr[T any](v T) *T { return &v }

func parseProfile(t testing.TB, doc string) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// deadline is the test's context: generous, and ended with the test.
func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

var (
	buildOnce sync.Once
	agentrt   string
	buildErr  error
	buildOut  []byte
)

// agentrtBinary builds cmd/agentrt once per test binary: the relay runs
// as a real child process, as a harness starts it.
func agentrtBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		dir, err := mkdirTemp()
		if err != nil {
			buildErr = err
			return
		}
		agentrt = filepath.Join(dir, "agentrt")
		buildOut, buildErr = exec.Command(gobin, "build", "-o", agentrt, "../cmd/agentrt").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/agentrt: %v\n%s", buildErr, buildOut)
	}
	return agentrt
}

// writerScript answers any task containing "alpha" with "alpha: DONE".
func writerScript(t testing.TB) *scripted.Script {
	t.Helper()
	var script scripted.Script
	if err := json.Unmarshal([]byte(`{"turns": [{"match": "alpha", "repeat": true, "steps": [{"text": "alpha: DONE"},
		{"usage": {"inputTokens": 10, "outputTokens": 2, "cost": 0.0001}, "mode": "delta"}]}]}`), &script); err != nil {
		t.Fatal(err)
	}
	return &script
}

// harnessBrain is manager's external-harness brain on prov, its
// coordination verbs served through relay (the agentrt binary).
func harnessBrain(t testing.TB, manager *profile.Profile, prov contract.Provider, relay string) *coordmcp.HarnessBrain {
	t.Helper()
	brain, err := coordmcp.NewHarnessBrain(manager, prov, coordmcp.HarnessOptions{Relay: []string{relay, "mcp", "coordination"}})
	if err != nil {
		t.Fatal(err)
	}
	return brain
}

// runOptions are a supervised run's options with one scripted worker
// profile "writer" and a check that delivers a result saying DONE.
func runOptions(t testing.TB, runDir string, brain supervise.Brain) supervise.Options {
	return supervise.Options{
		Budget:    ledger.Budget{Tokens: ptr[int64](100_000), Iterations: ptr[int64](10), MicroUSD: ptr[int64](1_000_000)},
		PerWorker: ledger.Budget{Tokens: ptr[int64](1_000), Iterations: ptr[int64](1), MicroUSD: ptr[int64](100_000)},
		Profiles: map[string]*profile.Profile{"writer": parseProfile(t, `{"name": "writer", "harness": "cli-base",
			"model": {"provider": "scripted", "default": "scripted/writer"}}`)},
		Deliverable: supervise.Deliverable{Describe: "a result that says DONE", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: strings.Contains(out.Text, "DONE")}, nil
		}},
		Executor: &supervise.KernelExecutor{Provider: scripted.New(writerScript(t), scripted.Options{}), Store: storememory.New(nil)},
		Brain:    brain,
		RunDir:   runDir,
		RunID:    "run1",
	}
}

func cliBase(t testing.TB) *profile.Profile {
	return parseProfile(t, `{"name": "manager", "harness": "cli-base", "model": {"default": "scripted/manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true}}`)
}
