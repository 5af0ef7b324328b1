package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/servetest"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
)

// turnLogEnv names, in a child process of the test binary, the file its
// served scripted provider appends a line (a turnStart) to for every turn
// it starts playing (turnLogOpener). It is the end-to-end test's probe
// inside `agentrt serve`; the agentrt binary has none.
const turnLogEnv = "AGENTRT_TEST_TURN_LOG"

// turnStart is one line of a turn log: a turn a server's provider
// started (scripted.TurnStarted).
type turnStart struct {
	Env    string `json:"env"`
	Turn   string `json:"turn"`
	Prompt string `json:"prompt"`
}

// turnLogOpener opens providers as Main does, but a scripted provider
// with a script tells path of every turn it starts: one write of one
// line per turn, to a file opened for appending, so the lines of a
// process killed mid-turn are whole and in the file.
func turnLogOpener(path string) func(name, scriptPath, baseURL, openaiAPI string) (contract.Provider, error) {
	return func(name, scriptPath, baseURL, openaiAPI string) (contract.Provider, error) {
		if name != "scripted" || scriptPath == "" || baseURL != "" || openaiAPI != "" {
			return cli.OpenProvider(name, scriptPath, baseURL, openaiAPI)
		}
		script, err := scripted.LoadScript(scriptPath)
		if err != nil {
			return nil, err
		}
		// Open for the process's life: it writes until it exits or dies.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		var mu sync.Mutex
		return scripted.New(script, scripted.Options{OnTurn: func(ts scripted.TurnStarted) {
			line, err := json.Marshal(turnStart{Env: ts.EnvironmentID, Turn: ts.TurnID, Prompt: ts.Prompt})
			if err == nil {
				mu.Lock()
				_, err = f.Write(append(line, '\n'))
				mu.Unlock()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "turn log:", err)
			}
		}}), nil
	}
}

// readTurnLog reads a turn log; a server that never started a turn
// wrote none.
func readTurnLog(t *testing.T, path string) []turnStart {
	t.Helper()
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var starts []turnStart
	for line := range strings.Lines(string(raw)) {
		var ts turnStart
		if err := json.Unmarshal([]byte(line), &ts); err != nil {
			t.Fatalf("%s: line %q: %v", path, line, err)
		}
		starts = append(starts, ts)
	}
	return starts
}

// taskNumber finds the e2e task ("note N", "slow note N") in a prompt.
var taskNumber = regexp.MustCompile(`(?:^|[^0-9A-Za-z])note ([0-9]+)(?:[^0-9]|$)`)

// seenEvent is an event a follower was given: its attempt, sequence,
// id, type and body bytes.
type seenEvent struct {
	attempt  string
	seq      int64
	id, kind string
	body     string
}

// follower is one reader of a fleet run's events while the fleet runs.
type follower struct {
	run  string
	how  string // "library" or "cli"
	seen []seenEvent
	err  error
}

// followPoll is how often a library follower looks for new events: one
// follows each of the end-to-end test's runs, so not too often.
const followPoll = 500 * time.Millisecond

// followLibrary follows run with fleet.Follow (the API agentrt runs
// events --follow uses) until the run ended and every event was given.
func followLibrary(ctx context.Context, s store.Store, run string) *follower {
	fl := &follower{run: run, how: "library"}
	for e, err := range fleet.Follow(ctx, s, run, fleet.FollowOptions{Follow: true, PollInterval: followPoll}) {
		if err != nil {
			fl.err = err
			return fl
		}
		fl.seen = append(fl.seen, seenEvent{attempt: e.Attempt, seq: e.Sequence, id: e.ID, kind: e.Type, body: string(canonjson.Marshal(e.Body))})
	}
	return fl
}

// cliFollower is an `agentrt runs events RUN --follow --json` process.
type cliFollower struct {
	run    string
	cmd    *exec.Cmd
	out    *lockedBuffer
	errOut *lockedBuffer
	exited chan struct{}
}

