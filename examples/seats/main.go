package main

import (
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

func main() {
	ctx := context.Background()
	path, err := sqlite.DefaultPath()
	if err != nil {
		fail(err)
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		fail(err)
	}
	defer st.Close()
	if err := run(ctx, os.Stdout, st, kernel.NewID("writer")); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "seats:", err)
	os.Exit(1)
}

// writer continues from a first subscription to a second one.
const writer = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"all-eligible"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"team-b"}}]}`

// subscription is a provider whose account owner binds each turn's
// credential from the request it carries; out of quota, it refuses.
type subscription struct {
	contract.Provider
	w         io.Writer
	exhausted bool
}

func (s *subscription) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if r := in.Credential; r != nil {
		fmt.Fprintf(s.w, "  %s: credential request for stage %d (%s), selector %s\n", r.Model, r.Stage, r.Occasion, selector(r.Selector))
	}
	if s.exhausted {
		wait := 2 * time.Hour
		return nil, &contract.QuotaRefusalError{Provider: s.Name(), Stage: -1, RetryAfter: &wait, Message: "the 5-hour window is used up"}
	}
	env, err := s.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &seatEnv{Environment: env, w: s.w}, nil
}

// seatEnv shows the credential request each turn carries: the account
// owner binds the turn's credential from it, as it did the create's.
type seatEnv struct {
	contract.Environment
	w io.Writer
}

func (e *seatEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	if r := in.Credential; r != nil {
		fmt.Fprintf(e.w, "  %s: credential request for stage %d (%s), selector %s\n", r.Model, r.Stage, r.Occasion, selector(r.Selector))
	}
	return e.Environment.Stream(ctx, in)
}

func selector(sel profile.SeatSelector) string {
	if sel.ID != nil {
		return sel.Kind + " " + *sel.ID
	}
	return sel.Kind
}

func newSubscription(w io.Writer, served string, exhausted bool) (*subscription, error) {
	sc, err := scripted.ParseScript([]byte(`{"servedModel":"` + served + `","turns":[{"steps":[{"text":"Restores are one click now."},{"usage":{"inputTokens":20,"outputTokens":6},"mode":"delta"}]}]}`))
	if err != nil {
		return nil, err
	}
	return &subscription{Provider: scripted.New(sc, scripted.Options{}), w: w, exhausted: exhausted}, nil
}

func run(ctx context.Context, w io.Writer, st store.Store, runID string) error {
	p, err := profile.Parse([]byte(writer))
	if err != nil {
		return err
	}
	first, err := newSubscription(w, "scripted/first", true)
	if err != nil {
		return err
	}
	second, err := newSubscription(w, "scripted/second", false)
	if err != nil {
		return err
	}
	// The account manager maps each stage to the provider that holds
	// its accounts; it never sees a credential.
	accounts := kernel.AccountManagerFunc(func(_ context.Context, stage int, _ profile.Seat) (contract.Provider, error) {
		return []contract.Provider{first, second}[stage], nil
	})
	fmt.Fprintln(w, "running the seat chain:")
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: p, Task: "Write a one-line release note for one-click restore.", Store: st, RunID: runID,
		Check: func(_ context.Context, out kernel.Outcome) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: out.Text != "", Reason: "a note was written"}, nil
		},
	}})
	if err != nil {
		return err
	}
	rec, err := kernel.ReadRun(ctx, st, res.RunID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run %s %s:\n", rec.ID, rec.Status)
	for _, s := range rec.Seated.Stages {
		fmt.Fprintf(w, "  stage %d %s on %s: %s", s.Stage, s.Model, s.Provider, s.Outcome)
		if s.Reason != "" {
			fmt.Fprintf(w, " (%s)", s.Reason)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "served %s: %s\n", res.Final.Served.Model, res.Final.Text)
	return nil
}
