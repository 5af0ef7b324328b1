package coordmcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/clibridge"
	"github.com/agentrt/agentrt/supervise"
)

// The fake opencode is this test binary started by clibridge: with
// fakeModeEnv set, TestMain runs fakeOpencode instead of the tests.
const (
	fakeModeEnv    = "FAKEOC_MODE"    // "hang" or "finish"
	fakePIDFileEnv = "FAKEOC_PIDFILE" // where a hanging fake writes its pid
	// fakePromptFileEnv, when set, is where the fake writes the prompt
	// it read on stdin, as opencode reads its turn's.
	fakePromptFileEnv = "FAKEOC_PROMPTFILE"
	// killChildEnv names the run dir of a supervisor child process the
	// kill test starts (superviseUntilKilled).
	killChildEnv = "COORDMCP_KILL_CHILD_DIR"
	// fakeCountFileEnv, when set, is where the fake counts its
	// invocations: each writes its prompt to fakePromptFileEnv with
	// ".<n>" appended, and "fail-once" fails the first one
	// (fakeFailTextEnv on stderr, exit 1) and finishes the others.
	fakeCountFileEnv = "FAKEOC_COUNTFILE"
	fakeFailTextEnv  = "FAKEOC_FAILTEXT"
)

// The fake's model calls: two before it hangs, one when it finishes.
var (
	hangCalls   = [][2]int64{{100, 20}, {150, 30}}
	finishCalls = [][2]int64{{40, 10}}
)

// fakeOpencode writes opencode run --format json lines: a step per model
// call, each step_finish with that call's tokens. "hang" then never ends
// (the test kills it); "finish" answers and exits 0.
func fakeOpencode(mode string) {
	promptFile := os.Getenv(fakePromptFileEnv)
	if counter := os.Getenv(fakeCountFileEnv); counter != "" {
		b, _ := os.ReadFile(counter)
		n, _ := strconv.Atoi(string(b))
		n++
		if err := os.WriteFile(counter, []byte(strconv.Itoa(n)), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "fake opencode:", err)
			os.Exit(2)
		}
		if promptFile != "" {
			promptFile += "." + strconv.Itoa(n)
		}
		if mode == "fail-once" {
			mode = "finish"
			if n == 1 {
				mode = "fail"
			}
		}
	}
	if path := promptFile; path != "" {
		prompt, err := io.ReadAll(os.Stdin)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake opencode: reading the prompt:", err)
			os.Exit(2)
		}
		if err := os.WriteFile(path, prompt, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "fake opencode:", err)
			os.Exit(2)
		}
	}
	if mode == "fail" {
		io.Copy(io.Discard, os.Stdin)
		fmt.Fprintln(os.Stderr, os.Getenv(fakeFailTextEnv))
		os.Exit(1)
	}
	calls := finishCalls
	if mode == "hang" {
		calls = hangCalls
	}
	line := func(typ string, part map[string]any) {
		part["sessionID"] = "ses_fake"
		b, _ := json.Marshal(map[string]any{"type": typ, "sessionID": "ses_fake", "part": part})
		fmt.Println(string(b))
	}
	for i, c := range calls {
		reason := "tool-calls"
		if mode == "finish" && i == len(calls)-1 {
			line("text", map[string]any{"id": "prt_text", "messageID": "msg_last", "type": "text", "text": "nothing to delegate"})
			reason = "stop"
		}
		line("step_finish", map[string]any{"id": fmt.Sprint("prt_", i), "messageID": fmt.Sprint("msg_", i), "type": "step-finish", "reason": reason,
			"tokens": map[string]any{"input": c[0], "output": c[1]}, "cost": 0})
	}
	if mode == "hang" {
		os.WriteFile(os.Getenv(fakePIDFileEnv), []byte(strconv.Itoa(os.Getpid())), 0o600)
		time.Sleep(10 * time.Minute)
		os.Exit(1)
	}
	os.Exit(0)
}

// opencodeManager is a harness brain on the fake opencode in mode, and
// its profile.
func opencodeManager(t testing.TB, mode, pidFile string) supervise.Brain {
	t.Helper()
	prov, err := clibridge.New(clibridge.Options{Harness: harness.OpenCode, Binary: os.Args[0], WorkRoot: filepath.Join(filepath.Dir(pidFile), "work-"+mode),
		Env: map[string]string{fakeModeEnv: mode, fakePIDFileEnv: pidFile}})
	if err != nil {
		t.Fatal(err)
	}
	brain, err := coordmcp.NewHarnessBrain(opencodeProfile(t), prov, coordmcp.HarnessOptions{Relay: []string{"/bin/false"}})
	if err != nil {
		t.Fatal(err)
	}
	return brain
}

func opencodeProfile(t testing.TB) *profile.Profile {
	return parseProfile(t, `{"name": "manager", "harness": "opencode", "tools": {"agent_runtime_coordination_spawn_worker": true}}`)
}

// superviseUntilKilled is the supervisor child of the kill test: its
// manager's turn reports two model calls and then hangs.
func superviseUntilKilled(dir string) error {
	t := childTB{}
	brain := opencodeManager(t, "hang", filepath.Join(dir, "fake.pid"))
	_, err := supervise.Supervise(context.Background(), opencodeProfile(t), "delegate nothing", runOptions(t, dir, brain))
	return err
}

