package cli_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/store/sqlite"
)

// seatsScript: a subscription provider whose account owner holds an
// exhausted account and one with quota left.
const seatsScript = `{"turns":[{"repeat":true,"steps":[{"text":"a note"}]}],
 "accounts":{"acct-alpha-7f3":{"exhausted":true,"retryAfterMs":90000},"acct-bravo-19c":{}}}`

const seatsProfile = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"seat","id":"acct-alpha-7f3"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"acct-bravo-19c"}}]}`

// PRF-11, RG-07, RG-08, RG-10 across processes: a seated run in this
// process drives a subscription provider served by a real `agentrt
// serve` process. The served account owner refuses the first stage's
// account for quota — which it can only do if the stage's credential
// request crossed the process boundary — and the refusal comes back
// typed, with its retry-after, so the run continues on the next authored
// stage, whose create and turn carry its request (a request missing on
// either is refused by the served provider, and the run would fail).
func TestServeSeatedRunAcrossProcesses(t *testing.T) {
	url := startServe(t, "--provider", "scripted", "--script", writeFile(t, "seats.json", seatsScript))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rp, err := remote.New(remote.Options{BaseURL: url, Token: serveToken})
	if err != nil {
		t.Fatal(err)
	}
	prof, err := profile.Parse([]byte(seatsProfile))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	accounts := kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return rp, nil })
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: prof, Task: "write a note", Store: st, RunID: "seated-across"}})
	if err != nil {
		t.Fatal(err)
	}
	retry := int64(90_000)
	want := []kernel.StageAttempt{
		{Stage: 0, Node: kernel.SeatedNode("seated-across"), Harness: "cli-base", Provider: "scripted", Model: "scripted/first", RunID: "seated-across.stage-0", Outcome: kernel.StageQuotaRefused, RetryAfterMs: &retry},
		{Stage: 1, Node: kernel.SeatedNode("seated-across"), Harness: "cli-base", Provider: "scripted", Model: "scripted/second", RunID: "seated-across.stage-1", Outcome: kernel.StageCompleted, Continuity: kernel.ContinuityFresh,
			NativeSessionID: "scripted-env-1-session-1"}, // NSO-02: a served stage binds its native session too
	}
	ignoreReason := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Reason" }, cmp.Ignore())
	if diff := cmp.Diff(want, res.Stages, ignoreReason); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
	if res.Final == nil || res.Final.Text != "a note" {
		t.Errorf("final %+v", res.Final)
	}
}
