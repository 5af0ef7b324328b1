package supervise_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 authorizeSpawn; a hook is bounded and its panic is its answer,
// not the run's (every wait bounded, never panic): a panicking or hanging
// AuthorizeSpawn refuses the spawn preflight-refused not-authorized, the
// pool untouched, and the scope still admits the next spawn. Before, a
// panic crossed Scope.Spawn into the brain (the run ended driver-failed
// "the brain panicked") and a hook that never answered held the scope's
// lock for ever, so the run never returned even after its context ended.
func TestAuthorizeSpawnPanicOrHangRefusesPreflight(t *testing.T) {
	worker := ledger.Budget{Tokens: i64(10), Iterations: i64(1)}
	root := ledger.Budget{Tokens: i64(100), Iterations: i64(10)}
	req := supervise.SpawnRequest{Profile: "w", Task: "t"}
	for _, tc := range []struct {
		name   string
		hook   func(calls *atomic.Int32) func(supervise.SpawnRequest) error
		detail string
	}{
		{name: "panics", detail: "the authorization hook panicked: boom", hook: func(calls *atomic.Int32) func(supervise.SpawnRequest) error {
			return func(supervise.SpawnRequest) error {
				if calls.Add(1) == 1 {
					panic("boom")
				}
				return nil
			}
		}},
		{name: "hangs", detail: "the authorization hook did not answer within 200ms", hook: func(calls *atomic.Int32) func(supervise.SpawnRequest) error {
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			return func(supervise.SpawnRequest) error {
				if calls.Add(1) == 1 {
					<-release
				}
				return nil
			}
		}},
		{name: "refuses", detail: "policy says no", hook: func(calls *atomic.Int32) func(supervise.SpawnRequest) error {
			return func(supervise.SpawnRequest) error {
				if calls.Add(1) == 1 {
					return errors.New("policy says no")
				}
				return nil
			}
		}},
		// An error whose text is empty is still a refusal: before, the
		// empty detail read as "admitted" and the spawn ran.
		{name: "refuses with an empty error", detail: "the authorization hook refused without a reason", hook: func(calls *atomic.Int32) func(supervise.SpawnRequest) error {
			return func(supervise.SpawnRequest) error {
				if calls.Add(1) == 1 {
					return errors.New("")
				}
				return nil
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The hung call's goroutine outlives its bound and runs beside
			// the next call: the count is shared between them.
			var calls atomic.Int32
			f := newFixture(t, root, supervise.ScopeOptions{PerWorker: worker, AuthorizeSpawn: tc.hook(&calls)})
			supervise.SetAuthorizeSpawnTimeout(f.scope, 200*time.Millisecond)
			before := f.pool.Readout()
			start := time.Now()
			_, err := f.scope.Spawn(req)
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("Spawn took %s; the hook's bound is 200ms", took)
			}
			var r *supervise.Refusal
			if !errors.As(err, &r) || r.Code != supervise.CodePreflightRefused || r.Cause != "not-authorized" || r.Detail != tc.detail {
				t.Fatalf("Spawn = %v; want preflight-refused not-authorized %q", err, tc.detail)
			}
			if d := cmp.Diff(before, f.pool.Readout()); d != "" {
				t.Errorf("pool changed by a refused spawn (-before +after):\n%s", d)
			}
			if rep := f.spawn(t, req); rep.Node != "root:s1" {
				t.Errorf("next spawn = %s, want root:s1", rep.Node)
			}
		})
	}
}
