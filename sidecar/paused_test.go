package sidecar_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/sidecar"
)

// A caller that lost its run's lease (a worker paused past it, whose
// run another process took over and re-attached to) stops reading a
// remote turn without cancelling it: the turn is the new holder's now.
// Any other end of the caller's context still cancels the turn on the
// server (the control). Spec/runtime.md §5; RES-01/RES-06: the turn keeps
// its identity and its work for whoever holds the run.
func TestRemoteTurnOutlivesACallerThatLostItsLease(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cause      error
		wantCancel bool
	}{
		{"lease lost", fmt.Errorf("fleet: %w", contract.ErrLeaseLost), false},
		{"caller cancelled", context.Canceled, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newScripted(t)
			s, err := sidecar.New(p, sidecar.Options{Token: testToken})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var cancels atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel") {
					cancels.Add(1)
				}
				s.ServeHTTP(w, r)
			}))
			defer ts.Close()
			rp := newRemote(t, ts.URL)
			env, err := rp.Create(context.Background(), createInput(""))
			if err != nil {
				t.Fatal(err)
			}
			deadline, stop := context.WithTimeout(context.Background(), 30*time.Second)
			defer stop()
			ctx, cancel := context.WithCancelCause(deadline)
			defer cancel(nil)
			prompt, turn := "live", "turn-held-by-another"
			var got []string
			for ev, err := range env.Stream(ctx, &contract.TurnInput{Prompt: &prompt, TurnID: &turn}) {
				if err != nil {
					break
				}
				if n := ev.Normalized; n != nil && n.MessagePartUpdated != nil && n.MessagePartUpdated.Delta != nil {
					got = append(got, *n.MessagePartUpdated.Delta)
					cancel(tc.cause)
				}
			}
			if strings.Join(got, "|") != "working" {
				t.Fatalf("texts %q; want the turn's first text only", got)
			}
			if n := cancels.Load(); (n > 0) != tc.wantCancel {
				t.Fatalf("the client sent %d cancels; want a cancel: %v", n, tc.wantCancel)
			}
			if tc.wantCancel {
				return
			}
			// The server's view: the turn is still live after the lease
			// loss; the new holder's cancel (here, the test's cleanup)
			// finds it live.
			ack, err := rp.CancelTurn(deadline, env.ID(), turn, "cleanup-"+turn)
			if err != nil {
				t.Fatal(err)
			}
			if ack.Effect != "cancel_requested" {
				t.Errorf("after the caller that lost its lease stopped reading, cancelling the turn had effect %q; want cancel_requested (still live)", ack.Effect)
			}
		})
	}
}
