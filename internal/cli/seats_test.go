package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// seatedProfile runs a writer on two subscriptions: stage 0 on account
// acct-alpha, stage 1 on acct-bravo.
const seatedProfile = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"seat","id":"acct-alpha"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"acct-bravo"}}]}`

// agentrtBinary runs the built agentrt command with args; it returns its
// stdout, stderr and exit code.
func agentrtBinary(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildAgentrt(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return out.String(), errb.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("agentrt %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), 0
}

// PRF-03, PRF-11, RG-07, RG-08 through the real binary: agentrt run
// --seats resolves each stage from the accounts file (stage 0 by its
// seat's account, stage 1 by its index), the first stage's subscription
// refuses for quota with a retry-after, and the run moves on to the next
// authored stage, which completes fresh; both the human summary and
// --json say which stages were tried and why each moved on.
func TestRunSeatsMovesOnAfterQuotaRefusal(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("alpha.json", `{"turns":[{"repeat":true,"steps":[{"text":"never"}]}],"accounts":{"acct-alpha":{"exhausted":true,"retryAfterMs":90000}}}`)
	write("bravo.json", `{"turns":[{"repeat":true,"steps":[{"text":"a release note"}]}],"accounts":{"acct-bravo":{}}}`)
	seats := write("seats.json", `{"accounts":{"acct-alpha":{"provider":"scripted","script":"alpha.json"}},
		"stages":{"1":{"provider":"scripted","script":"bravo.json"}}}`)
	prof := write("writer.json", seatedProfile)
	db := filepath.Join(dir, "runs.db")

	out, errOut, code := agentrtBinary(t, nil, "run", prof, "--seats", seats, "--task", "write a note", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	v := decode(t, out)
	stages := member(v, "stages").Items()
	if len(stages) != 2 {
		t.Fatalf("stages %s", canonjson.Marshal(member(v, "stages")))
	}
	if got := member(stages[0], "outcome").Str(); got != kernel.StageQuotaRefused {
		t.Errorf("stage 0 %s, want %s", got, kernel.StageQuotaRefused)
	}
	if got := member(stages[0], "retryAfterMs").Float(); got != 90000 {
		t.Errorf("stage 0 retryAfterMs %v, want 90000", got)
	}
	if got, cont := member(stages[1], "outcome").Str(), member(stages[1], "continuity").Str(); got != kernel.StageCompleted || cont != kernel.ContinuityFresh {
		t.Errorf("stage 1 %s, continuity %s", got, cont)
	}
	if !member(v, "delivered").Bool() || member(member(v, "final"), "text").Str() != "a release note" {
		t.Errorf("result %s", out)
	}
	// RG-11: the run is one logical node, derived from its id, and every
	// stage ran as it.
	node := member(v, "node").Str()
	if node != kernel.SeatedNode(member(v, "runId").Str()) {
		t.Errorf("node %q; want the one derived from run id %s", node, member(v, "runId").Str())
	}
	for i, st := range stages {
		if got := member(st, "node").Str(); got != node {
			t.Errorf("stage %d ran as node %q; want %q", i, got, node)
		}
	}
	if !regexp.MustCompile(`stage 0 resolved: scripted/first on scripted .*from /accounts/acct-alpha`).MatchString(errOut) ||
		!strings.Contains(errOut, "from /stages/1") {
		t.Errorf("progress on stderr does not name each stage and where it was resolved:\n%s", errOut)
	}

	out, errOut, code = agentrtBinary(t, nil, "run", prof, "--seats", seats, "--task", "write a note", "--db", db, "--quiet")
	if code != 0 || errOut != "" {
		t.Fatalf("human: exit %d\n%s\nstderr with --quiet: %q", code, out, errOut)
	}
	for _, want := range []string{"completed, delivered", "stage 0   scripted/first on scripted: quota-refused (retry after 1m30s)", "stage 1   scripted/second on scripted: completed; continuity fresh", "result    a release note"} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary does not say %q:\n%s", want, out)
		}
	}
}

// PRF-07: a stage the file cannot resolve, a key variable that is not
// set, or a flag that picks one provider is refused before anything runs
// or is recorded, saying what to do; a secret in the file is refused and
// never echoed.
func TestRunSeatsRefusesBeforeAnyRun(t *testing.T) {
	dir := t.TempDir()
	prof := writeFile(t, "writer.json", seatedProfile)
	db := filepath.Join(dir, "runs.db")
	for _, tc := range []struct {
		name, seats string
		extra       []string
		has         string
	}{
		{"unresolved stage", `{"accounts":{"acct-alpha":{"provider":"scripted"}}}`, nil, `add the stage under "stages": "1" or its account under "accounts": "acct-bravo"`},
		{"unset key", `{"stages":{"0":{"provider":"openai","apiKeyEnv":"AGENTRT_TEST_UNSET_KEY"},"1":{"provider":"scripted"}}}`, nil, "AGENTRT_TEST_UNSET_KEY holding the stage's key is not set"},
		{"secret inline", `{"stages":{"0":{"provider":"openai","apiKey":"sk-do-not-echo"}}}`, nil, "/stages/0/apiKey"},
		{"one provider flag", `{"stages":{"0":{"provider":"scripted"},"1":{"provider":"scripted"}}}`, []string{"--provider", "openai"}, "--provider does not apply to --seats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seats := writeFile(t, "seats.json", tc.seats)
			stdout, stderr, code := run(t, "", append([]string{"run", prof, "--seats", seats, "--task", "t", "--db", db}, tc.extra...)...)
			if code != 2 || !strings.Contains(stderr, tc.has) {
				t.Fatalf("exit %d, want 2 saying %q:\n%s%s", code, tc.has, stdout, stderr)
			}
			if strings.Contains(stdout+stderr, "sk-do-not-echo") {
				t.Fatalf("the secret was echoed:\n%s%s", stdout, stderr)
			}
		})
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused seated run opened the store (%v)", err)
	}
}

// RG-08, RG-09, RG-11, RG-12, ENV-06 across a SIGKILL: agentrt run
// --seats drives two stages on subscriptions served by a real agentrt
// serve process (reached with a token from a token file). Stage 0's
// account runs out mid-turn, leaving its session; stage 1 continues it
// natively, and the run process is killed with SIGKILL mid-turn of
// stage 1. agentrt runs resume refuses while the dead process's lease
// holds and refuses another profile, then goes on as RUN.resume-1 under
// the original deadline: stage 1 sends the recorded continuation again,
// the sidecar answers it replayed with the turn it admitted — in the
// same environment, no second environment, no second turn — and the
// resumed run destroys the environment when it ends, as the original run
// would have, since the original record proves the runtime created it.
// The token never reaches the output or the run store.
func TestRunSeatsResumesAfterSIGKILLMidTurn(t *testing.T) {
	dir := t.TempDir()
	script := writeFile(t, "served.json", `{"turns":[
	  {"steps":[{"text":"first part "}],"end":"quota","error":"the 5-hour window ran out"},
	  {"servedModel":"scripted/second","steps":[{"text":"continued "},{"delayMs":4000},{"text":"and finished"}]},
	  {"repeat":true,"steps":[{"text":"a second turn"}]}],
	 "accounts":{"acct-alpha":{},"acct-bravo":{}}}`)
	url := startServe(t, "--provider", "scripted", "--script", script)
	tokenFile := filepath.Join(dir, "serve.token")
	if err := os.WriteFile(tokenFile, []byte(serveToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	seats := filepath.Join(dir, "seats.json")
	if err := os.WriteFile(seats, []byte(`{"accounts":{
	  "acct-alpha":{"provider":"remote","baseUrl":"`+url+`","tokenFile":"serve.token"},
	  "acct-bravo":{"provider":"remote","baseUrl":"`+url+`","tokenFile":"serve.token"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "writer.json")
	if err := os.WriteFile(prof, []byte(seatedProfile), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "runs.db")
	// No AGENTRT_SERVE_TOKEN: the token comes from the file only.
	env := []string{"AGENTRT_SERVE_TOKEN="}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	runner := exec.CommandContext(ctx, buildAgentrt(t), "run", prof, "--seats", seats, "--task", "write the note", "--db", db,
		"--lease", "2s", "--timeout", "10m", "--json")
	runner.Env = append(os.Environ(), env...)
	stderr, err := runner.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runner.Process.Kill(); _ = runner.Wait() })
	var id string
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if m := regexp.MustCompile(`^seated run (\S+):`).FindStringSubmatch(lines.Text()); m != nil {
			id = m[1]
			break
		}
	}
	if id == "" {
		t.Fatalf("the run printed no id on stderr (%v)", lines.Err())
	}
	go func() {
		for lines.Scan() {
		}
	}()

	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Mid-turn of stage 1: its continuation is recorded (StageRunning)
	// before it is sent, and the served turn takes 4s.
	var running kernel.StageAttempt
	for deadline := time.Now().Add(2 * time.Minute); running.Outcome != kernel.StageRunning; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("stage 1 never started continuing the session")
		}
		rec, err := kernel.ReadRun(ctx, st, id)
		if err != nil || rec.Seated == nil || len(rec.Seated.Stages) < 2 {
			continue
		}
		running = rec.Seated.Stages[1]
	}
	time.Sleep(500 * time.Millisecond)
	if err := runner.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = runner.Wait()
	orig, err := kernel.ReadRun(ctx, st, id)
	if err != nil {
		t.Fatal(err)
	}
	if orig.Seated.DeadlineUnixMs == nil || running.Continuation == nil || !running.KeptCreated {
		t.Fatalf("the interrupted record: deadline %v, stage 1 %+v", orig.Seated.DeadlineUnixMs, running)
	}
	stage0, err := kernel.ReadRun(ctx, st, id+".stage-0")
	if err != nil {
		t.Fatal(err)
	}
	envID := string(stage0.Exact.EnvironmentID)

	// While the dead process's lease holds, the run is not resumable.
	out, errOut, code := agentrtBinary(t, env, "runs", "resume", id, "--profile", prof, "--seats", seats, "--db", db)
	if code != 1 || !strings.Contains(errOut, "lease") {
		t.Fatalf("resume under a live lease: exit %d\n%s%s", code, out, errOut)
	}
	awaitStatus(t, st, id, store.StatusInterrupted, "after the lease lapsed")
	other := writeFile(t, "other.json", strings.Replace(seatedProfile, `"name":"writer"`, `"name":"editor"`, 1))
	out, errOut, code = agentrtBinary(t, env, "runs", "resume", id, "--profile", other, "--seats", seats, "--db", db)
	if code != 1 || !strings.Contains(errOut, "resume it with the same profile") {
		t.Fatalf("resume with another profile: exit %d\n%s%s", code, out, errOut)
	}

	out, errOut, code = agentrtBinary(t, env, "runs", "resume", id, "--profile", prof, "--seats", seats, "--db", db, "--json")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, serveToken) {
		t.Error("the token reached the output")
	}
	v := decode(t, out)
	if got := member(v, "runId").Str(); got != id+".resume-1" {
		t.Errorf("resumed as %s, want %s.resume-1", got, id)
	}
	if got := member(v, "deadlineUnixMs").Float(); int64(got) != *orig.Seated.DeadlineUnixMs {
		t.Errorf("deadline %v, want the original %d", got, *orig.Seated.DeadlineUnixMs)
	}
	var outcomes []string
	for _, s := range member(v, "stages").Items() {
		outcomes = append(outcomes, member(s, "outcome").Str()+"/"+member(s, "continuity").Str())
	}
	if want := "quota-refused/fresh/interrupted/native/completed/native"; strings.Join(outcomes, "/") != want {
		t.Errorf("stages %v, want %s", outcomes, want)
	}
	if text := member(member(v, "final"), "text").Str(); !strings.Contains(text, "and finished") || strings.Contains(text, "a second turn") {
		t.Errorf("the resumed stage's text %q: not the admitted turn's", text)
	}
	resumed, err := kernel.ReadRun(ctx, st, id+".resume-1.stage-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resumed.Exact.EnvironmentID); got != envID {
		t.Errorf("the resumed stage ran in environment %s, not the session's %s", got, envID)
	}
	// ENV-06: the resumed run tore the environment down at its end.
	rp, err := remote.New(remote.Options{BaseURL: url, Token: serveToken})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := rp.Get(ctx, envID); err != nil || e != nil {
		t.Errorf("environment %s is still served after the resumed run ended (%v)", envID, err)
	}
	runs, err := st.ListRuns(ctx, store.ListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if strings.Contains(string(canonjson.Marshal(r.Doc)), serveToken) {
			t.Errorf("run %s's record carries the token", r.ID)
		}
	}
}
