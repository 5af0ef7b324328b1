package conversation_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/journal/conversation"
)

// Environment of the child process that runs a plan with a Runner.
const (
	// runnerLog is the file where every produced turn is logged, by
	// the child and by the test alike, before it is returned.
	runnerLog = "AGENTRT_RUNNER_LOG"
	// runnerBlock is the turn at which the child's producer blocks
	// until the child is killed.
	runnerBlock = "AGENTRT_RUNNER_BLOCK"
)

const (
	runnerRun   = "conv_runner_killed"
	runnerLines = 8 // user lines: 16 turns
)

// loggedPlan is the plan of the crash test: user line i, then an answer
// logged to log as "ran <index>" before it is returned; block, when
// ≥ 0, is the answer that never returns (the process is killed in it).
func loggedPlan(log string, block int) []conversation.Planned {
	produce := func(ctx context.Context, in conversation.TurnInput) (conversation.TurnOutput, error) {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return conversation.TurnOutput{}, err
		}
		_, err = fmt.Fprintf(f, "ran %d\n", in.Index)
		if err == nil {
			err = f.Sync()
		}
		f.Close()
		if err != nil {
			return conversation.TurnOutput{}, err
		}
		fmt.Printf("running %d\n", in.Index)
		if in.Index == block {
			<-ctx.Done() // never: the process is killed here
		}
		return conversation.TurnOutput{Text: "answer to " + in.Transcript[in.Index-1].Text}, nil
	}
	var p []conversation.Planned
	for i := range runnerLines {
		p = append(p, conversation.Planned{Speaker: "user", Text: "line " + strconv.Itoa(i)},
			conversation.Planned{Speaker: "assistant", Produce: produce})
	}
	return p
}

// runPlan is the child: it runs the crash test's plan until killed.
func runPlan(kind, target string) {
	ctx := context.Background()
	block, _ := strconv.Atoi(os.Getenv(runnerBlock))
	j, _, err := openKind(ctx, kind, target)
	if err == nil {
		var r *conversation.Runner
		if r, err = conversation.StartRunner(ctx, j, runnerRun, conversation.RunnerOptions{}); err == nil {
			err = r.Run(ctx, loggedPlan(os.Getenv(runnerLog), block))
		}
	}
	fmt.Fprintln(os.Stderr, "runner child:", err)
	os.Exit(1)
}

// The conversation runner's crash test (runtime spec §4, §5; RES-04): a
// process running a conversation with a Runner is killed (SIGKILL) in
// the middle of an answer; a Runner resuming the same run with the same
// plan continues at the first unrecorded turn — the answer that was cut
// off — and runs no recorded turn again: every answer before it was
// produced once, the cut-off one twice (its first attempt never
// committed), the ones after it once. On the file, SQLite and PostgreSQL
// journals.
func TestRunnerResumesAfterSIGKILL(t *testing.T) {
	targets := []struct{ kind, target string }{
		{"file", filepath.Join(t.TempDir(), "conversations.jsonl")},
		{"sqlite", filepath.Join(t.TempDir(), "agentrt.db")},
		{"postgres", ""},
	}
	const block = 7 // the fourth answer
	for _, c := range targets {
		t.Run(c.kind, func(t *testing.T) {
			if c.kind == "postgres" {
				c.target = pgtest.Schema(t)
			}
			log := filepath.Join(t.TempDir(), "ran.log")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+c.kind, childTarget+"="+c.target, runnerLog+"="+log, runnerBlock+"="+strconv.Itoa(block))
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			sc := bufio.NewScanner(out)
			for sc.Scan() && sc.Text() != "running "+strconv.Itoa(block) {
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()

			ctx := context.Background()
			j, closeJ, err := openKind(ctx, c.kind, c.target)
			if err != nil {
				t.Fatalf("opening after the kill: %v", err)
			}
			defer closeJ()
			r, err := conversation.StartRunner(ctx, j, runnerRun, conversation.RunnerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.NextIndex() != block {
				t.Fatalf("after the kill %d turns are recorded, want %d (up to the cut-off answer)", r.NextIndex(), block)
			}
			if err := r.Run(ctx, loggedPlan(log, -1)); err != nil {
				t.Fatal(err)
			}
			e, err := j.LoadRun(ctx, runnerRun)
			if err != nil {
				t.Fatal(err)
			}
			if e.NextIndex() != 2*runnerLines {
				t.Fatalf("%d turns recorded, want %d", e.NextIndex(), 2*runnerLines)
			}
			for i, tr := range e.Turns {
				want := "line " + strconv.Itoa(i/2)
				if i%2 == 1 {
					want = "answer to " + want
				}
				if tr.Text != want || tr.TurnID != conversation.TurnID(runnerRun, i, tr.Speaker) {
					t.Errorf("turn %d: %q (%s), want %q", i, tr.Text, tr.TurnID, want)
				}
			}
			raw, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			ran := map[string]int{}
			for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
				ran[l]++
			}
			want := map[string]int{}
			for i := 1; i < 2*runnerLines; i += 2 {
				want["ran "+strconv.Itoa(i)] = 1
			}
			want["ran "+strconv.Itoa(block)] = 2
			if diff := cmp.Diff(want, ran); diff != "" {
				t.Errorf("answers produced (-want +got):\n%s", diff)
			}
		})
	}
}
