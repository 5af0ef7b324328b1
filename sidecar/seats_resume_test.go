package sidecar_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/servetest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
)

// Environment of the seated-run helper process (see TestMain).
const (
	seatedChildEnv = "AGENTRT_SEATED_CHILD"
	seatedChildURL = "AGENTRT_SEATED_CHILD_URL"
	seatedChildDB  = "AGENTRT_SEATED_CHILD_DB"
	seatedRunID    = "writer-killed"
	// seatedStage0Refused is the line the helper prints once stage 0's
	// refusal and the session it left are durable.
	seatedStage0Refused = "stage-0-refused"
)

// TestMain runs the seated-run helper process when the environment asks
// for it, and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(seatedChildEnv) == "1" {
		os.Exit(seatedChild())
	}
	os.Exit(servetest.Run(m))
}

// midTurnSeats: the served subscription provider's first turn runs out
// of quota part way, leaving a draft in its session; the next turn of
// the same task finishes the note on the second model.
const midTurnSeats = `{"accounts":{"team-a":{},"team-b":{}},"turns":[
 {"match":"write a note","servedModel":"scripted/first","steps":[{"text":"a draft"}],"end":"quota","error":"the window is used up"},
 {"match":"write a note","servedModel":"scripted/second","steps":[{"text":"the note, finished"}]}]}`