// startCLIFollower starts `agentrt runs events run --follow --json`
// against the fleet's database; it is killed when the test ends if it
// still runs.
func startCLIFollower(t *testing.T, conn, run string) *cliFollower {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &cliFollower{run: run, out: new(lockedBuffer), errOut: new(lockedBuffer), exited: make(chan struct{})}
	c.cmd = exec.Command(exe, "runs", "events", run, "--follow", "--json", "--database", conn)
	c.cmd.Env = append(os.Environ(), servetest.Home(t), "AGENTRT_CLI_CHILD=1")
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.errOut
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.exited)
		c.cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

// lines reports how many whole lines the follower printed so far.
func (c *cliFollower) lines() int { return strings.Count(c.out.String(), "\n") }

// result parses what the follower printed: every JSON line is an event.
func (c *cliFollower) result() *follower {
	fl := &follower{run: c.run, how: "cli"}
	if code := c.cmd.ProcessState.ExitCode(); code != 0 {
		fl.err = fmt.Errorf("exit %d: %s", code, c.errOut)
	}
	sc := bufio.NewScanner(strings.NewReader(c.out.String()))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		v, err := canonjson.Decode(bytes.Clone(sc.Bytes()))
		if err != nil {
			fl.err = fmt.Errorf("line %q: %w", sc.Text(), err)
			return fl
		}
		get := func(name string) canonjson.Value { m, _ := v.Get(name); return m }
		body := get("event")
		fl.seen = append(fl.seen, seenEvent{attempt: get("attempt").Str(), seq: int64(get("sequence").Float()), id: get("id").Str(),
			kind: get("type").Str(), body: string(canonjson.Marshal(body))})
	}
	return fl
}

// checkFollowed checks what a follower of a fleet run that ended was
// given against the final store: every event it saw is there, in the
// same attempt at the same sequence with the same id, type and bytes;
// it saw each attempt's events from the first without a gap; and, the
// run having ended, it saw them all.
func checkFollowed(t *testing.T, ctx context.Context, s store.Store, r *fleet.Run, fl *follower) int {
	t.Helper()
	if fl.err != nil {
		t.Errorf("%s follower of %s: %v", fl.how, fl.run, fl.err)
		return 0
	}
	byAttempt := map[string][]seenEvent{}
	for _, e := range fl.seen {
		byAttempt[e.attempt] = append(byAttempt[e.attempt], e)
	}
	for attempt := range byAttempt {
		found := false
		for _, a := range r.Attempts {
			found = found || a.RunID == attempt
		}
		if !found {
			t.Errorf("%s follower of %s was given events of %s, no attempt of the run", fl.how, fl.run, attempt)
		}
	}
	for _, a := range r.Attempts {
		all, err := s.Events(ctx, a.RunID, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := byAttempt[a.RunID]
		for i, e := range seen {
			if e.seq != int64(i+1) {
				t.Errorf("%s follower of %s: attempt %s's event %d has sequence %d: a gap in what it was given", fl.how, fl.run, a.RunID, i+1, e.seq)
				break
			}
			if i >= len(all) {
				t.Errorf("%s follower of %s was given event %d of %s, which the store no longer has (%d events)", fl.how, fl.run, e.seq, a.RunID, len(all))
				break
			}
			if st := all[i]; st.Sequence != e.seq || st.ID != e.id || st.Type != e.kind || string(canonjson.Marshal(st.Body)) != e.body {
				t.Errorf("%s follower of %s was given event %d of %s as %s %s %s; the store has %d %s %s %s", fl.how, fl.run, e.seq, a.RunID,
					e.id, e.kind, e.body, st.Sequence, st.ID, st.Type, canonjson.Marshal(st.Body))
			}
		}
		if len(seen) != len(all) {
			t.Errorf("%s follower of %s saw %d of attempt %s's %d events, though the run ended", fl.how, fl.run, len(seen), a.RunID, len(all))
		}
	}
	return len(fl.seen)
}
