package cli_test

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

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/internal/servetest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// e2eScript: every turn says three things with pauses (about 0.6s in
// all) and reports its usage; a slow task's turn pauses 3s, so that a
// process killed while it is mid-turn is certainly killed mid-turn.
const e2eScript = `{"turns":[
 {"match":"slow","repeat":true,"steps":[{"text":"one "},{"delayMs":1500},{"text":"two "},{"delayMs":1500},{"text":"done"},{"usage":{"inputTokens":5,"outputTokens":3},"mode":"delta"}]},
 {"repeat":true,"steps":[{"text":"one "},{"delayMs":200},{"text":"two "},{"delayMs":200},{"text":"three "},{"delayMs":200},{"text":"done"},{"usage":{"inputTokens":5,"outputTokens":3},"mode":"delta"}]}]}`

// proc is a child agentrt process of the end-to-end test.
type proc struct {
	name string
	cmd  *exec.Cmd
	logs *lockedBuffer
	// exited is closed once the process exited and its output was read.
	exited chan struct{}
}

// startProc runs the test binary as agentrt with args; url, when
// non-nil, receives the address `agentrt serve` reports. The process is
// killed when the test ends if it still runs.
func startProc(t *testing.T, name string, url chan<- string, args ...string) *proc {
	t.Helper()
	return startProcWith(t, name, url, nil, args...)
}

// startProcWith is startProc with env added last to the child's
// environment (overriding what startProc sets).
func startProcWith(t *testing.T, name string, url chan<- string, env []string, args ...string) *proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: exec.Command(exe, args...), logs: new(lockedBuffer), exited: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), servetest.Home(t), "AGENTRT_CLI_CHILD=1", "AGENTRT_SERVE_TOKEN="+serveToken), env...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.logs.Write([]byte(sc.Text() + "\n"))
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && url != nil {
				select {
				case url <- m[1]:
				default:
				}
			}
		}
		p.cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// kill SIGKILLs the process and waits for it.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// stop interrupts the process and waits up to a minute for it.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		t.Errorf("%s did not stop within a minute of SIGINT", p.name)
	}
}