const midTurnProfile = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"seat","id":"team-a"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"team-b"}}]}`

// serveMidTurn serves the mid-turn quota script as `agentrt serve` does
// and returns the served provider and its address.
func serveMidTurn(t *testing.T) (*scripted.Provider, string) {
	t.Helper()
	s, err := scripted.ParseScript([]byte(midTurnSeats))
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.New(s, scripted.Options{})
	srv, err := sidecar.New(p, sidecar.Options{Token: "served-token"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); ts.Close() })
	return p, ts.URL
}

func midTurnSeatsProfile() *profile.Profile {
	p, err := profile.Parse([]byte(midTurnProfile))
	if err != nil {
		panic(err)
	}
	return p
}

// credentialTrail is the stage and occasion of every credential request
// the served account owner received.
func credentialTrail(p *scripted.Provider) []string {
	var out []string
	for _, c := range p.CredentialRequests() {
		out = append(out, fmt.Sprintf("%d/%s", c.Stage, c.Occasion))
	}
	return out
}

// sessionRuns proves, on the served provider itself, how many runs the
// native session of ref holds: the boundary's revision counts them.
func sessionRuns(t *testing.T, ctx context.Context, p *scripted.Provider, ref contract.ExactRunControlRef) string {
	t.Helper()
	env, err := p.Get(ctx, ref.EnvironmentID)
	if err != nil || env == nil {
		t.Fatalf("the served provider no longer holds environment %s (%v)", ref.EnvironmentID, err)
	}
	sess, err := env.(contract.SessionOpener).Session(ctx, ref.SessionID, nil)
	if err != nil {
		t.Fatal(err)
	}
	proof, err := sess.(contract.NativeContinuer).ContextBoundary(ctx)
	if err != nil || proof == nil {
		t.Fatalf("no boundary proof for session %s (%v)", ref.SessionID, err)
	}
	return *proof.Boundary.Revision
}

// RG-08, RG-11 across the wire: a quota refusal that breaks a served
// turn off part way crosses it naming the run, so the next stage
// continues the same served session natively instead of creating a new
// environment.
func TestServedSeatedRunContinuesTheNativeSession(t *testing.T) {
	p, url := serveMidTurn(t)
	ctx := testCtx(t)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rp := client(t, ctx, url)
	accounts := kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return rp, nil })
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: midTurnSeatsProfile(), Task: "write a note", Store: st, RunID: "writer-served", Check: nonEmptyText}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stages) != 2 || res.Stages[0].KeptRun == nil || res.Stages[1].Continuity != kernel.ContinuityNative || res.Final.Text != "the note, finished" {
		t.Fatalf("stages %+v, final %+v", res.Stages, res.Final)
	}
	if got := p.Counters().NativeContinuations; got != 1 {
		t.Errorf("%d native continuations served; want 1", got)
	}
	if got, want := strings.Join(credentialTrail(p), " "), "0/create 0/turn 1/turn"; got != want {
		t.Errorf("credential requests served %q; want %q (no second create)", got, want)
	}
}

// A resume mechanism of spec runtime §5, killed for real: the process
// driving a seated run is SIGKILLed after stage 0's quota refusal left a
// session on a provider served in another process (`agentrt serve`'s
// server, here the test's own, reached through providers/remote). A
// second client resumes the run: it looks the environment up cold
// (RG-09), and stage 1 continues the same native session under its own
// account (RG-08, RG-10, RG-11) — the served session holds both runs,
// no second environment or session was created, and the resumed record
// keeps the original deadline and names every stage. On SQLite and
// PostgreSQL run stores.
func TestSeatedRunResumedAfterSIGKILLContinuesTheNativeSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		db   func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "runs.db") }},
		{"postgres", func(t *testing.T) string { return "postgres:" + pgtest.Schema(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) { resumeAfterKill(t, tc.db(t)) })
	}
}

func resumeAfterKill(t *testing.T, db string) {
	p, url := serveMidTurn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(exe)
	child.Env = append(os.Environ(), seatedChildEnv+"=1", seatedChildURL+"="+url, seatedChildDB+"="+db)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	ready := false
	for lines.Scan() {
		if lines.Text() == seatedStage0Refused {
			ready = true
			break
		}
	}
	if !ready {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatalf("the helper never reached stage 1 (%v)\n%s", lines.Err(), stderr.String())
	}
	if err := child.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = child.Wait()

	st := openStore(t, ctx, db)
	// The dead process's lease lapses (it was 1s): the run reads
	// interrupted, and only then may another process resume it.
	var prior store.Run
	for {
		if prior, err = st.GetRun(ctx, seatedRunID); err != nil {
			t.Fatal(err)
		}
		if prior.Status == store.StatusInterrupted {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the killed run still reads %s", prior.Status)
		case <-time.After(100 * time.Millisecond):
		}
	}
	before, err := kernel.DecodeSeatedRecord(prior.Doc)
	if err != nil || len(before.Stages) != 1 || before.Stages[0].KeptRun == nil || before.DeadlineUnixMs == nil {
		t.Fatalf("the killed run recorded %+v (%v); want stage 0's refusal with the session it left and the deadline", before, err)
	}
	kept := *before.Stages[0].KeptRun
	if got := sessionRuns(t, ctx, p, kept); got != kept.SessionID+"@1" {
		t.Fatalf("before the resume the served session is at %s", got)
	}

	rp := client(t, ctx, url) // a new client, as a new process has
	accounts := kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return rp, nil })
	// Another profile is not this run's: refused before anything is
	// recorded or sent.
	other := midTurnSeatsProfile()
	other.Seats[1].Model = "scripted/third"
	if _, err := kernel.ResumeSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: other, Task: "write a note", Store: st, RunID: seatedRunID}}); !errors.Is(err, kernel.ErrInvalidOptions) {
		t.Fatalf("resuming with another profile: %v; want ErrInvalidOptions", err)
	}
	res, err := kernel.ResumeSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: midTurnSeatsProfile(), Task: "write a note", Store: st, RunID: seatedRunID, Check: nonEmptyText}})
	if err != nil {
		t.Fatal(err)
	}
	if res.RunID != seatedRunID+".resume-1" || res.Final == nil || res.Final.Text != "the note, finished" {
		t.Fatalf("resumed %s: final %+v", res.RunID, res.Final)
	}
	if len(res.Stages) != 2 || res.Stages[0].Outcome != kernel.StageQuotaRefused || res.Stages[1].Outcome != kernel.StageCompleted ||
		res.Stages[1].Continuity != kernel.ContinuityNative {
		t.Fatalf("stages %+v; want stage 0 refused, then stage 1 continued natively", res.Stages)
	}
	// The served provider saw a continuation of the same session (one
	// native continuation, no new environment or session: the only
	// credential request after the kill was stage 1's, on its turn).
	if got := p.Counters().NativeContinuations; got != 1 {
		t.Errorf("%d native continuations served; want 1", got)
	}
	if got, want := strings.Join(credentialTrail(p), " "), "0/create 0/turn 1/turn"; got != want {
		t.Errorf("credential requests served %q; want %q (no new environment or session)", got, want)
	}
	// ENV-06: the resumed run tore the environment down when it ended,
	// as the original run would have: the original record proves the
	// runtime created it (keptCreated).
	envs, err := p.List(ctx, nil)
	if err != nil || len(envs) != 0 {
		t.Errorf("served environments %+v (%v); want none: the resumed run destroys %s", envs, err, kept.EnvironmentID)
	}
	resumed, err := kernel.ReadRun(ctx, st, res.RunID)
	if err != nil || resumed.Seated == nil || resumed.Status != store.StatusCompleted {
		t.Fatalf("resumed record %+v (%v)", resumed, err)
	}
	if r := resumed.Seated; r.ResumeOf != seatedRunID || r.DeadlineUnixMs == nil || *r.DeadlineUnixMs != *before.DeadlineUnixMs {
		t.Errorf("resumed record names %q, deadline %v; want %q and the original %d", r.ResumeOf, r.DeadlineUnixMs, seatedRunID, *before.DeadlineUnixMs)
	}
	// The killed run's record stays the truth: interrupted.
	if again, err := st.GetRun(ctx, seatedRunID); err != nil || again.Status != store.StatusInterrupted {
		t.Errorf("the killed run now reads %s (%v)", again.Status, err)
	}
}

// nonEmptyText delivers a run that produced text.
func nonEmptyText(_ context.Context, out kernel.Outcome) (kernel.Verdict, error) {
	return kernel.Verdict{Passed: out.Text != ""}, nil
}

// openStore opens the run store a helper's db names ("sqlite:PATH" or
// "postgres:CONN").
func openStore(t testing.TB, ctx context.Context, db string) store.Store {
	t.Helper()
	st, err := dialStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func dialStore(ctx context.Context, db string) (store.Store, error) {
	kind, target, _ := strings.Cut(db, ":")
	switch kind {
	case "sqlite":
		return sqlite.Open(ctx, target, sqlite.Options{})
	case "postgres":
		return postgres.Open(ctx, target, postgres.Options{})
	}
	return nil, fmt.Errorf("unknown store %q", db)
}

// stallingProvider is the helper's stage 1. The preflight asks it for
// its capabilities once before stage 0 runs (PRF-07: every stage's
// projection is checked first); the stage itself asks again once stage
// 0's refusal is recorded: then it prints seatedStage0Refused and waits
// to be killed.
type stallingProvider struct {
	contract.Provider
	calls *atomic.Int32
}

func (s stallingProvider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	if s.calls.Add(1) == 1 {
		return s.Provider.Capabilities(ctx)
	}
	fmt.Println(seatedStage0Refused)
	<-ctx.Done() // killed here
	return nil, ctx.Err()
}

// seatedChild is the helper process: it drives the seated run through
// the served provider with a 1s lease, prints seatedStage0Refused once
// stage 0's refusal is recorded (stage 1's provider is called, past
// the preflight's capability check, only after that), then waits to be
// killed. Its exit code is 1 if it
// ever gets further.
func seatedChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := dialStore(ctx, os.Getenv(seatedChildDB))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rp, err := remote.New(remote.Options{BaseURL: os.Getenv(seatedChildURL), Token: "served-token", RetryBackoff: 10 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := rp.Exposed(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Every stage is resolved and checked before stage 0 runs (PRF-07):
	// stage 1's provider marks the moment the run reaches it — its
	// second call, after the preflight's.
	stage1 := stallingProvider{Provider: p, calls: new(atomic.Int32)}
	accounts := kernel.AccountManagerFunc(func(ctx context.Context, k int, _ profile.Seat) (contract.Provider, error) {
		if k == 0 {
			return p, nil
		}
		return stage1, nil
	})
	_, err = kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: midTurnSeatsProfile(), Task: "write a note", Store: st, RunID: seatedRunID, LeaseTTL: kernel.MinLeaseTTL}})
	fmt.Fprintln(os.Stderr, "the helper was not killed:", err)
	return 1
}
