package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// The store kill matrix's child: it runs storeKillGraph with its journal
// in the SQLite store at storeKillJournal and SIGKILLs itself as it is
// about to make its storeKillAt-th append there.
const (
	storeKillAt      = "AGENTRT_GRAPH_STORE_KILL_AT"
	storeKillJournal = "AGENTRT_GRAPH_STORE_KILL_JOURNAL"
	storeKillKernel  = "AGENTRT_GRAPH_STORE_KILL_KERNEL"
	storeKillVariant = "AGENTRT_GRAPH_STORE_KILL_VARIANT"
)

// killingStore is a real store that SIGKILLs its process on its at-th
// AppendEvents, before it appends (0: never), and counts appends.
type killingStore struct {
	store.Store
	at      int64
	appends atomic.Int64
}

func (s *killingStore) AppendEvents(ctx context.Context, f store.Fence, evs []store.NewEvent) ([]store.Event, error) {
	if n := s.appends.Add(1); n == s.at {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal takes the process
	}
	return s.Store.AppendEvents(ctx, f, evs)
}

// storeKillGraph is killMatrixRun's graph for variant: an analyst node
// ("node") or the failure-triage lens ("lens") over the coder, its
// findings to the driver.
func storeKillGraph(variant string) (graph.Graph, error) {
	g, _, err := resumeGraph()
	if err != nil {
		return g, err
	}
	g.Edges = g.Edges[:2]
	if variant == "node" {
		p, err := resumeProfile("critic")
		if err != nil {
			return g, err
		}
		g.Nodes = append(g.Nodes, graph.Node{ID: "critic", Profile: p})
		g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "critic", Over: []string{"coder"}, To: "driver", Directive: "analyze/critic/v2"})
		return g, nil
	}
	g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "failure-triage", Over: []string{"coder"}, To: "driver", Directive: "analyze/critic/v2"})
	return g, nil
}

// storeKillRun runs variant's graph with its journal in the SQLite store
// at journal (wrapped to die at its at-th append) and its workers on
// the kernel over the SQLite store at kernel, which recovers a worker
// the journal left unsettled; with resume it resumes the run the
// journal holds.
func storeKillRun(variant, journal, kernel string, at int64, resume bool) (graph.GraphResult, *recoveringExec, int64, error) {
	ctx := context.Background()
	g, err := storeKillGraph(variant)
	if err != nil {
		return graph.GraphResult{}, nil, 0, err
	}
	_, o, err := resumeGraph()
	if err != nil {
		return graph.GraphResult{}, nil, 0, err
	}
	js, err := sqlite.Open(ctx, journal, sqlite.Options{})
	if err != nil {
		return graph.GraphResult{}, nil, 0, err
	}
	defer js.Close()
	ks, err := sqlite.Open(ctx, kernel, sqlite.Options{})
	if err != nil {
		return graph.GraphResult{}, nil, 0, err
	}
	defer ks.Close()
	var s scripted.Script
	if err := json.Unmarshal([]byte(killMatrixScript), &s); err != nil {
		return graph.GraphResult{}, nil, 0, err
	}
	kexec := &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: ks}
	ex := &recoveringExec{countingExec: countingExec{inner: kexec, runs: map[string]int{}}, kernel: kexec}
	st := &killingStore{Store: js, at: at}
	o.Supervise.Executor, o.Supervise.SpawnStore, o.Supervise.Resume = ex, st, resume
	// The shortest lease, so that the resume takes over the killed
	// process's soon.
	o.Supervise.SpawnLeaseTTL = time.Second
	res, err := graph.RunGraph(ctx, g, o)
	return res, ex, st.appends.Load(), err
}

// storeKillChild is the child's part: it runs until killed.
func storeKillChild() error {
	at, err := strconv.ParseInt(os.Getenv(storeKillAt), 10, 64)
	if err != nil {
		return err
	}
	_, _, n, err := storeKillRun(os.Getenv(storeKillVariant), os.Getenv(storeKillJournal), os.Getenv(storeKillKernel), at, false)
	return fmt.Errorf("the child's run ended after %d appends (err %v) before its append %d", n, err, at)
}

