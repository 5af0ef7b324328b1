package sidecar_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/internal/storetest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store"
)

// forEachStore runs fn on SQLite and on PostgreSQL (storetest.Each).
func forEachStore(t *testing.T, fn func(t *testing.T, open func(t *testing.T) store.Store)) {
	storetest.Each(t, fn)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// admitted is an admission hook that only accepts.
func admitted(context.Context, retained.Admission) error { return nil }

// twoTexts plays "first" then "second" on every turn.
func twoTexts() *scripted.Script {
	first, second := "first", "second"
	return &scripted.Script{Turns: []scripted.Turn{{Repeat: true, Steps: []scripted.Step{{Text: &first}, {Text: &second}}}}}
}

// The served provider's subscription accounts: alpha has no quota left,
// bravo has. Their names must never reach a log, an event or a record.
const (
	acctAlpha = "acct-alpha-7f3"
	acctBravo = "acct-bravo-19c"
)

// servedSeats is one logical writer continuing from the exhausted
// account to the other, both on the served provider.
const servedSeats = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"seat","id":"` + acctAlpha + `"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"` + acctBravo + `"}}]}`

// syncBuffer is a log sink many goroutines write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serveAccounts serves a scripted provider whose account owner holds
// the two accounts, as `agentrt serve` does, and returns it, its
// address and the server's log.
func serveAccounts(t *testing.T) (*scripted.Provider, string, *syncBuffer) {
	t.Helper()
	retry := int64(90_000)
	s := twoTexts()
	s.Accounts = map[string]scripted.Account{acctAlpha: {Exhausted: true, RetryAfterMs: &retry}, acctBravo: {}}
	p := scripted.New(s, scripted.Options{})
	logs := &syncBuffer{}
	srv, err := sidecar.New(p, sidecar.Options{Token: "served-token", Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); ts.Close() })
	return p, ts.URL, logs
}

// client is a new client of the served provider, exposing what it serves.
func client(t *testing.T, ctx context.Context, url string) contract.Provider {
	t.Helper()
	rp, err := remote.New(remote.Options{BaseURL: url, Token: "served-token", RetryBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p, err := rp.Exposed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// assertNoCredential fails when any of texts holds an account name or
// the credential request's wire form.
func assertNoCredential(t *testing.T, where string, texts ...string) {
	t.Helper()
	for _, text := range texts {
		for _, secret := range []string{acctAlpha, acctBravo, wire.HeaderCredentialRequest, `"occasion"`} {
			if strings.Contains(text, secret) {
				t.Errorf("%s contains %q:\n%s", where, secret, text)
			}
		}
	}
}

// runTexts is every stored document and event of the runs, as JSON.
func runTexts(t *testing.T, ctx context.Context, st store.Store, ids ...string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		r, err := st.GetRun(ctx, id)
		if err != nil {
			t.Fatalf("run %s: %v", id, err)
		}
		out = append(out, string(canonjson.Marshal(r.Doc)))
		evs, err := st.Events(ctx, id, "", 10_000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			out = append(out, e.Type+" "+string(canonjson.Marshal(e.Body)))
		}
	}
	return out
}

// RG-07, RG-08, RG-10, PRF-11 over the wire: a seated run whose provider
// is served (a sidecar, as `agentrt serve`) carries each stage's
// credential request to the served provider's account owner — on the
// first stage's create, which the owner refuses for quota (the typed
// refusal crosses the wire with its retry-after), and on the next
// stage's create and turn, which it serves. The runtime only names the
// stage and its selector; the owner binds the account. The request never
// reaches a log (server or runtime), an event or a stored record.
func TestServedSeatCredentialRequestsRG07RG08RG10(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		served, url, serverLog := serveAccounts(t)
		c := client(t, ctx, url)
		var asked []int
		accounts := kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
			asked = append(asked, k)
			return c, nil
		})
		prof, err := profile.Parse([]byte(servedSeats))
		if err != nil {
			t.Fatal(err)
		}
		st := open(t)
		runtimeLog := &syncBuffer{}
		res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
			Profile: prof, Task: "write a note", Store: st, RunID: "served-writer",
			Logger: slog.New(slog.NewJSONHandler(runtimeLog, &slog.HandlerOptions{Level: slog.LevelDebug}))}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Final == nil || res.Final.Text != "firstsecond" {
			t.Fatalf("final %+v", res.Final)
		}
		retry := int64(90_000)
		wantStages := []kernel.StageAttempt{
			{Stage: 0, Node: kernel.SeatedNode("served-writer"), Harness: "cli-base", Provider: "scripted", Model: "scripted/first", RunID: "served-writer.stage-0",
				Outcome: kernel.StageQuotaRefused, RetryAfterMs: &retry},
			{Stage: 1, Node: kernel.SeatedNode("served-writer"), Harness: "cli-base", Provider: "scripted", Model: "scripted/second", RunID: "served-writer.stage-1",
				// NSO-02: the served stage binds the native session its
				// turn observed, as an in-process one does.
				Outcome: kernel.StageCompleted, Continuity: kernel.ContinuityFresh, NativeSessionID: "scripted-env-1-session-1"},
		}
		if diff := cmp.Diff(wantStages, res.Stages, cmpIgnoreReason); diff != "" {
			t.Errorf("stages (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int{0, 1}, asked); diff != "" {
			t.Errorf("stages asked of the account manager (-want +got):\n%s", diff)
		}
		seat := func(k int, model, acct, occasion string) contract.CredentialRequest {
			return contract.CredentialRequest{Stage: k, Harness: "cli-base", Provider: "scripted", Model: model,
				Selector: profile.SeatSelector{Kind: profile.SelectorSeat, ID: &acct}, Occasion: occasion}
		}
		want := []contract.CredentialRequest{
			seat(0, "scripted/first", acctAlpha, contract.CredentialOnCreate),
			seat(1, "scripted/second", acctBravo, contract.CredentialOnCreate),
			seat(1, "scripted/second", acctBravo, contract.CredentialOnTurn),
		}
		if diff := cmp.Diff(want, served.CredentialRequests()); diff != "" {
			t.Errorf("credential requests the served provider received (-want +got):\n%s", diff)
		}
		if served.Turns() != 1 {
			t.Errorf("%d turns ran; the refused stage must dispatch nothing", served.Turns())
		}
		assertNoCredential(t, "the server's log", serverLog.String())
		assertNoCredential(t, "the runtime's log", runtimeLog.String())
		assertNoCredential(t, "the stored runs", runTexts(t, ctx, open(t), "served-writer", "served-writer.stage-0", "served-writer.stage-1")...)
		if !strings.Contains(serverLog.String(), `"status":429`) {
			t.Errorf("the server's log shows no quota refusal:\n%s", serverLog.String())
		}
	})
}

// cmpIgnoreReason: a stage's reason is prose.
var cmpIgnoreReason = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Reason" }, cmp.Ignore())

// RG-07, RG-09 over the wire: a retained run on a served provider
// carries the credential request on its create and on its dispatch, and
// a new turn started by another process (a new client and store
// connection) after a cold lookup of the retained environment carries it
// again. Nothing of it reaches the server's log or the stored runs.
func TestServedCredentialRequestColdLookupRG09(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		served, url, serverLog := serveAccounts(t)
		bravo := acctBravo
		req := func(occasion string) *contract.CredentialRequest {
			return &contract.CredentialRequest{Stage: 1, Harness: "cli-base", Provider: "scripted", Model: "scripted/second",
				Selector: profile.SeatSelector{Kind: profile.SelectorSeat, ID: &bravo}, Occasion: occasion}
		}
		key := "key-served-seat"
		o := retained.StartOptions{Provider: client(t, ctx, url), Store: open(t),
			Environment: &contract.CreateInput{IdempotencyKey: &key, Profile: profile.Ref{CatalogID: "retained-worker"}, Credential: req(contract.CredentialOnCreate)},
			Turn:        contract.TurnInput{TurnID: ptr("turn-1"), Prompt: ptr("do the long job"), Credential: req(contract.CredentialOnTurn)},
			OnAdmission: admitted}
		first, err := retained.StartRetainedRun(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := first.Result(ctx); err != nil || !res.Success {
			t.Fatalf("first result %+v, %v", res, err)
		}
		next, err := retained.StartRetainedRunInEnvironment(ctx, retained.InEnvironmentOptions{
			Provider: client(t, ctx, url), Store: open(t),
			EnvironmentID: first.ControlRef().Run.EnvironmentID, IdempotencyKey: "key-served-seat",
			Turn:        contract.TurnInput{TurnID: ptr("turn-2"), Prompt: ptr("the next job"), Credential: req(contract.CredentialOnTurn)},
			OnAdmission: admitted})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := next.Result(ctx); err != nil || !res.Success {
			t.Fatalf("second result %+v, %v", res, err)
		}
		want := []contract.CredentialRequest{*req(contract.CredentialOnCreate), *req(contract.CredentialOnTurn), *req(contract.CredentialOnTurn)}
		if diff := cmp.Diff(want, served.CredentialRequests()); diff != "" {
			t.Errorf("credential requests the served provider received (-want +got):\n%s", diff)
		}
		assertNoCredential(t, "the server's log", serverLog.String())
		assertNoCredential(t, "the stored runs", runTexts(t, ctx, open(t), first.ControlRef().Record, next.ControlRef().Record)...)
	})
}
