package graph_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// resumeChildBeforeReviewer, set beside resumeChildDir, makes the child
// run the graph of resumeGraph until its brain has collected the coder's
// settle and the lens's finding, announce that, and block before it
// delegates to the reviewer.
const resumeChildBeforeReviewer = "AGENTRT_GRAPH_RESUME_CHILD_BEFORE_REVIEWER"

// poolChecks records every conservation check a brain made of its
// graph's pool, and the first failure.
type poolChecks struct {
	mu     sync.Mutex
	n      int
	failed error
	last   ledger.Readout
}

// check fails unless free + reserved + committed equals the total on
// every channel of r, tokens, iterations and usd among them, with
// nothing negative but an uncapped channel's free.
func (p *poolChecks) check(where string, r ledger.Readout) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	p.last = r
	if p.failed != nil {
		return
	}
	for _, ch := range []string{ledger.ChannelTokens, ledger.ChannelIterations, ledger.ChannelUSD} {
		if _, ok := r.Channels[ch]; !ok {
			p.failed = fmt.Errorf("%s: the pool has no %s channel: %+v", where, ch, r.Channels)
			return
		}
	}
	for ch, b := range r.Channels {
		// An uncapped channel (usd here) has a zero total: its free is
		// minus what it holds, and only the sum is checked.
		if b.Total != b.Free+b.Reserved+b.Committed || b.Capped && b.Free < 0 || b.Reserved < 0 || b.Committed < 0 {
			p.failed = fmt.Errorf("%s: %s does not conserve: %+v", where, ch, b)
			return
		}
	}
}

// conservingBrain is resumeBrain checking the pool after the journal's
// replay and after every spawn and await; beforeReviewer, when set, runs
// before the reviewer's delegation.
func conservingBrain(p *poolChecks, beforeReviewer func()) graph.Brain {
	return graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		p.check("replayed", d.Readout())
		steps := []struct{ node, task string }{{"coder", "Fix test_login."}, {"reviewer", "Review the login patch."}}
		for i, s := range steps {
			if s.node == "reviewer" && beforeReviewer != nil {
				beforeReviewer()
			}
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: s.node, Task: s.task}); err != nil {
				return supervise.BrainReport{}, err
			}
			p.check("spawned "+s.node, d.Readout())
			for k := range 2 - i {
				if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
					return supervise.BrainReport{}, err
				}
				p.check(fmt.Sprintf("await %d after %s", k+1, s.node), d.Readout())
			}
		}
		return supervise.BrainReport{}, nil
	})
}

// graphUntilKilledBeforeReviewer is the child of
// resumeChildBeforeReviewer.
func graphUntilKilledBeforeReviewer(dir string) error {
	g, o, err := resumeGraph()
	if err != nil {
		return err
	}
	exec, err := newResumeExecutor(reviewPasses)
	if err != nil {
		return err
	}
	o.Brain = conservingBrain(&poolChecks{}, func() {
		if err := os.WriteFile(filepath.Join(dir, "before-reviewer"), nil, 0o600); err == nil {
			select {}
		}
	})
	o.Supervise.Executor, o.Supervise.RunDir = exec, dir
	_, err = graph.RunGraph(context.Background(), g, o)
	if err == nil {
		err = errors.New("the child's graph run ended")
	}
	return err
}

// reviewPasses is the reviewer's work when it is let finish: 4 tokens,
// one iteration, no cost.
func reviewPasses(context.Context) (supervise.WorkResult, error) {
	tokens, one := int64(4), int64(1)
	return supervise.WorkResult{Text: "the patch is safe", Spent: ledger.Spend{Tokens: &tokens, Iterations: &one, MicroUSD: new(int64)}}, nil
}

// killGraphChild runs the test binary as a graph child in dir (env
// selects its mode), waits for it to create marker in dir and kills it
// with SIGKILL.
func killGraphChild(t *testing.T, dir, marker string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), resumeChildDir+"="+dir), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child never created %s; stderr:\n%s", marker, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// runConserving runs (or resumes) resumeGraph's graph in dir under
// conservingBrain with the reviewer passing, and fails t unless every
// check of the pool conserved; it returns the result, the executor and
// the pool at the brain's last step (every worker settled).
func runConserving(t *testing.T, dir string) (graph.GraphResult, *resumeExecutor, ledger.Readout) {
	t.Helper()
	g, o, err := resumeGraph()
	if err != nil {
		t.Fatal(err)
	}
	exec, err := newResumeExecutor(reviewPasses)
	if err != nil {
		t.Fatal(err)
	}
	var p poolChecks
	o.Brain = conservingBrain(&p, nil)
	o.Supervise.Executor, o.Supervise.RunDir = exec, dir
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.failed != nil || p.n < 4 {
		t.Fatalf("%d checks of the pool: %v", p.n, p.failed)
	}
	return res, exec, p.last
}