// TestFleetEndToEnd is the fleet's end-to-end test: PostgreSQL, two
// `agentrt serve` processes serving the scripted provider with delays,
// three `agentrt worker` processes running on them through the remote
// provider (workers 1 and 2 on server 1, worker 3 on server 2), and n
// runs submitted at once. Once a fifth of the runs ended it SIGKILLs
// worker 1 and server 2 while both execute turns, and checks that:
//   - every run reaches exactly one terminal state, and its job is done;
//   - a run whose environment died with server 2 ends interrupted after
//     that one attempt (in doubt: never run again);
//   - a run whose worker died is taken over in the next generation and
//     completes — or, when the kill fell after its turn's end was
//     recorded and before the run's own end was, is adopted from its
//     recorded events and never run again (its ledger then a floor of
//     the turn's usage, which its events state whole); no run fails;
//   - no run had two live executors, proved where the work happens:
//     each server's provider records every turn it starts (turnLogEnv,
//     a probe of this test binary only), and every completed run's turn
//     was started exactly once across both servers, in the environment
//     of the attempt that completed it, while a run in doubt with server
//     2 was started at most once, there, and never again; besides,
//     attempts' generations are consecutive, each attempt's own run kept
//     its first lease generation, at most one attempt completed, and no
//     event of an attempt was appended after the next attempt claimed
//     the run;
//   - no event acknowledged to a reader is lost: a follower of every run
//     (fleet.Follow, what agentrt runs events --follow uses) and agentrt
//     runs events --follow processes following the runs killed mid-turn
//     read while the processes die; every event each was given is in
//     the final store in the same attempt at the same sequence with the
//     same id, type and bytes, each saw its attempts' events from the
//     first without a gap, and, its run ended, all of them;
//   - each ended attempt's ledger states the usage its run recorded,
//     and the ledger totals equal the sum of the runs' usage.
//
// n is 200 unless AGENTRT_E2E_RUNS says otherwise. River's stuck-job
// rescue is lowered to the 6s lease (--rescue-after); River's rescuer itself looks
// every 30s, which bounds the takeover delay.
func TestFleetEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs five processes for a few minutes")
	}
	// Serial on purpose: its five processes hold leases over 200 runs,
	// and beside another heavy test on a loaded machine a surviving
	// worker's 2s lease lapsed (seen twice, the second time in CI beside
	// a two-CPU fuzz): it runs alone, and its leases are 6s (renewed
	// every 2s), so only a stall of 4s lapses one. The killed worker's
	// runs wait out the lease and River's rescuer (every 30s) either way.
	n := 200
	if s := os.Getenv("AGENTRT_E2E_RUNS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 10 {
			t.Fatalf("AGENTRT_E2E_RUNS=%q: want a number of at least 10", s)
		}
		n = v
	}
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	f := openTestFleet(t, conn, schema)
	ctx := t.Context()

	script := writeFile(t, "script.json", e2eScript)
	var servers []*proc
	var urls, turnLogs []string
	for i := range 2 {
		url := make(chan string, 1)
		turnLogs = append(turnLogs, filepath.Join(t.TempDir(), fmt.Sprintf("turns-%d.jsonl", i+1)))
		p := startProcWith(t, fmt.Sprintf("server %d", i+1), url, []string{turnLogEnv + "=" + turnLogs[i]},
			"serve", "--listen", "127.0.0.1:0", "--provider", "scripted", "--script", script)
		select {
		case u := <-url:
			urls = append(urls, u)
		case <-time.After(time.Minute):
			t.Fatalf("server %d did not report its address:\n%s", i+1, p.logs)
		}
		servers = append(servers, p)
	}

	raw, err := os.ReadFile(noteWriter)
	if err != nil {
		t.Fatal(err)
	}
	pv, err := canonjson.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i := range n {
		task := fmt.Sprintf("note %d", i)
		if i%4 == 0 {
			task = "slow " + task
		}
		sub, err := f.Submit(ctx, fleet.Submission{Spec: fleet.Spec{Profile: pv, Task: task, Provider: "remote"},
			IdempotencyKey: fmt.Sprintf("e2e-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = sub.RunID
	}

	start := time.Now()
	var workers []*proc
	for i, url := range []string{urls[0], urls[0], urls[1]} {
		id := fmt.Sprintf("w%d", i+1)
		workers = append(workers, startProc(t, "worker "+id, nil, append([]string{"worker", "--id", id, "--provider", "remote", "--base-url", url,
			"--lease", "6s", "--rescue-after", "6s", "--poll-interval", "100ms", "--concurrency", "4", "--shutdown-timeout", "10s", "--log-format", "json"}, db...)...))
	}
	dump := func() string {
		var b strings.Builder
		for _, p := range append(append([]*proc(nil), servers...), workers...) {
			logs := p.logs.String()
			if len(logs) > 4000 {
				logs = "…" + logs[len(logs)-4000:]
			}
			fmt.Fprintf(&b, "--- %s:\n%s\n", p.name, logs)
		}
		return b.String()
	}

	// A follower reads every run's events (fleet.Follow, as agentrt runs
	// events --follow does) from its submission until it ended, across
	// the kills; two more follow, as agentrt runs events --follow
	// processes, the runs killed mid-turn.
	followCtx, stopFollowers := context.WithTimeout(ctx, 8*time.Minute)
	defer stopFollowers()
	followed := make(chan *follower, n)
	for _, id := range ids {
		go func() { followed <- followLibrary(followCtx, f.Store(), id) }()
	}
	var cliFollowers []*cliFollower

	// Kill once a fifth of the runs ended, while workers 1 and 3 both
	// execute a slow turn whose first event was appended less than a
	// second ago: it has two seconds to go at least.
	deadline := time.Now().Add(2 * time.Minute)
	for ended := 0; ended < n/5; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs ended within 2 minutes\n%s", ended, n, dump())
		}
		time.Sleep(100 * time.Millisecond)
		ended = 0
		for _, st := range []store.Status{store.StatusCompleted, store.StatusFailed, store.StatusInterrupted} {
			rs, err := f.Store().ListRuns(ctx, store.ListOptions{Status: st})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				if r.Kind == fleet.Kind {
					ended++
				}
			}
		}
	}
	// freshTurn reports whether attempt is running a turn whose first
	// event was appended less than young ago.
	freshTurn := func(attempt string, young time.Duration) bool {
		a, err := f.Store().GetRun(ctx, attempt)
		if err != nil || a.Status != store.StatusRunning {
			return false
		}
		evs, err := f.Store().Events(ctx, attempt, "", 1)
		return err == nil && len(evs) == 1 && time.Since(evs[0].Time) < young
	}
	for {
		if time.Now().After(deadline) {
			t.Fatalf("workers 1 and 3 were never both at the start of a slow turn\n%s", dump())
		}
		rs, err := f.Store().ListRuns(ctx, store.ListOptions{Status: store.StatusRunning})
		if err != nil {
			t.Fatal(err)
		}
		fresh, freshRun := map[string]string{}, map[string]string{}
		for _, sr := range rs {
			r, err := fleet.DecodeRun(sr)
			if err != nil || (r.Owner != "w1" && r.Owner != "w3") || fresh[r.Owner] != "" || len(r.Attempts) == 0 || !strings.HasPrefix(r.Spec.Task, "slow ") {
				continue
			}
			if a := r.Attempts[len(r.Attempts)-1].RunID; freshTurn(a, time.Second) {
				fresh[r.Owner], freshRun[r.Owner] = a, r.ID
			}
		}
		if fresh["w1"] == "" || fresh["w3"] == "" {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		// Follow both runs with agentrt processes, which must be reading
		// (have printed an event) before the kill; then kill only if
		// both turns still have a second to go (a slow turn lasts 3s).
		if len(cliFollowers) < 8 {
			pair := []*cliFollower{startCLIFollower(t, conn, freshRun["w1"]), startCLIFollower(t, conn, freshRun["w3"])}
			cliFollowers = append(cliFollowers, pair...)
			for _, c := range pair {
				for readDeadline := time.Now().Add(30 * time.Second); c.lines() == 0; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(readDeadline) {
						t.Fatalf("agentrt runs events --follow %s printed nothing within 30s: %s", c.run, c.errOut)
					}
				}
			}
		}
		if freshTurn(fresh["w1"], 2*time.Second) && freshTurn(fresh["w3"], 2*time.Second) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	servers[1].kill(t)
	workers[0].kill(t)
	killedAt := time.Since(start)

	deadline = time.Now().Add(4 * time.Minute)
	runs := map[string]*fleet.Run{}
	for len(runs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs ended within 4 minutes\n%s", len(runs), n, dump())
		}
		time.Sleep(250 * time.Millisecond)
		for _, id := range ids {
			if runs[id] != nil {
				continue
			}
			r, err := f.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Terminal() {
				runs[id] = r
			}
		}
	}
	elapsed := time.Since(start)

	// Every job is done, once: the fleet has nothing left to do. A job
	// whose run ended may still be waiting: River's rescuer made it
	// retryable while its live worker still ran it (River records a
	// worker's result only for a job still running), or a second
	// delivery snoozed it while the first held the run; its next try
	// finds the run ended and completes, so the surviving workers keep
	// running until every job has.
	var jobs []fleet.QueueCount
	for jobsDeadline := time.Now().Add(3 * time.Minute); ; {
		st, err := f.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		jobs = st.Jobs
		if len(jobs) == 1 && jobs[0].State == "completed" && jobs[0].Count == int64(n) {
			break
		}
		if time.Now().After(jobsDeadline) {
			t.Errorf("jobs: %+v; want all %d completed", jobs, n)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	workers[1].stop(t)
	workers[2].stop(t)
	servers[0].stop(t)

	// The turns the servers' providers started, by fleet run: each turn
	// is named after its run (fleet-<run id>); its prompt carries the
	// run's task, which names the run too.
	type started struct {
		server int
		env    string
	}
	starts := map[string][]started{}
	byTask := map[string]string{}
	for i, id := range ids {
		byTask[strconv.Itoa(i)] = id
	}
	var turnsStarted int
	for i, path := range turnLogs {
		for _, ts := range readTurnLog(t, path) {
			turnsStarted++
			m := taskNumber.FindStringSubmatch(ts.Prompt)
			id := strings.TrimPrefix(ts.Turn, "fleet-")
			if m == nil || byTask[m[1]] != id {
				t.Errorf("server %d started turn %q in %s (prompt %q), which names no run of the test", i+1, ts.Turn, ts.Env, ts.Prompt)
				continue
			}
			starts[id] = append(starts[id], started{server: i + 1, env: ts.Env})
		}
	}

	var completed, inDoubt, recovered, handedBack, attempts int
	var ledgerIn, ledgerOut, usageIn, usageOut int64
	// Adopted attempts (their end unrecorded, adopted from their events)
	// and their turns' usage, which their ledgers hold only a floor of.
	var adopted int
	var adoptedIn, adoptedOut int64
	for _, id := range ids {
		r := runs[id]
		// Read again: the status seen while waiting is the final one.
		again, err := f.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if again.Status != r.Status || len(again.Attempts) != len(r.Attempts) || again.Generation != r.Generation {
			t.Errorf("run %s moved on after it ended: %s %+v, then %s %+v", id, r.Status, r.Attempts, again.Status, again.Attempts)
		}
		if len(r.Attempts) == 0 || r.Outcome == nil || r.Outcome.Status != string(r.Status) {
			t.Errorf("run %s: %s with attempts %+v and outcome %+v", id, r.Status, r.Attempts, r.Outcome)
			continue
		}
		attempts += len(r.Attempts)
		if last := r.Attempts[len(r.Attempts)-1]; r.Generation != last.Generation || r.Outcome.RunID != last.RunID {
			t.Errorf("run %s: generation %d, outcome of %s; want its last attempt's (%+v)", id, r.Generation, r.Outcome.RunID, last)
		}
		completedAttempts, diedWithWorker, completedEnv := 0, false, ""
		for i, a := range r.Attempts {
			rec, err := kernel.ReadRun(ctx, f.Store(), a.RunID)
			if err != nil {
				t.Fatalf("run %s: attempt %s: %v", id, a.RunID, err)
			}
			if rec.Run.Generation != 1 {
				// An attempt is executed once; a takeover makes a new one.
				t.Errorf("run %s: attempt %s is in lease generation %d; want 1, one executor", id, a.RunID, rec.Run.Generation)
			}
			if i > 0 && a.Generation != r.Attempts[i-1].Generation+1 {
				t.Errorf("run %s: attempt generations %+v are not consecutive", id, r.Attempts)
			}
			// Fencing: nothing of this attempt was written after the next
			// attempt claimed the run.
			if i+1 < len(r.Attempts) {
				next, err := time.Parse(time.RFC3339Nano, r.Attempts[i+1].StartedAt)
				if err != nil {
					t.Fatal(err)
				}
				evs, err := f.Store().Events(ctx, a.RunID, "", 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range evs {
					if e.Time.After(next) {
						t.Errorf("run %s: attempt %s appended event %d at %s, after attempt %s claimed the run at %s: two live executors",
							id, a.RunID, e.Sequence, e.Time.Format(time.RFC3339Nano), r.Attempts[i+1].RunID, next.Format(time.RFC3339Nano))
					}
				}
			}
			switch {
			case rec.Run.Status == store.StatusCompleted:
				completedAttempts++
				if rec.Exact != nil {
					completedEnv = string(rec.Exact.EnvironmentID)
				}
			case a.Status == string(store.StatusCompleted) && rec.Run.Status == store.StatusInterrupted && strings.Contains(a.Note, "adopted by"):
				// The killed worker's attempt whose turn completed, its
				// terminal event recorded, though the worker died before
				// recording the run's end: the next claim adopted it from
				// its events, never running the turn again (fleet
				// settledTurn). It is the attempt that completed the run,
				// in its environment; its turn's usage is in its events,
				// its kernel ledger only a floor of it.
				if a.Worker != "w1" {
					t.Errorf("run %s: attempt %s of %s adopted with its end unrecorded; only the killed worker's may be", id, a.RunID, a.Worker)
				}
				completedAttempts++
				diedWithWorker = true
				if rec.Exact != nil {
					completedEnv = string(rec.Exact.EnvironmentID)
				}
				turn, err := kernel.ReadRecordedTurn(ctx, f.Store(), a.RunID)
				if err != nil {
					t.Fatalf("run %s: attempt %s: %v", id, a.RunID, err)
				}
				in, out := turn.Usage.InputTokens, turn.Usage.OutputTokens
				if turn.Status != store.StatusCompleted || !in.Known() || !out.Known() {
					t.Errorf("run %s: adopted attempt %s recorded turn %s with usage %+v; want completed, its usage whole", id, a.RunID, turn.Status, turn.Usage)
				}
				if sp := rec.Spend; sp.InputTokens.Known() || sp.InputTokens.Value > in.Value || sp.OutputTokens.Value > out.Value {
					t.Errorf("run %s: adopted attempt %s: ledger %+v; want a floor of its turn's %d in, %d out", id, a.RunID, sp, in.Value, out.Value)
				}
				adoptedIn, adoptedOut = adoptedIn+in.Value, adoptedOut+out.Value
				adopted++
			case rec.Run.Status == store.StatusInterrupted:
				// Only the killed worker's attempts lapsed.
				if a.Worker != "w1" {
					t.Errorf("run %s: attempt %s of %s interrupted; only the killed worker's may be", id, a.RunID, a.Worker)
				}
				diedWithWorker = true
			case a.Status == "released":
				// Handed back: server 2 refused the connection, so no
				// environment was made.
				handedBack++
				if a.Worker != "w3" || rec.Exact == nil || rec.Exact.EnvironmentID != "" {
					t.Errorf("run %s: attempt %+v handed back (environment %+v); only worker 3's creates on the dead server may be", id, a, rec.Exact)
				}
			case rec.Run.Status == store.StatusFailed && r.Status == store.StatusInterrupted && i == len(r.Attempts)-1:
				// The run in doubt: checked below.
			default:
				t.Errorf("run %s: attempt %+v ended %s", id, a, rec.Run.Status)
			}
			// The ledger states what the run recorded it used.
			if rec.Exact != nil && rec.Exact.Usage != nil {
				u := rec.Exact.Usage.Usage
				if rec.Spend.InputTokens.Value != u.InputTokens.Value || rec.Spend.OutputTokens.Value != u.OutputTokens.Value {
					t.Errorf("attempt %s: ledger spend %d in, %d out; its record says %d, %d", a.RunID,
						rec.Spend.InputTokens.Value, rec.Spend.OutputTokens.Value, u.InputTokens.Value, u.OutputTokens.Value)
				}
				usageIn, usageOut = usageIn+u.InputTokens.Value, usageOut+u.OutputTokens.Value
				ledgerIn, ledgerOut = ledgerIn+rec.Spend.InputTokens.Value, ledgerOut+rec.Spend.OutputTokens.Value
			}
		}
		// Fencing, proved where the work happens: the run's turn was
		// started by a provider once, however many attempts, takeovers
		// and re-sends it took — in the environment of the attempt that
		// completed it — or, in doubt with server 2, at most once there
		// and never again.
		switch st := starts[id]; r.Status {
		case store.StatusCompleted:
			if len(st) != 1 || st[0].env != completedEnv {
				t.Errorf("run %s completed in environment %q; its turn was started %d times: %+v; want once, there (two live executors)", id, completedEnv, len(st), st)
			}
		case store.StatusInterrupted:
			if len(st) > 1 || (len(st) == 1 && st[0].server != 2) {
				t.Errorf("run %s in doubt; its turn was started %d times: %+v; want at most once, on server 2", id, len(st), st)
			}
		}
		switch r.Status {
		case store.StatusCompleted:
			completed++
			if completedAttempts != 1 || !r.Outcome.Delivered {
				t.Errorf("run %s: completed with %d completed attempts (%+v), delivered %v; want exactly 1, delivered", id, completedAttempts, r.Attempts, r.Outcome.Delivered)
			}
			if diedWithWorker {
				recovered++
			}
		case store.StatusInterrupted:
			inDoubt++
			last := r.Attempts[len(r.Attempts)-1]
			if last.Worker != "w3" || !strings.Contains(r.Outcome.Error, "in doubt") || completedAttempts != 0 {
				t.Errorf("run %s: interrupted by %s, outcome %+v; want only server 2's environments in doubt", id, last.Worker, r.Outcome)
			}
		default:
			t.Errorf("run %s ended %s: %+v", id, r.Status, r.Outcome)
		}
	}
	if inDoubt == 0 {
		t.Error("no run was in doubt: server 2 did not die mid-turn")
	}
	if recovered == 0 {
		t.Error("no run was recovered from the killed worker")
	}
	// Each completed run used 5 in, 3 out; attempts cut short add their
	// own recorded usage, which the ledger states too.
	// An adopted attempt's usage is its recorded turn's: its ledger is
	// a floor, checked above.
	if ledgerIn != usageIn || ledgerOut != usageOut || usageIn+adoptedIn < int64(5*completed) || usageOut+adoptedOut < int64(3*completed) {
		t.Errorf("ledger totals %d in, %d out; run usage %d in, %d out (and %d in, %d out of %d adopted attempts); %d completed runs",
			ledgerIn, ledgerOut, usageIn, usageOut, adoptedIn, adoptedOut, adopted, completed)
	}

	// No event a follower was given is lost, moved or changed. Each
	// follower stops once its run ended and it was given every event.
	var read int
	collectDeadline := time.After(2 * time.Minute)
	for range n {
		select {
		case fl := <-followed:
			read += checkFollowed(t, ctx, f.Store(), runs[fl.run], fl)
		case <-collectDeadline:
			t.Fatalf("the followers did not all stop within 2 minutes of the runs' end")
		}
	}
	for _, c := range cliFollowers {
		select {
		case <-c.exited:
		case <-time.After(time.Minute):
			t.Fatalf("agentrt runs events --follow %s did not stop within a minute of its run's end", c.run)
		}
		read += checkFollowed(t, ctx, f.Store(), runs[c.run], c.result())
	}
	// No secret reached what the fleet stored: the servers' token, the
	// database password.
	pw, _ := passwordOf(conn)
	checkNoSecretStored(t, ctx, f.Store(), conn, schema, ids, serveToken, ":"+pw+"@")
	// Nor what the five processes logged, the killed ones included.
	for _, p := range append(append([]*proc(nil), servers...), workers...) {
		logs := p.logs.String()
		for _, secret := range []string{serveToken, ":" + pw + "@", "password=" + pw} {
			if pw == "" && secret != serveToken {
				continue
			}
			if strings.Contains(logs, secret) {
				t.Errorf("%s logged a secret (%d bytes of logs)", p.name, len(logs))
			}
		}
	}

	t.Logf("%d runs, 3 workers on 2 servers; worker 1 and server 2 killed at %s; all ended after %s (%.1f runs/s)",
		n, killedAt.Round(time.Millisecond), elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
	t.Logf("%d completed (%d recovered from the killed worker, %d of them adopted with their end unrecorded), %d interrupted in doubt; %d attempts, %d handed back by the dead server's worker; %d turns started by the servers; %d events given to %d followers (%d of them agentrt processes), none lost; ledger %d in, %d out",
		completed, recovered, adopted, inDoubt, attempts, handedBack, turnsStarted, read, n+len(cliFollowers), len(cliFollowers), ledgerIn, ledgerOut)
	if t.Failed() {
		t.Log(dump())
	}
}