// resumeProfile is a scripted worker profile, built without a testing.T.
func resumeProfile(id string) (*profile.Profile, error) {
	return profile.Parse([]byte(`{"name": "` + id + `", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/` + id + `"}}`))
}

// RES-03 (§3.7 over §3.6 "Persistence & resume", behaviour 46) with the
// journal in a SQLite run store (Supervise.SpawnStore) and a real
// SIGKILL: a child process runs the graph and kills itself as it makes
// its k-th append to the store — for every k its complete run makes —
// and the parent resumes the store's run. Its workers run on the kernel
// over a SQLite store, so a worker the journal left unsettled is
// recovered from its finished kernel run when there is one. Every resume
// wins with the coder's patch; no node settled before the kill runs
// again and none runs twice; the ledger has one delivered delegates row
// per worker-node worker and one analyzes row per analyst worker.
func TestGraphStoreJournalKilledAtEveryAppendBehaviour46(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	for _, variant := range []string{"node", "lens"} {
		t.Run(variant, func(t *testing.T) {
			analyst := map[string]string{"node": "critic", "lens": "analyst-failure-triage"}[variant]
			tmp := t.TempDir()
			ref, _, total, err := storeKillRun(variant, filepath.Join(tmp, "ref-journal.db"), filepath.Join(tmp, "ref-kernel.db"), 0, false)
			if err != nil || ref.Result.Winner == nil {
				t.Fatalf("reference run: %v, %+v", err, ref.Result)
			}
			for k := int64(1); k <= total; k++ {
				dir := filepath.Join(tmp, strconv.FormatInt(k, 10))
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				journal, kernel := filepath.Join(dir, "journal.db"), filepath.Join(dir, "kernel.db")
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), storeKillAt+"="+strconv.FormatInt(k, 10), storeKillJournal+"="+journal,
					storeKillKernel+"="+kernel, storeKillVariant+"="+variant)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				err := cmd.Run()
				cancel()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("kill at append %d: the child ended %v, not by SIGKILL; stderr:\n%s", k, err, stderr.String())
				}
				where := fmt.Sprintf("killed at append %d of %d", k, total)
				// The killed process's lease lapses within its TTL: until
				// then the store's run is held.
				var (
					res graph.GraphResult
					ex  *recoveringExec
				)
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
					res, ex, _, err = storeKillRun(variant, journal, kernel, 0, true)
					if !errors.Is(err, supervise.ErrSpawnLogHeld) || time.Now().After(deadline) {
						break
					}
				}
				if err != nil {
					t.Errorf("%s: resume: %v", where, err)
					continue
				}
				if w := res.Result.Winner; w == nil || w.Text != ref.Result.Winner.Text {
					t.Errorf("%s: winner %+v (%s %s), want %q", where, w, res.Result.Status, res.Result.Reason, ref.Result.Winner.Text)
				}
				settled := map[string]bool{}
				for _, n := range res.Result.Tree {
					if n.Replayed && n.Settlement != nil {
						settled[n.Profile] = true
					}
				}
				for _, node := range []string{"coder", "reviewer", analyst} {
					if n := ex.count(node); n > 1 || (settled[node] && n != 0) {
						t.Errorf("%s: %s (settled before the kill: %v) ran %d times on resume", where, node, settled[node], n)
					}
				}
				delegated, analyses, analysts := map[supervise.NodeID]int{}, 0, 0
				for _, r := range res.Ledger {
					switch {
					case r.Kind == graph.Delegates && r.Outcome == graph.OutcomeDelivered:
						delegated[r.WorkerID]++
					case r.Kind == graph.Analyzes:
						analyses++
					}
				}
				for _, n := range res.Result.Tree {
					if n.Profile == analyst {
						analysts++
					} else if delegated[n.ID] != 1 {
						t.Errorf("%s: worker %s (%s) has %d delivered delegates rows, want 1: %v", where, n.ID, n.Profile, delegated[n.ID], ledgerRows(res.Ledger))
					}
				}
				if analyses != analysts || analysts == 0 {
					t.Errorf("%s: %d analyzes rows for %d analyst workers, want one each: %+v", where, analyses, analysts, res.Ledger)
				}
			}
		})
	}
}