// checkEnded fails t unless the ended run's pool (at the brain's last
// step), its result and its run dir (state.json and the journal's
// finished record) agree: nothing reserved, committed = the result's
// spentTotal on tokens and iterations, within the graph's budget.
func checkEnded(t *testing.T, name, dir string, res graph.GraphResult, last ledger.Readout) {
	t.Helper()
	tok, it := last.Channels[ledger.ChannelTokens], last.Channels[ledger.ChannelIterations]
	if tok.Reserved != 0 || it.Reserved != 0 || tok.Total != 10_000 || it.Total != 10 {
		t.Errorf("%s: pool at the end %+v", name, last.Channels)
	}
	s := res.Result.Spent
	if tok.Committed != s.Tokens || it.Committed != s.Iterations {
		t.Errorf("%s: pool committed %d tokens, %d iterations; the result's spentTotal %+v", name, tok.Committed, it.Committed, s)
	}
	st, err := supervise.ReadRunState(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Budget == nil || st.Budget.Tokens == nil || *st.Budget.Tokens != 10_000 || st.Reserved == nil ||
		st.Reserved.Tokens == nil || *st.Reserved.Tokens != 0 || *st.Reserved.Iterations != 0 {
		t.Errorf("%s: state.json budget %+v reserved %+v", name, st.Budget, st.Reserved)
	}
	// state.json leaves out a channel whose spend is unknown (a killed
	// worker's, charged at its ceiling), never writing it as a number.
	agrees := func(journaled *int64, spent int64, known bool) bool {
		return known == (journaled != nil) && (journaled == nil || *journaled == spent)
	}
	if st.Spent == nil || !agrees(st.Spent.Tokens, s.Tokens, s.TokensKnown) || !agrees(st.Spent.Iterations, s.Iterations, s.IterationsKnown) {
		t.Errorf("%s: state.json spent %+v, result %+v", name, st.Spent, s)
	}
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var fin *supervise.OutcomeRecord
	for _, r := range recs {
		if r.Kind == supervise.KindFinished {
			fin = r.Result
		}
	}
	if fin == nil || fin.Spent.Tokens != s.Tokens || fin.Spent.Iterations != s.Iterations || fin.Spent.TokensKnown != s.TokensKnown ||
		fin.Spent.IterationsKnown != s.IterationsKnown {
		t.Errorf("%s: the journal's finished record %+v, result %+v", name, fin, s)
	}
}

// Issue 13 for a graph run (behaviours 36, 40, 46): a graph run killed
// with SIGKILL and resumed conserves its one pool — free + reserved +
// committed equals the graph budget's total on tokens, usd and
// iterations after the replay and after every step of the resumed run,
// and its end agrees with its result and its run dir. Replayed workers
// are not charged twice: killed after the coder and the lens settled,
// before the reviewer was delegated, the resumed run spends exactly what
// the uninterrupted one does; killed while the reviewer ran, it spends
// that, plus the killed reviewer's ceiling (1000 tokens, one iteration).
func TestKilledGraphConservesItsPoolAndChargesReplayedWorkersOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	whole := t.TempDir()
	uninterrupted, _, last := runConserving(t, whole)
	checkEnded(t, "uninterrupted", whole, uninterrupted, last)
	u := uninterrupted.Result.Spent
	if u.Tokens != 11 || !u.TokensKnown || u.Iterations != 3 {
		t.Fatalf("the uninterrupted run spent %+v, want coder 2 + lens 5 + reviewer 4 tokens, 3 iterations", u)
	}

	for _, tc := range []struct {
		name, marker  string
		env           []string
		tokens, iters int64
		known         bool
	}{
		{name: "killed before the reviewer", marker: "before-reviewer", env: []string{resumeChildBeforeReviewer + "=1"},
			tokens: u.Tokens, iters: u.Iterations, known: true},
		{name: "killed while the reviewer ran", marker: "reviewer-started",
			tokens: u.Tokens + 1_000, iters: u.Iterations + 1, known: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			killGraphChild(t, dir, tc.marker, tc.env...)
			res, exec, last := runConserving(t, dir)
			if !res.Result.Resumed || res.Result.Winner == nil || res.Result.Winner.Node != "g:s1" {
				t.Fatalf("result %+v, want a resumed run won by the coder g:s1", res.Result)
			}
			if exec.count("coder") != 0 || exec.count("analyst-failure-triage") != 0 || exec.count("reviewer") != 1 {
				t.Errorf("the resumed process ran coder %d, the lens %d, reviewer %d times; want 0, 0, 1",
					exec.count("coder"), exec.count("analyst-failure-triage"), exec.count("reviewer"))
			}
			s := res.Result.Spent
			if s.Tokens != tc.tokens || s.Iterations != tc.iters || s.TokensKnown != tc.known {
				t.Errorf("resumed run spent %+v; want %d tokens (known %v), %d iterations against the uninterrupted %+v",
					s, tc.tokens, tc.known, tc.iters, u)
			}
			checkEnded(t, tc.name, dir, res, last)
		})
	}
}
