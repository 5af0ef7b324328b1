package kernel_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// teardownProvider creates scripted environments whose Destroy returns
// fail, or (hang) waits for its context to end.
type teardownProvider struct {
	contract.Provider
	fail error
	hang bool
}

func (p *teardownProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &teardownEnv{Environment: env, p: p}, nil
}

type teardownEnv struct {
	contract.Environment
	p *teardownProvider
}

func (e *teardownEnv) Destroy(ctx context.Context) error {
	if e.p.hang {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	if e.p.fail != nil {
		return e.p.fail
	}
	return e.Environment.Destroy(ctx)
}

// ENV-06 / behaviour 12 (an environment the runtime created is destroyed
// when the run ends): a destroy that fails, or does not answer within
// the cleanup timeout, is not only logged: Result.TeardownUnconfirmed
// and the run's record say which environment may still exist and why,
// while the run's outcome (completed, delivered) is what it was. A
// destroy that succeeds leaves both empty.
func TestTeardownUnconfirmedIsReported(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    teardownProvider
		want string // in TeardownUnconfirmed; "" for none
	}{
		{name: "destroyed"},
		{name: "destroy fails", p: teardownProvider{fail: errors.New("the sandbox API answered 503")}, want: "the sandbox API answered 503"},
		{name: "destroy hangs", p: teardownProvider{hang: true}, want: "deadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			p := tc.p
			p.Provider = scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"A note."}]}]}`), scripted.Options{})
			start := time.Now()
			res, err := kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", Provider: &p,
				Store: st, Check: nonEmpty, CleanupTimeout: 300 * time.Millisecond})
			if err != nil || res.Status != store.StatusCompleted || !res.Delivered {
				t.Fatalf("run: %v, status %s, delivered %v; want completed and delivered whatever its teardown", err, res.Status, res.Delivered)
			}
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("the run took %v to end", took)
			}
			rec, err := kernel.ReadRun(ctx, st, res.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Exact == nil {
				t.Fatalf("no exact record: %v", rec.DocErr)
			}
			for where, got := range map[string]string{"Result": res.TeardownUnconfirmed, "record": rec.Exact.TeardownUnconfirmed} {
				switch {
				case tc.want == "" && got != "":
					t.Errorf("%s.TeardownUnconfirmed = %q after a destroy that succeeded", where, got)
				case tc.want != "" && (!strings.Contains(got, tc.want) || !strings.Contains(got, res.EnvironmentID)):
					t.Errorf("%s.TeardownUnconfirmed = %q; want it to name environment %s and %q", where, got, res.EnvironmentID, tc.want)
				}
			}
		})
	}
}
