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
	"time"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/journal/conversation"
	"github.com/agentrt/agentrt/journal/conversation/conversationtest"
)

// Environment of the child process that converses until it is killed.
const (
	childEnv    = "AGENTRT_CONVERSATION_CHILD" // adapter: file, sqlite, postgres
	childTarget = "AGENTRT_CONVERSATION_TARGET"
)

const killedRun = "conv_killed"

var killedSpeakers = []string{"Researcher", "Critic"}

func TestMain(m *testing.M) {
	if kind := os.Getenv(childEnv); kind != "" {
		if os.Getenv(runnerLog) != "" {
			runPlan(kind, os.Getenv(childTarget))
		}
		converse(kind, os.Getenv(childTarget))
		os.Exit(2)
	}
	os.Exit(m.Run())
}

func openKind(ctx context.Context, kind, target string) (conversation.Journal, func() error, error) {
	switch kind {
	case "file":
		f, err := conversation.OpenFile(ctx, target, conversation.FileOptions{})
		if err != nil {
			return nil, nil, err
		}
		return f, f.Close, nil
	case "sqlite":
		s, err := conversation.OpenSQLite(ctx, target, conversation.SQLOptions{})
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	default:
		s, err := conversation.OpenPostgres(ctx, target, conversation.SQLOptions{})
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
}

// converse resumes killedRun and appends its turns until killed,
// printing "acked N" once turn N's append has returned.
func converse(kind, target string) {
	ctx := context.Background()
	j, _, err := openKind(ctx, kind, target)
	if err == nil {
		var e *conversation.Entry
		if e, err = conversation.Resume(ctx, j, killedRun, conversationtest.T0); err == nil {
			for i := e.NextIndex(); err == nil; i++ {
				t := conversationtest.MakeTurn(killedRun, i, killedSpeakers[i%2])
				t.Text = strings.Repeat(fmt.Sprintf("answer %d ", i), 1+i%50)
				if err = j.AppendTurn(ctx, killedRun, t); err == nil {
					fmt.Printf("acked %d\n", i)
				}
			}
		}
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// killAfter runs the child until it has acknowledged at least n turns,
// kills it with SIGKILL and returns the last turn acknowledged.
func killAfter(t *testing.T, kind, target string, n int) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+kind, childTarget+"="+target)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	last := -1
	for sc.Scan() {
		if last, err = strconv.Atoi(strings.TrimPrefix(sc.Text(), "acked ")); err != nil {
			t.Fatalf("child said %q", sc.Text())
		}
		if last >= n {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Acknowledgements already written before the kill landed count too.
	for sc.Scan() {
		if v, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "acked ")); err == nil {
			last = v
		}
	}
	cmd.Wait()
	if last < 0 {
		t.Fatal("the child acknowledged no turn")
	}
	return last
}

// The user-conversation resume mechanism (spec §5; RES-04, RES-06): the
// process holding a conversation is killed with SIGKILL mid-run, twice; a
// new process resuming the same run id finds every acknowledged turn,
// with the same turn ids, and continues at the first unrecorded one.
func TestResumeAfterSIGKILL(t *testing.T) {
	targets := []struct{ kind, target string }{
		{"file", filepath.Join(t.TempDir(), "conversations.jsonl")},
		{"sqlite", filepath.Join(t.TempDir(), "agentrt.db")},
		{"postgres", ""},
	}
	for _, c := range targets {
		t.Run(c.kind, func(t *testing.T) {
			if c.kind == "postgres" {
				c.target = pgtest.Schema(t)
			}
			ctx := context.Background()
			acked := -1
			for round := range 2 {
				acked = killAfter(t, c.kind, c.target, acked+5)
				j, closeJ, err := openKind(ctx, c.kind, c.target)
				if err != nil {
					t.Fatalf("round %d: opening after the kill: %v", round, err)
				}
				e, err := conversation.Resume(ctx, j, killedRun, conversationtest.T0.Add(time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				// Every acknowledged turn is there; at most the one in flight more.
				if n := e.NextIndex(); n != acked+1 && n != acked+2 {
					t.Fatalf("round %d: %d turns recorded, %d acknowledged", round, n, acked+1)
				}
				if !e.StartedAt.Equal(conversationtest.T0) || e.Halt != nil {
					t.Fatalf("round %d: resumed %+v", round, e)
				}
				for i, tr := range e.Turns {
					if want := conversation.TurnID(killedRun, i, killedSpeakers[i%2]); tr.TurnID != want || tr.Index != i {
						t.Fatalf("round %d: turn %d is %q (index %d), want %q", round, i, tr.TurnID, tr.Index, want)
					}
				}
				acked = e.NextIndex() - 1
				closeJ()
			}
		})
	}
}
