package kernel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
)

// RG-11 with a store that stops answering: ResumeSeated, whose caller set
// no deadline, reads the interrupted run within the lease it would
// grant and returns a *kernel.StoreError (Op "read") for the run; nothing
// is asked of any provider.
func TestResumeSeatedWhenTheStoreStopsAnswering(t *testing.T) {
	const lease = 2 * time.Second
	const bound = lease + 30*time.Second // slack for a loaded machine
	st, fail, restore := storefault.Stores(storefault.BlackHole)[0].Open(t)
	fail()
	defer restore()
	asked := 0
	accounts := kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) {
		asked++
		return scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"never"}]}]}`), scripted.Options{}), nil
	})
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := kernel.ResumeSeated(context.Background(), kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
			Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, RunID: "died", LeaseTTL: lease}})
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(bound + time.Minute):
		t.Fatalf("ResumeSeated did not return %v after its store stopped answering", bound+time.Minute)
	}
	if took := time.Since(start); took > bound {
		t.Errorf("ResumeSeated returned after %v; want within %v", took, bound)
	}
	se, ok := errors.AsType[*kernel.StoreError](err)
	if !ok || se.Op != "read" || se.RunID != "died" {
		t.Fatalf("err %T %v; want a *kernel.StoreError reading run died", err, err)
	}
	if asked != 0 {
		t.Errorf("%d providers were resolved for a run that could not be read", asked)
	}
}