// childTB is the testing.TB of the supervisor child, which has no test:
// a helper's failure ends the process.
type childTB struct{ testing.TB }

func (childTB) Helper() {}

func (childTB) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, args...)
	os.Exit(2)
}

// managerCharges are the journal's records charging the root manager's
// spend, by the driver turn they belong to: each record's tokens (-1:
// unknown) and kind.
func managerCharges(t *testing.T, dir string) (turns []string, ended map[string]bool, charges map[string][]int64) {
	t.Helper()
	rows, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	ended, charges = map[string]bool{}, map[string][]int64{}
	for _, r := range rows {
		switch r.Kind {
		case supervise.KindDriverTurn:
			turns = append(turns, r.Key)
		case supervise.KindDriverTurnEnded:
			ended[r.Key] = true
		case supervise.KindMetered:
			tokens := int64(-1)
			if r.Spent != nil && r.Spent.Tokens != nil {
				tokens = *r.Spent.Tokens
			}
			charges[r.Key] = append(charges[r.Key], tokens)
		}
	}
	return turns, ended, charges
}

// An external harness's manager turn counts no iteration, as every
// manager turn (supervise's driverSpend; the reference meters a harness
// driver at iterations 0), and each model call the harness reports
// while the turn runs (opencode's step_finish) is charged and journaled
// as it arrives, not once at the turn's end.
func TestHarnessManagerMetersEachReportedCall(t *testing.T) {
	dir := t.TempDir()
	brain := opencodeManager(t, "finish", filepath.Join(dir, "fake.pid"))
	res, err := supervise.Supervise(deadline(t), opencodeProfile(t), "delegate nothing", runOptions(t, dir, brain))
	if err != nil {
		t.Fatal(err)
	}
	d := res.Breakdown.DriverInference
	if d.Iterations != 0 || !d.IterationsKnown {
		t.Errorf("driver iterations %d (known %v) after one harness turn; want 0, known", d.Iterations, d.IterationsKnown)
	}
	if d.Tokens != 50 || !d.TokensKnown {
		t.Errorf("driver tokens %d (known %v); want 50, known", d.Tokens, d.TokensKnown)
	}
	turns, ended, charges := managerCharges(t, dir)
	if len(turns) != 1 || !ended[turns[0]] || !cmp.Equal(charges[turns[0]], []int64{50}) {
		t.Errorf("journal: turns %v ended %v, metered %v; want one ended turn metered [50] as its call reported it", turns, ended, charges)
	}
}

// A supervisor SIGKILLed while its harness manager's turn runs keeps
// what the harness had reported by then: each model call was journaled
// as it arrived. Resumed, the run charges those calls once, counts the
// dead turn's remaining spend unknown (the manager's gap on tokens and
// dollars, never 0; no iteration, as no manager turn counts one), and
// meters the new turn's calls on top.
func TestKilledHarnessManagerKeepsReportedSpend(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "fake.pid")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	// The child's manager turn reported its two calls and hangs: wait
	// until both are journaled.
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Stat(filepath.Join(dir, supervise.SpawnJournalFile)); err == nil {
			if turns, _, charges := managerCharges(t, dir); len(turns) == 1 && len(charges[turns[0]]) == len(hangCalls) {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child never journaled its manager's two calls; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()

	brain := opencodeManager(t, "finish", filepath.Join(dir, "fake-resumed.pid"))
	o := runOptions(t, dir, brain)
	o.Resume = true
	res, err := supervise.Supervise(deadline(t), opencodeProfile(t), "delegate nothing", o)
	if err != nil {
		t.Fatal(err)
	}
	turns, ended, charges := managerCharges(t, dir)
	if len(turns) != 2 || ended[turns[0]] || !ended[turns[1]] {
		t.Fatalf("journal: turns %v, ended %v; want the killed turn open and the resumed one ended", turns, ended)
	}
	if !cmp.Equal(charges[turns[0]], []int64{120, 180}) || !cmp.Equal(charges[turns[1]], []int64{50}) {
		t.Errorf("metered %v; want the killed turn's calls [120 180] once, the resumed turn's [50]", charges)
	}
	d := res.Breakdown.DriverInference
	want := supervise.SpentTotal{Tokens: 350, Iterations: 0, Resources: map[string]int64{}, TokensKnown: false, IterationsKnown: true, USDKnown: false}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("driver spend (-want +got):\n%s", diff)
	}
	if res.Spent.Tokens != 350 || res.Spent.TokensKnown || res.Spent.Iterations != 0 || !res.Spent.IterationsKnown {
		t.Errorf("spentTotal %+v; want 350 tokens (a lower bound: tokens unknown), 0 iterations (known)", res.Spent)
	}
	gap := supervise.SpendGap{ID: "run1", Label: "manager", Kind: supervise.GapUnreported, Channels: []string{ledger.ChannelTokens, ledger.ChannelUSD}}
	if !slicesContainsGap(res.SpendGaps, gap) {
		t.Errorf("gaps %+v; want the manager's %+v", res.SpendGaps, gap)
	}
}

func slicesContainsGap(gaps []supervise.SpendGap, g supervise.SpendGap) bool {
	for _, x := range gaps {
		if cmp.Equal(x, g) {
			return true
		}
	}
	return false
}
